#include "service/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string_view>

#include "common/byte_size.h"
#include "common/time_format.h"
#include "keying/row_key.h"

namespace hotrow::service {
namespace {

// Checks one value and stores it in the config. `key` ("store.ttl") names the key in messages: it
// is what a user looks up in configs/hotrow.yaml, whether the value came from the file or --set.
using Setter =
    std::function<Status(const YAML::Node& value, const std::string& key, Config* config)>;

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

// "host:port": port 0..65535, host an IPv4 address or a host name.
Status ReadListen(const YAML::Node& node, const std::string& key, std::string* out) {
  static const std::string kWhat =
      "host:port such as 127.0.0.1:8080 (an IPv4 address or a host name, a port from 0 to 65535)";
  if (!node.IsScalar()) return Expected(key, kWhat, node);
  const std::string& text = node.Scalar();
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return Expected(key, kWhat, node);
  const std::string host = text.substr(0, colon);
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return Expected(key, kWhat, node);
  }
  const std::string port_text = text.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535) {
    return Expected(key, kWhat, node);
  }
  *out = text;
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

// Every key of CONTRACT.md "Configuration", in the order configs/hotrow.yaml lists them.
struct KeySpec {
  const char* name;
  Setter set;
};

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
         if (!by) return Expected(k, "record or id", v);
         c->keying.salt_by = *by;
         return Status::Ok();
       }},
      {"ingest.batch_max_events",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         return ReadInteger(v, k, 1, 1'000'000, "an integer from 1 to 1000000",
                            &c->ingest.batch_max_events);
       }},
      {"ingest.batch_max_ms",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         static const std::string kWhat =
             "a duration from 1ms to 1h such as 200ms, or an integer of milliseconds";
         if (!v.IsScalar()) return Expected(k, kWhat, v);
         int64_t ms = 0;
         if (std::optional<int64_t> n = ParseInteger(v.Scalar())) {
           ms = *n;
         } else if (Result<int64_t> d = ParseDurationMs(v.Scalar()); d.ok()) {
           ms = *d;
         } else {
           return Expected(k, kWhat, v);
         }
         if (ms < 1 || ms > 3'600'000) return Expected(k, kWhat, v);
         c->ingest.batch_max_ms = ms;
         return Status::Ok();
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
      {"http.listen", [](const YAML::Node& v, const std::string& k,
                         Config* c) { return ReadListen(v, k, &c->http.listen); }},
      {"http.threads",
       [](const YAML::Node& v, const std::string& k, Config* c) {
         int64_t threads = 0;
         HOTROW_RETURN_IF_ERROR(ReadInteger(v, k, 2, 1024, "an integer from 2 to 1024", &threads));
         c->http.threads = static_cast<int>(threads);
         return Status::Ok();
       }},
      {"http.token_file", [](const YAML::Node& v, const std::string& k,
                             Config* c) { return ReadString(v, k, true, &c->http.token_file); }},
      {"http.allow_open", [](const YAML::Node& v, const std::string& k,
                             Config* c) { return ReadBool(v, k, &c->http.allow_open); }},
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
  };
  return keys;
}

const KeySpec* FindKey(std::string_view name) {
  for (const KeySpec& spec : Keys()) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

bool IsSection(std::string_view name) {
  for (const KeySpec& spec : Keys()) {
    std::string_view full = spec.name;
    if (full.substr(0, full.find('.')) == name) return true;
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
      return Status::InvalidArgument(
          name + ": unknown section (expected kafka, store, keying, ingest, http or query)");
    }
    if (!seen.insert(name).second) return Status::InvalidArgument(name + ": section given twice");
    // A copy: the iterator hands out a temporary pair, and a Node is only a handle.
    const YAML::Node keys = section->second;
    if (keys.IsNull()) continue;  // every key of the section commented out
    if (!keys.IsMap()) return Expected(name, "a map of keys", keys);
    for (auto entry = keys.begin(); entry != keys.end(); ++entry) {
      if (!entry->first.IsScalar()) return Expected(name, "key names", entry->first);
      const std::string key = name + "." + entry->first.Scalar();
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
  if (config.query.max_concurrent >= config.http.threads) {
    // A connection thread must stay free for /healthz, /readyz and /metrics however many queries
    // arrive.
    return Status::InvalidArgument(
        "query.max_concurrent: expected less than http.threads (" +
        std::to_string(config.http.threads) + ") so that health checks are always answered, got " +
        std::to_string(config.query.max_concurrent));
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
  return CheckWhole(*config);
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
  options.block_cache_bytes = static_cast<size_t>(store.block_cache_bytes);
  options.write_buffer_bytes = static_cast<size_t>(store.write_buffer_bytes);
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
  options.max_future_ms = ingest.max_future_ms;
  options.dead_letter_topic = ingest.dead_letter_topic;
  options.stall_after_ms = ingest.stall_after_ms;
  return options;
}

query::QueryOptions Config::ToQueryOptions() const {
  query::QueryOptions options;
  options.threads = query.threads;
  // The HTTP slots refuse first (HttpServerOptions::max_queries); this bounds in-process callers.
  options.max_concurrent_queries = query.max_concurrent;
  return options;
}

HttpServerOptions Config::ToHttpOptions() const {
  HttpServerOptions options;
  options.listen = http.listen;
  options.threads = http.threads;
  options.max_queries = query.max_concurrent;
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
         " batch=" + std::to_string(ingest.batch_max_events) + "/" +
         FormatDurationMs(ingest.batch_max_ms) + " id_field=" + ingest.id_field +
         " ts_field=" + ingest.ts_field + " max_future=" + FormatDurationMs(ingest.max_future_ms) +
         " dead_letter=" + (ingest.dead_letter_topic.empty() ? "none" : ingest.dead_letter_topic) +
         " stall_after=" + FormatDurationMs(ingest.stall_after_ms) + " listen=" + http.listen +
         " query.threads=" + (query.threads == 0 ? "auto" : std::to_string(query.threads)) +
         " block_cache=" + FormatByteSize(store.block_cache_bytes) +
         " write_buffer=" + FormatByteSize(store.write_buffer_bytes) +
         " http.threads=" + std::to_string(http.threads) +
         " query.max_concurrent=" + std::to_string(query.max_concurrent);
}

}  // namespace hotrow::service
