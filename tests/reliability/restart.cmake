# restart: how soon a restarted `hotrow serve` ingests again after SIGTERM and after kill -9
# (docs/RELIABILITY.md, "Restart time"), with hotrow's default consumer settings.
# Multi-process: label e2e.
hotrow_test(restart_time_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/restart_time_test.cc
            LIBS hotrow_test_support nlohmann_json::nlohmann_json PkgConfig::HTTPLIB LABELS slow e2e)
add_dependencies(restart_time_test hotrow)
