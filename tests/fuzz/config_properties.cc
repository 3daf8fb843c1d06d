#include "tests/fuzz/config_properties.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/time_format.h"
#include "keying/row_key.h"
#include "keying/salter.h"
#include "tests/fuzz/fuzz_check.h"

namespace hotrow::fuzz {
namespace {

using config::Config;

bool ValidDottedPath(const std::string& path) {
  return !path.empty() && path.front() != '.' && path.back() != '.' &&
         path.find("..") == std::string::npos;
}

void CheckRanges(const Config& c) {
  FUZZ_CHECK(!c.kafka.brokers.empty() && !c.kafka.group_id.empty() && !c.store.path.empty());
  FUZZ_CHECK(!c.kafka.topics.empty());
  for (const std::string& topic : c.kafka.topics) FUZZ_CHECK(!topic.empty());
  for (const auto& [name, value] : c.kafka.properties) FUZZ_CHECK(!name.empty());
  FUZZ_CHECK(c.store.ttl_ms >= 1 && c.store.bucket_ms >= 1 && c.store.bucket_ms <= c.store.ttl_ms);
  FUZZ_CHECK(c.keying.salts >= 1 && c.keying.salts <= keying::kMaxSalts);
  FUZZ_CHECK(c.ingest.batch_max_events >= 1 && c.ingest.batch_max_events <= 1'000'000);
  FUZZ_CHECK(c.ingest.batch_max_ms >= 1 && c.ingest.batch_max_ms <= 3'600'000);
  FUZZ_CHECK(ValidDottedPath(c.ingest.id_field) && ValidDottedPath(c.ingest.ts_field));
  FUZZ_CHECK(c.ingest.max_future_ms >= 0 && c.ingest.stall_after_ms >= 1);
  FUZZ_CHECK(c.query.threads >= 0 && c.query.threads <= 256);
  FUZZ_CHECK(c.http.listen.find(':') != std::string::npos);
  FUZZ_CHECK(!c.Summary().empty());
}

// A YAML double-quoted scalar, so that any string reads back as itself.
std::string Quoted(const std::string& text) {
  YAML::Emitter out;
  out << YAML::DoubleQuoted << text;
  return out.c_str();
}

// Every key of `c`, written as the --set overrides that would rebuild it from the defaults.
std::vector<std::string> AsOverrides(const Config& c) {
  std::string topics = "[";
  for (const std::string& topic : c.kafka.topics) {
    topics += (topics.size() > 1 ? ", " : "") + Quoted(topic);
  }
  std::string properties = "{";
  for (const auto& [name, value] : c.kafka.properties) {
    properties += (properties.size() > 1 ? ", " : "") + Quoted(name) + ": " + Quoted(value);
  }
  return {
      "kafka.brokers=" + Quoted(c.kafka.brokers),
      "kafka.topics=" + topics + "]",
      "kafka.group_id=" + Quoted(c.kafka.group_id),
      "kafka.properties=" + properties + "}",
      "store.path=" + Quoted(c.store.path),
      "store.ttl=" + FormatDurationMs(c.store.ttl_ms),
      "store.bucket=" + FormatDurationMs(c.store.bucket_ms),
      std::string("store.clock=") + (c.store.clock == store::ClockKind::kWall ? "wall" : "stream"),
      "keying.salts=" + std::to_string(c.keying.salts),
      "keying.salt_by=" + std::string(keying::SaltByName(c.keying.salt_by)),
      "ingest.batch_max_events=" + std::to_string(c.ingest.batch_max_events),
      "ingest.batch_max_ms=" + std::to_string(c.ingest.batch_max_ms),
      "ingest.id_field=" + Quoted(c.ingest.id_field),
      "ingest.ts_field=" + Quoted(c.ingest.ts_field),
      "ingest.max_future=" + FormatDurationMs(c.ingest.max_future_ms),
      "ingest.dead_letter_topic=" + Quoted(c.ingest.dead_letter_topic),
      "ingest.stall_after=" + FormatDurationMs(c.ingest.stall_after_ms),
      "http.listen=" + Quoted(c.http.listen),
      "query.threads=" + std::to_string(c.query.threads),
  };
}

// yaml-cpp's emitter rewrites bytes that are not valid UTF-8 and writes control characters raw,
// which YAML does not allow, so only printable ASCII is expected to survive Quoted() unchanged; that
// is a limit of this check, not of the loader.
bool AllPrintableAscii(const Config& c) {
  std::vector<const std::string*> strings = {&c.kafka.brokers, &c.kafka.group_id, &c.store.path,
                                             &c.ingest.id_field, &c.ingest.ts_field,
                                             &c.ingest.dead_letter_topic, &c.http.listen};
  for (const std::string& topic : c.kafka.topics) strings.push_back(&topic);
  for (const auto& [name, value] : c.kafka.properties) {
    strings.push_back(&name);
    strings.push_back(&value);
  }
  for (const std::string* s : strings) {
    for (char ch : *s) {
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) {
        return false;
      }
    }
  }
  return true;
}

void CheckSame(const Config& a, const Config& b) {
  FUZZ_CHECK(a.kafka.brokers == b.kafka.brokers);
  FUZZ_CHECK(a.kafka.topics == b.kafka.topics);
  FUZZ_CHECK(a.kafka.group_id == b.kafka.group_id);
  FUZZ_CHECK(a.kafka.properties == b.kafka.properties);
  FUZZ_CHECK(a.store.path == b.store.path);
  FUZZ_CHECK(a.store.ttl_ms == b.store.ttl_ms);
  FUZZ_CHECK(a.store.bucket_ms == b.store.bucket_ms);
  FUZZ_CHECK(a.store.clock == b.store.clock);
  FUZZ_CHECK(a.keying.salts == b.keying.salts);
  FUZZ_CHECK(a.keying.salt_by == b.keying.salt_by);
  FUZZ_CHECK(a.ingest.batch_max_events == b.ingest.batch_max_events);
  FUZZ_CHECK(a.ingest.batch_max_ms == b.ingest.batch_max_ms);
  FUZZ_CHECK(a.ingest.id_field == b.ingest.id_field);
  FUZZ_CHECK(a.ingest.ts_field == b.ingest.ts_field);
  FUZZ_CHECK(a.ingest.max_future_ms == b.ingest.max_future_ms);
  FUZZ_CHECK(a.ingest.dead_letter_topic == b.ingest.dead_letter_topic);
  FUZZ_CHECK(a.ingest.stall_after_ms == b.ingest.stall_after_ms);
  FUZZ_CHECK(a.http.listen == b.http.listen);
  FUZZ_CHECK(a.query.threads == b.query.threads);
}

}  // namespace

void CheckLoadResult(const Result<Config>& loaded) {
  if (!loaded.ok()) {
    const std::string& message = loaded.status().message();
    FUZZ_CHECK(loaded.status().IsInvalidArgument());
    FUZZ_CHECK(!message.empty() && message.find_first_of("\r\n") == std::string::npos);
    return;
  }
  CheckRanges(*loaded);
  if (!AllPrintableAscii(*loaded)) return;
  Result<Config> again = config::LoadConfig("", AsOverrides(*loaded));
  if (!again.ok()) std::fprintf(stderr, "reloading failed: %s\n", again.status().ToString().c_str());
  FUZZ_CHECK(again.ok());
  CheckSame(*loaded, *again);
}

}  // namespace hotrow::fuzz
