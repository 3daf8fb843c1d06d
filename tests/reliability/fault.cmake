# The oracle: the ledger of produced records and the checks every answer must pass.
add_library(hotrow_fault_oracle STATIC ${CMAKE_CURRENT_LIST_DIR}/fault_oracle.cc)
target_link_libraries(hotrow_fault_oracle
  PUBLIC hotrow_query PRIVATE hotrow_service hotrow_test_support nlohmann_json::nlohmann_json)

# The fault run (docs/RELIABILITY.md): records flow and queries run while the mock cluster's brokers go down
# and come back, requests fail or slow down, and `hotrow serve` is killed with SIGKILL and
# restarted; at the end every record is stored exactly once and every query matches the oracle.
# Bounded (about a minute in Release) so that CI runs it on every change, under TSan too.
hotrow_test(fault_run_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fault_run_test.cc ${CMAKE_CURRENT_LIST_DIR}/fault_producer.cc
  LIBS hotrow_fault_oracle hotrow_service hotrow_ingest hotrow_ingest_test_util
       nlohmann_json::nlohmann_json PkgConfig::HTTPLIB PkgConfig::RDKAFKA
  LABELS slow concurrent)
add_dependencies(fault_run_test hotrow)
# The oracle's offset ledger (broker copies included), without a broker.
hotrow_test(fault_oracle_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/fault_oracle_test.cc
  LIBS hotrow_fault_oracle nlohmann_json::nlohmann_json)
