// No record can hold the poller (ingest.max_decoded_bytes, CONTRACT.md "Input formats"): records
// built to expand (a long decimal, a scale of 2e9, arrays of items that take no bytes, repeated
// empty messages that each write every default) are rejected too_large, with the JSON text never
// past the bound.
//
// How CPU is bounded without a wall clock: each bomb is decoded in a child process (a gtest death
// test) under setrlimit(RLIMIT_CPU) of kCpuSeconds of CPU time, and its address space under
// RLIMIT_AS (not under a sanitizer, which reserves terabytes). A decode that loops past the budget
// is killed by SIGXCPU, one that allocates past it dies of an uncaught std::bad_alloc (Decode is
// called directly, not through DecodeRecord, which would catch it): either way the child does not
// exit 0 and the test fails. CPU time does not grow with the machine's load, so a loaded machine
// cannot fail it; the fixed decoders take milliseconds of the budget. Deterministic checks beside
// it: the reject reason, and the output's size and capacity within the bound.

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "ingest/avro_decoder.h"
#include "ingest/confluent_framing.h"
#include "ingest/decoder.h"
#include "ingest/ingestor.h"
#include "ingest/json_text.h"
#include "ingest/protobuf_decoder.h"

namespace hotrow::ingest::decode_bounds_test {
namespace {

using nlohmann::json;

constexpr rlim_t kCpuSeconds = 20;
constexpr size_t kLimit = kDefaultMaxDecodedBytes;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kUnderSanitizer = true;
#else
constexpr bool kUnderSanitizer = false;
#endif
#else
constexpr bool kUnderSanitizer = false;
#endif

// Runs `decode` in this (child) process under the CPU and memory budget and exits 0 when it
// returns true; prints why and exits 1 when not.
[[noreturn]] void UnderBudget(const std::function<bool(std::string*)>& decode) {
  const rlimit cpu{kCpuSeconds, kCpuSeconds};
  setrlimit(RLIMIT_CPU, &cpu);
  if (!kUnderSanitizer) {
    const rlimit memory{rlim_t{2} << 30, rlim_t{2} << 30};
    setrlimit(RLIMIT_AS, &memory);
  }
  std::string why;
  const bool ok = decode(&why);
  if (!ok) std::fprintf(stderr, "%s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(ok ? 0 : 1);
}

// Decodes `value` and checks that it is rejected too_large with the text within the bound.
bool RejectedTooLarge(Decoder* decoder, std::string_view value, std::string* why) {
  std::string text, detail;
  const char* reject = nullptr;
  const DecodeStatus status = decoder->Decode(value, &text, &reject, &detail);
  if (status != DecodeStatus::kReject || std::string(reject) != kRejectTooLarge) {
    *why = "not rejected too_large: " + std::string(reject ? reject : "(accepted)") + " " + detail;
    return false;
  }
  if (text.size() > kLimit || text.capacity() > 2 * kLimit) {
    *why = "text of " + std::to_string(text.size()) + " bytes (capacity " +
           std::to_string(text.capacity()) + ") past the bound";
    return false;
  }
  return true;
}

std::unique_ptr<AvroDecoder> Avro(const std::string& schema) {
  auto made = AvroDecoder::WithSchema(schema);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? std::move(*made) : nullptr;
}

// An Avro long as Avro writes it (zigzag varint).
void AppendAvroLong(int64_t v, std::string* out) {
  uint64_t u = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (u >= 0x80) {
    out->push_back(static_cast<char>((u & 0x7f) | 0x80));
    u >>= 7;
  }
  out->push_back(static_cast<char>(u));
}

std::string AvroDecode(AvroDecoder* decoder, const std::string& value, const char** reject) {
  std::string text, detail;
  *reject = nullptr;
  if (decoder->Decode(value, &text, reject, &detail) != DecodeStatus::kOk) return "";
  return text;
}

TEST(DecimalTextTest, ConversionIsBoundedAndSignExtensionCostsNothing) {
  auto decimal = [](const std::string& bytes, int scale, size_t max = kLimit) {
    std::string out = "x";
    if (!AppendDecimal(bytes, scale, max, &out)) return std::string("refused");
    return out.substr(1);
  };
  // 1 MiB of sign extension before 12345: converted as the two bytes it is.
  EXPECT_EQ(decimal(std::string(1 << 20, '\0') + "\x30\x39", 2), "123.45");
  EXPECT_EQ(decimal(std::string(1 << 20, '\xff') + "\xcf\xc7", 2), "-123.45");
  EXPECT_EQ(decimal("\xff\xff", 0), "-1");
  EXPECT_EQ(decimal(std::string("\x00\x80", 2), 0), "128");  // the 00 keeps it positive
  // 10^30 exactly: a chunk of nine zeros between others is padded.
  EXPECT_EQ(decimal(std::string("\x0c\x9f\x2c\x9c\xd0\x46\x74\xed\xea\x40\x00\x00\x00", 13), 0),
            "1000000000000000000000000000000");
  // The longest converted, and one byte more.
  EXPECT_NE(decimal(std::string(kMaxDecimalBytes, '\x7f'), 0), "refused");
  EXPECT_EQ(decimal(std::string(kMaxDecimalBytes + 1, '\x7f'), 0), "refused");
  EXPECT_EQ(decimal("\x01", 5, 8), "refused");  // "0.00001" and "x" past 8
  EXPECT_EQ(decimal("\x01", 4, 8), "0.0001");
}

TEST(DecimalTextDeathTest, ScalesTheTextCannotHoldAreRefusedBeforeAllocating) {
  // Under the budget: were the check to go, these would ask for gigabytes.
  EXPECT_EXIT(UnderBudget([](std::string* why) {
                std::string out;
                const bool refused = !AppendDecimal("\x01", 2'000'000'000, kLimit, &out) &&
                                     !AppendDecimal("\x01", INT32_MIN, kLimit, &out) && out.empty();
                if (!refused) *why = "accepted a scale past the bound";
                return refused;
              }),
              ::testing::ExitedWithCode(0), "");
}

TEST(AvroDecimalSchemaTest, InvalidDecimalsAreReadAsTheirBytesAsTheSpecSays) {
  auto field = [](const std::string& decimal) {
    return R"({"type": "record", "name": "R", "fields": [{"name": "d", "type": )" + decimal + "}]}";
  };
  std::string value;
  AppendAvroLong(1, &value);
  value.push_back('\x05');
  const char* reject = nullptr;
  // Valid: the decimal's text.
  auto valid = Avro(field(R"({"type": "bytes", "logicalType": "decimal", "precision": 4,
                             "scale": 2})"));
  EXPECT_EQ(AvroDecode(valid.get(), value, &reject), R"({"d":"0.05"})");
  // A scale above the precision, a negative one, INT_MIN, 2e9, no precision, a fixed too small
  // for its precision: base64 of the bytes.
  for (const char* bad :
       {R"({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 5})",
        R"({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": -1})",
        R"({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": -2147483648})",
        R"({"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2000000000})",
        R"({"type": "bytes", "logicalType": "decimal", "scale": 2})",
        R"({"type": "bytes", "logicalType": "decimal", "precision": 0})",
        R"({"type": "bytes", "logicalType": "decimal", "precision": 1e3})"}) {
    auto decoder = Avro(field(bad));
    ASSERT_NE(decoder, nullptr) << bad;
    EXPECT_EQ(AvroDecode(decoder.get(), value, &reject), R"({"d":"BQ=="})") << bad;
  }
  // fixed(2) holds 4 digits (32767), not 5.
  std::string two = std::string("\x30\x39", 2);
  auto fixed4 = Avro(field(R"({"type": "fixed", "name": "F", "size": 2, "logicalType": "decimal",
                              "precision": 4, "scale": 1})"));
  EXPECT_EQ(AvroDecode(fixed4.get(), two, &reject), R"({"d":"1234.5"})");
  auto fixed5 = Avro(field(R"({"type": "fixed", "name": "F", "size": 2, "logicalType": "decimal",
                              "precision": 5, "scale": 1})"));
  EXPECT_EQ(AvroDecode(fixed5.get(), two, &reject), R"({"d":"MDk="})");
}

TEST(DecodeBoundsDeathTest, AvroDecimalBombIsTooLargeWithinACpuBudget) {
  // A 1 MiB unscaled value: 2.5 million digits, minutes of CPU for a quadratic conversion.
  EXPECT_EXIT(UnderBudget([](std::string* why) {
                auto decoder = Avro(R"({"type": "record", "name": "R", "fields": [{"name": "d",
                    "type": {"type": "bytes", "logicalType": "decimal",
                             "precision": 2147483647, "scale": 2}}]})");
                std::string value;
                AppendAvroLong(1 << 20, &value);
                value.append(1 << 20, '\x7f');
                return RejectedTooLarge(decoder.get(), value, why);
              }),
              ::testing::ExitedWithCode(0), "");
}

TEST(DecodeBoundsDeathTest, AvroScaleBombIsTooLargeWithinACpuBudget) {
  // A scale of 2e9 under a precision that allows it: "0.000...01" would be 2 GB of text.
  EXPECT_EXIT(UnderBudget([](std::string* why) {
                auto decoder = Avro(R"({"type": "record", "name": "R", "fields": [{"name": "d",
                    "type": {"type": "bytes", "logicalType": "decimal",
                             "precision": 2147483647, "scale": 2000000000}}]})");
                std::string value;
                AppendAvroLong(1, &value);
                value.push_back('\x01');
                return RejectedTooLarge(decoder.get(), value, why);
              }),
              ::testing::ExitedWithCode(0), "");
}

// Blocks of a million items each, as many as fit in 1 MiB: 3e11 items that take no bytes.
std::string ZeroByteItemBlocks() {
  std::string value;
  while (value.size() < (1 << 20)) AppendAvroLong(1'000'000, &value);
  AppendAvroLong(0, &value);
  return value;
}

TEST(DecodeBoundsDeathTest, AvroArraysOfZeroByteItemsAreTooLargeWithinACpuBudget) {
  for (const char* items : {R"("null")", R"({"type": "record", "name": "Empty", "fields": []})",
                            R"({"type": "fixed", "name": "Nothing", "size": 0})"}) {
    const std::string schema = std::string(R"({"type": "array", "items": )") + items + "}";
    EXPECT_EXIT(UnderBudget([&](std::string* why) {
                  auto decoder = Avro(schema);
                  return RejectedTooLarge(decoder.get(), ZeroByteItemBlocks(), why);
                }),
                ::testing::ExitedWithCode(0), "")
        << items;
    // And as a map's values: each item has a key, so the count is bounded by the bytes left, but
    // "k":null is 9 bytes of text for 2 bytes of record.
    std::string map_value;
    AppendAvroLong(400'000, &map_value);
    for (int i = 0; i < 400'000; ++i) map_value.append("\x02k", 2);
    AppendAvroLong(0, &map_value);
    std::string why;
    auto small = AvroDecoder::WithSchema(std::string(R"({"type": "map", "values": )") + items + "}",
                                         1 << 20);
    ASSERT_TRUE(small.ok());
    EXPECT_TRUE(RejectedTooLarge(small->get(), map_value, &why)) << why;
  }
}

TEST(DecodeBoundsTest, AvroRecordJustUnderTheBoundIsKeptAndJustOverIsTooLarge) {
  constexpr size_t kSmall = 64 << 10;
  auto decoder = AvroDecoder::WithSchema(R"({"type": "array", "items": "null"})", kSmall);
  ASSERT_TRUE(decoder.ok());
  auto array_of = [](int64_t n) {
    std::string value;
    AppendAvroLong(n, &value);
    AppendAvroLong(0, &value);
    return value;
  };
  std::string text, detail;
  const char* reject = nullptr;
  // [null,null,...]: 5n + 1 bytes. The count check asks 2n up front, every item 64 more.
  const int64_t fits = (kSmall - 64) / 5 - 1;
  ASSERT_EQ((*decoder)->Decode(array_of(fits), &text, &reject, &detail), DecodeStatus::kOk)
      << detail;
  EXPECT_LE(text.size(), kSmall);
  EXPECT_EQ((*decoder)->Decode(array_of(kSmall / 5 + 1), &text, &reject, &detail),
            DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectTooLarge);
  EXPECT_NE(detail.find("ingest.max_decoded_bytes"), std::string::npos) << detail;
  // Strings are checked by their escaped size: 20,000 control bytes write 120,000.
  auto strings = AvroDecoder::WithSchema(R"("string")", kSmall);
  ASSERT_TRUE(strings.ok());
  std::string value;
  AppendAvroLong(20'000, &value);
  value.append(20'000, '\x01');
  EXPECT_EQ((*strings)->Decode(value, &text, &reject, &detail), DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectTooLarge);
  EXPECT_LE(text.capacity(), 2 * kSmall);
}

// A message with a repeated field of messages that each write 64 defaults: 2 bytes of record,
// ~700 bytes of text each.
constexpr const char* kWideSchema = R"pb(
  name: "wide.proto"
  package: "w"
  syntax: "proto3"
  message_type {
    name: "Outer"
    field { name: "items" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".w.Wide" }
    field { name: "flags" number: 2 label: LABEL_REPEATED type: TYPE_BOOL }
  }
)pb";

std::unique_ptr<ProtobufDecoder> WideDecoder(size_t limit = kLimit) {
  google::protobuf::FileDescriptorProto file;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kWideSchema, &file));
  auto* wide = file.add_message_type();
  wide->set_name("Wide");
  for (int i = 1; i <= 64; ++i) {
    auto* f = wide->add_field();
    f->set_name("field_" + std::to_string(i));
    f->set_number(i);
    f->set_label(google::protobuf::FieldDescriptorProto::LABEL_OPTIONAL);
    f->set_type(google::protobuf::FieldDescriptorProto::TYPE_DOUBLE);
  }
  google::protobuf::FileDescriptorSet set;
  *set.add_file() = file;
  auto made = ProtobufDecoder::WithDescriptorSet(set.SerializeAsString(), "w.Outer", limit);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? std::move(*made) : nullptr;
}

TEST(DecodeBoundsDeathTest, ProtobufRepeatedEmptyMessagesAreTooLargeWithinACpuBudget) {
  EXPECT_EXIT(UnderBudget([](std::string* why) {
                auto decoder = WideDecoder();
                std::string value;
                while (value.size() < (1 << 20)) value.append("\x0a\x00", 2);  // items {}
                return RejectedTooLarge(decoder.get(), value, why);
              }),
              ::testing::ExitedWithCode(0), "");
}

TEST(DecodeBoundsTest, ProtobufPackedRunsAndEmptyItemsStopAtTheBound) {
  constexpr size_t kSmall = 64 << 10;
  auto decoder = WideDecoder(kSmall);
  ASSERT_NE(decoder, nullptr);
  std::string text, detail;
  const char* reject = nullptr;
  // 60,000 packed bools: 1 byte each on the wire, "false," 6 bytes each in text.
  std::string packed = "\x12";
  uint64_t n = 60'000;
  while (n >= 0x80) {
    packed.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  packed.push_back(static_cast<char>(n));
  packed.append(60'000, '\0');
  EXPECT_EQ(decoder->Decode(packed, &text, &reject, &detail), DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectTooLarge);
  EXPECT_LE(text.size(), kSmall);
  // Two empty items fit.
  ASSERT_EQ(decoder->Decode(std::string("\x0a\x00\x0a\x00", 4), &text, &reject, &detail),
            DecodeStatus::kOk)
      << detail;
  EXPECT_EQ(json::parse(text)["items"].size(), 2u);
}

// A decoder whose every decode runs out of memory.
class OutOfMemory final : public Decoder {
 public:
  DecodeStatus Decode(std::string_view, std::string* json, const char**, std::string*) override {
    json->assign("partial");
    throw std::bad_alloc();
  }
};

TEST(DecodeRecordTest, OutOfMemoryWhileDecodingRejectsTheRecordAsTooLarge) {
  OutOfMemory decoder;
  std::string text, detail;
  const char* reject = nullptr;
  EXPECT_EQ(DecodeRecord(&decoder, "value", &text, &reject, &detail), DecodeStatus::kReject);
  EXPECT_STREQ(reject, kRejectTooLarge);
  EXPECT_NE(detail.find("out of memory"), std::string::npos);
  EXPECT_TRUE(text.empty());
}

}  // namespace
}  // namespace hotrow::ingest::decode_bounds_test
