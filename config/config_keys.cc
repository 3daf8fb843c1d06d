#include "config/config_keys.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <string_view>

#include "common/byte_size.h"
#include "common/host_port.h"
#include "common/time_format.h"
#include "keying/index_key.h"
#include "keying/row_key.h"

namespace hotrow::config {
namespace {

// The smallest keying.hot_share (ReadHotShare).
constexpr double kMinHotShare = 0.0001;

// Checks one value and stores it in the config. `key` ("store.ttl") names the key in messages: it
// is what a user looks up in configs/hotrow.yaml, whether the value came from the file or --set.
using Setter =
    std::function<Status(const YAML::Node& value, const std::string& key, Config* config)>;

}  // namespace

// A value as a message shows it: quoted scalars (one line, at most 64 characters), or what kind of
// node stood where a scalar was expected.
std::string Describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  const std::string& text = node.Scalar();
  std::string out = "\"";
  size_t shown = 0;
  for (char c : text) {
    if (shown++ == 64) {
      out += "...";
      break;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    }
  }
  return out + "\"";
}

Status Expected(const std::string& key, const std::string& what, const YAML::Node& got) {
  return Status::InvalidArgument(key + ": expected " + what + ", got " + Describe(got));
}

namespace {

// Integers are plain decimal, optionally signed: "16", "-1". Nothing else (no 0x, no 1e3).
std::optional<int64_t> ParseInteger(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  const char* begin = text.data();
  if (text[0] == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// Reads an integer in [lo, hi]. `what` describes the whole expectation for messages.
Status ReadInteger(const YAML::Node& node, const std::string& key, int64_t lo, int64_t hi,
                   const std::string& what, int64_t* out) {
  if (!node.IsScalar()) return Expected(key, what, node);
  std::optional<int64_t> value = ParseInteger(node.Scalar());
  if (!value) return Expected(key, what, node);
  if (*value < lo || *value > hi) {
    return Status::InvalidArgument(key + ": expected " + what + ", got " + std::to_string(*value));
  }
  *out = *value;
  return Status::Ok();
}

// Reads a duration ("500ms", "20s", "10m", "1h") of at least `min_ms`.
Status ReadDuration(const YAML::Node& node, const std::string& key, int64_t min_ms, int64_t* out) {
  static const std::string kWhat = "a duration such as 500ms, 20s, 10m or 1h";
  if (!node.IsScalar()) return Expected(key, kWhat, node);
  Result<int64_t> ms = ParseDurationMs(node.Scalar());
  if (!ms.ok()) return Status::InvalidArgument(key + ": " + ms.status().message());
  if (*ms < min_ms) {
    const std::string bound =
        min_ms == 1 ? "greater than 0" : "of at least " + FormatDurationMs(min_ms);
    return Status::InvalidArgument(key + ": expected a duration " + bound + ", got " +
                                   Describe(node));
  }
  *out = *ms;
  return Status::Ok();
}

// Reads a `*_ms` key: a duration ("200ms", "2s") or a plain integer of milliseconds, within
// [lo_ms, hi_ms]. `what` describes the whole expectation for messages.
Status ReadMilliseconds(const YAML::Node& node, const std::string& key, int64_t lo_ms,
                        int64_t hi_ms, const std::string& what, int64_t* out) {
  if (!node.IsScalar()) return Expected(key, what, node);
  int64_t ms = 0;
  if (std::optional<int64_t> n = ParseInteger(node.Scalar())) {
    ms = *n;
  } else if (Result<int64_t> d = ParseDurationMs(node.Scalar()); d.ok()) {
    ms = *d;
  } else {
    return Expected(key, what, node);
  }
  if (ms < lo_ms || ms > hi_ms) return Expected(key, what, node);
  *out = ms;
  return Status::Ok();
}

// Reads a size ("256MiB", "1GiB"; common/byte_size.h) within [min_bytes, max_bytes].
Status ReadSize(const YAML::Node& node, const std::string& key, int64_t min_bytes,
                int64_t max_bytes, int64_t* out) {
  const std::string what = "a size such as 64MiB or 1GiB, from " + FormatByteSize(min_bytes) +
                           " to " + FormatByteSize(max_bytes);
  if (!node.IsScalar()) return Expected(key, what, node);
  Result<int64_t> bytes = ParseByteSize(node.Scalar());
  if (!bytes.ok()) return Status::InvalidArgument(key + ": " + bytes.status().message());
  if (*bytes < min_bytes || *bytes > max_bytes) return Expected(key, what, node);
  *out = *bytes;
  return Status::Ok();
}

// keying.hot_share: a share of a bucket's writes, a decimal number from kMinHotShare to 1. At
// kMinHotShare at most 10000 ids can be hot in a bucket at once, a fifth of the 49152 its set of
// spread ids holds at the largest (store/spread_ids.h); far below it the set could fill, and its
// bucket's queries would then seek every salt. 1 spreads an id only while it is every row of its
// bucket so far: spreading off without a new store (salt_by is fixed at creation, hot_share not).
Status ReadHotShare(const YAML::Node& node, const std::string& key, double* out) {
  static const std::string kWhat = "a share of a bucket's writes from 0.0001 to 1, such as 0.002";
  if (!node.IsScalar()) return Expected(key, kWhat, node);
  const std::string& text = node.Scalar();
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // from_chars takes "nan" and "inf": the range check is written so that NaN fails it too.
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !(value >= kMinHotShare && value <= 1.0)) {
    return Expected(key, kWhat, node);
  }
  *out = value;
  return Status::Ok();
}

Status ReadString(const YAML::Node& node, const std::string& key, bool allow_empty,
                  std::string* out) {
  if (allow_empty && node.IsNull()) {
    out->clear();
    return Status::Ok();
  }
  const char* what = allow_empty ? "a string" : "a non-empty string";
  if (!node.IsScalar()) return Expected(key, what, node);
  if (!allow_empty && node.Scalar().empty()) return Expected(key, what, node);
  *out = node.Scalar();
  return Status::Ok();
}

Status ReadBool(const YAML::Node& node, const std::string& key, bool* out) {
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    if (text == "true") {
      *out = true;
      return Status::Ok();
    }
    if (text == "false") {
      *out = false;
      return Status::Ok();
    }
  }
  return Expected(key, "true or false", node);
}

// A dotted path into a JSON object: "event_id", "meta.device.id". No empty segment.
Status ReadDottedPath(const YAML::Node& node, const std::string& key, std::string* out) {
  static const std::string kWhat = "a dotted field path such as event_id or device.id";
  if (!node.IsScalar()) return Expected(key, kWhat, node);
  const std::string& path = node.Scalar();
  if (path.empty() || path.front() == '.' || path.back() == '.' ||
      path.find("..") != std::string::npos) {
    return Expected(key, kWhat + " (no empty segment)", node);
  }
  *out = path;
  return Status::Ok();
}

// index.fields: a list of distinct dotted paths (at most 16, each at most 255 bytes); [] for none.
Status ReadIndexFields(const YAML::Node& node, const std::string& key,
                       std::vector<std::string>* out) {
  if (!node.IsSequence()) {
    return Expected(key, "a list of dotted field paths such as [site, meta.type]", node);
  }
  std::vector<std::string> fields;
  for (const YAML::Node& item : node) {
    std::string path;
    HOTROW_RETURN_IF_ERROR(ReadDottedPath(item, key, &path));
    if (path.size() > keying::kMaxIndexFieldSize || path.find('\n') != std::string::npos) {
      return Expected(key, "paths of at most 255 bytes, on one line", item);
    }
    if (std::find(fields.begin(), fields.end(), path) != fields.end()) {
      return Status::InvalidArgument(key + ": \"" + path + "\" is listed twice");
    }
    fields.push_back(path);
  }
  if (fields.size() > 16) return Expected(key, "at most 16 fields", node);
  *out = std::move(fields);
  return Status::Ok();
}

// "host:port": port 0..65535, host an IPv4 address or a host name.
Status ReadListen(const YAML::Node& node, const std::string& key, std::string* out) {
  static const std::string kWhat =
      "host:port such as 127.0.0.1:8080 or [::1]:8080 (an IPv4 address, a host name or an IPv6 "
      "address in brackets, a port from 0 to 65535)";
  if (!node.IsScalar() || !ParseHostPort(node.Scalar()).ok()) return Expected(key, kWhat, node);
  *out = node.Scalar();
  return Status::Ok();
}

Status ReadTopics(const YAML::Node& node, const std::string& key, std::vector<std::string>* out) {
  static const std::string kWhat = "a non-empty list of topic names such as [events]";
  std::vector<std::string> topics;
  if (node.IsScalar()) {
    if (node.Scalar().empty()) return Expected(key, kWhat, node);
    if (node.Scalar().find(',') != std::string::npos) {  // "a,b": meant as a list
      return Status::InvalidArgument(key + ": expected " + kWhat + ", got " + Describe(node) +
                                     " (write several topics as a list: [a, b])");
    }
    topics.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    if (node.size() == 0) {
      return Status::InvalidArgument(key + ": expected " + kWhat + ", got an empty list");
    }
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node item = node[i];
      if (!item.IsScalar() || item.Scalar().empty()) {
        return Status::InvalidArgument(key + ": expected " + kWhat + ", got " + Describe(item) +
                                       " as item " + std::to_string(i + 1));
      }
      topics.push_back(item.Scalar());
    }
  } else {
    return Expected(key, kWhat, node);
  }
  *out = std::move(topics);
  return Status::Ok();
}

// cluster.peers: a list of host:port (maybe empty), none twice.
Status ReadPeers(const YAML::Node& node, const std::string& key, std::vector<std::string>* out) {
  std::vector<std::string> peers;
  if (!node.IsNull() && !node.IsSequence()) {
    return Expected(key, "a list of host:port HTTP addresses such as [127.0.0.1:8080]", node);
  }
  for (size_t i = 0; node.IsSequence() && i < node.size(); ++i) {
    std::string peer;
    HOTROW_RETURN_IF_ERROR(ReadListen(node[i], key, &peer));
    for (const std::string& p : peers) {
      if (p == peer) return Status::InvalidArgument(key + ": " + peer + " is given twice");
    }
    peers.push_back(std::move(peer));
  }
  *out = std::move(peers);
  return Status::Ok();
}

Status ReadProperty(const YAML::Node& node, const std::string& key, std::string* out) {
  if (!node.IsScalar()) return Expected(key, "a scalar value (a string or a number)", node);
  *out = node.Scalar();
  return Status::Ok();
}

Status ReadProperties(const YAML::Node& node, const std::string& key,
                      std::map<std::string, std::string>* out) {
  std::map<std::string, std::string> properties;
  if (node.IsNull()) {
    out->clear();
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return Expected(key, "a map of librdkafka properties such as {fetch.min.bytes: 1}", node);
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar().empty()) {
      return Expected(key, "property names that are non-empty strings", it->first);
    }
    const std::string name = it->first.Scalar();
    if (properties.count(name) != 0) {
      return Status::InvalidArgument(key + "." + name + ": given twice");
    }
    HOTROW_RETURN_IF_ERROR(ReadProperty(it->second, key + "." + name, &properties[name]));
  }
  *out = std::move(properties);
  return Status::Ok();
}

}  // namespace

// Every key of CONTRACT.md "Configuration", in the order configs/hotrow.yaml lists them.
struct KeySpec {
  const char* name;
  Setter set;
};

namespace {

const std::vector<KeySpec>& Keys() {
  static const std::vector<KeySpec> keys = {
      {"kafka.brokers", [](const YAML::Node& v, const std::string& k,
                           Config* c) { return ReadString(v, k, false, &c->kafka.brokers); }},
      {"kafka.topics", [](const YAML::Node& v, const std::string& k,
                          Config* c) { return ReadTopics(v, k, &c->kafka.topics); }},
      {"kafka.group_id", [](const YAML::Node& v, const std::string& k,
                            Config* c) { return ReadString(v, k, false, &c->kafka.group_id); }},
      {"kafka.instance_id", [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->kafka.instance_id);
       }},
      {"kafka.properties", [](const YAML::Node& v, const std::string& k,
                              Config* c) { return ReadProperties(v, k, &c->kafka.properties); }},
      {"store.path", [](const YAML::Node& v, const std::string& k,
                        Config* c) { return ReadString(v, k, false, &c->store.path); }},
      {"store.ttl", [](const YAML::Node& v, const std::string& k,
                       Config* c) { return ReadDuration(v, k, 1, &c->store.ttl_ms); }},
      {"store.bucket", [](const YAML::Node& v, const std::string& k,
                          Config* c) { return ReadDuration(v, k, 1, &c->store.bucket_ms); }},
      {"store.clock",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         if (v.IsScalar() && v.Scalar() == "wall") {
           c->store.clock = store::ClockKind::kWall;
         } else if (v.IsScalar() && v.Scalar() == "stream") {
           c->store.clock = store::ClockKind::kStream;
         } else {
           return Expected(k, "wall or stream", v);
         }
         return Status::Ok();
       }},
      {"store.block_cache",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadSize(v, k, int64_t{1} << 20, int64_t{1} << 40, &c->store.block_cache_bytes);
       }},
      {"store.write_buffer",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadSize(v, k, int64_t{4} << 20, int64_t{1} << 40, &c->store.write_buffer_bytes);
       }},
      {"store.partitioned_index", [](const YAML::Node& v, const std::string& k,
                                     Config* c) { return ReadBool(v, k, &c->store.partitioned_index); }},
      {"store.compression",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         if (v.IsScalar() && v.Scalar() == "lz4") {
           c->store.compression = true;
         } else if (v.IsScalar() && v.Scalar() == "none") {
           c->store.compression = false;
         } else {
           return Expected(k, "lz4 or none", v);
         }
         return Status::Ok();
       }},
      {"store.mmap_reads", [](const YAML::Node& v, const std::string& k,
                              Config* c) { return ReadBool(v, k, &c->store.mmap_reads); }},
      {"keying.salts",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t salts = 0;
         HOTROW_RETURN_IF_ERROR(
             ReadInteger(v, k, 1, keying::kMaxSalts, "an integer from 1 to 256", &salts));
         c->keying.salts = static_cast<int>(salts);
         return Status::Ok();
       }},
      {"keying.salt_by",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         std::optional<keying::SaltBy> by;
         if (v.IsScalar()) by = keying::ParseSaltBy(v.Scalar());
         if (!by) return Expected(k, "record, id or adaptive", v);
         c->keying.salt_by = *by;
         return Status::Ok();
       }},
      {"keying.hot_share",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadHotShare(v, k, &c->keying.hot_share);
       }},
      {"ingest.batch_max_events",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadInteger(v, k, 1, 1'000'000, "an integer from 1 to 1000000",
                            &c->ingest.batch_max_events);
       }},
      {"ingest.writers",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadInteger(v, k, 0, 16, "an integer from 0 to 16 (0: the machine's cores)",
                            &c->ingest.writers);
       }},
      {"ingest.batch_max_ms",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadMilliseconds(
             v, k, 1, 3'600'000,
             "a duration from 1ms to 1h such as 200ms, or an integer of milliseconds",
             &c->ingest.batch_max_ms);
       }},
      {"ingest.id_field", [](const YAML::Node& v, const std::string& k,
                             Config* c) { return ReadDottedPath(v, k, &c->ingest.id_field); }},
      {"ingest.ts_field", [](const YAML::Node& v, const std::string& k,
                             Config* c) { return ReadDottedPath(v, k, &c->ingest.ts_field); }},
      {"ingest.max_future",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadDuration(v, k, 0, &c->ingest.max_future_ms);
       }},
      {"ingest.dead_letter_topic",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->ingest.dead_letter_topic);
       }},
      {"ingest.stall_after",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadDuration(v, k, 1, &c->ingest.stall_after_ms);
       }},
      {"ingest.format",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         const std::string text = v.IsScalar() ? v.Scalar() : "";
         if (text == "json") {
           c->ingest.format.format = ingest::Format::kJson;
         } else if (text == "avro") {
           c->ingest.format.format = ingest::Format::kAvro;
         } else if (text == "protobuf") {
           c->ingest.format.format = ingest::Format::kProtobuf;
         } else {
           return Expected(k, "json, avro or protobuf", v);
         }
         return Status::Ok();
       }},
      {"ingest.schema_registry.url",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         HOTROW_RETURN_IF_ERROR(ReadString(v, k, true, &c->ingest.format.registry_url));
         const std::string& url = c->ingest.format.registry_url;
         if (!url.empty() && url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
           return Expected(k, "an http:// or https:// URL such as http://127.0.0.1:8081", v);
         }
         return Status::Ok();
       }},
      {"ingest.schema_registry.user_info",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->ingest.format.registry_user_info);
       }},
      {"ingest.schema_registry.user_info_file",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->ingest.format.registry_user_info_file);
       }},
      {"ingest.schema_registry.ca",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->ingest.format.registry_ca);
       }},
      {"ingest.max_decoded_bytes",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t bytes = 0;
         HOTROW_RETURN_IF_ERROR(ReadSize(v, k, int64_t{64} << 10, int64_t{1} << 30, &bytes));
         c->ingest.format.max_decoded_bytes = static_cast<size_t>(bytes);
         return Status::Ok();
       }},
      {"ingest.avro.schema_file",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->ingest.format.avro_schema_file);
       }},
      {"ingest.protobuf.descriptor_set",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->ingest.format.protobuf_descriptor_set);
       }},
      {"ingest.protobuf.message",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->ingest.format.protobuf_message);
       }},
      {"ingest.protobuf.legacy_indexes",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadBool(v, k, &c->ingest.format.protobuf_legacy_indexes);
       }},
      {"ingest.protobuf.well_known",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         if (!v.IsScalar() || (v.Scalar() != "json" && v.Scalar() != "message")) {
           return Expected(k, "json or message", v);
         }
         c->ingest.format.protobuf_well_known_json = v.Scalar() == "json";
         return Status::Ok();
       }},
      {"ingest.include_meta", [](const YAML::Node& v, const std::string& k,
                                 Config* c) { return ReadBool(v, k, &c->ingest.include_meta); }},
      {"index.fields", [](const YAML::Node& v, const std::string& k,
                          Config* c) { return ReadIndexFields(v, k, &c->index.fields); }},
      {"http.listen", [](const YAML::Node& v, const std::string& k,
                         Config* c) { return ReadListen(v, k, &c->http.listen); }},
      {"http.io_threads",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t threads = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(v, k, 0, 256, "an integer from 0 to 256", &threads));
         c->http.io_threads = static_cast<int>(threads);
         return Status::Ok();
       }},
      {"http.threads",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t threads = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(v, k, 2, 1024, "an integer from 2 to 1024", &threads));
         c->http.threads = static_cast<int>(threads);
         c->warnings.push_back(
             "http.threads is retired and ignored: connections no longer hold a thread each; "
             "http.io_threads sets the I/O threads (default: the number of cores)");
         return Status::Ok();
       }},
      {"http.max_connections",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadInteger(v, k, 1, 1000000, "an integer from 1 to 1000000",
                            &c->http.max_connections);
       }},
      {"http.idle_timeout", [](const YAML::Node& v, const std::string& k,
                               Config* c) { return ReadDuration(v, k, 1, &c->http.idle_timeout_ms); }},
      {"http.header_timeout",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadDuration(v, k, 1, &c->http.header_timeout_ms);
       }},
      {"http.max_streams",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t n = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(v, k, 1, 100000, "an integer from 1 to 100000", &n));
         c->http.max_streams = static_cast<int>(n);
         return Status::Ok();
       }},
      {"http.stream_buffer",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t n = 0;
         HOTROW_RETURN_IF_ERROR(
             ReadInteger(v, k, 1, 1000000, "an integer from 1 to 1000000", &n));
         c->http.stream_buffer = static_cast<int>(n);
         return Status::Ok();
       }},
      {"http.token_file", [](const YAML::Node& v, const std::string& k,
                             Config* c) { return ReadString(v, k, true, &c->http.token_file); }},
      {"http.allow_open", [](const YAML::Node& v, const std::string& k,
                             Config* c) { return ReadBool(v, k, &c->http.allow_open); }},
      {"http.tls_cert", [](const YAML::Node& v, const std::string& k,
                           Config* c) { return ReadString(v, k, true, &c->http.tls_cert); }},
      {"http.tls_key", [](const YAML::Node& v, const std::string& k,
                          Config* c) { return ReadString(v, k, true, &c->http.tls_key); }},
      {"query.threads",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t threads = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(
             v, k, 0, 256, "an integer from 0 to 256 (0: the number of cores)", &threads));
         c->query.threads = static_cast<int>(threads);
         return Status::Ok();
       }},
      {"query.max_concurrent",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t max = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(v, k, 1, 1023, "an integer from 1 to 1023", &max));
         c->query.max_concurrent = static_cast<int>(max);
         return Status::Ok();
       }},
      {"query.queue_wait",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadMilliseconds(v, k, 0, 60'000,
                                 "a duration from 0 to 60s such as 1s or 250ms (0: a query beyond "
                                 "query.max_concurrent is refused at once)",
                                 &c->query.queue_wait_ms);
       }},
      {"query.last_cache",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t depth = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(
             v, k, 0, 1000, "an integer from 0 to 1000 (0: no cache)", &depth));
         c->query.last_cache = static_cast<int>(depth);
         return Status::Ok();
       }},
      {"query.last_cache_bytes",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadSize(v, k, int64_t{1} << 20, int64_t{1} << 40, &c->query.last_cache_bytes);
       }},
      {"cluster.peers", [](const YAML::Node& v, const std::string& k,
                           Config* c) { return ReadPeers(v, k, &c->cluster.peers); }},
      {"cluster.peer_timeout_ms",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadMilliseconds(
             v, k, 1, 60'000,
             "a duration from 1ms to 60s such as 500ms, or an integer of milliseconds",
             &c->cluster.peer_timeout_ms);
       }},
      {"cluster.peer_ca", [](const YAML::Node& v, const std::string& k,
                             Config* c) { return ReadString(v, k, true, &c->cluster.peer_ca); }},
      {"cluster.peer_token_file",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadString(v, k, true, &c->cluster.peer_token_file);
       }},
      {"cluster.max_staleness",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadMilliseconds(v, k, 1, 3'600'000,
                                 "a duration from 1ms to 1h such as 5s, or an integer of "
                                 "milliseconds",
                                 &c->cluster.max_staleness_ms);
       }},
      {"cluster.route_by_key",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         Result<ingest::KeyPartitioner> p =
             v.IsScalar() ? ingest::ParseKeyPartitioner(v.Scalar())
                          : Result<ingest::KeyPartitioner>(Status::InvalidArgument(""));
         if (!p.ok()) return Expected(k, "off, murmur2 or crc32", v);
         c->cluster.route_by_key = *p;
         return Status::Ok();
       }},
      {"cluster.standby_replicas",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t replicas = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(
             v, k, 0, 15, "an integer from 0 to 15, at most the group's size - 1", &replicas));
         c->cluster.standby_replicas = static_cast<int>(replicas);
         return Status::Ok();
       }},
  };
  return keys;
}

}  // namespace

const KeySpec* FindKey(std::string_view name) {
  for (const KeySpec& spec : Keys()) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

std::string SectionNames() {
  std::vector<std::string> names;
  for (const KeySpec& spec : Keys()) {
    std::string section(std::string_view(spec.name).substr(0, std::string_view(spec.name).find('.')));
    if (std::find(names.begin(), names.end(), section) == names.end()) names.push_back(section);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

bool IsSection(std::string_view name) {
  for (const KeySpec& spec : Keys()) {
    std::string_view full = spec.name;
    if (full.substr(0, full.find('.')) == name) return true;
  }
  return false;
}

std::vector<std::string> RetiredConfigKeyNames() { return {"http.threads"}; }

std::vector<std::string> ConfigKeyNames() {
  const std::vector<std::string> retired = RetiredConfigKeyNames();
  std::vector<std::string> names;
  for (const KeySpec& spec : Keys()) {
    if (std::find(retired.begin(), retired.end(), spec.name) == retired.end()) {
      names.emplace_back(spec.name);
    }
  }
  return names;
}

bool IsSubsection(std::string_view name) {
  for (const KeySpec& spec : Keys()) {
    std::string_view full = spec.name;
    if (full.size() > name.size() + 1 && full.substr(0, name.size()) == name &&
        full[name.size()] == '.') {
      return true;
    }
  }
  return false;
}

// Sets one key, "section.key" or "kafka.properties.<name>" (one librdkafka property).
Status SetKey(const std::string& key, const YAML::Node& value, Config* config) {
  if (const KeySpec* spec = FindKey(key)) return spec->set(value, key, config);
  static const std::string kPropertyPrefix = "kafka.properties.";
  if (key.size() > kPropertyPrefix.size() &&
      key.compare(0, kPropertyPrefix.size(), kPropertyPrefix) == 0) {
    return ReadProperty(value, key, &config->kafka.properties[key.substr(kPropertyPrefix.size())]);
  }
  return Status::InvalidArgument(key + ": unknown key (see configs/hotrow.yaml for every key)");
}

}  // namespace hotrow::config
