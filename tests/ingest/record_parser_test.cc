#include "ingest/record_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "ingest/ingestor.h"

namespace hotrow::ingest {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kWindowStart = kNow - 600'000;
constexpr int64_t kMaxTime = kNow + 60'000;

ParsedRecord Parse(const ParserOptions& options, std::string_view value, std::string_view key = "",
                   int64_t kafka_ts = kNow) {
  RecordParser parser(options);
  ParsedRecord out;
  parser.Parse(RecordView{value, key, kafka_ts}, kWindowStart, kMaxTime, &out);
  return out;
}

ParsedRecord Parse(std::string_view value, std::string_view key = "", int64_t kafka_ts = kNow) {
  return Parse(ParserOptions{}, value, key, kafka_ts);
}

std::string Reason(const ParsedRecord& r) { return r.reject == nullptr ? "ok" : r.reject; }

TEST(RecordParserTest, TakesIdAndIntegerTimeFromDefaultFields) {
  ParsedRecord r = Parse(R"({"event_id":"dev-000042","ts":1700000000000,"temp":21.5})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "dev-000042");
  EXPECT_EQ(r.ts_ms, 1'700'000'000'000);
}

TEST(RecordParserTest, ParsesRfc3339Time) {
  ParsedRecord r = Parse(R"({"event_id":"a","ts":"2023-11-14T22:13:20.5Z"})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.ts_ms, 1'700'000'000'500);
  r = Parse(R"({"event_id":"a","ts":"2023-11-14T23:13:20+01:00"})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.ts_ms, 1'700'000'000'000);
}

TEST(RecordParserTest, MissingOrNullTimeFallsBackToKafkaTimestamp) {
  ParsedRecord r = Parse(R"({"event_id":"a"})", "", kNow - 5);
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.ts_ms, kNow - 5);
  r = Parse(R"({"event_id":"a","ts":null})", "", kNow - 7);
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.ts_ms, kNow - 7);
}

TEST(RecordParserTest, MissingTimeWithoutKafkaTimestampIsBadTime) {
  EXPECT_EQ(Reason(Parse(R"({"event_id":"a"})", "", -1)), kRejectBadTime);
}

TEST(RecordParserTest, MissingIdFallsBackToRecordKey) {
  ParsedRecord r = Parse(R"({"ts":1700000000000})", "dev-7");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "dev-7");
  r = Parse(R"({"event_id":null,"ts":1700000000000})", "dev-8");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "dev-8");
}

TEST(RecordParserTest, FieldIdWinsOverKey) {
  ParsedRecord r = Parse(R"({"event_id":"from-field","ts":1700000000000})", "from-key");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.id, "from-field");
}

TEST(RecordParserTest, IntegerIdIsItsDecimalText) {
  ParsedRecord r = Parse(R"({"event_id":42,"ts":1700000000000})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "42");
  r = Parse(R"({"event_id":-7,"ts":1700000000000})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "-7");
  r = Parse(R"({"event_id":18446744073709551615,"ts":1700000000000})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "18446744073709551615");
}

TEST(RecordParserTest, DottedPathsReachNestedFields) {
  ParserOptions options;
  options.id_field = "device.meta.id";
  options.ts_field = "reading.at";
  ParsedRecord r = Parse(
      options, R"({"device":{"meta":{"id":"nested-1"}},"reading":{"at":"2023-11-14T22:13:20Z"}})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "nested-1");
  EXPECT_EQ(r.ts_ms, 1'700'000'000'000);
  // A missing nested field falls back like a missing top-level one.
  r = Parse(options, R"({"device":{"meta":{}}})", "the-key", kNow - 1);
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "the-key");
  EXPECT_EQ(r.ts_ms, kNow - 1);
}

TEST(RecordParserTest, PathThroughNonObjectIsRejected) {
  ParserOptions options;
  options.id_field = "device.id";
  EXPECT_EQ(Reason(Parse(options, R"({"device":"flat","ts":1700000000000})", "k")), kRejectNoId);
  options = ParserOptions{};
  options.ts_field = "t.ms";
  EXPECT_EQ(Reason(Parse(options, R"({"event_id":"a","t":5})")), kRejectBadTime);
}

TEST(RecordParserTest, EmptyFieldNamesMeanKeyAndKafkaTimestamp) {
  ParserOptions options;
  options.id_field = "";
  options.ts_field = "";
  ParsedRecord r = Parse(options, R"({"event_id":"ignored","ts":1})", "k", kNow - 3);
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "k");
  EXPECT_EQ(r.ts_ms, kNow - 3);
}

TEST(RecordParserTest, RejectsWhatIsNotAJsonObject) {
  for (const char* value : {"", "not json", "{\"event_id\":\"a\",", "[1,2,3]", "\"a string\"", "42",
                            "null", "{\"event_id\":\"a\"} trailing", "{\"a\":tru}",
                            "{\"event_id\":\"a\",\"ts\":1700000000000"}) {
    ParsedRecord r = Parse(value, "key");
    EXPECT_EQ(Reason(r), kRejectNotJson) << "value: " << value;
    EXPECT_FALSE(r.detail.empty());
  }
}

TEST(RecordParserTest, RejectsInvalidUtf8AsNotJson) {
  EXPECT_EQ(Reason(Parse("{\"event_id\":\"\xff\xfe\",\"ts\":1700000000000}")), kRejectNotJson);
}

TEST(RecordParserTest, AcceptsIntegersBeyond64BitsInOtherFields) {
  // Valid JSON that simdjson refuses; the slower parser takes it.
  ParsedRecord r =
      Parse(R"({"event_id":"a","ts":1700000000000,"serial":123456789012345678901234567890})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "a");
  EXPECT_EQ(r.ts_ms, 1'700'000'000'000);
  // Malformed numbers stay not JSON on either path.
  EXPECT_EQ(Reason(Parse(R"({"event_id":"a","ts":1700000000000,"n":01})")), kRejectNotJson);
  EXPECT_EQ(Reason(Parse(R"({"event_id":"a","ts":1700000000000,"n":1.})")), kRejectNotJson);
}

TEST(RecordParserTest, RejectsMissingId) {
  EXPECT_EQ(Reason(Parse(R"({"ts":1700000000000})", "")), kRejectNoId);
  EXPECT_EQ(Reason(Parse(R"({"event_id":"","ts":1700000000000})", "key")), kRejectNoId);
}

TEST(RecordParserTest, RejectsIdOfWrongType) {
  for (const char* value :
       {R"({"event_id":1.5,"ts":1700000000000})", R"({"event_id":true,"ts":1700000000000})",
        R"({"event_id":{"a":1},"ts":1700000000000})", R"({"event_id":[1],"ts":1700000000000})"}) {
    EXPECT_EQ(Reason(Parse(value, "key")), kRejectNoId) << value;
  }
}

TEST(RecordParserTest, IdLengthLimitIs256Bytes) {
  std::string ok_id(256, 'x');
  ParsedRecord r = Parse(R"({"event_id":")" + ok_id + R"(","ts":1700000000000})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, ok_id);
  std::string long_id(257, 'x');
  EXPECT_EQ(Reason(Parse(R"({"event_id":")" + long_id + R"(","ts":1700000000000})")),
            kRejectIdTooLong);
  // The key fallback has the same limit.
  EXPECT_EQ(Reason(Parse(R"({"ts":1700000000000})", long_id)), kRejectIdTooLong);
}

TEST(RecordParserTest, RejectsIdsThatAreNotUtf8) {
  using namespace std::string_literals;
  // A record key may be any bytes; an id that is not UTF-8 could never be queried or returned
  // unaltered, so it is refused.
  for (const std::string& key : {"\xff"s, "dev\xfe"s, "\xc0\xaf"s, "\xed\xa0\x80"s, "\xe2\x82"s}) {
    EXPECT_EQ(Reason(Parse(R"({"ts":1700000000000})", key)), kRejectIdNotUtf8)
        << testing::PrintToString(key);
  }
  // UTF-8 keys and ids, and ids from JSON escapes, are kept exactly.
  ParsedRecord r = Parse(R"({"ts":1700000000000})", "d\xc3\xa9v-\xf0\x9f\x98\x80");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "d\xc3\xa9v-\xf0\x9f\x98\x80");
  r = Parse(R"({"event_id":"d\u00e9v","ts":1700000000000})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.id, "d\xc3\xa9v");
  // The reason is one of the counted ones.
  bool listed = false;
  for (const char* reason : kRejectReasons) listed = listed || std::string(reason) == "id_not_utf8";
  EXPECT_TRUE(listed);
}

TEST(RecordParserTest, RejectsUnparsableTime) {
  for (const char* value :
       {R"({"event_id":"a","ts":"yesterday"})", R"({"event_id":"a","ts":-5})",
        R"({"event_id":"a","ts":1.7e12})", R"({"event_id":"a","ts":true})",
        R"({"event_id":"a","ts":{"ms":1}})", R"({"event_id":"a","ts":"2023-13-40T99:00:00Z"})",
        R"({"event_id":"a","ts":99999999999999999999})"}) {
    EXPECT_EQ(Reason(Parse(value)), kRejectBadTime) << value;
  }
}

TEST(RecordParserTest, RejectsTimesOutsideWindowAndFuture) {
  EXPECT_EQ(Reason(Parse(R"({"event_id":"a","ts":)" + std::to_string(kWindowStart - 1) + "}")),
            kRejectExpired);
  EXPECT_TRUE(Parse(R"({"event_id":"a","ts":)" + std::to_string(kWindowStart) + "}").ok());
  EXPECT_TRUE(Parse(R"({"event_id":"a","ts":)" + std::to_string(kMaxTime) + "}").ok());
  EXPECT_EQ(Reason(Parse(R"({"event_id":"a","ts":)" + std::to_string(kMaxTime + 1) + "}")),
            kRejectFuture);
  // The Kafka timestamp fallback is judged the same way.
  EXPECT_EQ(Reason(Parse(R"({"event_id":"a"})", "", kWindowStart - 1)), kRejectExpired);
  EXPECT_EQ(Reason(Parse(R"({"event_id":"a"})", "", kMaxTime + 1)), kRejectFuture);
}

TEST(RecordParserTest, ParserIsReusableAcrossRecordsOfAnySize) {
  RecordParser parser(ParserOptions{});
  ParsedRecord out;
  for (int i = 0; i < 200; ++i) {
    std::string pad(static_cast<size_t>(i * 37), 'p');
    std::string value = R"({"event_id":"id-)" + std::to_string(i) + R"(","ts":)" +
                        std::to_string(kNow - i) + R"(,"pad":")" + pad + R"("})";
    parser.Parse(RecordView{value, "", kNow}, kWindowStart, kMaxTime, &out);
    ASSERT_TRUE(out.ok()) << out.detail;
    EXPECT_EQ(out.id, "id-" + std::to_string(i));
    EXPECT_EQ(out.ts_ms, kNow - i);
    parser.Parse(RecordView{"garbage", "k", kNow}, kWindowStart, kMaxTime, &out);
    EXPECT_EQ(Reason(out), kRejectNotJson);
  }
}

TEST(RecordParserTest, SplitsDottedPaths) {
  EXPECT_EQ(SplitDottedPath(""), std::vector<std::string>{});
  EXPECT_EQ(SplitDottedPath("a"), std::vector<std::string>{"a"});
  EXPECT_EQ(SplitDottedPath("a.b.c"), (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace hotrow::ingest
