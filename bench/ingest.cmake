# Ingest benchmark (docs/BENCHMARKS.md): end-to-end ingestion against a bare librdkafka
# consumer, same broker, same run, and its CPU by stage (ingest_stages.h). A plain main(): see the
# comment at the top of ingest_bench.cc.
hotrow_bench(ingest_bench LIBS hotrow_ingest hotrow_bench_support PkgConfig::RDKAFKA
             RocksDB::rocksdb-shared)
target_sources(ingest_bench PRIVATE ingest_stages.cc)

# Input formats (docs/BENCHMARKS.md "Input formats"): the decode path of Avro and Protobuf against
# JSON's parse, by stage, in alternated rounds. A plain main(): see format_bench.cc.
hotrow_bench(format_bench LIBS hotrow_ingest PkgConfig::PROTOBUF)
