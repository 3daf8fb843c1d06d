# Live streams (CONTRACT.md "Live"): ingest with open streams and a stalled client / without,
# delivery latency, latest-10 with 1000 open streams / without, RSS per stream. In one process.
hotrow_bench(live_bench LIBS hotrow_http hotrow_bench_support PkgConfig::HTTPLIB)
