# Store and query benchmarks (docs/BENCHMARKS.md). Each prints its baseline beside it and RATIO
# lines at the end.
add_library(hotrow_bench_support STATIC ${CMAKE_CURRENT_LIST_DIR}/bench_support.cc)
target_link_libraries(hotrow_bench_support PUBLIC hotrow_query)

hotrow_bench(write_bench LIBS hotrow_bench_support RocksDB::rocksdb-shared)
hotrow_bench(latest_bench LIBS hotrow_bench_support hotrow_query)
hotrow_bench(scan_bench LIBS hotrow_bench_support hotrow_query)
hotrow_bench(drop_bench LIBS hotrow_bench_support)
hotrow_bench(index_bench LIBS hotrow_bench_support hotrow_query)
# Adaptive salting against salt_by id and record, on Zipf-skewed and uniform ids; the hot_share sweep.
hotrow_bench(adaptive_salting_bench LIBS hotrow_bench_support hotrow_query)
# The last-N cache and the device queries against the store path computing the same answers.
hotrow_bench(last_cache_bench LIBS hotrow_bench_support hotrow_query hotrow_http PkgConfig::HTTPLIB)
# Ingest with the last-N cache on / off, filling from empty and at steady state.
hotrow_bench(cache_ingest_bench LIBS hotrow_bench_support hotrow_query)
