// The index-field extraction of RecordParser (ParserOptions::index_fields): scalars become text in
// the same parse as the id and the time, the rest is counted, never a reject; both parsers
// (simdjson and the fallback for integers beyond 64 bits) agree.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/record_parser.h"

namespace hotrow::ingest::record_parser_index_test {
namespace {

using keying::IndexEntry;

constexpr int64_t kNow = 1'700'000'000'000;

ParsedRecord Parse(std::vector<std::string> fields, std::string_view value) {
  ParserOptions options;
  options.index_fields = std::move(fields);
  RecordParser parser(options);
  ParsedRecord out;
  parser.Parse(RecordView{value, "", kNow}, kNow - 600'000, kNow + 60'000, &out);
  return out;
}

TEST(RecordParserIndexTest, ScalarsBecomeTextInFieldOrder) {
  ParsedRecord r = Parse({"site", "meta.type", "n", "neg", "f", "ok", "big"},
                         R"({"event_id":"a","ts":1700000000000,"site":"s-1",)"
                         R"("meta":{"type":"alarm"},"n":42,"neg":-7,"f":1.5,"ok":true,)"
                         R"("big":18446744073709551615})");
  ASSERT_TRUE(r.ok()) << r.detail;
  const std::vector<IndexEntry> want = {
      {"site", "s-1"}, {"meta.type", "alarm"},         {"n", "42"}, {"neg", "-7"}, {"f", "1.5"},
      {"ok", "true"},  {"big", "18446744073709551615"}};
  EXPECT_EQ(r.index, want);
  EXPECT_EQ(r.index_absent + r.index_not_scalar + r.index_too_long, 0u);
}

TEST(RecordParserIndexTest, AbsentNullObjectArrayAndLongAreCountedNotRejected) {
  const std::string long_value(257, 'x');
  ParsedRecord r =
      Parse({"missing", "nul", "obj", "arr", "long", "meta.deep", "edge"},
            R"({"event_id":"a","ts":1700000000000,"nul":null,"obj":{"a":1},)"
            R"("arr":[1],"long":")" +
                long_value + R"(","meta":"flat","edge":")" + std::string(256, 'y') + R"("})");
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.index_absent, 2u);      // missing, null
  EXPECT_EQ(r.index_not_scalar, 3u);  // object, array, a path through a string
  EXPECT_EQ(r.index_too_long, 1u);    // 257 bytes
  ASSERT_EQ(r.index.size(), 1u);      // 256 bytes is allowed
  EXPECT_EQ(r.index[0].field, "edge");
}

TEST(RecordParserIndexTest, RejectedRecordsGiveNoEntries) {
  ParsedRecord r = Parse({"site"}, R"({"ts":1700000000000,"site":"s"})");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.index.empty());
}

TEST(RecordParserIndexTest, FallbackParserAgrees) {
  // An integer beyond 64 bits sends the record to the fallback parser.
  ParsedRecord r = Parse({"site", "n", "ok", "obj"},
                         R"({"event_id":"a","ts":1700000000000,"huge":123456789012345678901234,)"
                         R"("site":"s-1","n":42,"ok":false,"obj":[]})");
  ASSERT_TRUE(r.ok()) << r.detail;
  const std::vector<IndexEntry> want = {{"site", "s-1"}, {"n", "42"}, {"ok", "false"}};
  EXPECT_EQ(r.index, want);
  EXPECT_EQ(r.index_not_scalar, 1u);
}

TEST(RecordParserIndexTest, ReusedParserStartsEachRecordAfresh) {
  ParserOptions options;
  options.index_fields = {"site"};
  RecordParser parser(options);
  ParsedRecord out;
  parser.Parse(RecordView{R"({"event_id":"a","site":"x"})", "", kNow}, 0, kNow + 1, &out);
  ASSERT_EQ(out.index.size(), 1u);
  parser.Parse(RecordView{R"({"event_id":"a"})", "", kNow}, 0, kNow + 1, &out);
  EXPECT_TRUE(out.index.empty());
  EXPECT_EQ(out.index_absent, 1u);
}

}  // namespace
}  // namespace hotrow::ingest::record_parser_index_test
