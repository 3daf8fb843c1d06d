#include "wire/event_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace hotrow::wire {
namespace {

query::Event MakeEvent(std::string id, std::string payload) {
  query::Event e;
  e.id = std::move(id);
  e.ts_ms = 1700000000123;
  e.topic = "events";
  e.partition = 3;
  e.offset = 42;
  e.payload = std::move(payload);
  return e;
}

TEST(EventJsonTest, WritesTheContractShapeWithThePayloadVerbatim) {
  std::string out;
  AppendEventJson(MakeEvent("dev-1", R"({"event_id":"dev-1","ts":1700000000123,"t":21.5})"), &out);
  EXPECT_EQ(out,
            R"({"event_id":"dev-1","ts":1700000000123,"topic":"events","partition":3,"offset":42,)"
            R"("payload":{"event_id":"dev-1","ts":1700000000123,"t":21.5}})");
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["payload"]["t"], 21.5);
}

TEST(EventJsonTest, EscapesIdsThatNeedIt) {
  std::string out;
  const std::string id("quote\" back\\ nl\n nul\0 /slash", 27);
  AppendEventJson(MakeEvent(id, "{}"), &out);
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["event_id"].get<std::string>(), id);
  EXPECT_EQ(out.find('\n'), std::string::npos);
}

TEST(EventJsonTest, ReplacesInvalidUtf8InIdsInsteadOfFailing) {
  std::string out;
  AppendEventJson(MakeEvent("bad\xff\xfe-utf8-\xc3\xa9", "{}"), &out);
  nlohmann::json j = nlohmann::json::parse(out);  // valid JSON whatever the id
  EXPECT_EQ(j["event_id"].get<std::string>(), "bad\xEF\xBF\xBD\xEF\xBF\xBD-utf8-\xc3\xa9");
}

TEST(EventJsonTest, KeepsValidUtf8IdsExactly) {
  std::string out;
  const std::string id = "capteur-\xc3\xa9t\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x94\xa5";
  AppendEventJson(MakeEvent(id, "{}"), &out);
  EXPECT_EQ(nlohmann::json::parse(out)["event_id"].get<std::string>(), id);
}

TEST(EventJsonTest, PrettyPrintedPayloadStaysOnOneLine) {
  std::string out;
  AppendEventJson(MakeEvent("a", "{\r\n  \"k\": \"v\\nw\",\n  \"n\": [1,\n 2]\n}"), &out);
  EXPECT_EQ(out.find('\n'), std::string::npos);
  EXPECT_EQ(out.find('\r'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["payload"]["k"], "v\nw");
  EXPECT_EQ(j["payload"]["n"][1], 2);
}

TEST(EventJsonTest, AppendJsonStringQuotes) {
  std::string out = "x";
  AppendJsonString("a\"b", &out);
  EXPECT_EQ(out, "x\"a\\\"b\"");
}

}  // namespace
}  // namespace hotrow::wire

namespace hotrow::wire {
namespace {

// The hand-written escaper writes exactly what nlohmann's dump writes, for every kind of byte.
TEST(EventJsonTest, AppendJsonStringMatchesNlohmannForAnyBytes) {
  std::mt19937_64 rng(5);
  const std::string alphabet[] = {"a", "\"", "\\", "\n", "\t", "\b", "\f", "\r", std::string(1, '\0'),
                                  "\x01", "\x1f", "\x7f", "/", "\xc3\xa9", "\xe2\x82\xac",
                                  "\xf0\x9f\x98\x80", "\xff", "\xc0\xaf", "\xed\xa0\x80"};
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const size_t len = rng() % 12;
    for (size_t k = 0; k < len; ++k) text += alphabet[rng() % std::size(alphabet)];
    std::string got;
    AppendJsonString(text, &got);
    const std::string want = nlohmann::json(text).dump(
        -1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
    ASSERT_EQ(got, want) << ::testing::PrintToString(text);
  }
}

TEST(EventJsonTest, IsValidUtf8FollowsTheStandard) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("d\xc3\xa9v \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  for (const char* bad : {"\xff", "\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe2\x82",
                          "a\xc3"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << ::testing::PrintToString(std::string(bad));
  }
}

}  // namespace
}  // namespace hotrow::wire
