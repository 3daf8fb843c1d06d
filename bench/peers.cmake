# Peers fed the same events (issue: benchmark against peers): Redis sorted sets and RocksDB's
# DBWithTTL, each measured beside hotrow in the same run. Plain main()s: see the top of each file.
add_library(hotrow_peer_support STATIC ${CMAKE_CURRENT_LIST_DIR}/peer_support.cc)
target_link_libraries(hotrow_peer_support PUBLIC hotrow_bench_support Threads::Threads)

# The Redis peer needs hiredis (HOTROW_WITH_BENCH=1 scripts/install-deps.sh); skipped without it.
pkg_check_modules(HIREDIS IMPORTED_TARGET hiredis)
if(HIREDIS_FOUND)
  hotrow_bench(redis_bench LIBS hotrow_peer_support hotrow_query PkgConfig::HIREDIS)
else()
  message(STATUS "hiredis not found: skipping bench/redis_bench (HOTROW_WITH_BENCH=1 scripts/install-deps.sh)")
endif()

hotrow_bench(ttl_bench LIBS hotrow_peer_support hotrow_query RocksDB::rocksdb-shared)
