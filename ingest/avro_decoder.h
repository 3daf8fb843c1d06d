#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "ingest/decoder.h"
#include "ingest/schema_cache.h"
#include "ingest/schema_registry.h"

namespace hotrow::ingest {

// Avro record values to JSON text (CONTRACT.md "Input formats"). Avro C (libavro) parses the
// writer schema; the binary datum is read by this file's own walk of that parsed schema, which
// writes the JSON text as it reads, straight into the output buffer: Avro C's avro_value_read
// trusts the lengths and counts it reads (a negative bytes length asked malloc for 2^64 - n
// bytes: the fuzz target's first finding), and read behind a walk that checked them it cost 0.49 µs
// per record against this walk's 0.27 (bench/format_bench.cc); its avro_value_to_json builds a
// jansson tree and writes a union as {"type": value}.
//
// The mapping: a record or a map is an object, an array an array, a union its branch's value
// (null as null), an enum its symbol, bytes and fixed base64 unless they carry logicalType
// decimal (then the decimal's text as a string, "123.45"), int and long (timestamp-millis/micros,
// date, time-*) numbers (as written: a timestamp-micros used as ingest.ts_field is read in its
// unit, TimeUnitsPerMs), float and double numbers (NaN and the infinities as strings), strings as
// is. A string that is not valid UTF-8 is bad_avro.
//
// Two sources of writer schemas:
// - one schema (ingest.avro.schema_file): records are the bare Avro binary datum;
// - a registry: records carry Confluent's framing (confluent_framing.h); the schema of each id is
//   fetched once (GET /schemas/ids/{id}), its references by subject and version (GET
//   /subjects/{s}/versions/{v}, recursively), and kept (schema_cache.h: the least recently used
//   evicted past kMaxCachedSchemas, a failure remembered for 10 s). Records written under several
//   ids (schema evolution) are each read with their own writer schema.
//
// Rejects: not_framed (no magic byte 0 / too short), unknown_schema (the registry has no such id,
// or it is not an Avro schema, or it does not parse), bad_avro (the bytes do not read under the
// schema), too_large (its JSON text would pass max_decoded_bytes, or a decimal is longer than
// kMaxDecimalBytes: checked before each append, so neither memory nor CPU grows past the bound;
// an array of items that take no bytes, null or an empty record, is refused by its count). A
// decimal the spec calls invalid (a scale above its precision, a negative one) is read as its
// bytes, as the spec says. kWait when the registry cannot be asked.
//
// Thread-safety: not thread-safe; one per thread.
class AvroDecoder final : public Decoder {
 public:
  // Unframed records, all written with `schema_json`. InvalidArgument when it does not parse.
  // `ts_field` (ingest.ts_field): the path whose unit each writer schema says (TimeUnitsPerMs).
  static Result<std::unique_ptr<AvroDecoder>> WithSchema(
      std::string_view schema_json, size_t max_decoded_bytes = kDefaultMaxDecodedBytes,
      std::string_view ts_field = {});
  // Framed records, schemas from `registry`.
  static std::unique_ptr<AvroDecoder> WithRegistry(
      std::unique_ptr<SchemaSource> registry, size_t max_decoded_bytes = kDefaultMaxDecodedBytes,
      std::string_view ts_field = {});
  ~AvroDecoder() override;

  DecodeStatus Decode(std::string_view value, std::string* json, const char** reject,
                      std::string* detail) override;
  // 1000 when the writer schema of the value last decoded declares the long at ts_field
  // timestamp-micros or local-timestamp-micros, 1000000 for the -nanos ones, else 1.
  int64_t TimeUnitsPerMs() const override;

  // Decode in two steps, for the ingest benchmark's stages: the framing and the writer schema,
  // then the datum read and written as JSON text.
  DecodeStatus Read(std::string_view value, const char** reject, std::string* detail);
  bool WriteJson(std::string* json, std::string* detail);

 private:
  struct Writer;  // one writer schema, its Avro C value and its decimals
  AvroDecoder();
  // The writer of `id`, fetched and built on first use.
  DecodeStatus WriterFor(uint32_t id, Writer** writer, const char** reject, std::string* detail);

  std::vector<std::string> ts_path_;                    // ingest.ts_field's segments
  std::unique_ptr<SchemaSource> registry_;              // null when unframed
  std::unique_ptr<Writer> single_;                      // the one writer when unframed
  SchemaCache<Writer> by_id_;                           // when framed
  Writer* current_ = nullptr;                           // the writer of the value last located
  std::string_view body_;                               // its datum (into the caller's value)
  size_t max_decoded_bytes_ = kDefaultMaxDecodedBytes;  // the bound on a record's JSON text
  bool too_large_ = false;                              // why the last WriteJson failed
};

}  // namespace hotrow::ingest
