#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "ingest/decoder.h"

// The synthetic IoT reading (synthetic_producer.h) as Avro and as Protobuf, for `hotrow produce
// --format avro|protobuf` and the ingest benchmark: one schema per format, written here, and an
// encoder for each that writes the binary directly (the reading's shape is fixed). Decoded by
// hotrow, each gives the same JSON object as the JSON form of the reading:
//   {"event_id": "dev-000042", "ts": MS, "temp": 21.5, "humidity": 48.2, "battery": 87}
namespace hotrow::ingest {

struct SyntheticReading {
  std::string event_id;
  int64_t ts_ms = 0;
  double temp = 0;
  double humidity = 0;
  int32_t battery = 0;
};

// The Avro schema (JSON) of the reading: record hotrow.synthetic.Reading.
const std::string& SyntheticAvroSchema();
// The Protobuf file of the reading (hotrow/synthetic.proto, message hotrow.synthetic.Reading):
// a serialized FileDescriptorProto, and a FileDescriptorSet holding it.
const std::string& SyntheticProtoFile();
std::string SyntheticProtoDescriptorSet();
inline constexpr const char* kSyntheticProtoMessage = "hotrow.synthetic.Reading";

// The reading's JSON text, as SyntheticEvents writes it.
void AppendSyntheticJson(const SyntheticReading& r, std::string* out);
// The reading's Avro binary datum / Protobuf message (unframed).
void AppendSyntheticAvro(const SyntheticReading& r, std::string* out);
void AppendSyntheticProtobuf(const SyntheticReading& r, std::string* out);

// Registers the reading's schema of `format` under `subject` with the registry at `url`
// (POST /subjects/{subject}/versions) and returns its id. IOError when the registry cannot be
// asked or refuses.
Result<uint32_t> RegisterSyntheticSchema(const std::string& url, Format format,
                                         const std::string& subject);

}  // namespace hotrow::ingest
