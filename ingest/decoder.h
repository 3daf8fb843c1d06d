#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hotrow::ingest {

struct SchemaFetchStats;  // schema_fetcher.h

// The default bound on the JSON text of one decoded record (ingest.max_decoded_bytes): 16 MiB,
// room for a 1 MiB record that grows several times (booleans 5x, doubles 3x).
inline constexpr size_t kDefaultMaxDecodedBytes = size_t{16} << 20;

// The encodings of a record value that ingest.format names (CONTRACT.md "Input formats").
enum class Format {
  kJson,      // the value is the JSON object itself (no decoder)
  kAvro,      // Avro binary, framed (Confluent) with a registry, else unframed with one schema
  kProtobuf,  // Protobuf binary, framed (Confluent) with a registry, else unframed
};

// "json", "avro" or "protobuf".
const char* FormatName(Format format);

// How record values are decoded (ingest.format and the keys beside it). One of two sources of
// schemas applies: the registry (registry_url set: every record carries Confluent's framing), or
// one local schema (avro_schema_file; protobuf_descriptor_set + protobuf_message: no framing).
struct FormatOptions {
  // ingest.format. Default: JSON.
  Format format = Format::kJson;
  // ingest.schema_registry.url: "http://host:port" or "https://...", maybe with a path prefix.
  // Default: empty (no registry).
  std::string registry_url;
  // ingest.schema_registry.user_info: "user:password" for basic auth; or the file holding it
  // (ingest.schema_registry.user_info_file, read once at start). Defaults: empty (no auth).
  std::string registry_user_info;
  std::string registry_user_info_file;
  // ingest.schema_registry.ca: PEM file of the CAs an https registry's certificate is verified
  // against. Default: empty (the system's CAs).
  std::string registry_ca;
  // ingest.avro.schema_file: one Avro writer schema (JSON) for unframed records.
  std::string avro_schema_file;
  // ingest.protobuf.descriptor_set (`protoc --include_imports --descriptor_set_out`) and
  // ingest.protobuf.message (the message's full name) for unframed records.
  std::string protobuf_descriptor_set;
  std::string protobuf_message;
  // ingest.protobuf.legacy_indexes: framed records carry the message-index list as
  // python3-confluent-kafka before 1.8.2 writes it (plain varints; Confluent's
  // use.deprecated.format) rather than zigzag. Default: false.
  bool protobuf_legacy_indexes = false;
  // ingest.protobuf.well_known: true ("json") writes Protobuf's well-known types as proto3's
  // JSON mapping does (a Timestamp as an RFC 3339 string, usable as ingest.ts_field); false
  // ("message") as the messages they are. Default: true.
  bool protobuf_well_known_json = true;
  // How long a registry request may take to connect and answer. Default: 5 s.
  int64_t registry_timeout_ms = 5000;
  // ingest.max_decoded_bytes: the most JSON text one record may decode to; a record that would
  // decode to more is rejected too_large, checked before the text grows. Default: 16 MiB.
  size_t max_decoded_bytes = kDefaultMaxDecodedBytes;
  // Where the registry's fetcher (schema_fetcher.h: schemas are fetched off the decoding thread)
  // counts its fetches; the ingestor reads them. Default: null (counted nowhere).
  std::shared_ptr<SchemaFetchStats> fetch_stats;
  // ingest.ts_field: a decoder whose schemas give the unit of the integer it names says it
  // (Decoder::TimeUnitsPerMs). Default: empty (none named).
  std::string ts_field;
};

// What Decoder::Decode made of a value.
enum class DecodeStatus {
  kOk,      // *json holds the JSON text of the object the value denotes
  kReject,  // the record's fault: *reject names the reason (kReject* of ingestor.h)
  kWait,    // not the record's fault (the registry cannot be reached or answers 5xx): the
            // record must be decoded again later; *detail says why
};

// Turns a record value of one binary format into the JSON text of the object it denotes, which
// then goes through RecordParser like a JSON record (one path for id, time, index and payload).
// One file per format (avro_decoder.h, protobuf_decoder.h); MakeDecoder picks one.
//
// Thread-safety: not thread-safe (it reuses buffers and caches schemas); one per thread.
class Decoder {
 public:
  virtual ~Decoder() = default;
  // Decodes `value` into `*json` (replaced). On kReject sets *reject and *detail; on kWait
  // *detail.
  virtual DecodeStatus Decode(std::string_view value, std::string* json, const char** reject,
                              std::string* detail) = 0;
  // What an integer at FormatOptions::ts_field counts per millisecond in the value last decoded
  // kOk, as its schema says: 1000 for an Avro timestamp-micros, 1000000 for timestamp-nanos.
  // Default: 1 (milliseconds).
  virtual int64_t TimeUnitsPerMs() const { return 1; }
};

// decoder->Decode, with what no decoder can vouch against turned into a rejected record rather
// than a dead poller: a std::bad_alloc (the record asked for more memory than there is) is
// too_large.
DecodeStatus DecodeRecord(Decoder* decoder, std::string_view value, std::string* json,
                          const char** reject, std::string* detail);

// The decoder of `options.format`: nullptr for JSON. Fails with InvalidArgument (a one-line
// message naming the key) for a bad combination of keys, an unreadable file, a schema that does
// not parse or a message the descriptor set lacks. Makes no network request.
Result<std::unique_ptr<Decoder>> MakeDecoder(const FormatOptions& options);

}  // namespace hotrow::ingest
