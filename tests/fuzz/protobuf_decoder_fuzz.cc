// Fuzz target: the Protobuf decoder (ingest/protobuf_decoder.h), framing (with the message-index
// list) and payload bytes.
//
// Input: byte 0 picks the mode (even: framed, id 1 served from memory as a registry would serve
// a schema with two messages, one nested type, a map, a oneof and every scalar kind; any other id
// 404; odd: unframed, every record the schema's second message); the rest is the record value.
//
// Properties: never kWait; a reject names not_framed, unknown_schema, bad_protobuf or too_large
// (unframed: bad_protobuf or too_large) and says why; an accepted value is a JSON object (nlohmann
// reads it); the size oracle: the text, accepted or not, never passes the decoder's bound (16 KiB
// here, so that inputs of a few hundred bytes reach it).
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/text_format.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ingest/ingestor.h"
#include "ingest/json_text.h"
#include "ingest/protobuf_decoder.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr size_t kFuzzLimit = 16 << 10;

using hotrow::Result;
using hotrow::Status;
using hotrow::ingest::DecodeStatus;
using hotrow::ingest::RegistrySchema;

constexpr const char* kFile = R"pb(
  name: "f.proto"
  package: "f"
  syntax: "proto3"
  message_type {
    name: "First"
    field { name: "x" number: 1 label: LABEL_OPTIONAL type: TYPE_SINT32 }
  }
  message_type {
    name: "All"
    field { name: "i64" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 }
    field { name: "u32" number: 2 label: LABEL_OPTIONAL type: TYPE_UINT32 }
    field { name: "f64" number: 3 label: LABEL_OPTIONAL type: TYPE_FIXED64 }
    field { name: "flt" number: 4 label: LABEL_OPTIONAL type: TYPE_FLOAT }
    field { name: "dbl" number: 5 label: LABEL_OPTIONAL type: TYPE_DOUBLE }
    field { name: "ok" number: 6 label: LABEL_OPTIONAL type: TYPE_BOOL }
    field { name: "text" number: 7 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "raw" number: 8 label: LABEL_OPTIONAL type: TYPE_BYTES }
    field {
      name: "color"
      number: 9
      label: LABEL_OPTIONAL
      type: TYPE_ENUM
      type_name: ".f.All.Color"
    }
    field { name: "inner" number: 10 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".f.All" }
    field { name: "codes" number: 11 label: LABEL_REPEATED type: TYPE_SFIXED32 }
    field {
      name: "tags"
      number: 12
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".f.All.TagsEntry"
    }
    field { name: "a" number: 13 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 }
    field { name: "b" number: 14 label: LABEL_OPTIONAL type: TYPE_SINT64 oneof_index: 0 }
    nested_type {
      name: "TagsEntry"
      options { map_entry: true }
      field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }
      field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".f.All" }
    }
    enum_type {
      name: "Color"
      value { name: "RED" number: 0 }
      value { name: "BLUE" number: 1 }
    }
    oneof_decl { name: "choice" }
  }
)pb";

google::protobuf::FileDescriptorProto File() {
  google::protobuf::FileDescriptorProto file;
  google::protobuf::TextFormat::ParseFromString(kFile, &file);
  return file;
}

class FixedRegistry final : public hotrow::ingest::SchemaSource {
 public:
  Result<RegistrySchema> ById(uint32_t id, bool) override {
    if (id != 1) return Status::NotFound("no schema id " + std::to_string(id));
    RegistrySchema s;
    hotrow::ingest::AppendBase64(File().SerializeAsString(), &s.schema);
    s.schema_type = "PROTOBUF";
    return s;
  }
  Result<RegistrySchema> BySubjectVersion(const std::string&, int, bool) override {
    return Status::NotFound("none");
  }
};

std::unique_ptr<hotrow::ingest::ProtobufDecoder> Unframed() {
  google::protobuf::FileDescriptorSet set;
  *set.add_file() = File();
  auto made = hotrow::ingest::ProtobufDecoder::WithDescriptorSet(set.SerializeAsString(), "f.All",
                                                                 kFuzzLimit);
  FUZZ_CHECK(made.ok());
  return std::move(made).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static auto framed =
      hotrow::ingest::ProtobufDecoder::WithRegistry(std::make_unique<FixedRegistry>(), kFuzzLimit);
  static auto unframed = Unframed();
  const bool is_framed = (data[0] & 1) == 0;
  hotrow::ingest::ProtobufDecoder* decoder = is_framed ? framed.get() : unframed.get();
  const std::string_view value(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string json, detail;
  const char* reject = nullptr;
  const DecodeStatus status = decoder->Decode(value, &json, &reject, &detail);
  FUZZ_CHECK(status != DecodeStatus::kWait);
  FUZZ_CHECK(json.size() <= kFuzzLimit);
  if (status == DecodeStatus::kReject) {
    FUZZ_CHECK(reject != nullptr && !detail.empty());
    const std::string r = reject;
    FUZZ_CHECK(r == hotrow::ingest::kRejectBadProtobuf || r == hotrow::ingest::kRejectTooLarge ||
               (is_framed && (r == hotrow::ingest::kRejectNotFramed ||
                              r == hotrow::ingest::kRejectUnknownSchema)));
    return 0;
  }
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  FUZZ_CHECK(!parsed.is_discarded() && parsed.is_object());
  return 0;
}
