#include "ingest/synthetic_formats.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/text_format.h>

#include <cstring>

#include "ingest/json_text.h"
#include "ingest/schema_registry.h"

namespace hotrow::ingest {
namespace {

void AppendAvroLong(int64_t v, std::string* out) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out->push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out->push_back(static_cast<char>(z));
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void AppendLittleEndianDouble(double d, std::string* out) {
  char bytes[8];
  std::memcpy(bytes, &d, 8);  // little-endian on hotrow's platforms, as both formats want
  out->append(bytes, 8);
}

constexpr const char* kProtoFileText = R"pb(
  name: "hotrow/synthetic.proto"
  package: "hotrow.synthetic"
  syntax: "proto3"
  message_type {
    name: "Reading"
    field { name: "event_id" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "ts" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
    field { name: "temp" number: 3 label: LABEL_OPTIONAL type: TYPE_DOUBLE }
    field { name: "humidity" number: 4 label: LABEL_OPTIONAL type: TYPE_DOUBLE }
    field { name: "battery" number: 5 label: LABEL_OPTIONAL type: TYPE_INT32 }
  }
)pb";

google::protobuf::FileDescriptorProto ProtoFile() {
  google::protobuf::FileDescriptorProto file;
  google::protobuf::TextFormat::ParseFromString(kProtoFileText, &file);
  return file;
}

}  // namespace

const std::string& SyntheticAvroSchema() {
  static const std::string schema =
      R"({"type":"record","name":"Reading","namespace":"hotrow.synthetic","fields":[)"
      R"({"name":"event_id","type":"string"},)"
      R"({"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},)"
      R"({"name":"temp","type":"double"},{"name":"humidity","type":"double"},)"
      R"({"name":"battery","type":"int"}]})";
  return schema;
}

const std::string& SyntheticProtoFile() {
  static const std::string bytes = ProtoFile().SerializeAsString();
  return bytes;
}

std::string SyntheticProtoDescriptorSet() {
  google::protobuf::FileDescriptorSet set;
  *set.add_file() = ProtoFile();
  return set.SerializeAsString();
}

void AppendSyntheticJson(const SyntheticReading& r, std::string* out) {
  out->append("{\"event_id\":");
  AppendJsonString(r.event_id, out);
  out->append(",\"ts\":");
  AppendInt(r.ts_ms, out);
  out->append(",\"temp\":");
  AppendDouble(r.temp, out);
  out->append(",\"humidity\":");
  AppendDouble(r.humidity, out);
  out->append(",\"battery\":");
  AppendInt(r.battery, out);
  out->push_back('}');
}

void AppendSyntheticAvro(const SyntheticReading& r, std::string* out) {
  AppendAvroLong(static_cast<int64_t>(r.event_id.size()), out);
  out->append(r.event_id);
  AppendAvroLong(r.ts_ms, out);
  AppendLittleEndianDouble(r.temp, out);
  AppendLittleEndianDouble(r.humidity, out);
  AppendAvroLong(r.battery, out);
}

void AppendSyntheticProtobuf(const SyntheticReading& r, std::string* out) {
  out->push_back(0x0a);  // field 1, length-delimited
  AppendVarint(r.event_id.size(), out);
  out->append(r.event_id);
  out->push_back(0x10);  // field 2, varint
  AppendVarint(static_cast<uint64_t>(r.ts_ms), out);
  out->push_back(0x19);  // field 3, fixed64
  AppendLittleEndianDouble(r.temp, out);
  out->push_back(0x21);  // field 4, fixed64
  AppendLittleEndianDouble(r.humidity, out);
  out->push_back(0x28);  // field 5, varint (a negative int32 takes 10 bytes, as protobuf writes)
  AppendVarint(static_cast<uint64_t>(static_cast<int64_t>(r.battery)), out);
}

Result<uint32_t> RegisterSyntheticSchema(const std::string& url, Format format,
                                         const std::string& subject) {
  RegistryOptions options;
  options.url = url;
  std::string schema;
  if (format == Format::kProtobuf) {
    AppendBase64(SyntheticProtoFile(), &schema);
  } else {
    schema = SyntheticAvroSchema();
  }
  return RegisterSchema(options, subject, schema,
                        format == Format::kProtobuf ? "PROTOBUF" : "AVRO");
}

}  // namespace hotrow::ingest
