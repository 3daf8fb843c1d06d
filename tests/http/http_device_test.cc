// The device-state queries over HTTP (CONTRACT.md "Device state and series"): the latest of every
// id (paged, by prefix), the latest of many ids (GET and POST) and series, each against the
// brute-force oracle of what was written; their bad parameters; and the last-N cache in /v1/stats
// and /metrics.

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/http/http_api_test_base.h"

namespace hotrow::http {
namespace {

class HttpDeviceTest : public HttpApiTest {
 protected:
  void SetUp() override {
    HttpApiTest::SetUp();
    ASSERT_NO_FATAL_FAILURE(OpenStore());
    std::vector<std::string> ids;
    for (int i = 0; i < 40; ++i) ids.push_back("dev-" + std::to_string(100 + i * 7));
    ids.push_back("room/1");  // a '/' in an id
    ids.push_back("a,b");     // a ',' in an id
    ids_ = ids;
    ASSERT_NO_FATAL_FAILURE(Fill(ids, 300, 40));
    ASSERT_NO_FATAL_FAILURE(StartServer());
    engine_->WaitForCacheRebuild();
  }

  nlohmann::ordered_json GetJson(const std::string& target, int want_status = 200) {
    httplib::Client client = Client();
    httplib::Result res = client.Get(target);
    EXPECT_TRUE(res) << target;
    if (!res) return {};
    EXPECT_EQ(res->status, want_status) << target << " -> " << res->body.substr(0, 300);
    return nlohmann::ordered_json::parse(res->body, nullptr, false);
  }

  // The oracle's newest event of every id, in id order.
  std::vector<Event> NewestOfEvery(const std::string& prefix) {
    std::vector<std::string> sorted = ids_;
    std::sort(sorted.begin(), sorted.end());
    std::vector<Event> out;
    for (const std::string& id : sorted) {
      if (!id.starts_with(prefix)) continue;
      std::vector<Event> newest = oracle_.Latest(id, 1, store_->WindowStartMs());
      if (!newest.empty()) out.push_back(newest.front());
    }
    return out;
  }

  std::vector<std::string> ids_;
};

TEST_F(HttpDeviceTest, LatestOfEveryIdPagesThroughEachIdOnceInIdOrder) {
  for (const std::string prefix : {"", "dev-1", "room", "zz"}) {
    for (int limit : {1, 7, 1000}) {
      std::vector<Event> got;
      std::string after;
      int pages = 0;
      while (true) {
        std::string target = "/v1/latest?limit=" + std::to_string(limit);
        if (!prefix.empty()) target += "&prefix=" + wire::PercentEncode(prefix);
        if (!after.empty()) target += "&after=" + wire::PercentEncode(after);
        nlohmann::ordered_json j = GetJson(target);
        ASSERT_TRUE(j.is_object());
        ASSERT_LE(j.at("events").size(), static_cast<size_t>(limit));
        for (const auto& e : j.at("events")) got.push_back(FromJson(e));
        ++pages;
        ASSERT_LT(pages, 100);
        if (j.at("next").is_null()) break;
        after = j.at("next").get<std::string>();
        EXPECT_EQ(after, got.back().id);
      }
      EXPECT_EQ(got, NewestOfEvery(prefix)) << "prefix " << prefix << " limit " << limit;
    }
  }
}

TEST_F(HttpDeviceTest, LatestOfManyIdsByGetAndPostEqualsEachIdsLatest) {
  const std::vector<std::string> asked = {"dev-107", "a,b", "nobody", "room/1", "dev-107"};
  std::string list;
  for (const std::string& id : asked) list += (list.empty() ? "" : ",") + wire::PercentEncode(id);
  nlohmann::ordered_json get = GetJson("/v1/latest?n=3&ids=" + list);
  httplib::Client client = Client();
  nlohmann::json body = {{"ids", asked}, {"n", 3}};
  httplib::Result post = client.Post("/v1/latest", body.dump(), "application/json");
  ASSERT_TRUE(post);
  ASSERT_EQ(post->status, 200) << post->body;
  for (const nlohmann::ordered_json& j :
       {get, nlohmann::ordered_json::parse(post->body, nullptr, false)}) {
    ASSERT_TRUE(j.is_object());
    const auto& answer = j.at("ids");
    // Each id once, in the order asked.
    std::vector<std::string> keys;
    for (const auto& [key, value] : answer.items()) keys.push_back(key);
    EXPECT_EQ(keys, (std::vector<std::string>{"dev-107", "a,b", "nobody", "room/1"}));
    for (const std::string& id : keys) {
      std::vector<Event> events;
      for (const auto& e : answer.at(id)) events.push_back(FromJson(e));
      EXPECT_EQ(events, oracle_.Latest(id, 3, store_->WindowStartMs())) << id;
    }
    EXPECT_TRUE(answer.at("nobody").empty());
  }
}

TEST_F(HttpDeviceTest, BadLatestParametersAndMethodsAreRefused) {
  for (const char* target : {"/v1/latest?limit=0", "/v1/latest?limit=100001", "/v1/latest?x=1",
                             "/v1/latest?ids=", "/v1/latest?ids=a&ids=b", "/v1/latest?ids=a&n=0",
                             "/v1/latest?ids=%FF", "/v1/latest?ids=a%ZZ"}) {
    nlohmann::ordered_json j = GetJson(target, 400);
    EXPECT_TRUE(j.is_object() && j.contains("error")) << target;
  }
  std::string many;
  for (int i = 0; i <= 1000; ++i) many += (many.empty() ? "" : ",") + std::to_string(i);
  httplib::Client client = Client();
  for (const std::string& body :
       {std::string("[1]"), std::string("{\"ids\": \"a\"}"), std::string("{\"ids\": [1]}"),
        std::string("{\"ids\": [\"a\"], \"n\": 0}"), std::string("{\"ids\": [], \"n\": 1}"),
        std::string("{\"ids\": [\"a\"], \"x\": 1}"), std::string("not json"),
        "{\"ids\": [\"" + std::string(257, 'a') + "\"]}", "{\"ids\": [" + many + "]}"}) {
    httplib::Result res = client.Post("/v1/latest", body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body.substr(0, 80) << " -> " << res->body;
  }
  // POST is for /v1/latest only; other methods there are 405 naming what is allowed.
  httplib::Result post = client.Post("/v1/events/x/latest", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  httplib::Result put = client.Put("/v1/latest", "{}", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, HEAD, POST");
}

// A series against the same aggregation done by hand over the oracle's events; fields absent or
// not numbers are counted, not charted.
TEST_F(HttpDeviceTest, SeriesEqualsTheAggregatesOfTheEventsAndCountsWhatItSkips) {
  // Events of "sensor" with a nested numeric field, a string, a missing one and a boolean.
  std::vector<TestEvent> events;
  const int64_t base = kFirstBucket + 2 * kBucketMs;
  for (int i = 0; i < 500; ++i) {
    TestEvent e;
    e.id = "sensor";
    e.ts_ms = base + (i * 7919) % (2 * kBucketMs);
    e.topic = "events";
    e.partition = i % 3;
    switch (i % 10) {
      case 0:
        e.payload = "{\"s\":{\"t\":\"warm\"}}";
        break;
      case 1:
        e.payload = "{\"other\":1}";
        break;
      case 2:
        e.payload = "{\"s\":{\"t\":true}}";
        break;
      case 3:
        e.payload = "{\"s\":{\"t\":null}}";
        break;
      default:
        e.payload = "{\"s\":{\"t\":" + std::to_string((i * 37) % 101 - 50) + ".5}}";
    }
    events.push_back(e);
  }
  testing::AssignOffsets(&events, &next_offsets_);
  store::WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store_.get(), events, &outcome).ok());
  ASSERT_EQ(outcome.stored, events.size());

  const int64_t from = base - 1234, to = base + 2 * kBucketMs + 10, step = 7000;
  nlohmann::ordered_json j =
      GetJson("/v1/events/sensor/series?field=s.t&from=" + std::to_string(from) +
              "&to=" + std::to_string(to) + "&step=" + std::to_string(step));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.at("event_id"), "sensor");
  EXPECT_EQ(j.at("field"), "s.t");
  EXPECT_EQ(j.at("step_ms"), step);
  // By hand: per step, count / sum / min / max / the value of the newest event.
  struct Agg {
    uint64_t count = 0;
    double sum = 0, min = 1e300, max = -1e300, last = 0;
    std::tuple<int64_t, std::string, int32_t, int64_t> last_key{-1, "", 0, 0};
  };
  std::map<int64_t, Agg> want;
  uint64_t absent = 0, not_number = 0;
  for (const TestEvent& e : events) {
    const nlohmann::json p = nlohmann::json::parse(e.payload);
    if (!p.contains("s") || p["s"]["t"].is_null()) {
      ++absent;
      continue;
    }
    if (!p["s"]["t"].is_number()) {
      ++not_number;
      continue;
    }
    const double v = p["s"]["t"].get<double>();
    Agg& a = want[from + (e.ts_ms - from) / step * step];
    ++a.count;
    a.sum += v;
    a.min = std::min(a.min, v);
    a.max = std::max(a.max, v);
    const auto key = std::make_tuple(e.ts_ms, e.topic, e.partition, e.offset);
    if (key > a.last_key) {
      a.last_key = key;
      a.last = v;
    }
  }
  EXPECT_EQ(j.at("skipped").at("absent"), absent);
  EXPECT_EQ(j.at("skipped").at("not_number"), not_number);
  ASSERT_EQ(j.at("points").size(), want.size());
  size_t i = 0;
  for (const auto& [t, a] : want) {
    const auto& p = j.at("points")[i++];
    EXPECT_EQ(p.at("t"), t);
    EXPECT_EQ(p.at("count"), a.count);
    EXPECT_DOUBLE_EQ(p.at("avg").get<double>(), a.sum / static_cast<double>(a.count));
    EXPECT_EQ(p.at("min").get<double>(), a.min);
    EXPECT_EQ(p.at("max").get<double>(), a.max);
    EXPECT_EQ(p.at("last").get<double>(), a.last) << "step " << t;
  }
  // max_points instead of step; a subset of aggregates.
  nlohmann::ordered_json k =
      GetJson("/v1/events/sensor/series?field=s.t&from=" + std::to_string(from) +
              "&to=" + std::to_string(to) + "&max_points=10&agg=count,max");
  EXPECT_EQ(k.at("step_ms"), (to - from + 9) / 10);
  EXPECT_LE(k.at("points").size(), 10u);
  uint64_t total = 0;
  for (const auto& p : k.at("points")) {
    EXPECT_EQ(p.size(), 3u) << p.dump();  // t, max, count
    total += p.at("count").get<uint64_t>();
  }
  EXPECT_EQ(total + absent + not_number, events.size());
}

TEST_F(HttpDeviceTest, BadSeriesParametersAreRefused) {
  for (const char* target :
       {"/v1/events/x/series?from=1&to=2&step=1", "/v1/events/x/series?field=a&to=2&step=1",
        "/v1/events/x/series?field=a&from=1&to=2",
        "/v1/events/x/series?field=a&from=1&to=2&step=1&max_points=1",
        "/v1/events/x/series?field=a&from=0&to=20000&step=1",
        "/v1/events/x/series?field=a&from=0&to=20&max_points=10001",
        "/v1/events/x/series?field=a&from=5&to=2&step=1",
        "/v1/events/x/series?field=a&from=1&to=2&step=0",
        "/v1/events/x/series?field=a&from=1&to=2&step=soon",
        "/v1/events/x/series?field=a&from=1&to=2&step=1&agg=median",
        "/v1/events/x/series?field=a&from=1&to=2&step=1&local=true"}) {
    nlohmann::ordered_json j = GetJson(target, 400);
    EXPECT_TRUE(j.is_object() && j.contains("error")) << target;
  }
  // A duration step, and an id with no events: no points, nothing skipped.
  nlohmann::ordered_json j =
      GetJson("/v1/events/nobody/series?field=a&from=" + std::to_string(kNow - 60'000) +
              "&to=" + std::to_string(kNow) + "&step=10s");
  EXPECT_EQ(j.at("step_ms"), 10000);
  EXPECT_TRUE(j.at("points").empty());
  EXPECT_EQ(j.at("skipped").at("absent"), 0);
}

TEST_F(HttpDeviceTest, StatsAndMetricsShowTheLastCache) {
  GetJson("/v1/latest?ids=dev-107");
  nlohmann::ordered_json j = GetJson("/v1/stats");
  const auto& c = j.at("last_cache");
  EXPECT_EQ(c.at("enabled"), true);
  EXPECT_EQ(c.at("depth"), 16);
  EXPECT_EQ(c.at("ids"), ids_.size());
  EXPECT_GT(c.at("bytes").get<uint64_t>(), 0u);
  EXPECT_EQ(c.at("rebuilding"), false);
  EXPECT_EQ(c.at("rebuild").at("whole"), true);
  EXPECT_GE(c.at("hits").get<uint64_t>(), 1u);
  EXPECT_GT(c.at("hit_rate").get<double>(), 0.0);
  EXPECT_EQ(Metric("hotrow_last_cache_ids "), std::to_string(ids_.size()));
  EXPECT_NE(Metric("hotrow_queries_total{kind=\"latest_ids\",outcome=\"ok\"} "), "");
}

}  // namespace
}  // namespace hotrow::http
