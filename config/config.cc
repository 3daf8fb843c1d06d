#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>

#include "common/byte_size.h"
#include "common/time_format.h"
#include "config/config_keys.h"
#include "ingest/decoder.h"
#include "ingest/record_meta.h"
#include "keying/row_key.h"

namespace hotrow::config {
namespace {

// Applies a whole parsed file: a map of sections, each a map of keys.
Status ApplyDocument(const YAML::Node& root, const std::string& file, Config* config) {
  if (!root.IsDefined() || root.IsNull()) return Status::Ok();  // an empty file: the defaults
  if (!root.IsMap()) {
    return Status::InvalidArgument("config file " + file +
                                   ": expected a map of sections (kafka, store, keying, ingest, "
                                   "http, query), got " +
                                   Describe(root));
  }
  std::set<std::string> seen;
  for (auto section = root.begin(); section != root.end(); ++section) {
    if (!section->first.IsScalar()) {
      return Status::InvalidArgument("config file " + file + ": expected section names, got " +
                                     Describe(section->first));
    }
    const std::string name = section->first.Scalar();
    if (!IsSection(name)) {
      return Status::InvalidArgument(name + ": unknown section (expected " + SectionNames() + ")");
    }
    if (!seen.insert(name).second) return Status::InvalidArgument(name + ": section given twice");
    // A copy: the iterator hands out a temporary pair, and a Node is only a handle.
    const YAML::Node keys = section->second;
    if (keys.IsNull()) continue;  // every key of the section commented out
    if (!keys.IsMap()) return Expected(name, "a map of keys", keys);
    for (auto entry = keys.begin(); entry != keys.end(); ++entry) {
      if (!entry->first.IsScalar()) return Expected(name, "key names", entry->first);
      const std::string key = name + "." + entry->first.Scalar();
      if (FindKey(key) == nullptr && IsSubsection(key)) {
        // ingest.schema_registry: {url: ...}: a map of the keys under it.
        const YAML::Node sub = entry->second;
        if (sub.IsNull()) continue;
        if (!sub.IsMap()) return Expected(key, "a map of keys", sub);
        for (auto item = sub.begin(); item != sub.end(); ++item) {
          if (!item->first.IsScalar()) return Expected(key, "key names", item->first);
          const std::string full = key + "." + item->first.Scalar();
          if (FindKey(full) == nullptr) return Status::InvalidArgument(full + ": unknown key");
          if (!seen.insert(full).second) return Status::InvalidArgument(full + ": given twice");
          HOTROW_RETURN_IF_ERROR(SetKey(full, item->second, config));
        }
        continue;
      }
      if (FindKey(key) == nullptr) return Status::InvalidArgument(key + ": unknown key");
      if (!seen.insert(key).second) return Status::InvalidArgument(key + ": given twice");
      HOTROW_RETURN_IF_ERROR(SetKey(key, entry->second, config));
    }
  }
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const std::string& file) {
  auto cannot_read = [&] {
    return Status::InvalidArgument("config file " + file +
                                   ": cannot read: " + std::strerror(errno));
  };
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (f == nullptr) return cannot_read();
  std::string text;
  char buf[8192];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int saved = errno;
  std::fclose(f);
  if (failed) {
    errno = saved;
    return cannot_read();
  }
  return text;
}

std::string YamlError(const YAML::Exception& e) {
  std::string out;
  if (e.mark.line >= 0) {
    out = "line " + std::to_string(e.mark.line + 1) + ", column " +
          std::to_string(e.mark.column + 1) + ": ";
  }
  return out + e.msg;
}

Status LoadFile(const std::string& file, Config* config) {
  Result<std::string> text = ReadWholeFile(file);
  if (!text.ok()) return text.status();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config file " + file + ": not valid YAML: " + YamlError(e));
  }
  return ApplyDocument(root, file, config);
}

Status ApplyOverride(const std::string& item, Config* config) {
  const size_t eq = item.find('=');
  if (eq == std::string::npos) {
    return Status::InvalidArgument("--set " + item +
                                   ": expected section.key=value, such as store.ttl=20s");
  }
  const std::string key = item.substr(0, eq);
  const std::string text = item.substr(eq + 1);
  if (key.empty()) {
    return Status::InvalidArgument("--set " + item +
                                   ": expected section.key=value, such as store.ttl=20s");
  }
  if (FindKey(key) == nullptr && key.rfind("kafka.properties.", 0) != 0) {
    return Status::InvalidArgument(key + ": unknown key (see configs/hotrow.yaml for every key)");
  }
  YAML::Node value;
  // "[::1]:8080" is a flow sequence to YAML, which then ignores the ":8080"; an IPv6 listen address
  // given on the command line is meant as text (in a file it must be quoted).
  if (key == "http.listen" && !text.empty() && text.front() == '[') {
    return SetKey(key, YAML::Node(text), config);
  }
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(key + ": the --set value is not valid YAML: " + YamlError(e));
  }
  return SetKey(key, value, config);
}

// Checks that span several keys, once every value is in.
Status CheckWhole(const Config& config) {
  if (config.store.bucket_ms > config.store.ttl_ms) {
    // Most often store.ttl was lowered and the bucket left at its default: say what to set.
    return Status::InvalidArgument(
        "store.bucket: expected a duration of at most store.ttl (" +
        FormatDurationMs(config.store.ttl_ms) + "), got " +
        FormatDurationMs(config.store.bucket_ms) +
        "; set both, e.g. --set store.ttl=" + FormatDurationMs(config.store.ttl_ms) +
        " --set store.bucket=" + FormatDurationMs(std::max<int64_t>(1, config.store.ttl_ms / 10)));
  }
  // (query.max_concurrent was bounded below http.threads so that a connection thread stayed free
  // for /healthz. The I/O threads answer health checks whatever the queries hold: no such rule.)
  if (config.http.max_streams > config.http.max_connections) {
    return Status::InvalidArgument(
        "http.max_streams: expected at most http.max_connections (" +
        std::to_string(config.http.max_connections) + "): every stream is a connection; got " +
        std::to_string(config.http.max_streams));
  }
  if (config.cluster.standby_replicas > 0 &&
      config.cluster.standby_replicas + 1 > static_cast<int>(config.cluster.peers.size())) {
    // A standby is another instance of the group: there are peers - 1 of them at most.
    return Status::InvalidArgument(
        "cluster.standby_replicas: expected at most the group's size - 1 (cluster.peers names " +
        std::to_string(config.cluster.peers.size()) + " instance(s)), got " +
        std::to_string(config.cluster.standby_replicas));
  }
  // HTTPS needs both files (the files themselves are read when the server starts).
  if (config.http.tls_cert.empty() != config.http.tls_key.empty()) {
    return config.http.tls_key.empty()
               ? Status::InvalidArgument(
                     "http.tls_key: expected the PEM private key of http.tls_cert (HTTPS needs "
                     "both, or neither for HTTP), got none")
               : Status::InvalidArgument(
                     "http.tls_cert: expected the PEM certificate of http.tls_key (HTTPS needs "
                     "both, or neither for HTTP), got none");
  }
  return Status::Ok();
}

// ingest.format and the keys beside it: one source of schemas, every file named readable and
// every schema loadable (ingest::MakeDecoder, which asks no registry); field names starting with
// '@' are @key, @header.NAME or @timestamp.
Status CheckFormat(const Config& config) {
  const ingest::FormatOptions& f = config.ingest.format;
  const bool registry = !f.registry_url.empty();
  const std::string format = ingest::FormatName(f.format);
  auto stray = [&](const std::string& key, const std::string& value,
                   const std::string& why) -> Status {
    if (value.empty()) return Status::Ok();
    return Status::InvalidArgument(key + ": set, but " + why);
  };
  if (f.format == ingest::Format::kJson) {
    const std::string why = "ingest.format is json (set it to avro or protobuf)";
    HOTROW_RETURN_IF_ERROR(stray("ingest.schema_registry.url", f.registry_url, why));
    HOTROW_RETURN_IF_ERROR(stray("ingest.avro.schema_file", f.avro_schema_file, why));
    HOTROW_RETURN_IF_ERROR(stray("ingest.protobuf.descriptor_set", f.protobuf_descriptor_set, why));
    HOTROW_RETURN_IF_ERROR(stray("ingest.protobuf.message", f.protobuf_message, why));
  }
  if (!registry) {
    const std::string why = "ingest.schema_registry.url is not";
    HOTROW_RETURN_IF_ERROR(stray("ingest.schema_registry.user_info", f.registry_user_info, why));
    HOTROW_RETURN_IF_ERROR(
        stray("ingest.schema_registry.user_info_file", f.registry_user_info_file, why));
    HOTROW_RETURN_IF_ERROR(stray("ingest.schema_registry.ca", f.registry_ca, why));
  } else {
    HOTROW_RETURN_IF_ERROR(stray("ingest.avro.schema_file", f.avro_schema_file,
                                 "records are framed and their schemas read from "
                                 "ingest.schema_registry.url: set one or the other"));
    HOTROW_RETURN_IF_ERROR(stray("ingest.protobuf.descriptor_set", f.protobuf_descriptor_set,
                                 "records are framed and their schemas read from "
                                 "ingest.schema_registry.url: set one or the other"));
    HOTROW_RETURN_IF_ERROR(stray("ingest.protobuf.message", f.protobuf_message,
                                 "records are framed and name their message: leave it out "
                                 "with ingest.schema_registry.url"));
    if (!f.registry_user_info.empty() && !f.registry_user_info_file.empty()) {
      return Status::InvalidArgument(
          "ingest.schema_registry.user_info_file: set, but so is ingest.schema_registry.user_info: "
          "set one");
    }
    if (!f.registry_ca.empty() && f.registry_url.rfind("https://", 0) != 0) {
      return Status::InvalidArgument("ingest.schema_registry.ca: set, but "
                                     "ingest.schema_registry.url is not https://");
    }
  }
  if (f.format == ingest::Format::kAvro && !registry) {
    HOTROW_RETURN_IF_ERROR(stray("ingest.protobuf.descriptor_set", f.protobuf_descriptor_set,
                                 "ingest.format is avro"));
    HOTROW_RETURN_IF_ERROR(stray("ingest.protobuf.message", f.protobuf_message,
                                 "ingest.format is avro"));
    if (f.avro_schema_file.empty()) {
      return Status::InvalidArgument(
          "ingest.format: avro needs ingest.schema_registry.url (framed records) or "
          "ingest.avro.schema_file (unframed records)");
    }
  }
  if (f.format == ingest::Format::kProtobuf && !registry) {
    HOTROW_RETURN_IF_ERROR(stray("ingest.avro.schema_file", f.avro_schema_file,
                                 "ingest.format is protobuf"));
    if (f.protobuf_descriptor_set.empty() || f.protobuf_message.empty()) {
      return Status::InvalidArgument(
          "ingest.format: protobuf needs ingest.schema_registry.url (framed records) or both "
          "ingest.protobuf.descriptor_set and ingest.protobuf.message (unframed records)");
    }
  }
  Result<std::unique_ptr<ingest::Decoder>> decoder = ingest::MakeDecoder(f);
  if (!decoder.ok()) return decoder.status();

  auto check_field = [](const std::string& key, const std::string& field) -> Status {
    ingest::MetaRef meta;
    if (!ingest::ParseMetaRef(field, &meta)) {
      return Status::InvalidArgument(key + ": expected @key, @header.NAME or @timestamp, got \"" +
                                     field + "\"");
    }
    return Status::Ok();
  };
  HOTROW_RETURN_IF_ERROR(check_field("ingest.id_field", config.ingest.id_field));
  HOTROW_RETURN_IF_ERROR(check_field("ingest.ts_field", config.ingest.ts_field));
  for (const std::string& field : config.index.fields) {
    HOTROW_RETURN_IF_ERROR(check_field("index.fields", field));
  }
  return Status::Ok();
}

Status Load(const std::string& file, const std::vector<std::string>& overrides, Config* config) {
  // store.bucket left unset follows the ttl: 1m for the default 10m window, ttl/10 for a shorter
  // one, so that `--set store.ttl=20s` alone gives 2s buckets instead of an error.
  config->store.bucket_ms = 0;
  if (!file.empty()) HOTROW_RETURN_IF_ERROR(LoadFile(file, config));
  for (const std::string& item : overrides) HOTROW_RETURN_IF_ERROR(ApplyOverride(item, config));
  if (config->store.bucket_ms == 0) {
    config->store.bucket_ms =
        std::clamp<int64_t>(config->store.ttl_ms / 10, 1, Config::Store().bucket_ms);
  }
  HOTROW_RETURN_IF_ERROR(CheckWhole(*config));
  return CheckFormat(*config);
}

// yaml-cpp throws; nothing may escape this boundary.
Status LoadCatching(const std::string& file, const std::vector<std::string>& overrides,
                    Config* config) {
  try {
    return Load(file, overrides, config);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config: " + YamlError(e));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("config: ") + e.what());
  }
}

// CONTRACT: a bad key is reported in one line. Messages quote user text (keys, YAML parser
// errors, values), which may hold line breaks or other control bytes: escape them all, once, here.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

// A keying.hot_share as it would be written: 0.002, 1, 0.0001.
std::string FormatShare(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", share);
  return text;
}

}  // namespace

Result<Config> LoadConfig(const std::string& file, const std::vector<std::string>& overrides) {
  Config config;
  Status loaded = LoadCatching(file, overrides, &config);
  if (!loaded.ok()) return Status::InvalidArgument(OneLine(loaded.message()));
  return config;
}

store::StoreOptions Config::ToStoreOptions() const {
  store::StoreOptions options;
  options.path = store.path;
  options.ttl_ms = store.ttl_ms;
  options.bucket_ms = store.bucket_ms;
  options.clock = store.clock;
  options.max_future_ms = ingest.max_future_ms;
  options.salts = keying.salts;
  options.salt_by = keying.salt_by;
  options.hot.hot_share = keying.hot_share;
  options.block_cache_bytes = static_cast<size_t>(store.block_cache_bytes);
  options.write_buffer_bytes = static_cast<size_t>(store.write_buffer_bytes);
  options.partitioned_index = store.partitioned_index;
  // lz4: the levels from L2 down (StoreOptions' default); none: no level.
  options.compressed_from_level = store.compression ? store::StoreOptions().compressed_from_level
                                                    : store::StoreOptions::kNeverCompressed;
  options.mmap_reads = store.mmap_reads;
  options.index_fields = index.fields;
  return options;
}

ingest::IngestOptions Config::ToIngestOptions() const {
  ingest::IngestOptions options;
  options.brokers = kafka.brokers;
  options.topics = kafka.topics;
  options.group_id = kafka.group_id;
  options.instance_id = kafka.instance_id;
  options.properties = kafka.properties;
  options.batch_max_events = static_cast<size_t>(ingest.batch_max_events);
  options.batch_max_ms = ingest.batch_max_ms;
  options.id_field = ingest.id_field;
  options.ts_field = ingest.ts_field;
  options.index_fields = index.fields;
  options.max_future_ms = ingest.max_future_ms;
  options.dead_letter_topic = ingest.dead_letter_topic;
  options.stall_after_ms = ingest.stall_after_ms;
  options.writers = static_cast<int>(ingest.writers);
  options.format = ingest.format;
  options.include_meta = ingest.include_meta;
  return options;
}

query::QueryOptions Config::ToQueryOptions() const {
  query::QueryOptions options;
  options.threads = query.threads;
  // The HTTP slots refuse first (HttpServerOptions::max_queries); this bounds in-process callers.
  options.max_concurrent_queries = query.max_concurrent;
  options.last_cache = query.last_cache;
  options.last_cache_bytes = static_cast<size_t>(query.last_cache_bytes);
  return options;
}

live::StreamHubOptions Config::ToStreamHubOptions() const {
  live::StreamHubOptions options;
  options.max_streams = static_cast<size_t>(http.max_streams);
  options.max_buffered = static_cast<size_t>(http.stream_buffer);
  return options;
}

http::HttpServerOptions Config::ToHttpOptions() const {
  http::HttpServerOptions options;
  options.listen = http.listen;
  if (http.io_threads > 0) options.io_threads = http.io_threads;
  options.max_connections = static_cast<size_t>(http.max_connections);
  options.idle_timeout_ms = http.idle_timeout_ms;
  options.header_timeout_ms = http.header_timeout_ms;
  options.max_queries = query.max_concurrent;
  options.queue_wait_ms = query.queue_wait_ms;
  // Peers' `?local=true` queries have slots of their own: as many as the other instances' client
  // slots, each of which may wait on one request here (CONTRACT.md, "Group answers").
  const size_t others = cluster.peers.size() > 1 ? cluster.peers.size() - 1 : 1;
  options.max_peer_queries = query.max_concurrent * static_cast<int>(others);
  options.tls_cert_file = http.tls_cert;
  options.tls_key_file = http.tls_key;
  return options;
}

std::string Config::Summary() const {
  std::string topics;
  for (const std::string& t : kafka.topics) topics += (topics.empty() ? "" : ",") + t;
  // Property values may hold secrets (sasl.password): only their names are logged.
  std::string properties;
  for (const auto& [name, value] : kafka.properties) {
    properties += (properties.empty() ? "" : ",") + name;
  }
  return "brokers=" + kafka.brokers + " topics=" + topics + " group=" + kafka.group_id +
         " properties=[" + properties + "] store=" + store.path +
         " ttl=" + FormatDurationMs(store.ttl_ms) + " bucket=" + FormatDurationMs(store.bucket_ms) +
         " clock=" + (store.clock == store::ClockKind::kWall ? "wall" : "stream") +
         " salts=" + std::to_string(keying.salts) +
         " salt_by=" + std::string(keying::SaltByName(keying.salt_by)) +
         " hot_share=" + FormatShare(keying.hot_share) +
         " batch=" + std::to_string(ingest.batch_max_events) + "/" +
         FormatDurationMs(ingest.batch_max_ms) + " id_field=" + ingest.id_field +
         " ts_field=" + ingest.ts_field + " max_future=" + FormatDurationMs(ingest.max_future_ms) +
         " dead_letter=" + (ingest.dead_letter_topic.empty() ? "none" : ingest.dead_letter_topic) +
         " stall_after=" + FormatDurationMs(ingest.stall_after_ms) +
         " format=" + ingest::FormatName(ingest.format.format) +
         (ingest.format.registry_url.empty() ? "" : " schema_registry=" + ingest.format.registry_url) +
         (ingest.include_meta ? " include_meta=true" : "") + " listen=" + http.listen +
         " tls=" + (http.tls_cert.empty() ? "off" : http.tls_cert) +
         " query.threads=" + (query.threads == 0 ? "auto" : std::to_string(query.threads)) +
         " block_cache=" + FormatByteSize(store.block_cache_bytes) +
         " write_buffer=" + FormatByteSize(store.write_buffer_bytes) +
         " http.io_threads=" +
         (http.io_threads == 0 ? std::string("auto") : std::to_string(http.io_threads)) +
         " query.max_concurrent=" + std::to_string(query.max_concurrent) +
         " query.queue_wait=" + FormatDurationMs(query.queue_wait_ms) +
         " query.last_cache=" + std::to_string(query.last_cache) + "/" +
         FormatByteSize(query.last_cache_bytes) +
         " cluster.peers=" + std::to_string(cluster.peers.size()) +
         " cluster.peer_timeout=" + FormatDurationMs(cluster.peer_timeout_ms) +
         " cluster.peer_ca=" + (cluster.peer_ca.empty() ? "system" : cluster.peer_ca) +
         " cluster.max_staleness=" + FormatDurationMs(cluster.max_staleness_ms) +
         " cluster.route_by_key=" + ingest::KeyPartitionerName(cluster.route_by_key) +
         " cluster.standby_replicas=" + std::to_string(cluster.standby_replicas);
}

}  // namespace hotrow::config
