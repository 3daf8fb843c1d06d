// Schemas with references, served as Confluent's registry serves them (CONTRACT.md "Input
// formats"): Protobuf's ?format=serialized names every file "default", the root and each reference
// alike, and references are fetched by subject and version; an Avro schema names types another
// subject defines, and hotrow resolves them itself (never ?format=resolved, which registries before
// 2023 ignore). A failure is remembered per schema id, as a 404 is, so that a run of records of a
// broken schema asks the registry once. The whole path with Confluent's Python serializer through
// a stand-in registry that renames files the same way is formats_e2e_test.cc.

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "ingest/avro_decoder.h"
#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "ingest/json_text.h"
#include "ingest/protobuf_decoder.h"

namespace hotrow::ingest::schema_references_test {
namespace {

using nlohmann::json;

// A registry of schemas by id and by (subject, version), counting the requests that reach it.
class FakeRegistry final : public SchemaSource {
 public:
  Result<RegistrySchema> ById(uint32_t id, bool) override {
    ++requests;
    auto it = by_id.find(id);
    if (it == by_id.end()) return Status::NotFound("no schema id " + std::to_string(id));
    return it->second;
  }
  Result<RegistrySchema> BySubjectVersion(const std::string& subject, int version, bool) override {
    ++requests;
    auto it = by_subject.find({subject, version});
    if (it == by_subject.end()) return Status::NotFound("no " + subject);
    return it->second;
  }

  std::map<uint32_t, RegistrySchema> by_id;
  std::map<std::pair<std::string, int>, RegistrySchema> by_subject;
  int requests = 0;
};

// The base64 of a FileDescriptorProto in text form, its name replaced by "default" as the real
// registry's ?format=serialized names every file.
std::string SerializedAsTheRegistryDoes(const char* text) {
  google::protobuf::FileDescriptorProto file;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &file)) << text;
  file.set_name("default");
  std::string b64;
  AppendBase64(file.SerializeAsString(), &b64);
  return b64;
}

constexpr const char* kSite = R"pb(
  name: "site.proto"
  package: "p"
  syntax: "proto3"
  message_type {
    name: "Site"
    field { name: "name" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "floor" number: 2 label: LABEL_OPTIONAL type: TYPE_INT32 }
  }
)pb";

constexpr const char* kReading = R"pb(
  name: "reading.proto"
  package: "p"
  syntax: "proto3"
  dependency: "site.proto"
  message_type {
    name: "Reading"
    field { name: "device_id" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "site" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".p.Site" }
  }
)pb";

TEST(ProtobufReferencesTest, FilesAllNamedDefaultAreBuiltUnderTheirImportPaths) {
  auto registry = std::make_unique<FakeRegistry>();
  registry->by_id[3] = {
      SerializedAsTheRegistryDoes(kReading), "PROTOBUF", {{"site.proto", "site.proto", 1}}};
  registry->by_subject[{"site.proto", 1}] = {SerializedAsTheRegistryDoes(kSite), "PROTOBUF", {}};
  auto decoder = ProtobufDecoder::WithRegistry(std::move(registry));
  std::string value, text, detail;
  AppendConfluentHeader(3, &value);
  AppendMessageIndexes({0}, &value);
  value += std::string(
      "\x0a\x03"
      "d-1"
      "\x12\x05\x0a\x03"
      "s-2",
      12);
  const char* reject = nullptr;
  ASSERT_EQ(decoder->Decode(value, &text, &reject, &detail), DecodeStatus::kOk) << detail;
  // Read as p.Reading, not as the imported p.Site.
  EXPECT_EQ(json::parse(text),
            json::parse(R"({"device_id":"d-1","site":{"name":"s-2","floor":0}})"));
}

TEST(ProtobufReferencesTest, AMissingReferenceIsUnknownSchemaAndAskedOnce) {
  auto registry = std::make_unique<FakeRegistry>();
  FakeRegistry* fake = registry.get();
  registry->by_id[3] = {
      SerializedAsTheRegistryDoes(kReading), "PROTOBUF", {{"site.proto", "site.proto", 1}}};
  auto decoder = ProtobufDecoder::WithRegistry(std::move(registry));
  std::string value, text, detail;
  AppendConfluentHeader(3, &value);
  value.push_back('\0');
  const char* reject = nullptr;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(decoder->Decode(value, &text, &reject, &detail), DecodeStatus::kReject);
    EXPECT_STREQ(reject, kRejectUnknownSchema);
    EXPECT_NE(detail.find("site.proto"), std::string::npos) << detail;
  }
  EXPECT_EQ(fake->requests, 2);  // the id and its reference, once
}

constexpr const char* kAvroSite = R"({"type": "record", "name": "Site", "namespace": "a",
  "fields": [{"name": "name", "type": "string"},
             {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                        "precision": 6, "scale": 2}}]})";
constexpr const char* kAvroReading = R"({"type": "record", "name": "Reading", "namespace": "a",
  "fields": [{"name": "device_id", "type": "string"}, {"name": "site", "type": "Site"},
             {"name": "other", "type": ["null", "a.Site"]}]})";

TEST(AvroReferencesTest, ReferencedTypesAreResolvedBySubjectAndVersion) {
  auto registry = std::make_unique<FakeRegistry>();
  FakeRegistry* fake = registry.get();
  registry->by_id[4] = {kAvroReading, "AVRO", {{"a.Site", "site-value", 2}}};
  registry->by_subject[{"site-value", 2}] = {kAvroSite, "AVRO", {}};
  auto decoder = AvroDecoder::WithRegistry(std::move(registry));
  std::string value, text, detail;
  AppendConfluentHeader(4, &value);
  // device_id "d", site {"s", 1.00}, other: branch 1 {"t", 0.05}
  value += std::string(
      "\x02"
      "d"
      "\x02"
      "s"
      "\x02\x64"
      "\x02"
      "\x02"
      "t"
      "\x02\x05",
      11);
  const char* reject = nullptr;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(decoder->Decode(value, &text, &reject, &detail), DecodeStatus::kOk) << detail;
    EXPECT_EQ(json::parse(text), json::parse(R"({"device_id":"d","site":{"name":"s","price":"1.00"},
                                                "other":{"name":"t","price":"0.05"}})"));
  }
  EXPECT_EQ(fake->requests, 2);  // the id and its reference, once
}

TEST(AvroReferencesTest, AMissingReferenceIsUnknownSchemaAndAskedOnce) {
  auto registry = std::make_unique<FakeRegistry>();
  FakeRegistry* fake = registry.get();
  registry->by_id[4] = {kAvroReading, "AVRO", {{"a.Site", "site-value", 2}}};
  registry->by_id[5] = {kAvroReading, "AVRO", {}};  // no reference: Site is unknown
  auto decoder = AvroDecoder::WithRegistry(std::move(registry));
  for (uint32_t id : {4u, 5u}) {
    std::string value, text, detail;
    AppendConfluentHeader(id, &value);
    value +=
        "\x02"
        "d";
    const char* reject = nullptr;
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(decoder->Decode(value, &text, &reject, &detail), DecodeStatus::kReject) << id;
      EXPECT_STREQ(reject, kRejectUnknownSchema);
    }
  }
  EXPECT_EQ(fake->requests, 3);  // id 4 and its reference, id 5: each once
}

}  // namespace
}  // namespace hotrow::ingest::schema_references_test
