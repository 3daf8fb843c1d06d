#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "http/server.h"
#include "ingest/ingestor.h"
#include "live/stream_hub.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::config {

// The whole configuration of a hotrow process: every key of CONTRACT.md "Configuration", with its
// default. configs/hotrow.yaml documents each key; keep the two in step.
struct Config {
  // What was accepted but should be changed (a retired key), one line each: `serve` and
  // `check-config` print them once.
  std::vector<std::string> warnings;
  struct Kafka {
    std::string brokers = "127.0.0.1:9092";
    std::vector<std::string> topics = {"events"};
    std::string group_id = "hotrow";
    std::string instance_id;  // group.instance.id (static membership); empty = none
    std::map<std::string, std::string> properties;  // passed to librdkafka as is
  } kafka;
  struct Store {
    std::string path = "./hotrow-data";
    int64_t ttl_ms = 10 * 60 * 1000;       // store.ttl, a duration
    int64_t bucket_ms = 60 * 1000;         // store.bucket, a duration
    store::ClockKind clock = store::ClockKind::kWall;  // "wall" or "stream"
    int64_t block_cache_bytes = int64_t{256} << 20;   // store.block_cache, a size
    int64_t write_buffer_bytes = int64_t{64} << 20;   // store.write_buffer, a size
    bool partitioned_index = true;                    // store.partitioned_index
    bool compression = true;                          // store.compression: "lz4" or "none"
    bool mmap_reads = false;                          // store.mmap_reads
  } store;
  struct Keying {
    int salts = 16;                                    // 1..256
    keying::SaltBy salt_by = keying::SaltBy::kRecord;  // "record", "id" or "adaptive"
    // Under salt_by adaptive, the share of a bucket's writes at or above which an id is spread
    // over every salt for the rest of the bucket (StoreOptions::hot); 0.0001..1.
    double hot_share = keying::kDefaultHotShare;
  } keying;
  struct Ingest {
    int64_t batch_max_events = 5000;       // 1..1000000
    int64_t batch_max_ms = 200;            // a duration or integer ms, 1ms..1h
    std::string id_field = "event_id";     // dotted path
    std::string ts_field = "ts";           // dotted path
    int64_t max_future_ms = 60 * 1000;     // ingest.max_future, a duration
    std::string dead_letter_topic;         // empty: none
    int64_t stall_after_ms = 30 * 1000;    // ingest.stall_after, a duration
    int64_t writers = 0;                   // 0..16; 0: the machine's cores (at most 16)
    // ingest.format and the keys beside it (ingest.schema_registry.*, ingest.avro.*,
    // ingest.protobuf.*): how record values are decoded; checked together by LoadConfig.
    ingest::FormatOptions format;
    bool include_meta = false;  // add "_kafka" {key, headers, timestamp} to stored payloads
  } ingest;
  struct Index {
    std::vector<std::string> fields;  // dotted paths, at most 16, no duplicates; empty = none
  } index;
  struct Http {
    std::string listen = "127.0.0.1:8080";  // host:port
    int io_threads = 0;  // I/O threads, 1..256; 0: the number of cores
    int threads = 256;   // retired (http.io_threads replaces it): read, checked, and ignored
    int64_t max_connections = 10000;  // open connections at most, streams included; 1..1000000
    int64_t idle_timeout_ms = 60000;  // a connection with no request this long is closed
    int64_t header_timeout_ms = 10000;  // a request head not whole this long is cut
    int max_streams = 1000;    // live streams open at once, 1..100000 (each is a connection)
    int stream_buffer = 1000;  // events waiting per stream before it catches up from the store
    std::string token_file;                 // empty: no token asked (loopback only, see allow_open)
    bool allow_open = false;                // true: listen beyond loopback without a token
    std::string tls_cert;                   // PEM certificate (chain); with tls_key: HTTPS
    std::string tls_key;                    // PEM private key of tls_cert; both or neither
  } http;
  struct Query {
    int threads = 0;          // 0: the number of cores; else 1..256
    int max_concurrent = 12;  // queries at once before 503; 1..1023
    int64_t queue_wait_ms = 1000;  // a query beyond max_concurrent waits this long; 0..60 s
    int last_cache = 16;      // events kept per id by the last-N cache; 0..1000, 0: off
    int64_t last_cache_bytes = int64_t{64} << 20;  // query.last_cache_bytes, a size
  } query;
  struct Cluster {
    // HTTP host:port of every instance of the group, this one included; empty: single instance.
    std::vector<std::string> peers;
    // How long a peer may take to connect or send its next bytes before its partitions count as
    // missing from the answer; a duration or integer ms, 1ms..60s.
    int64_t peer_timeout_ms = 2000;
    // PEM file of the CAs that sign the peers' certificates (HTTPS); empty: the system's CAs.
    std::string peer_ca;
    // A file holding the peers' own token, sent by peers and asked of `?local=true` requests for
    // the peers' query lane; empty: any `?local=true` request takes the peers' lane.
    std::string peer_token_file;
    // How long the oldest record the broker holds and an owner's store lacks may have been there
    // for its partition to count toward a complete answer; a duration, 1ms..1h.
    int64_t max_staleness_ms = 5000;
    // Per-id queries ask only the owners of their ids' partitions when the topics are keyed by the
    // event id with this partitioner (checked at ingest): off, murmur2 or crc32.
    ingest::KeyPartitioner route_by_key = ingest::KeyPartitioner::kOff;
    // Partitions each instance follows besides those it owns, per partition (CONTRACT.md
    // "cluster.standby_replicas"): 0..peers - 1; with more than 0 the group's assignment is
    // cooperative-sticky unless kafka.properties names one.
    int standby_replicas = 0;
  } cluster;

  store::StoreOptions ToStoreOptions() const;
  ingest::IngestOptions ToIngestOptions() const;
  query::QueryOptions ToQueryOptions() const;
  // listen, io_threads, the connection limits, max_queries (= query.max_concurrent) and the TLS
  // files; the rest keeps its defaults.
  http::HttpServerOptions ToHttpOptions() const;
  // http.max_streams and http.stream_buffer.
  live::StreamHubOptions ToStreamHubOptions() const;
  // A one-line summary for the start-up log.
  std::string Summary() const;
};

// Loads the configuration: the defaults, then `file` when not empty, then each `--set` override
// ("section.key=value", the value read as YAML) in order. Every key is checked: an unknown key, a
// value of the wrong type or out of range is InvalidArgument whose message is one line naming
// the key and what was expected, e.g.
//   "store.ttl: expected a duration such as 500ms, 20s, 10m or 1h, got \"ten\"".
Result<Config> LoadConfig(const std::string& file, const std::vector<std::string>& overrides);

// The effective configuration as a YAML document that LoadConfig reads back to the same Config
// (`hotrow check-config` prints it): every key of the table, defaults included, in the table's
// order. The values of kafka.properties whose names say they hold a secret (password, secret,
// ssl.key.*, sasl.oauthbearer.config) are written as "<hidden>", since the output goes to logs.
// Every key of ConfigKeyNames() must appear in it (config_dump.cc; tests/config checks); the
// retired keys do not, so that the printed configuration reads back without their warnings.
std::string EffectiveYaml(const Config& config);

// The names of every key of the table, "kafka.brokers" ... "cluster.max_staleness", in order;
// the retired keys (still read, with a warning, and ignored) are not among them.
std::vector<std::string> ConfigKeyNames();
// The retired keys: "http.threads".
std::vector<std::string> RetiredConfigKeyNames();

}  // namespace hotrow::config
