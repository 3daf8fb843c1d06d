// The pure parts of the record decoders (ingest/decoder.h): Confluent's framing, the JSON text
// writers, the "_kafka" metadata, and the Protobuf transcoder against libprotobuf's own JSON
// printer (util::MessageToJsonString with the options of the mapping) as the oracle, on dynamic
// messages of a schema written here. Avro and the whole path with Confluent's serializers are in
// formats_e2e_test.cc.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "ingest/json_text.h"
#include "ingest/protobuf_decoder.h"
#include "ingest/record_meta.h"

namespace hotrow::ingest::decoders_test {
namespace {

using nlohmann::json;

TEST(ConfluentFramingTest, HeaderIsMagicZeroAndABigEndianId) {
  std::string framed;
  AppendConfluentHeader(0x01020304, &framed);
  framed += "body";
  uint32_t id = 0;
  std::string_view rest;
  ASSERT_TRUE(ParseConfluentHeader(framed, &id, &rest));
  EXPECT_EQ(id, 0x01020304u);
  EXPECT_EQ(rest, "body");
  EXPECT_FALSE(ParseConfluentHeader(std::string_view("\0\0\0\0", 4), &id, &rest));
  EXPECT_FALSE(ParseConfluentHeader("{\"a\":1}", &id, &rest));
  EXPECT_FALSE(ParseConfluentHeader("", &id, &rest));
}

TEST(ConfluentFramingTest, MessageIndexesAreZigzagWithASingleZeroForTheFirst) {
  std::vector<int> indexes;
  std::string_view rest;
  ASSERT_TRUE(ParseMessageIndexes(std::string_view("\0x", 2), &indexes, &rest));
  EXPECT_EQ(indexes, std::vector<int>{0});
  EXPECT_EQ(rest, "x");
  // [1, 2]: count 2 -> 4, 1 -> 2, 2 -> 4 (zigzag), as Confluent's Java serializer writes.
  ASSERT_TRUE(ParseMessageIndexes(std::string_view("\x04\x02\x04y", 4), &indexes, &rest));
  EXPECT_EQ(indexes, (std::vector<int>{1, 2}));
  EXPECT_EQ(rest, "y");
  for (const std::vector<int>& v : {std::vector<int>{0}, {3}, {0, 0}, {200, 1, 70000}}) {
    std::string out;
    AppendMessageIndexes(v, &out);
    ASSERT_TRUE(ParseMessageIndexes(out, &indexes, &rest));
    EXPECT_EQ(indexes, v);
    EXPECT_TRUE(rest.empty());
  }
  EXPECT_FALSE(ParseMessageIndexes("", &indexes, &rest));                       // nothing
  EXPECT_FALSE(ParseMessageIndexes("\x01", &indexes, &rest));                   // count -1
  EXPECT_FALSE(ParseMessageIndexes("\x04\x02", &indexes, &rest));               // one of two
  EXPECT_FALSE(ParseMessageIndexes("\x02\x03", &indexes, &rest));               // index -2
  EXPECT_FALSE(ParseMessageIndexes(std::string(11, '\xff'), &indexes, &rest));  // overlong
  EXPECT_FALSE(ParseMessageIndexes("\x82\x01", &indexes, &rest));  // 65 indexes: too many
}

TEST(ConfluentFramingTest, TheLegacyFormIsNeverMisreadAsZigzag) {
  // python3-confluent-kafka before 1.8.2 writes [0, 9] as 02 00 09: read as zigzag it would be
  // [0] and a message starting with 09 (a fixed64 field). [0] written long is no zigzag writer's.
  std::vector<int> indexes;
  std::string_view rest;
  const std::string legacy_0_9("\x02\x00\x09msg", 6);
  EXPECT_FALSE(ParseMessageIndexes(legacy_0_9, &indexes, &rest));
  ASSERT_TRUE(ParseMessageIndexes(legacy_0_9, &indexes, &rest, /*legacy=*/true));
  EXPECT_EQ(indexes, (std::vector<int>{0, 9}));
  EXPECT_EQ(rest, "msg");
  // A one-level path [3] (01 03) and a three-level one (03 ...): negative counts as zigzag.
  EXPECT_FALSE(ParseMessageIndexes(std::string_view("\x01\x03", 2), &indexes, &rest));
  ASSERT_TRUE(ParseMessageIndexes(std::string_view("\x01\x03", 2), &indexes, &rest, true));
  EXPECT_EQ(indexes, std::vector<int>{3});
  // Both forms agree on the first message, and each reads what its writer writes.
  for (bool legacy : {false, true}) {
    for (const std::vector<int>& v : std::vector<std::vector<int>>{{0}, {3}, {0, 9}, {2, 1, 7}}) {
      std::string out;
      AppendMessageIndexes(v, &out, legacy);
      ASSERT_TRUE(ParseMessageIndexes(out, &indexes, &rest, legacy)) << legacy;
      EXPECT_EQ(indexes, v);
    }
  }
  EXPECT_FALSE(ParseMessageIndexes(std::string_view("\x02\x00", 2), &indexes, &rest, true));
  EXPECT_FALSE(ParseMessageIndexes("\x41", &indexes, &rest, true));  // 65 indexes
}

TEST(JsonTextTest, StringsAreEscapedAndBytesBase64) {
  std::string out;
  AppendJsonString("a\"b\\c\n\x01\xc3\xa9", &out);
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
  EXPECT_EQ(json::parse(out), "a\"b\\c\n\x01\xc3\xa9");
  for (std::string bytes : {"", "f", "fo", "foo", "foob", "\xff\xfe\x00\x01"}) {
    std::string b64, back;
    AppendBase64(bytes, &b64);
    ASSERT_TRUE(DecodeBase64(b64, &back)) << b64;
    EXPECT_EQ(back, bytes);
  }
  std::string b64;
  AppendBase64("foob", &b64);
  EXPECT_EQ(b64, "Zm9vYg==");
  std::string back;
  EXPECT_FALSE(DecodeBase64("Zm9v!", &back));
}

TEST(JsonTextTest, DecimalsAreTwosComplementWithTheScale) {
  auto decimal = [](std::string bytes, int scale) {
    std::string out;
    EXPECT_TRUE(AppendDecimal(bytes, scale, kDefaultMaxDecodedBytes, &out));
    return out;
  };
  EXPECT_EQ(decimal("\x30\x39", 2), "123.45");   // 12345
  EXPECT_EQ(decimal("\xcf\xc7", 2), "-123.45");  // -12345
  EXPECT_EQ(decimal("\x05", 2), "0.05");
  EXPECT_EQ(decimal("\xfb", 3), "-0.005");
  EXPECT_EQ(decimal("", 2), "0.00");
  EXPECT_EQ(decimal("\x00", 0), "0");
  EXPECT_EQ(decimal("\x80", 0), "-128");
  EXPECT_EQ(decimal("\x07", -2), "700");
  // 2^64 + 1, past any machine integer.
  EXPECT_EQ(decimal(std::string("\x01\x00\x00\x00\x00\x00\x00\x00\x01", 9), 1),
            "1844674407370955161.7");
}

TEST(RecordMetaTest, MetaIsAddedToTheObjectWithTextOrBase64) {
  std::vector<RecordHeader> headers = {{"site", "s-1", false},
                                       {"bin", std::string_view("\xff\x00", 2), false},
                                       {"none", "", true},
                                       {"site", "s-2", false}};
  std::string out;
  AppendWithMeta("{\"a\":1} ", "k1", false, headers, 42, &out);
  EXPECT_EQ(json::parse(out), json::parse(R"({"a":1,"_kafka":{"key":"k1","headers":
      {"bin":"/wA=","none":null,"site":"s-2"},"timestamp":42}})"));
  out.clear();
  AppendWithMeta("{ }", "", true, {}, -1, &out);
  EXPECT_EQ(json::parse(out),
            json::parse(R"({"_kafka":{"key":null,"headers":{},"timestamp":null}})"));
  out.clear();
  AppendWithMeta("[1]", "k", false, {}, 1, &out);
  EXPECT_EQ(out, "[1]");  // not an object: unchanged, the parser refuses it
  MetaRef ref;
  EXPECT_TRUE(ParseMetaRef("@header.x.y", &ref));
  EXPECT_EQ(ref.kind, MetaRef::Kind::kHeader);
  EXPECT_EQ(ref.header, "x.y");
  EXPECT_TRUE(ParseMetaRef("device.id", &ref));
  EXPECT_EQ(ref.kind, MetaRef::Kind::kNone);
  EXPECT_FALSE(ParseMetaRef("@header.", &ref));
  EXPECT_FALSE(ParseMetaRef("@offset", &ref));
}

// A schema with every kind of field, as a FileDescriptorProto in text form.
constexpr const char* kSchema = R"pb(
  name: "t.proto"
  package: "t"
  syntax: "proto3"
  message_type {
    name: "First"
    field { name: "x" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }
  }
  message_type {
    name: "All"
    field { name: "i32" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }
    field { name: "i64" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
    field { name: "u64" number: 3 label: LABEL_OPTIONAL type: TYPE_UINT64 }
    field { name: "s32" number: 4 label: LABEL_OPTIONAL type: TYPE_SINT32 }
    field { name: "s64" number: 5 label: LABEL_OPTIONAL type: TYPE_SINT64 }
    field { name: "f32" number: 6 label: LABEL_OPTIONAL type: TYPE_FIXED32 }
    field { name: "sf64" number: 7 label: LABEL_OPTIONAL type: TYPE_SFIXED64 }
    field { name: "flt" number: 8 label: LABEL_OPTIONAL type: TYPE_FLOAT }
    field { name: "dbl" number: 9 label: LABEL_OPTIONAL type: TYPE_DOUBLE }
    field { name: "ok" number: 10 label: LABEL_OPTIONAL type: TYPE_BOOL }
    field { name: "text" number: 11 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "raw" number: 12 label: LABEL_OPTIONAL type: TYPE_BYTES }
    field {
      name: "color"
      number: 13
      label: LABEL_OPTIONAL
      type: TYPE_ENUM
      type_name: ".t.All.Color"
    }
    field {
      name: "nested"
      number: 14
      label: LABEL_OPTIONAL
      type: TYPE_MESSAGE
      type_name: ".t.All.Inner"
    }
    field { name: "codes" number: 15 label: LABEL_REPEATED type: TYPE_SINT64 }
    field {
      name: "inners"
      number: 16
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".t.All.Inner"
    }
    field { name: "names" number: 17 label: LABEL_REPEATED type: TYPE_STRING }
    field {
      name: "tags"
      number: 18
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".t.All.TagsEntry"
    }
    field {
      name: "by_id"
      number: 19
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".t.All.ByIdEntry"
    }
    field { name: "a" number: 20 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 }
    field { name: "b" number: 21 label: LABEL_OPTIONAL type: TYPE_INT32 oneof_index: 0 }
    field {
      name: "colors"
      number: 22
      label: LABEL_REPEATED
      type: TYPE_ENUM
      type_name: ".t.All.Color"
    }
    nested_type {
      name: "Inner"
      field { name: "v" number: 1 label: LABEL_OPTIONAL type: TYPE_DOUBLE }
      field { name: "w" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING }
    }
    nested_type {
      name: "TagsEntry"
      options { map_entry: true }
      field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
      field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING }
    }
    nested_type {
      name: "ByIdEntry"
      options { map_entry: true }
      field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 }
      field {
        name: "value"
        number: 2
        label: LABEL_OPTIONAL
        type: TYPE_MESSAGE
        type_name: ".t.All.Inner"
      }
    }
    enum_type {
      name: "Color"
      value { name: "RED" number: 0 }
      value { name: "BLUE" number: 1 }
    }
    oneof_decl { name: "choice" }
  }
)pb";

// Whether `mine` equals libprotobuf's JSON, whose 64-bit integers are strings and whose floats
// have 9 significant digits (hotrow writes a float's shortest text, as python's json_format does:
// both read back as the same float).
bool SameJson(const json& mine, const json& oracle) {
  if (mine.is_number_float() && oracle.is_number_float() && mine != oracle) {
    return static_cast<float>(mine.get<double>()) == static_cast<float>(oracle.get<double>());
  }
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

// Serves the test schema (and 404 for any other id) as a registry would.
class OneSchema final : public SchemaSource {
 public:
  explicit OneSchema(std::string b64, bool down = false) : b64_(std::move(b64)), down_(down) {}
  Result<RegistrySchema> ById(uint32_t id, bool) override {
    if (down_) return Status::IOError("connection refused");
    if (id != 7) return Status::NotFound("no schema id " + std::to_string(id));
    return RegistrySchema{b64_, "PROTOBUF", {}};
  }
  Result<RegistrySchema> BySubjectVersion(const std::string&, int, bool) override {
    return Status::NotFound("none");
  }

 private:
  std::string b64_;
  bool down_;
};

class ProtobufTranscoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSchema, &file_));
    file_.SerializeToString(&file_bytes_);
    google::protobuf::FileDescriptorSet set;
    *set.add_file() = file_;
    std::string set_bytes;
    set.SerializeToString(&set_bytes);
    auto decoder = ProtobufDecoder::WithDescriptorSet(set_bytes, "t.All");
    ASSERT_TRUE(decoder.ok()) << decoder.status().ToString();
    decoder_ = std::move(*decoder);
    file_descriptor_ = pool_.BuildFile(file_);
    ASSERT_NE(file_descriptor_, nullptr);
  }

  // `text` (TextFormat of t.All) serialized, then transcoded by the decoder and by libprotobuf.
  void ExpectSameAsLibprotobuf(const std::string& text) {
    const google::protobuf::Descriptor* d = pool_.FindMessageTypeByName("t.All");
    std::unique_ptr<google::protobuf::Message> m(factory_.GetPrototype(d)->New());
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, m.get())) << text;
    std::string wire, mine, oracle, detail;
    m->SerializeToString(&wire);
    const char* reject = nullptr;
    ASSERT_EQ(decoder_->Decode(wire, &mine, &reject, &detail), DecodeStatus::kOk) << detail;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(*m, &oracle, options).ok());
    EXPECT_TRUE(SameJson(json::parse(mine), json::parse(oracle)))
        << "mine:   " << mine << "\noracle: " << oracle;
  }

  google::protobuf::FileDescriptorProto file_;
  std::string file_bytes_;
  std::unique_ptr<ProtobufDecoder> decoder_;
  google::protobuf::DescriptorPool pool_;
  const google::protobuf::FileDescriptor* file_descriptor_ = nullptr;
  google::protobuf::DynamicMessageFactory factory_;
};

TEST_F(ProtobufTranscoderTest, EmptyMessageHasEveryFieldAtItsDefault) {
  ExpectSameAsLibprotobuf("");
  std::string json_text, detail;
  const char* reject = nullptr;
  ASSERT_EQ(decoder_->Decode("", &json_text, &reject, &detail), DecodeStatus::kOk);
  json j = json::parse(json_text);
  EXPECT_EQ(j["i64"], 0);  // a number, not "0"
  EXPECT_EQ(j["color"], "RED");
  EXPECT_EQ(j["codes"], json::array());
  EXPECT_EQ(j["tags"], json::object());
  EXPECT_FALSE(j.contains("nested"));  // absent messages and oneof members are left out
  EXPECT_FALSE(j.contains("a"));
}

TEST_F(ProtobufTranscoderTest, EveryKindOfFieldMatchesLibprotobuf) {
  ExpectSameAsLibprotobuf(R"pb(
    i32: -5
    i64: -9000000000
    u64: 18446744073709551615
    s32: -7
    s64: -9223372036854775808
    f32: 4000000000
    sf64: -3
    flt: 0.1
    dbl: 1e300
    ok: true
    text: "h\"é\n"
    raw: "\377\000"
    color: BLUE
    nested { v: 2.5 w: "in" }
    codes: [ 1, -2, 3 ]
    inners { v: 1 }
    inners { w: "x" }
    names: [ "p", "q" ]
    tags { key: "k" value: "v" }
    tags { key: "k2" value: "" }
    by_id {
      key: -4
      value { v: 3 }
    }
    by_id { key: 9 }
    b: 0
    colors: [ BLUE, RED ]
  )pb");
  ExpectSameAsLibprotobuf(R"pb(a: "chosen" dbl: -0.0 flt: 3.4028235e38)pb");
}

TEST_F(ProtobufTranscoderTest, BadBytesAreRejectedNotCrashed) {
  std::string json_text, detail;
  const char* reject = nullptr;
  for (std::string bad :
       {std::string("\x08", 1), std::string("\x5a\x05\x61", 3), std::string("\x0b", 1),
        std::string("\x09\x01", 2) /* wire 1 for an int32 */, std::string("\x00", 1),
        std::string("\x5a\x02\xff\xfe", 4) /* text not UTF-8 */}) {
    EXPECT_EQ(decoder_->Decode(bad, &json_text, &reject, &detail), DecodeStatus::kReject);
    EXPECT_STREQ(reject, kRejectBadProtobuf);
  }
}

TEST_F(ProtobufTranscoderTest, FramedRecordsNameTheirMessageThroughTheRegistry) {
  std::string b64;
  AppendBase64(file_bytes_, &b64);
  auto decoder = ProtobufDecoder::WithRegistry(std::make_unique<OneSchema>(b64));
  std::string value, json_text, detail;
  const char* reject = nullptr;
  AppendConfluentHeader(7, &value);
  AppendMessageIndexes({1}, &value);    // t.All, the file's second message
  value += std::string("\x08\x2a", 2);  // i32: 42
  ASSERT_EQ(decoder->Decode(value, &json_text, &reject, &detail), DecodeStatus::kOk) << detail;
  EXPECT_EQ(json::parse(json_text)["i32"], 42);
  value.clear();
  AppendConfluentHeader(7, &value);
  AppendMessageIndexes({0}, &value);  // t.First
  value += std::string("\x08\x2a", 2);
  ASSERT_EQ(decoder->Decode(value, &json_text, &reject, &detail), DecodeStatus::kOk) << detail;
  EXPECT_EQ(json::parse(json_text), json::parse(R"({"x":42})"));

  value.clear();
  AppendConfluentHeader(7, &value);
  AppendMessageIndexes({5}, &value);
  EXPECT_EQ(decoder->Decode(value, &json_text, &reject, &detail), DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectUnknownSchema);
  value.clear();
  AppendConfluentHeader(8, &value);
  value.push_back('\0');
  EXPECT_EQ(decoder->Decode(value, &json_text, &reject, &detail), DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectUnknownSchema);
  EXPECT_EQ(decoder->Decode("{}", &json_text, &reject, &detail), DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectNotFramed);

  // Legacy indexes (python3-confluent-kafka before 1.8.2): [1] is 01 02 zigzag, 01 01 plain; the
  // plain form is not_framed unless the decoder is told to read it.
  value.clear();
  AppendConfluentHeader(7, &value);
  AppendMessageIndexes({1}, &value, /*legacy=*/true);
  value += std::string("\x08\x2a", 2);
  EXPECT_EQ(decoder->Decode(value, &json_text, &reject, &detail), DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectNotFramed);
  auto legacy = ProtobufDecoder::WithRegistry(std::make_unique<OneSchema>(b64),
                                              kDefaultMaxDecodedBytes, /*legacy_indexes=*/true);
  ASSERT_EQ(legacy->Decode(value, &json_text, &reject, &detail), DecodeStatus::kOk) << detail;
  EXPECT_EQ(json::parse(json_text)["i32"], 42);

  // A registry that cannot be asked is no reject: the record waits.
  auto down = ProtobufDecoder::WithRegistry(std::make_unique<OneSchema>(b64, true));
  value.clear();
  AppendConfluentHeader(7, &value);
  value.push_back('\0');
  EXPECT_EQ(down->Decode(value, &json_text, &reject, &detail), DecodeStatus::kWait);
  EXPECT_NE(detail.find("connection refused"), std::string::npos);
}

// Counts the requests that reach it; id 7 exists, any other is 404, unless down.
class CountingRegistry final : public SchemaSource {
 public:
  CountingRegistry(int* requests, bool* down) : requests_(requests), down_(down) {}
  Result<RegistrySchema> ById(uint32_t id, bool) override {
    ++*requests_;
    if (*down_) return Status::IOError("connection refused");
    if (id != 7) return Status::NotFound("no schema id " + std::to_string(id));
    return RegistrySchema{"\"long\"", "AVRO", {}};
  }
  Result<RegistrySchema> BySubjectVersion(const std::string&, int, bool) override {
    return Status::NotFound("none");
  }

 private:
  int* requests_;
  bool* down_;
};

TEST(RememberNotFoundTest, AnUnknownIdIsAskedOncePerTtlAndOutagesAreNeverRemembered) {
  int requests = 0;
  bool down = false;
  auto source = RememberNotFound(std::make_unique<CountingRegistry>(&requests, &down), 60'000);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(source->ById(9, false).status().code(), Status::Code::kNotFound);
  }
  EXPECT_EQ(requests, 1);
  EXPECT_TRUE(source->ById(7, false).ok());
  EXPECT_EQ(requests, 2);
  down = true;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(source->ById(8, false).status().code(), Status::Code::kIOError);
  }
  EXPECT_EQ(requests, 5);  // each asked: an outage is not the id's answer
  auto expiring = RememberNotFound(std::make_unique<CountingRegistry>(&requests, &down), 0);
  down = false;
  requests = 0;
  (void)expiring->ById(9, false);
  (void)expiring->ById(9, false);
  EXPECT_EQ(requests, 2);  // a ttl of 0 remembers nothing
}

}  // namespace
}  // namespace hotrow::ingest::decoders_test
