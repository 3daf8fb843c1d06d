// The device-state queries merged over the group (CONTRACT.md "Device state and series": "In
// cluster mode each of these merges over the group and carries `complete` like the other
// queries"): three in-process instances, each serving partitions of two topics, with ids on
// several instances and events tied in time across topics whose store numbers run against name
// order; every merged answer equals an oracle computed over all the events, and an instance that
// is down makes the answer incomplete, naming its partitions.

// GCC 12 reports a false -Wrestrict in std::string's inlined copies of "literal" + string
// (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ingest/embedded_kafka.h"
#include "query/series_answer.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster {
namespace {

using nlohmann::json;
using testing::Instance;
using testing::InstanceOptions;
using TestEvent = hotrow::testing::TestEvent;

constexpr int kInstances = 3;
constexpr int kIds = 12;

std::string IdName(int j) { return std::string("dev-") + (j < 10 ? "0" : "") + std::to_string(j); }

// The contract's order: ts, then topic name, partition, offset (newest first: all descending).
auto Key(const TestEvent& e) { return std::tie(e.ts_ms, e.topic, e.partition, e.offset); }
bool Newer(const TestEvent& a, const TestEvent& b) { return Key(a) > Key(b); }

// (topic, partition, offset) of an event, as the answers and the oracle name it.
using Where = std::tuple<std::string, int32_t, int64_t>;
Where WhereOf(const TestEvent& e) { return {e.topic, e.partition, e.offset}; }
Where WhereOf(const json& e) {
  return {e.at("topic").get<std::string>(), e.at("partition").get<int32_t>(),
          e.at("offset").get<int64_t>()};
}

class ClusterDevicesTest : public ::testing::Test {
 protected:
  // Instance k serves a/k and b/k. Instances 0 and 2 see topic "b" first (their store numbers
  // run against name order), instance 1 sees "a" first.
  void SetUp() override {
    auto kafka = ingest::EmbeddedKafka::Start("a", kInstances);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
    ASSERT_TRUE(kafka_->CreateTopic("b", kInstances).ok());
    std::vector<int> ports;
    std::vector<std::string> peers;
    for (int i = 0; i < kInstances; ++i) {
      ports.push_back(hotrow::testing::FreePort());
      peers.push_back("127.0.0.1:" + std::to_string(ports.back()));
    }
    for (int i = 0; i < kInstances; ++i) {
      InstanceOptions o;
      o.dir = dir_.Sub("i" + std::to_string(i));
      o.port = ports[static_cast<size_t>(i)];
      o.peers = peers;
      o.brokers = kafka_->bootstrap();
      o.topics = {"a", "b"};
      o.peer_timeout_ms = 2000;
      o.index_fields = {"dev"};  // each event's index value is its id (Instance::Write)
      auto instance = Instance::Start(o);
      ASSERT_NE(instance, nullptr);
      instances_.push_back(std::move(instance));
    }
    base_ = WallClock::Default()->NowMs() - 20'000;
    for (int k = 0; k < kInstances; ++k) {
      const std::vector<std::string> order =
          k == 1 ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"b", "a"};
      for (const std::string& topic : order) {
        at(k).Serve(topic, k);
        std::vector<TestEvent> batch = EventsOf(k, topic);
        at(k).Write(batch, {"dev"});
        all_.insert(all_.end(), batch.begin(), batch.end());
      }
    }
    // The partition lists are read in the background: wait until the group is complete.
    ASSERT_TRUE(hotrow::testing::WaitFor(
        [&] { return Ask(0, "/v1/latest?limit=1").value("complete", false); },
        std::chrono::seconds(15)));
  }

  // The events of topic `topic`, partition k, on instance k: id j is there when (j + k) % 3 != 0
  // (most ids on two instances), with 1 to 3 events per topic; ids j % 4 == 0 also have one event
  // at base + 2500 (j % 8 == 0: base + 4900, their newest) in each topic of each instance holding
  // them (ties in time across topics and instances). Values are integers (sums exact); some
  // payloads lack the field or hold a string.
  std::vector<TestEvent> EventsOf(int k, const std::string& topic) {
    std::vector<TestEvent> out;
    const int t = topic == "a" ? 0 : 1;
    int64_t offset = 0;
    for (int j = 0; j < kIds; ++j) {
      if ((j + k) % 3 == 0) continue;
      const int count = 1 + (j + k + t) % 3;
      for (int i = 0; i < count; ++i) {
        const int64_t ts = base_ + ((j * 7 + k * 3 + i * 5 + t) % 20) * 250;
        const int v = (j * 13 + k * 5 + i * 3 + t) % 17 - 8;
        std::string payload = "{\"v\":" + std::to_string(v) + "}";
        if ((j + i + k) % 7 == 6) payload = "{\"v\":\"x\"}";
        if ((j + i + k + t) % 11 == 10) payload = "{\"w\":1}";
        out.push_back({IdName(j), ts, topic, k, offset++, payload});
      }
      if (j % 4 == 0) {
        out.push_back({IdName(j), base_ + (j % 8 == 0 ? 4900 : 2500), topic, k, offset++,
                       "{\"v\":" + std::to_string(100 + k * 10 + t) + "}"});
      }
    }
    return out;
  }

  Instance& at(int i) { return *instances_[static_cast<size_t>(i)]; }
  // GETs `target` as written (a list of ids keeps its commas).
  json Ask(int instance, const std::string& target) {
    httplib::Client client("127.0.0.1", at(instance).port());
    client.set_url_encode(false);
    client.set_read_timeout(std::chrono::seconds(30));
    httplib::Result res = client.Get(target);
    EXPECT_TRUE(res) << target;
    if (!res) return json();
    EXPECT_EQ(res->status, 200) << target << ": " << res->body;
    return json::parse(res->body, nullptr, false);
  }

  // The oracle: every event of `id` (of the partitions `alive` serves), newest first.
  std::vector<TestEvent> Of(const std::string& id, const std::set<int>& alive) const {
    std::vector<TestEvent> out;
    for (const TestEvent& e : all_) {
      if (e.id == id && alive.count(e.partition) != 0) out.push_back(e);
    }
    std::sort(out.begin(), out.end(), Newer);
    return out;
  }

  hotrow::testing::TempDir dir_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::vector<TestEvent> all_;
  int64_t base_ = 0;
  const std::set<int> every_ = {0, 1, 2};
};

TEST_F(ClusterDevicesTest, LatestOfManyIdsIsTheNewestNOverEveryInstance) {
  std::string ids;
  for (int j = 0; j < kIds; ++j) ids += (j == 0 ? "" : ",") + IdName(j);
  ids += ",nobody";
  for (int n : {1, 2, 5}) {
    for (int asker = 0; asker < kInstances; ++asker) {
      const json j = Ask(asker, "/v1/latest?ids=" + ids + "&n=" + std::to_string(n));
      ASSERT_TRUE(j.value("complete", false) && j.contains("ids")) << j.dump();
      for (int k = 0; k <= kIds; ++k) {
        const std::string id = k == kIds ? "nobody" : IdName(k);
        std::vector<Where> want;
        for (const TestEvent& e : Of(id, every_)) {
          if (static_cast<int>(want.size()) < n) want.push_back(WhereOf(e));
        }
        std::vector<Where> got;
        ASSERT_TRUE(j.at("ids").contains(id)) << id << ": " << j.dump();
        for (const json& e : j.at("ids").at(id)) got.push_back(WhereOf(e));
        EXPECT_EQ(got, want) << id << " n=" << n << " asked " << asker;
      }
    }
  }
  // POST, the same answer.
  httplib::Client client("127.0.0.1", at(2).port());
  json body = {{"ids", json::array({IdName(0), IdName(4)})}, {"n", 3}};
  httplib::Result res = client.Post("/v1/latest", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json j = json::parse(res->body);
  ASSERT_TRUE(j.value("complete", false) && j.contains("ids")) << res->body;
  for (const std::string& id : {IdName(0), IdName(4)}) {
    std::vector<Where> want, got;
    for (const TestEvent& e : Of(id, every_)) {
      if (want.size() < 3) want.push_back(WhereOf(e));
    }
    ASSERT_TRUE(j.at("ids").contains(id)) << id << ": " << res->body;
    for (const json& e : j.at("ids").at(id)) got.push_back(WhereOf(e));
    EXPECT_EQ(got, want) << id;
  }
}

TEST_F(ClusterDevicesTest, LatestOfEveryIdPagesOverTheGroupWithoutSkippingAnId) {
  // The oracle: the newest event of every id, ids in byte order.
  std::map<std::string, Where> want;
  for (int j = 0; j < kIds; ++j) want[IdName(j)] = WhereOf(Of(IdName(j), every_).front());
  for (int limit : {1, 2, 3, 5, 1000}) {
    std::map<std::string, Where> got;
    std::string after;
    for (int page = 0; page < 100; ++page) {
      const json j = Ask(page % kInstances, "/v1/latest?limit=" + std::to_string(limit) + after);
      ASSERT_TRUE(j.value("complete", false)) << j.dump();
      ASSERT_LE(j.at("events").size(), static_cast<size_t>(limit));
      std::string last;
      for (const json& e : j.at("events")) {
        const std::string id = e.at("event_id").get<std::string>();
        EXPECT_GT(id, last) << "ids in byte order, each once";
        EXPECT_EQ(got.count(id), 0u) << id << " on two pages";
        got[id] = WhereOf(e);
        last = id;
      }
      if (j.at("next").is_null()) break;
      after = "&after=" + j.at("next").get<std::string>();
    }
    EXPECT_EQ(got, want) << "limit " << limit;
  }
  // With a prefix.
  const json j = Ask(1, "/v1/latest?prefix=dev-1");
  std::vector<std::string> ids;
  for (const json& e : j.at("events")) ids.push_back(e.at("event_id").get<std::string>());
  EXPECT_EQ(ids, (std::vector<std::string>{"dev-10", "dev-11"}));
  EXPECT_TRUE(j.at("next").is_null());
}

// The oracle's series of `id` (of the partitions `alive` serves).
struct OraclePoint {
  int64_t t = 0;
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0, last = 0;
  std::optional<TestEvent> newest;
};

TEST_F(ClusterDevicesTest, SeriesMergesEveryAggregateOverTheGroup) {
  const int64_t from = base_ - 1000;
  const int64_t to = base_ + 6000;
  for (const std::string& id : {IdName(0), IdName(4), IdName(5), IdName(8), IdName(11)}) {
    for (const std::string& step :
         std::vector<std::string>{"step=1000", "step=250ms", "max_points=3"}) {
      const json j = Ask(2, "/v1/events/" + id + "/series?field=v&from=" + std::to_string(from) +
                                "&to=" + std::to_string(to) + "&" + step);
      ASSERT_TRUE(j.value("complete", false)) << j.dump();
      const int64_t step_ms = step == "step=1000"    ? 1000
                              : step == "step=250ms" ? 250
                                                     : query::StepForMaxPoints(from, to, 3);
      ASSERT_EQ(j.at("step_ms").get<int64_t>(), step_ms);
      std::map<int64_t, OraclePoint> want;
      uint64_t absent = 0, not_number = 0;
      for (const TestEvent& e : Of(id, every_)) {
        const json payload = json::parse(e.payload);
        if (!payload.contains("v")) {
          ++absent;
          continue;
        }
        if (!payload.at("v").is_number()) {
          ++not_number;
          continue;
        }
        const double v = payload.at("v").get<double>();
        const int64_t t = from + (e.ts_ms - from) / step_ms * step_ms;
        OraclePoint& p = want[t];
        p.t = t;
        p.min = p.count == 0 ? v : std::min(p.min, v);
        p.max = p.count == 0 ? v : std::max(p.max, v);
        ++p.count;
        p.sum += v;
        if (!p.newest || Newer(e, *p.newest)) {
          p.newest = e;
          p.last = v;
        }
      }
      EXPECT_EQ(j.at("skipped").at("absent").get<uint64_t>(), absent) << id << " " << step;
      EXPECT_EQ(j.at("skipped").at("not_number").get<uint64_t>(), not_number) << id << " " << step;
      ASSERT_EQ(j.at("points").size(), want.size()) << id << " " << step << ": " << j.dump();
      size_t i = 0;
      for (const auto& [t, p] : want) {
        const json& got = j.at("points").at(i++);
        EXPECT_EQ(got.at("t").get<int64_t>(), t);
        EXPECT_EQ(got.at("count").get<uint64_t>(), p.count) << id << " t=" << t;
        EXPECT_DOUBLE_EQ(got.at("avg").get<double>(), p.sum / static_cast<double>(p.count))
            << id << " " << step << " t=" << t;
        EXPECT_DOUBLE_EQ(got.at("min").get<double>(), p.min) << id << " t=" << t;
        EXPECT_DOUBLE_EQ(got.at("max").get<double>(), p.max) << id << " t=" << t;
        EXPECT_DOUBLE_EQ(got.at("last").get<double>(), p.last) << id << " " << step << " t=" << t;
        EXPECT_FALSE(got.contains("sum")) << "only a local answer carries the sum";
      }
      // The series of the indexed value equal to the id: the same events, so the same answer.
      json by_index = Ask(1, "/v1/index/dev/" + id + "/series?field=v&from=" +
                                 std::to_string(from) + "&to=" + std::to_string(to) + "&" + step);
      ASSERT_TRUE(by_index.value("complete", false)) << by_index.dump();
      EXPECT_EQ(by_index.at("index"), (json{{"field", "dev"}, {"value", id}}));
      EXPECT_FALSE(by_index.contains("unindexed")) << by_index.dump();
      EXPECT_EQ(by_index.at("points"), j.at("points")) << id << " " << step;
      EXPECT_EQ(by_index.at("skipped"), j.at("skipped")) << id << " " << step;
    }
  }
  // `agg` chooses the members of the merged answer.
  const json j = Ask(0, "/v1/events/" + IdName(0) + "/series?field=v&from=" + std::to_string(from) +
                            "&to=" + std::to_string(to) + "&step=1000&agg=last,count");
  ASSERT_FALSE(j.at("points").empty());
  EXPECT_EQ(j.at("points").at(0).size(), 3u) << j.dump();  // t, count, last
}

TEST_F(ClusterDevicesTest, AnInstanceDownMakesEveryDeviceAnswerIncompleteNamingItsPartitions) {
  instances_[1].reset();
  const std::set<int> alive = {0, 2};
  const json missing = json::parse("{\"a\":[1],\"b\":[1]}");
  const std::string from = std::to_string(base_ - 1000), to = std::to_string(base_ + 6000);
  for (const std::string& target :
       {"/v1/latest?ids=" + IdName(4) + "," + IdName(5) + "&n=3", std::string("/v1/latest"),
        "/v1/events/" + IdName(4) + "/series?field=v&from=" + from + "&to=" + to + "&step=1000"}) {
    const json j = Ask(0, target);
    EXPECT_FALSE(j.value("complete", true)) << target << ": " << j.dump();
    EXPECT_EQ(j.at("missing"), missing) << target;
  }
  // What the others hold is still merged exactly.
  const json j = Ask(2, "/v1/latest?ids=" + IdName(4) + "&n=10");
  std::vector<Where> want, got;
  for (const TestEvent& e : Of(IdName(4), alive)) want.push_back(WhereOf(e));
  for (const json& e : j.at("ids").at(IdName(4))) got.push_back(WhereOf(e));
  EXPECT_EQ(got, want);
}

// format=rows over the group (CONTRACT.md "Grafana"): the merged answer rewritten, its head
// (complete, missing) kept beside the rows; the peers are asked for their JSON answers, which the
// merge reads (were they asked for rows, no instance's answer would be accepted).
TEST_F(ClusterDevicesTest, RowsOfAMergedAnswerKeepItsHead) {
  const std::string from = std::to_string(base_ - 1000), to = std::to_string(base_ + 6000);
  for (const std::string& target :
       {"/v1/latest?ids=" + IdName(4) + "," + IdName(5) + "&n=3", std::string("/v1/latest?limit=5"),
        "/v1/events/" + IdName(4) + "/latest?n=4",
        "/v1/events/" + IdName(4) + "/series?field=v&from=" + from + "&to=" + to + "&step=1000"}) {
    const json j = Ask(0, target);
    const json rows = Ask(0, target + "&format=rows");
    ASSERT_TRUE(rows.is_object()) << target;
    EXPECT_TRUE(rows.value("complete", false)) << target << ": " << rows.dump();
    // The items the JSON answer lists, in its order; each row has the item's time.
    std::vector<int64_t> times;
    if (j.contains("points")) {
      for (const json& p : j.at("points")) times.push_back(p.at("t").get<int64_t>());
    } else if (j.contains("events")) {
      for (const json& e : j.at("events")) times.push_back(e.at("ts").get<int64_t>());
    } else {
      for (const auto& [id, events] : j.at("ids").items()) {
        for (const json& e : events) times.push_back(e.at("ts").get<int64_t>());
      }
    }
    ASSERT_FALSE(times.empty()) << target;
    std::vector<int64_t> row_times;
    for (const json& row : rows.at("rows")) row_times.push_back(row.at("time").get<int64_t>());
    EXPECT_EQ(row_times, times) << target;
  }
  instances_[1].reset();
  const json down = Ask(0, "/v1/latest?format=rows");
  EXPECT_FALSE(down.value("complete", true)) << down.dump();
  EXPECT_EQ(down.at("missing"), json::parse("{\"a\":[1],\"b\":[1]}"));
}

TEST_F(ClusterDevicesTest, LocalAnswersNameTheirPartitionsAndGroup) {
  const json j = Ask(0, "/v1/latest?local=true");
  EXPECT_EQ(j.at("partitions"), json::parse("{\"a\":[0],\"b\":[0]}")) << j.dump();
  EXPECT_EQ(j.at("group"), "group");
  EXPECT_TRUE(j.value("complete", false));
  for (const json& e : j.at("events")) EXPECT_EQ(e.at("partition"), 0) << e.dump();
}

}  // namespace
}  // namespace hotrow::cluster
