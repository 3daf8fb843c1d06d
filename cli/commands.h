#pragma once

// The `hotrow` subcommands (CONTRACT.md, "Binary"): each one's flags and the function that runs it.
// cli/command_line.cc reads argv into these flags with CLI11, the only file that includes it (it
// is a heavy header: 6 s of compiling in every file that includes it). Each Run* returns the
// process exit code: 0 ok, 2 usage or configuration error, 1 runtime failure.

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/synthetic_producer.h"

namespace hotrow::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// `hotrow serve` (cmd_serve.cc).
struct ServeFlags {
  std::string config_file;             // --config; empty: every key at its default
  std::vector<std::string> overrides;  // --set section.key=value, in order
};
int RunServe(const ServeFlags& flags);

// `hotrow check-config` (cmd_check_config.cc): the same flags as serve; validates and prints the
// effective configuration.
int RunCheckConfig(const ServeFlags& flags);

// `hotrow demo` (cmd_demo.cc).
struct DemoFlags {
  int64_t rate = 20000;                   // --rate, events/s; 0: as fast as possible
  std::string data_dir;                   // --data; empty: a temporary one, removed at exit
  std::string listen = "127.0.0.1:8080";  // --listen
};
int RunDemo(const DemoFlags& flags);

// `hotrow embedded-kafka` (cmd_embedded_kafka.cc).
struct EmbeddedKafkaFlags {
  std::string topic = "events";
  // 16: the embedded broker keeps only ~5 MiB per partition, so the partition count sets how much
  // history it holds. At the demo's 20000 events/s (~2 MB/s of JSON before lz4) 16 partitions
  // keep well over half a minute of stream, enough for a consumer restart without loss, and give
  // a consumer group room to spread.
  int partitions = 16;
};
int RunEmbeddedKafka(const EmbeddedKafkaFlags& flags);

// `hotrow produce` (cmd_produce.cc): the flags are the producer's options.
int RunProduce(const ingest::ProducerOptions& options);

// `hotrow query latest|latest-all|series|range|index|scan` (cmd_query.cc): parameters are passed to
// the server as given, so that it names a bad one.
inline constexpr const char* kDefaultServer = "http://127.0.0.1:8080";
struct QueryFlags {
  std::string server = kDefaultServer;
  std::string token_file;  // --token-file: the server's bearer token
  std::string cacert;      // --cacert: the CAs an https:// server's certificate is verified against
  std::string id;
  std::vector<std::string> ids;  // query latest: one id or several
  std::string field;             // query index, query series
  std::string value;             // query index
  std::string n;
  std::string from;
  std::string to;
  std::string limit;
  std::string order;
  std::string prefix;      // query latest-all
  std::string step;        // query series
  std::string max_points;  // query series
  std::string agg;         // query series
};
// One id: GET /v1/events/{id}/latest; several: POST /v1/latest. One JSON event per line.
int RunQueryLatest(const QueryFlags& flags);
// GET /v1/latest, page after page (--limit ids each): the newest event of every id.
int RunQueryLatestAll(const QueryFlags& flags);
// GET /v1/events/{id}/series: one JSON point per line; what was skipped on stderr.
int RunQuerySeries(const QueryFlags& flags);
int RunQueryRange(const QueryFlags& flags);
int RunQueryIndex(const QueryFlags& flags);
int RunQueryScan(const QueryFlags& flags);

// `hotrow keys explain|analyze` (cmd_keys.cc).
struct KeysFlags {
  std::string config_file;             // --config: keying.salts and keying.salt_by
  std::vector<std::string> overrides;  // --set
  std::string data_dir;                // --data
  std::string hex;                     // explain: the key
};
int RunKeysExplain(const KeysFlags& flags);
int RunKeysAnalyze(const KeysFlags& flags);

// Parses argv and runs the chosen subcommand; returns the process exit code.
int RunCommandLine(int argc, char** argv);

}  // namespace hotrow::cli
