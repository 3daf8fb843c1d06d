# disk: a full disk under serve (a tmpfs the test mounts; needs root, else skipped, except in CI,
# as root or with HOTROW_REQUIRE_TMPFS=1) and damaged or foreign stores opened by serve and keys analyze.
add_library(hotrow_disk_test_support STATIC ${CMAKE_CURRENT_LIST_DIR}/disk_support.cc)
target_link_libraries(hotrow_disk_test_support
  PUBLIC hotrow_test_support nlohmann_json::nlohmann_json PRIVATE PkgConfig::HTTPLIB)

hotrow_test(disk_full_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/disk_full_test.cc
            LIBS hotrow_ingest hotrow_ingest_test_util hotrow_disk_test_support LABELS slow)
add_dependencies(disk_full_test hotrow)

hotrow_test(corrupt_store_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/corrupt_store_test.cc
            LIBS hotrow_ingest hotrow_disk_test_support RocksDB::rocksdb-shared LABELS slow)
add_dependencies(corrupt_store_test hotrow)
