// Fuzz target: the Avro decoder (ingest/avro_decoder.h), framing and payload bytes.
//
// Input: byte 0 picks the mode (even: framed, schemas by id from an in-memory registry: id 1 the
// format tests' rich schema, tests/ingest/formats/reading_v1.avsc, id 2 a union at the top, any
// other id 404; odd: unframed, every record of the rich schema); the rest is the record value.
//
// Properties: a decode is never kWait (the registry here always answers); a reject names
// not_framed, unknown_schema, bad_avro or too_large (unframed: bad_avro or too_large) and says
// why; an accepted value is valid JSON (nlohmann reads it), an object under the record schema;
// the size oracle: the text, accepted or not, never passes the decoder's bound (16 KiB here, so
// that inputs of a few hundred bytes reach it: an array of nulls in the union schema).
#include <cstdint>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ingest/avro_decoder.h"
#include "ingest/ingestor.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr size_t kFuzzLimit = 16 << 10;

using hotrow::Result;
using hotrow::Status;
using hotrow::ingest::DecodeStatus;
using hotrow::ingest::RegistrySchema;

constexpr const char* kRecordSchema = R"({"type": "record", "name": "Reading", "fields": [
  {"name": "device_id", "type": "string"}, {"name": "seq", "type": "long"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "temp", "type": "double"}, {"name": "humidity", "type": "float"},
  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OK", "DEGRADED"]}},
  {"name": "alarm", "type": "boolean"}, {"name": "raw", "type": "bytes"},
  {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
  {"name": "mac", "type": {"type": "fixed", "name": "Mac", "size": 6}},
  {"name": "note", "type": ["null", "string"]},
  {"name": "codes", "type": {"type": "array", "items": "int"}},
  {"name": "tags", "type": {"type": "map", "values": "string"}},
  {"name": "site", "type": {"type": "record", "name": "Site",
     "fields": [{"name": "name", "type": "string"}, {"name": "floor", "type": "int"}]}}]})";
constexpr const char* kUnionSchema = R"(["null", "long", {"type": "map", "values": "Reading2"},
  {"type": "record", "name": "Reading2", "fields": [{"name": "a", "type": "string"}]}])";

class FixedRegistry final : public hotrow::ingest::SchemaSource {
 public:
  Result<RegistrySchema> ById(uint32_t id, bool) override {
    if (id == 1) return RegistrySchema{kRecordSchema, "AVRO", {}};
    if (id == 2) return RegistrySchema{kUnionSchema, "AVRO", {}};
    return Status::NotFound("no schema id " + std::to_string(id));
  }
  Result<RegistrySchema> BySubjectVersion(const std::string&, int, bool) override {
    return Status::NotFound("none");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static auto framed =
      hotrow::ingest::AvroDecoder::WithRegistry(std::make_unique<FixedRegistry>(), kFuzzLimit);
  static auto unframed = [] {
    auto made = hotrow::ingest::AvroDecoder::WithSchema(kRecordSchema, kFuzzLimit);
    FUZZ_CHECK(made.ok());
    return std::move(made).value();
  }();
  const bool is_framed = (data[0] & 1) == 0;
  hotrow::ingest::AvroDecoder* decoder = is_framed ? framed.get() : unframed.get();
  const std::string_view value(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string json, detail;
  const char* reject = nullptr;
  const DecodeStatus status = decoder->Decode(value, &json, &reject, &detail);
  FUZZ_CHECK(status != DecodeStatus::kWait);
  FUZZ_CHECK(json.size() <= kFuzzLimit);
  if (status == DecodeStatus::kReject) {
    FUZZ_CHECK(reject != nullptr && !detail.empty());
    const std::string r = reject;
    FUZZ_CHECK(r == hotrow::ingest::kRejectBadAvro || r == hotrow::ingest::kRejectTooLarge ||
               (is_framed && (r == hotrow::ingest::kRejectNotFramed ||
                              r == hotrow::ingest::kRejectUnknownSchema)));
    return 0;
  }
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  FUZZ_CHECK(!parsed.is_discarded());
  if (!is_framed) FUZZ_CHECK(parsed.is_object());
  return 0;
}
