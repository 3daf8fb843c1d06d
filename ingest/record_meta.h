#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

// The parts of a Kafka record beside its value that hotrow can use as fields (CONTRACT.md "Input
// formats"): `ingest.id_field`, `ingest.ts_field` and `index.fields` may name `@key`,
// `@header.NAME` (the last header of that name) or `@timestamp` (the record's Kafka timestamp, ms)
// instead of a path into the value; `ingest.include_meta: true` adds them to the stored payload
// as "_kafka": {"key": K, "headers": {NAME: V, ...}, "timestamp": MS}, where a key or header
// value is a JSON string when it is valid UTF-8, else its base64, and null when absent.
namespace hotrow::ingest {

// One header of a record; `null` for a header with no value.
struct RecordHeader {
  std::string_view name;
  std::string_view value;
  bool null = false;
};

// What a field name refers to.
struct MetaRef {
  enum class Kind { kNone, kKey, kHeader, kTimestamp };
  Kind kind = Kind::kNone;  // kNone: a path into the value
  std::string header;       // kHeader: the header's name
};

// "@key" -> kKey, "@header.NAME" -> kHeader NAME, "@timestamp" -> kTimestamp; a name that does not
// start with '@' -> kNone. False for any other name starting with '@' (and "@header." with no
// name): config rejects it at start-up.
bool ParseMetaRef(std::string_view field, MetaRef* out);

// The last header named `name`, or nullptr.
const RecordHeader* FindHeader(std::span<const RecordHeader> headers, std::string_view name);

// Appends `object_text` (the JSON text of an object) with the "_kafka" member added before its
// closing brace. Text that does not end in '}' is appended unchanged (the parser then rejects it
// as not a JSON object): nothing can turn invalid text into a valid object.
void AppendWithMeta(std::string_view object_text, std::string_view key, bool key_null,
                    std::span<const RecordHeader> headers, int64_t kafka_ts_ms, std::string* out);

}  // namespace hotrow::ingest
