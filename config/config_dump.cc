// EffectiveYaml (config/config.h): the configuration as `hotrow check-config` prints it. A key
// added to the table (config_keys.cc) needs its line here too; tests/config/config_dump_test.cc
// fails until it has one.
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "common/byte_size.h"
#include "common/time_format.h"
#include "config/config.h"
#include "keying/salter.h"

namespace hotrow::config {
namespace {

// librdkafka properties whose values are secrets (CONFIGURATION.md of librdkafka).
bool IsSecretProperty(std::string_view name) {
  return name.find("password") != std::string_view::npos ||
         name.find("secret") != std::string_view::npos || name.rfind("ssl.key", 0) == 0 ||
         name == "sasl.oauthbearer.config";
}

std::string Share(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", share);
  return text;
}

void List(YAML::Emitter& out, const char* key, const std::vector<std::string>& values) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& v : values) out << v;
  out << YAML::EndSeq;
}

}  // namespace

std::string EffectiveYaml(const Config& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;

  out << YAML::Key << "kafka" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "brokers" << YAML::Value << c.kafka.brokers;
  List(out, "topics", c.kafka.topics);
  out << YAML::Key << "group_id" << YAML::Value << c.kafka.group_id;
  out << YAML::Key << "instance_id" << YAML::Value << c.kafka.instance_id;
  out << YAML::Key << "properties" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, value] : c.kafka.properties) {
    out << YAML::Key << name << YAML::Value << (IsSecretProperty(name) ? "<hidden>" : value);
  }
  out << YAML::EndMap << YAML::EndMap;

  out << YAML::Key << "store" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "path" << YAML::Value << c.store.path;
  out << YAML::Key << "ttl" << YAML::Value << FormatDurationMs(c.store.ttl_ms);
  out << YAML::Key << "bucket" << YAML::Value << FormatDurationMs(c.store.bucket_ms);
  out << YAML::Key << "clock" << YAML::Value
      << (c.store.clock == store::ClockKind::kWall ? "wall" : "stream");
  out << YAML::Key << "block_cache" << YAML::Value << FormatByteSize(c.store.block_cache_bytes);
  out << YAML::Key << "write_buffer" << YAML::Value << FormatByteSize(c.store.write_buffer_bytes);
  out << YAML::Key << "partitioned_index" << YAML::Value << c.store.partitioned_index;
  out << YAML::Key << "compression" << YAML::Value << (c.store.compression ? "lz4" : "none");
  out << YAML::Key << "mmap_reads" << YAML::Value << c.store.mmap_reads;
  out << YAML::EndMap;

  out << YAML::Key << "keying" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "salts" << YAML::Value << c.keying.salts;
  out << YAML::Key << "salt_by" << YAML::Value << std::string(keying::SaltByName(c.keying.salt_by));
  out << YAML::Key << "hot_share" << YAML::Value << Share(c.keying.hot_share);
  out << YAML::EndMap;

  out << YAML::Key << "ingest" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "batch_max_events" << YAML::Value << c.ingest.batch_max_events;
  out << YAML::Key << "writers" << YAML::Value << c.ingest.writers;
  out << YAML::Key << "batch_max_ms" << YAML::Value << FormatDurationMs(c.ingest.batch_max_ms);
  out << YAML::Key << "id_field" << YAML::Value << c.ingest.id_field;
  out << YAML::Key << "ts_field" << YAML::Value << c.ingest.ts_field;
  out << YAML::Key << "max_future" << YAML::Value << FormatDurationMs(c.ingest.max_future_ms);
  out << YAML::Key << "dead_letter_topic" << YAML::Value << c.ingest.dead_letter_topic;
  out << YAML::Key << "stall_after" << YAML::Value << FormatDurationMs(c.ingest.stall_after_ms);
  // The keys under ingest.schema_registry, .avro and .protobuf, written flat (LoadConfig reads
  // both forms); user_info is a secret.
  const ingest::FormatOptions& f = c.ingest.format;
  out << YAML::Key << "format" << YAML::Value << ingest::FormatName(f.format);
  out << YAML::Key << "schema_registry.url" << YAML::Value << f.registry_url;
  out << YAML::Key << "schema_registry.user_info" << YAML::Value
      << (f.registry_user_info.empty() ? "" : "<hidden>");
  out << YAML::Key << "schema_registry.user_info_file" << YAML::Value
      << f.registry_user_info_file;
  out << YAML::Key << "schema_registry.ca" << YAML::Value << f.registry_ca;
  out << YAML::Key << "max_decoded_bytes" << YAML::Value
      << FormatByteSize(static_cast<int64_t>(f.max_decoded_bytes));
  out << YAML::Key << "avro.schema_file" << YAML::Value << f.avro_schema_file;
  out << YAML::Key << "protobuf.descriptor_set" << YAML::Value << f.protobuf_descriptor_set;
  out << YAML::Key << "protobuf.message" << YAML::Value << f.protobuf_message;
  out << YAML::Key << "protobuf.legacy_indexes" << YAML::Value << f.protobuf_legacy_indexes;
  out << YAML::Key << "protobuf.well_known" << YAML::Value
      << (f.protobuf_well_known_json ? "json" : "message");
  out << YAML::Key << "include_meta" << YAML::Value << c.ingest.include_meta;
  out << YAML::EndMap;

  out << YAML::Key << "index" << YAML::Value << YAML::BeginMap;
  List(out, "fields", c.index.fields);
  out << YAML::EndMap;

  out << YAML::Key << "http" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << c.http.listen;
  out << YAML::Key << "io_threads" << YAML::Value << c.http.io_threads;
  out << YAML::Key << "max_connections" << YAML::Value << c.http.max_connections;
  out << YAML::Key << "idle_timeout" << YAML::Value << FormatDurationMs(c.http.idle_timeout_ms);
  out << YAML::Key << "header_timeout" << YAML::Value
      << FormatDurationMs(c.http.header_timeout_ms);
  out << YAML::Key << "max_streams" << YAML::Value << c.http.max_streams;
  out << YAML::Key << "stream_buffer" << YAML::Value << c.http.stream_buffer;
  out << YAML::Key << "token_file" << YAML::Value << c.http.token_file;
  out << YAML::Key << "allow_open" << YAML::Value << c.http.allow_open;
  out << YAML::Key << "tls_cert" << YAML::Value << c.http.tls_cert;
  out << YAML::Key << "tls_key" << YAML::Value << c.http.tls_key;
  out << YAML::EndMap;

  out << YAML::Key << "query" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "threads" << YAML::Value << c.query.threads;
  out << YAML::Key << "max_concurrent" << YAML::Value << c.query.max_concurrent;
  out << YAML::Key << "queue_wait" << YAML::Value << FormatDurationMs(c.query.queue_wait_ms);
  out << YAML::Key << "last_cache" << YAML::Value << c.query.last_cache;
  out << YAML::Key << "last_cache_bytes" << YAML::Value << FormatByteSize(c.query.last_cache_bytes);
  out << YAML::EndMap;

  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  List(out, "peers", c.cluster.peers);
  out << YAML::Key << "peer_timeout_ms" << YAML::Value
      << FormatDurationMs(c.cluster.peer_timeout_ms);
  out << YAML::Key << "peer_ca" << YAML::Value << c.cluster.peer_ca;
  out << YAML::Key << "peer_token_file" << YAML::Value << c.cluster.peer_token_file;
  out << YAML::Key << "max_staleness" << YAML::Value
      << FormatDurationMs(c.cluster.max_staleness_ms);
  out << YAML::Key << "route_by_key" << YAML::Value
      << ingest::KeyPartitionerName(c.cluster.route_by_key);
  out << YAML::Key << "standby_replicas" << YAML::Value << c.cluster.standby_replicas;
  out << YAML::EndMap;

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace hotrow::config
