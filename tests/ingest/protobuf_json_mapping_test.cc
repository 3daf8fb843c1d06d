// Protobuf's JSON mapping beyond plain fields (ingest/protobuf_decoder.h): the well-known types as
// proto3's JSON mapping writes them under ingest.protobuf.well_known: json (libprotobuf's JSON
// printer as the oracle), as messages under `message`, and the last member of a oneof kept.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/time_format.h"
#include "ingest/protobuf_decoder.h"
#include "ingest/protobuf_well_known.h"

namespace hotrow::ingest {
namespace {

using nlohmann::json;

constexpr const char* kWktSchema = R"pb(
  name: "w.proto"
  package: "w"
  syntax: "proto3"
  dependency: "google/protobuf/timestamp.proto"
  dependency: "google/protobuf/duration.proto"
  dependency: "google/protobuf/wrappers.proto"
  dependency: "google/protobuf/struct.proto"
  dependency: "google/protobuf/field_mask.proto"
  message_type {
    name: "Wkt"
    field {
      name: "at"
      number: 1
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.Timestamp"
    }
    field {
      name: "took"
      number: 2
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.Duration"
    }
    field {
      name: "big"
      number: 3
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.Int64Value"
    }
    field {
      name: "name"
      number: 4
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.StringValue"
    }
    field {
      name: "flag"
      number: 5
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.BoolValue"
    }
    field {
      name: "attrs"
      number: 6
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.Struct"
    }
    field {
      name: "val"
      number: 7
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.Value"
    }
    field {
      name: "list"
      number: 8
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.ListValue"
    }
    field {
      name: "mask"
      number: 9
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.FieldMask"
    }
    field {
      name: "times"
      number: 10
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.Timestamp"
    }
    field {
      name: "ratio"
      number: 11
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.DoubleValue"
    }
    field {
      name: "blob"
      number: 12
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".google.protobuf.BytesValue"
    }
    field { name: "s" number: 13 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 }
    field { name: "n" number: 14 label: LABEL_OPTIONAL type: TYPE_INT32 oneof_index: 0 }
    oneof_decl { name: "choice" }
  }
)pb";

// Whether `mine` equals libprotobuf's JSON, whose 64-bit integers are strings.
bool SameJson(const json& mine, const json& oracle) {
  if (oracle.is_string() && (mine.is_number_integer() || mine.is_number_unsigned())) {
    return mine.dump() == oracle.get<std::string>();
  }
  if (oracle.is_object() && mine.is_object()) {
    if (oracle.size() != mine.size()) return false;
    for (const auto& [k, v] : oracle.items()) {
      if (!mine.contains(k) || !SameJson(mine[k], v)) return false;
    }
    return true;
  }
  if (oracle.is_array() && mine.is_array()) {
    if (oracle.size() != mine.size()) return false;
    for (size_t i = 0; i < oracle.size(); ++i) {
      if (!SameJson(mine[i], oracle[i])) return false;
    }
    return true;
  }
  return mine == oracle;
}

class ProtobufJsonMappingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kWktSchema, &file));
    google::protobuf::FileDescriptorSet set;
    *set.add_file() = file;
    set.SerializeToString(&set_);
    ASSERT_NE(pool_.BuildFile(file), nullptr);
    descriptor_ = pool_.FindMessageTypeByName("w.Wkt");
    ASSERT_NE(descriptor_, nullptr);
  }

  std::unique_ptr<google::protobuf::Message> Parse(const std::string& text) {
    std::unique_ptr<google::protobuf::Message> m(factory_.GetPrototype(descriptor_)->New());
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, m.get())) << text;
    return m;
  }

  // The decoder's JSON of `wire` (a w.Wkt) under ingest.protobuf.well_known: json or message.
  std::string Mine(const std::string& wire, bool well_known_json = true) {
    auto decoder =
        ProtobufDecoder::WithDescriptorSet(set_, "w.Wkt", kDefaultMaxDecodedBytes, well_known_json);
    EXPECT_TRUE(decoder.ok()) << decoder.status().ToString();
    std::string out, detail;
    const char* reject = nullptr;
    EXPECT_EQ((*decoder)->Decode(wire, &out, &reject, &detail), DecodeStatus::kOk) << detail;
    return out;
  }

  void ExpectSameAsLibprotobuf(const google::protobuf::Message& m) {
    std::string wire, oracle;
    m.SerializeToString(&wire);
    const std::string mine = Mine(wire);
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(m, &oracle, options).ok());
    EXPECT_TRUE(SameJson(json::parse(mine), json::parse(oracle)))
        << "mine:   " << mine << "\noracle: " << oracle;
  }

  std::string set_;
  google::protobuf::DescriptorPool pool_{google::protobuf::DescriptorPool::generated_pool()};
  const google::protobuf::Descriptor* descriptor_ = nullptr;
  google::protobuf::DynamicMessageFactory factory_;
};

TEST_F(ProtobufJsonMappingTest, WellKnownTypesAreWrittenAsProto3sJsonMapping) {
  ExpectSameAsLibprotobuf(*Parse(R"pb(
    at { seconds: 1700000000 nanos: 123456789 }
    took { seconds: -1 nanos: -500000000 }
    big { value: -9000000000 }
    name { value: "n\"é" }
    flag {}
    attrs {
      fields {
        key: "k"
        value { string_value: "v" }
      }
      fields {
        key: "nested"
        value {
          struct_value {
            fields {
              key: "x"
              value { number_value: 1.5 }
            }
          }
        }
      }
      fields {
        key: "nothing"
        value { null_value: NULL_VALUE }
      }
    }
    val {
      list_value {
        values { bool_value: true }
        values { number_value: 2 }
      }
    }
    list {}
    mask { paths: "user.display_name" paths: "a" }
    times { seconds: 0 }
    times { seconds: -62135596800 nanos: 1000 }
    times { seconds: 253402300799 nanos: 10000000 }
    ratio { value: 0.25 }
    blob { value: "\377" }
  )pb"));
  ExpectSameAsLibprotobuf(*Parse(""));  // absent messages left out, as before
  ExpectSameAsLibprotobuf(*Parse(R"pb(at {}
                                      took {}
                                      attrs {}
                                      list {})pb"));
  // A Value with no kind set: libprotobuf's printer leaves the field out; hotrow writes null.
  std::string wire;
  Parse(R"pb(val {})pb")->SerializeToString(&wire);
  EXPECT_TRUE(json::parse(Mine(wire))["val"].is_null());
}

TEST_F(ProtobufJsonMappingTest, ATimestampIsUsableAsTheEventTime) {
  std::string wire;
  Parse(R"pb(at { seconds: 1700000000 nanos: 123456789 })pb")->SerializeToString(&wire);
  const json j = json::parse(Mine(wire));
  ASSERT_TRUE(j["at"].is_string()) << j.dump();
  Result<int64_t> ms = ParseTimeMs(j["at"].get<std::string>());
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  EXPECT_EQ(*ms, 1700000000123);
}

TEST_F(ProtobufJsonMappingTest, UnderMessageWellKnownTypesAreTheMessagesTheyAre) {
  std::string wire;
  Parse(R"pb(at { seconds: 5 nanos: 6 }
             big { value: 7 })pb")
      ->SerializeToString(&wire);
  const json j = json::parse(Mine(wire, /*well_known_json=*/false));
  EXPECT_EQ(j["at"], json::parse(R"({"seconds":5,"nanos":6})"));
  EXPECT_EQ(j["big"], json::parse(R"({"value":7})"));
}

TEST_F(ProtobufJsonMappingTest, ATimestampOutOfItsRangeIsBadProtobuf) {
  std::string wire;
  // Parsed from text, libprotobuf accepts any seconds; its JSON printer refuses them, as here.
  Parse(R"pb(at { seconds: 253402300800 })pb")->SerializeToString(&wire);
  auto decoder = ProtobufDecoder::WithDescriptorSet(set_, "w.Wkt");
  ASSERT_TRUE(decoder.ok());
  std::string out, detail;
  const char* reject = nullptr;
  EXPECT_EQ((*decoder)->Decode(wire, &out, &reject, &detail), DecodeStatus::kReject);
  EXPECT_NE(detail.find("out of its range"), std::string::npos) << detail;
}

TEST_F(ProtobufJsonMappingTest, OfAOneofTheMemberLastOnTheWireIsKept) {
  // Two members of one oneof on the wire (a writer that merges messages does this): a parser
  // keeps the last, and so does the JSON.
  std::string first, second;
  Parse(R"pb(s: "dropped")pb")->SerializeToString(&first);
  Parse(R"pb(n: 5)pb")->SerializeToString(&second);
  auto m = Parse("");
  ASSERT_TRUE(m->ParseFromString(first + second));
  ExpectSameAsLibprotobuf(*m);
  const json j = json::parse(Mine(first + second));
  EXPECT_FALSE(j.contains("s")) << j.dump();
  EXPECT_EQ(j["n"], 5);
  const json k = json::parse(Mine(second + first));
  EXPECT_EQ(k["s"], "dropped");
  EXPECT_FALSE(k.contains("n")) << k.dump();
}

TEST_F(ProtobufJsonMappingTest, AMessageWrittenTwiceIsMergedAndOfAMapKeyTheLastIsKept) {
  // What a producer that concatenates two encoded messages sends: a parser merges the singular
  // messages and keeps the last entry of a map key.
  std::string first, second;
  Parse(R"pb(took { seconds: 1 }
             attrs {
               fields {
                 key: "k"
                 value { string_value: "a" }
               }
               fields {
                 key: "only"
                 value { bool_value: true }
               }
             })pb")
      ->SerializeToString(&first);
  Parse(R"pb(took { nanos: 5 }
             attrs {
               fields {
                 key: "k"
                 value { string_value: "b" }
               }
             })pb")
      ->SerializeToString(&second);
  auto m = Parse("");
  ASSERT_TRUE(m->ParseFromString(first + second));
  ExpectSameAsLibprotobuf(*m);
  const std::string text = Mine(first + second);
  // Once in the text, not twice (a JSON reader's choice between duplicates is its own).
  EXPECT_EQ(text.find("\"k\":"), text.rfind("\"k\":")) << text;
  const json j = json::parse(text);
  EXPECT_EQ(j["took"], "1.000000005s");
  EXPECT_EQ(j["attrs"], json::parse(R"({"k":"b","only":true})"));
}

TEST_F(ProtobufJsonMappingTest, TheCopiesThatMergeMessagesCountAgainstTheBound) {
  // `took` (field 2) twice, each holding 600 bytes of an unknown field: its JSON is "0s", but
  // merging copies 1,200 bytes, past a bound of 1,000.
  std::string occurrence = "\x12\xdb\x04";               // field 2, 603 bytes
  occurrence += "\x4a\xd8\x04" + std::string(600, 'x');  // field 9, 600 bytes: unknown
  auto decoder = ProtobufDecoder::WithDescriptorSet(set_, "w.Wkt", /*max_decoded_bytes=*/1000);
  ASSERT_TRUE(decoder.ok());
  std::string out, detail;
  const char* reject = nullptr;
  ASSERT_EQ((*decoder)->Decode(occurrence, &out, &reject, &detail), DecodeStatus::kOk) << detail;
  EXPECT_EQ(json::parse(out)["took"], "0s");
  EXPECT_EQ((*decoder)->Decode(occurrence + occurrence, &out, &reject, &detail),
            DecodeStatus::kReject);
  EXPECT_STREQ(reject, "too_large");
}

TEST_F(ProtobufJsonMappingTest, AnUnknownGroupIsSkippedNotTheRecordRejected) {
  std::string wire;
  Parse(R"pb(name { value: "x" })pb")->SerializeToString(&wire);
  const std::string plain = Mine(wire);
  // Field 99 as a group holding a varint and a nested group 100, then its end tag.
  const std::string group = "\x9b\x06\x08\x07\xa3\x06\xa4\x06\x9c\x06";
  EXPECT_EQ(Mine(group + wire), plain);
  EXPECT_EQ(Mine(wire + group), plain);
  auto decoder = ProtobufDecoder::WithDescriptorSet(set_, "w.Wkt");
  ASSERT_TRUE(decoder.ok());
  std::string out, detail;
  const char* reject = nullptr;
  // Unterminated, or closed by another number: bad_protobuf.
  EXPECT_EQ((*decoder)->Decode(wire + "\x9b\x06\x08\x07", &out, &reject, &detail),
            DecodeStatus::kReject);
  EXPECT_EQ((*decoder)->Decode("\x9b\x06\xa4\x06", &out, &reject, &detail), DecodeStatus::kReject);
}

TEST(ProtobufWellKnownTextTest, TimestampsAndDurationsUseTheFewestFractionDigits) {
  std::string out;
  EXPECT_TRUE(AppendJsonTimestamp(0, 0, &out));
  EXPECT_TRUE(AppendJsonTimestamp(-1, 10000000, &out));
  EXPECT_TRUE(AppendJsonTimestamp(951782400, 1000, &out));  // 2000-02-29
  EXPECT_EQ(out,
            "\"1970-01-01T00:00:00Z\"\"1969-12-31T23:59:59.010Z\""
            "\"2000-02-29T00:00:00.000001Z\"");
  EXPECT_FALSE(AppendJsonTimestamp(0, -1, &out));
  EXPECT_FALSE(AppendJsonTimestamp(-62135596801, 0, &out));
  out.clear();
  EXPECT_TRUE(AppendJsonDuration(1, 340012, &out));
  EXPECT_TRUE(AppendJsonDuration(0, -500000000, &out));
  EXPECT_TRUE(AppendJsonDuration(3, 0, &out));
  EXPECT_EQ(out, "\"1.000340012s\"\"-0.500s\"\"3s\"");
  EXPECT_FALSE(AppendJsonDuration(1, -1, &out));
  EXPECT_FALSE(AppendJsonDuration(315576000001, 0, &out));
}

}  // namespace
}  // namespace hotrow::ingest
