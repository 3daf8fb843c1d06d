// format=rows (http/rows_format.h) alone: each answer shape the series and latest routes write,
// rewritten byte for byte as expected; payloads flattened; the head kept. Through a real server
// with the dashboard's own queries: grafana_dashboard_test.cc.

#include "http/rows_format.h"

#include <gtest/gtest.h>

#include <string>

namespace hotrow::http {
// Named, not anonymous: the test sources of a directory compile as unity batches
// (cmake/unity.cmake).
namespace rows_format_test {

std::string RowsOf(const std::string& answer) {
  Result<std::string> rows = AnswerAsRows(answer);
  EXPECT_TRUE(rows.ok()) << answer << ": " << rows.status().ToString();
  return rows.ok() ? *rows : "";
}

TEST(RowsFormatTest, EventsBecomeRowsWithATimeColumnAndTheHeadStaysBeside) {
  EXPECT_EQ(RowsOf(R"({"event_id":"dev-1","events":[)"
                   R"({"event_id":"dev-1","ts":1700000001000,"topic":"t","partition":2,)"
                   R"("offset":7,"payload":{"temp":21.5,"ok":true,"site":"north"}}]})"),
            R"({"event_id":"dev-1","rows":[)"
            R"({"time":1700000001000,"event_id":"dev-1","topic":"t","partition":2,"offset":7,)"
            R"("payload_temp":21.5,"payload_ok":true,"payload_site":"north"}]})");
  // A cluster answer's head, and the cursor of the latest of every id, are kept as they were.
  EXPECT_EQ(RowsOf(R"({"events":[],"next":"dev-9","complete":false,"missing":[{"topic":"t",)"
                   R"("partitions":[1]}],"stale":[]})"),
            R"({"next":"dev-9","complete":false,"missing":[{"topic":"t","partitions":[1]}],)"
            R"("stale":[],"rows":[]})");
}

TEST(RowsFormatTest, NestedPayloadObjectsAreFlattenedWithUnderscoresArraysStayWhole) {
  EXPECT_EQ(RowsOf(R"({"events":[{"event_id":"a","ts":5,"topic":"t","partition":0,"offset":0,)"
                   R"("payload":{"loc":{"lat":1.5,"lon":{"deg":2}},"tags":["x",{"y":1}],)"
                   R"("empty":{},"n":null}}]})"),
            R"({"rows":[{"time":5,"event_id":"a","topic":"t","partition":0,"offset":0,)"
            R"("payload_loc_lat":1.5,"payload_loc_lon_deg":2,"payload_tags":["x",{"y":1}],)"
            R"("payload_empty":{},"payload_n":null}]})");
}

// A payload is returned as it was received: its numbers, strings and spacing inside arrays keep
// their text in the rows, as in the JSON answer (no parse and print again: 1.10 stays 1.10).
TEST(RowsFormatTest, PayloadValuesKeepTheirTextAsStored) {
  EXPECT_EQ(RowsOf(R"({"events":[{"event_id":"a","ts":5,"topic":"t","partition":0,"offset":0,)"
                   R"("payload":{ "v" : 1.10 , "big": 12345678901234567890123, "e":1E5,)"
                   R"( "s":"\u00e9\"", "\u00e9":true, "arr":[1, 2] }}]})"),
            R"({"rows":[{"time":5,"event_id":"a","topic":"t","partition":0,"offset":0,)"
            R"("payload_v":1.10,"payload_big":12345678901234567890123,"payload_e":1E5,)"
            R"("payload_s":"\u00e9\"","payload_é":true,"payload_arr":[1, 2]}]})");
}

TEST(RowsFormatTest, AColumnNamedTwiceKeepsItsFirstValue) {
  EXPECT_EQ(RowsOf(R"({"events":[{"event_id":"a","ts":5,"topic":"t","partition":0,"offset":0,)"
                   R"("payload":{"a_b":1,"a":{"b":2}}}]})"),
            R"({"rows":[{"time":5,"event_id":"a","topic":"t","partition":0,"offset":0,)"
            R"("payload_a_b":1}]})");
}

TEST(RowsFormatTest, APayloadThatIsNoObjectIsOneColumn) {
  EXPECT_EQ(RowsOf(R"({"events":[{"event_id":"a","ts":5,"topic":"t","partition":0,"offset":0,)"
                   R"("payload":[1,2]}]})"),
            R"({"rows":[{"time":5,"event_id":"a","topic":"t","partition":0,"offset":0,)"
            R"("payload":[1,2]}]})");
}

TEST(RowsFormatTest, DeepPayloadsStopFlatteningAt32Levels) {
  std::string deep = "1";
  for (int i = 0; i < 40; ++i) deep = "{\"x\":" + deep + "}";
  const std::string rows =
      RowsOf(R"({"events":[{"event_id":"a","ts":5,"topic":"t","partition":0,"offset":0,)"
             R"("payload":)" +
             deep + "}]}");
  std::string column = "payload";
  for (int i = 0; i < 32; ++i) column += "_x";
  std::string rest = "1";
  for (int i = 0; i < 8; ++i) rest = "{\"x\":" + rest + "}";
  EXPECT_NE(rows.find("\"" + column + "\":" + rest), std::string::npos) << rows;
}

// Ingest takes payloads up to simdjson's DOM default depth (1024); their answers, a few levels
// deeper, are still rewritten (a depth-checked parse of the answer would refuse them: a 500).
TEST(RowsFormatTest, APayloadAsDeepAsIngestTakesIsStillRewritten) {
  std::string deep = "1";
  for (int i = 0; i < 1023; ++i) deep = "[" + deep + "]";
  deep = "{\"x\":" + deep + "}";  // 1024 levels
  for (const std::string& answer :
       {R"({"events":[{"event_id":"a","ts":5,"topic":"t","partition":0,"offset":0,"payload":)" +
            deep + "}]}",
        R"({"ids":{"a":[{"event_id":"a","ts":5,"topic":"t","partition":0,"offset":0,"payload":)" +
            deep + "}]}}"}) {
    const std::string rows = RowsOf(answer);
    EXPECT_NE(rows.find("\"payload_x\":[[["), std::string::npos) << rows.substr(0, 200);
  }
}

TEST(RowsFormatTest, TheLatestOfManyIdsIsEachIdsEventsInTheOrderAsked) {
  EXPECT_EQ(RowsOf(R"({"ids":{"b":[{"event_id":"b","ts":9,"topic":"t","partition":0,"offset":3,)"
                   R"("payload":{"v":2}},{"event_id":"b","ts":8,"topic":"t","partition":0,)"
                   R"("offset":2,"payload":{"v":1}}],"nobody":[],"a":[{"event_id":"a","ts":7,)"
                   R"("topic":"t","partition":1,"offset":0,"payload":{"v":0}}]}})"),
            R"({"rows":[)"
            R"({"time":9,"event_id":"b","topic":"t","partition":0,"offset":3,"payload_v":2},)"
            R"({"time":8,"event_id":"b","topic":"t","partition":0,"offset":2,"payload_v":1},)"
            R"({"time":7,"event_id":"a","topic":"t","partition":1,"offset":0,"payload_v":0}]})");
}

TEST(RowsFormatTest, SeriesPointsBecomeRowsNamingTheirIdOrIndexValue) {
  EXPECT_EQ(RowsOf(R"({"event_id":"dev-1","field":"temp","step_ms":30000,"points":[)"
                   R"({"t":1700000000000,"avg":20.5,"max":21},{"t":1700000030000,"avg":22,)"
                   R"("max":22}],"skipped":{"absent":1,"not_number":0}})"),
            R"({"event_id":"dev-1","field":"temp","step_ms":30000,)"
            R"("skipped":{"absent":1,"not_number":0},"rows":[)"
            R"({"time":1700000000000,"event_id":"dev-1","avg":20.5,"max":21},)"
            R"({"time":1700000030000,"event_id":"dev-1","avg":22,"max":22}]})");
  EXPECT_EQ(RowsOf(R"({"index":{"field":"site","value":"north"},"field":"temp","step_ms":500,)"
                   R"("points":[{"t":0,"count":3}],"skipped":{"absent":0,"not_number":0},)"
                   R"("unindexed":[{"from":0,"to":60000}]})"),
            R"({"index":{"field":"site","value":"north"},"field":"temp","step_ms":500,)"
            R"("skipped":{"absent":0,"not_number":0},"unindexed":[{"from":0,"to":60000}],)"
            R"("rows":[{"time":0,"index_field":"site","index_value":"north","count":3}]})");
}

TEST(RowsFormatTest, AnAnswerWithoutRowsIsAnErrorNotAGuess) {
  for (const char* answer : {"", "[]", "not json", R"({"status":"ok"})", R"({"events":[1]})",
                             R"({"points":[{"avg":1}]})", R"({"ids":{"a":1}})"}) {
    Result<std::string> rows = AnswerAsRows(answer);
    EXPECT_FALSE(rows.ok()) << answer;
  }
}

}  // namespace rows_format_test
}  // namespace hotrow::http
