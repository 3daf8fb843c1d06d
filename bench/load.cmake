# Load and scale benchmarks: latest-10 over HTTP against the real `hotrow serve` while it ingests
# (closed-loop at half its measured maximum rate, and open-loop at 25, 50 and 75 %), and the store's
# write rate and latest-10 latency from 100k to 10M events. Plain main()s that leave <bench>.md (and
# CSVs for bench/plots/).

# The benchmarks that run `hotrow serve` as child processes (http_load_bench, http_latency_bench,
# cluster_bench) share
# the child process, polling and the backlog they feed it.
add_library(hotrow_serve_process STATIC ${CMAKE_CURRENT_LIST_DIR}/serve_process.cc)
target_link_libraries(hotrow_serve_process
  PUBLIC nlohmann_json::nlohmann_json PRIVATE hotrow_ingest PkgConfig::HTTPLIB Threads::Threads)

hotrow_bench(http_load_bench
  LIBS hotrow_ingest hotrow_bench_support hotrow_serve_process PkgConfig::HTTPLIB
       nlohmann_json::nlohmann_json)
# The child process it runs: $HOTROW_BIN, by default build/hotrow.
add_dependencies(http_load_bench hotrow)
# The same question open-loop: requests due at a fixed rate, latency from the due time, at 25, 50
# and 75 % of serve's maximum ingest, beside /healthz and idle; serve pinned to one core.
hotrow_bench(http_latency_bench
  LIBS hotrow_ingest hotrow_bench_support hotrow_serve_process PkgConfig::HTTPLIB
       nlohmann_json::nlohmann_json)
add_dependencies(http_latency_bench hotrow)
# The HTTP core's CPU per answer beside nginx serving the same bytes (Debian nginx-light; skipped
# without it), server and wrk each pinned to a core.
hotrow_bench(http_core_bench
  LIBS hotrow_ingest hotrow_bench_support hotrow_serve_process hotrow_wrk_load
       nlohmann_json::nlohmann_json)
add_dependencies(http_core_bench hotrow)
hotrow_bench(scaling_bench LIBS hotrow_bench_support hotrow_query)
# Per-id ranges over HTTP against the same ranges in-process, and HTTP scans on 1 and 2 threads.
# Its scan client is libcurl (HOTROW_WITH_BENCH=1 scripts/install-deps.sh); skipped without it.
pkg_check_modules(LIBCURL IMPORTED_TARGET libcurl)
if(LIBCURL_FOUND)
  add_library(hotrow_http_discard STATIC ${CMAKE_CURRENT_LIST_DIR}/http_discard.cc)
  target_link_libraries(hotrow_http_discard PUBLIC PkgConfig::LIBCURL)
  hotrow_bench(range_http_bench
    LIBS hotrow_http hotrow_bench_support hotrow_http_discard PkgConfig::HTTPLIB PkgConfig::LIBCURL)
else()
  message(STATUS "libcurl not found: skipping bench/range_http_bench (HOTROW_WITH_BENCH=1 scripts/install-deps.sh)")
endif()
# Scale-out (CONTRACT.md, `cluster.peers`): latest-10 through fan-out over 3 `hotrow serve` against
# 1, ingest by 2 against 1.
# Its saturation load is wrk's (bench/wrk_load.h).
add_library(hotrow_wrk_load STATIC ${CMAKE_CURRENT_LIST_DIR}/wrk_load.cc)
target_link_libraries(hotrow_wrk_load PRIVATE hotrow_serve_process)
hotrow_bench(cluster_bench
  LIBS hotrow_ingest hotrow_peer_support hotrow_serve_process hotrow_wrk_load PkgConfig::HTTPLIB
       nlohmann_json::nlohmann_json)
add_dependencies(cluster_bench hotrow)
# Its standby section (kill -9 with and without cluster.standby_replicas, the ingest cost).
target_sources(cluster_bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cluster_standby.cc
                                     ${CMAKE_CURRENT_LIST_DIR}/standby_trio.cc)
# A per-id range's CPU per event against a scan's, one query thread, in-process (and under callgrind).
hotrow_bench(range_cpu_bench LIBS hotrow_bench_support hotrow_query hotrow_wire)
# A range one bucket fills (a busy id) and whole ranges, 2 query threads; a store kept for A/B runs.
hotrow_bench(busy_range_bench LIBS hotrow_bench_support hotrow_query)
# A 100M-event window against 1M (bench/run scale; not in the default run: ~10 min, ~17 GB).
hotrow_bench(scale_bench LIBS hotrow_bench_support hotrow_query hotrow_store)
target_sources(scale_bench PRIVATE ${CMAKE_CURRENT_LIST_DIR}/scale_store.cc)
