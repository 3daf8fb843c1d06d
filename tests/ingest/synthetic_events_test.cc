#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <string>

#include "ingest/synthetic_producer.h"

namespace hotrow::ingest {
namespace {

TEST(SyntheticEventsTest, SameSeedGivesSameEvents) {
  SyntheticEvents a(1000, 1.1, 7), b(1000, 1.1, 7), c(1000, 1.1, 8);
  std::string ida, ja, idb, jb, idc, jc;
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    a.Next(1000 + i, &ida, &ja);
    b.Next(1000 + i, &idb, &jb);
    c.Next(1000 + i, &idc, &jc);
    ASSERT_EQ(ida, idb);
    ASSERT_EQ(ja, jb);
    differ += ja != jc;
  }
  EXPECT_GT(differ, 900);
}

TEST(SyntheticEventsTest, EventsAreJsonObjectsWithIdTimeAndReadings) {
  SyntheticEvents events(50, 1.1, 1);
  simdjson::dom::parser parser;
  std::string id, json;
  for (int i = 0; i < 500; ++i) {
    events.Next(1'700'000'000'000 + i, &id, &json);
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
    std::string_view event_id;
    ASSERT_EQ(doc["event_id"].get(event_id), simdjson::SUCCESS);
    EXPECT_EQ(event_id, id);
    EXPECT_EQ(id.rfind("dev-", 0), 0u);
    int64_t ts;
    ASSERT_EQ(doc["ts"].get(ts), simdjson::SUCCESS);
    EXPECT_EQ(ts, 1'700'000'000'000 + i);
    double temp, humidity;
    int64_t battery;
    ASSERT_EQ(doc["temp"].get(temp), simdjson::SUCCESS) << json;
    ASSERT_EQ(doc["humidity"].get(humidity), simdjson::SUCCESS) << json;
    ASSERT_EQ(doc["battery"].get(battery), simdjson::SUCCESS) << json;
    EXPECT_GE(battery, 0);
    EXPECT_LE(battery, 100);
  }
}

TEST(SyntheticEventsTest, DeviceChoiceIsSkewedButCoversTheFleet) {
  SyntheticEvents events(1000, 1.1, 3);
  std::map<std::string, int> counts;
  std::string id, json;
  const int n = 200'000;
  for (int i = 0; i < n; ++i) {
    events.Next(0, &id, &json);
    ++counts[id];
  }
  // Zipf(1.1) over 1000 devices: the chattiest device sends far more than an even share
  // (200 each) and the tail is still reached.
  EXPECT_GT(counts[SyntheticEvents::DeviceId(0)], 20 * n / 1000);
  EXPECT_GT(counts.size(), 900u);
  EXPECT_GT(counts[SyntheticEvents::DeviceId(0)], counts[SyntheticEvents::DeviceId(9)]);
}

TEST(SyntheticEventsTest, UniformWhenSkewIsZero) {
  SyntheticEvents events(10, 0.0, 3);
  std::map<std::string, int> counts;
  std::string id, json;
  for (int i = 0; i < 100'000; ++i) {
    events.Next(0, &id, &json);
    ++counts[id];
  }
  ASSERT_EQ(counts.size(), 10u);
  for (const auto& [device, count] : counts) {
    EXPECT_NEAR(count, 10'000, 600) << device;
  }
}

TEST(SyntheticEventsTest, DeviceIdsHaveSixDigits) {
  EXPECT_EQ(SyntheticEvents::DeviceId(42), "dev-000042");
  EXPECT_EQ(SyntheticEvents::DeviceId(1234567), "dev-1234567");
}

}  // namespace
}  // namespace hotrow::ingest
