#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/record_meta.h"
#include "keying/index_key.h"

namespace hotrow::ingest {

// What the parser needs of a Kafka record. The views point into the consumer's message and are
// valid for the duration of one Parse call.
struct RecordView {
  std::string_view value;    // the record value; empty for a null value
  std::string_view key;      // the record key; empty for a null key
  int64_t kafka_ts_ms = -1;  // the record's Kafka timestamp; -1 when it has none
  // What an integer at ts_field counts per millisecond, as the value's schema says
  // (Decoder::TimeUnitsPerMs): 1000 for microseconds, 1000000 for nanoseconds. Default: 1.
  int64_t ts_units_per_ms = 1;
  // The record's headers, when a field names one (@header.NAME); else may be left empty.
  std::span<const RecordHeader> headers = {};
};

struct ParserOptions {
  // Dotted path of the event id ("event_id", "device.id"); empty means always the record key.
  // This and ts_field and index_fields may also name the record's key, a header or its Kafka
  // timestamp: "@key", "@header.NAME", "@timestamp" (record_meta.h). Default: "event_id".
  std::string id_field = "event_id";
  // Dotted path of the event time; empty means always the Kafka timestamp. Default: "ts".
  std::string ts_field = "ts";
  // Dotted paths of the indexed fields (index.fields), looked up in the same parse as the id and
  // the time. Default: none.
  std::vector<std::string> index_fields;
};

// The outcome of parsing one record: either an event (id and time) or the reason it is rejected,
// one of kReject* in ingest/ingestor.h, with a one-line detail for logs.
struct ParsedRecord {
  const char* reject = nullptr;  // nullptr when the record is an event
  std::string detail;            // why, when rejected: "ts: expected ms or RFC 3339, got true"
  std::string id;                // the event id, when not rejected
  int64_t ts_ms = 0;             // the event time, when not rejected
  // The indexed fields found as scalars, as text (keying/index_key.h), when not rejected; in the
  // order of ParserOptions::index_fields. The others are counted, not indexed, never a reject:
  uint32_t index_absent = 0;      // absent or null
  uint32_t index_not_scalar = 0;  // an object or an array (or a path through a non-object)
  uint32_t index_too_long = 0;    // text over keying::kMaxIndexValueSize bytes
  std::vector<keying::IndexEntry> index;
  bool ok() const { return reject == nullptr; }
};

// Turns one Kafka record into an event id and an event time, or a reject reason. The JSON is
// validated in full (simdjson DOM), so only well-formed JSON objects are ever stored.
//
// Rules (CONTRACT.md "Events on the wire"):
// - the value must be a JSON object, else kRejectNotJson;
// - id: the string at id_field, or an integer there taken as its decimal text; when id_field is
//   absent or null, the record key. Anything else there (a float, a bool, an object) or an empty
//   id is kRejectNoId; an id over 256 bytes is kRejectIdTooLong; an id that is not
//   valid UTF-8 (only a record key can be) is kRejectIdNotUtf8;
// - time: an integer >= 0 (ms since the epoch) or a string (RFC 3339 or integer ms) at ts_field;
//   when ts_field is absent or null, the Kafka timestamp. Anything else, a negative or
//   unparsable value, or no Kafka timestamp to fall back on is kRejectBadTime;
// - a time below `window_start_ms` is kRejectExpired, above `max_time_ms` kRejectFuture.
//
// - each index field found as a string, a number or a boolean gives an IndexEntry: a string as is,
//   a number or boolean as its JSON text. Absent, null, an object or array, or text over
//   keying::kMaxIndexValueSize bytes give none and are counted in index_absent / index_not_scalar
//   / index_too_long.
//
// - a field named @key, @header.NAME or @timestamp (record_meta.h) is read from the record, not
//   the value, by the same rules: the key and a header's value as strings (absent when null),
//   the Kafka timestamp as an integer (absent when the record has none). As an index field, a key
//   or header that is not valid UTF-8 counts in index_not_scalar.
//
// A path segment cannot contain '.'; a field whose name holds a dot is not addressable.
//
// Thread-safety: not thread-safe (it reuses its parse buffers); one per thread.
class RecordParser {
 public:
  explicit RecordParser(const ParserOptions& options);
  ~RecordParser();
  RecordParser(const RecordParser&) = delete;
  RecordParser& operator=(const RecordParser&) = delete;

  // Parses `record`. Events older than `window_start_ms` or newer than `max_time_ms` are
  // rejected as expired / future. Fills `*out` (reusing its strings' capacity).
  void Parse(const RecordView& record, int64_t window_start_ms, int64_t max_time_ms,
             ParsedRecord* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits a dotted path into its segments: "a.b.c" -> {"a", "b", "c"}. Empty for "".
std::vector<std::string> SplitDottedPath(std::string_view path);

}  // namespace hotrow::ingest
