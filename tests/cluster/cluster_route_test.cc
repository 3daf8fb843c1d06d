// Routing per-id queries by key (CONTRACT.md "Group answers", `cluster.route_by_key`;
// cluster/route.h). The plan, pure; then three in-process instances serving two partitions each of
// a topic keyed by id with the Java client's murmur2 or librdkafka's crc32 partitioner: a per-id
// query asks only the owner of its id's partition (the counters say so) and is exact; a partition
// where a record broke the rule is asked too, and the answer holds that record; a partition handed
// over to another instance before the route map has seen it is answered whole by asking everyone
// again.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/route.h"
#include "ingest/embedded_kafka.h"
#include "ingest/key_route.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster::route_test {
namespace {

using cluster::testing::Instance;
using cluster::testing::InstanceOptions;
using ingest::KeyPartitioner;
using nlohmann::json;
using store::TopicPartition;
using TestEvent = hotrow::testing::TestEvent;

constexpr int32_t kPartitions = 6;

LocalHead HeadServing(std::vector<int32_t> serving, std::vector<int32_t> routable,
                      int32_t count = kPartitions) {
  LocalHead head;
  for (int32_t p : serving) head.partitions.push_back({"t", p});
  for (int32_t p : routable) head.routable.push_back({"t", p});
  head.route_partitions["t"] = count;
  return head;
}

GroupPartitions Metadata(int32_t count = kPartitions) {
  GroupPartitions all;
  for (int32_t p = 0; p < count; ++p) all.partitions.push_back({"t", p});
  return all;
}

// An id `partitioner` puts in `partition`.
std::string IdIn(int32_t partition, KeyPartitioner partitioner = KeyPartitioner::kCrc32) {
  for (int i = 0;; ++i) {
    const std::string id = "dev-" + std::to_string(i);
    if (ingest::PartitionForKey(partitioner, id, kPartitions) == partition) {
      return id;
    }
  }
}

TEST(RoutePlanTest, AnIdAsksTheOwnerOfItsPartitionAndOfEveryPartitionNotVouchedFor) {
  const std::vector<std::optional<LocalHead>> heads = {
      HeadServing({0, 1}, {0, 1}), HeadServing({2, 3}, {2, 3}), HeadServing({4, 5}, {4})};
  const RouteMap map = BuildRouteMap(Metadata(), heads, 1000);
  EXPECT_EQ(Unroutable(map), (Partitions{{"t", 5}}));
  std::optional<RoutePlan> plan = PlanRoute(map, KeyPartitioner::kCrc32, {IdIn(2)}, 3, 1500, 2000);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->ask, (std::vector<bool>{false, true, true}));  // 2's owner, and 5's
  EXPECT_EQ(plan->needed, (Partitions{{"t", 2}, {"t", 5}}));
  // Ids on every instance: nothing to gain.
  EXPECT_FALSE(PlanRoute(map, KeyPartitioner::kCrc32, {IdIn(0), IdIn(2)}, 3, 1500, 2000));
  // Too old a map (its oldest head asked for at 1000), routing off, no id: every instance.
  EXPECT_FALSE(PlanRoute(map, KeyPartitioner::kCrc32, {IdIn(2)}, 3, 3001, 2000));
  EXPECT_FALSE(PlanRoute(map, KeyPartitioner::kOff, {IdIn(2)}, 3, 1500, 2000));
  EXPECT_FALSE(PlanRoute(map, KeyPartitioner::kCrc32, {}, 3, 1500, 2000));
}

TEST(RoutePlanTest, WhatTheMapCannotTellIsNeverRoutedBy) {
  // An instance that checked against another count than the metadata's (a topic that grew).
  std::vector<std::optional<LocalHead>> heads = {
      HeadServing({0, 1}, {0, 1}), HeadServing({2, 3}, {2, 3}, 8), HeadServing({4, 5}, {4, 5})};
  EXPECT_FALSE(PlanRoute(BuildRouteMap(Metadata(), heads, 1000), KeyPartitioner::kCrc32, {IdIn(2)},
                         3, 1000, 2000));
  // A partition two instances say they serve (a handoff seen from both sides): not routable, and
  // no instance is known to serve it.
  heads = {HeadServing({0, 1, 2}, {0, 1, 2}), HeadServing({2, 3}, {2, 3}),
           HeadServing({4, 5}, {4, 5})};
  RouteMap map = BuildRouteMap(Metadata(), heads, 1000);
  EXPECT_EQ(Unroutable(map), (Partitions{{"t", 2}}));
  EXPECT_FALSE(PlanRoute(map, KeyPartitioner::kCrc32, {IdIn(3)}, 3, 1000, 2000));
  // An instance that did not answer: its partitions are served by nobody known.
  heads = {HeadServing({0, 1}, {0, 1}), std::nullopt, HeadServing({4, 5}, {4, 5})};
  map = BuildRouteMap(Metadata(), heads, 1000);
  EXPECT_FALSE(PlanRoute(map, KeyPartitioner::kCrc32, {IdIn(4)}, 3, 1000, 2000));
  // The metadata unknown.
  GroupPartitions unknown;
  unknown.unknown_topics = {"t"};
  EXPECT_FALSE(PlanRoute(BuildRouteMap(unknown, heads, 1000), KeyPartitioner::kCrc32, {IdIn(4)}, 3,
                         1000, 2000));
}

// Parameter: the partitioner the topic is keyed with (cluster.route_by_key).
class ClusterRouteTest : public ::testing::TestWithParam<KeyPartitioner> {
 protected:
  void SetUp() override {
    auto kafka = ingest::EmbeddedKafka::Start("events", kPartitions);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
    std::vector<int> ports;
    std::vector<std::string> peers;
    for (int i = 0; i < 3; ++i) {
      ports.push_back(hotrow::testing::FreePort());
      peers.push_back("127.0.0.1:" + std::to_string(ports.back()));
    }
    for (int i = 0; i < 3; ++i) {
      InstanceOptions o;
      o.dir = dir_.Sub("i" + std::to_string(i));
      o.port = ports[static_cast<size_t>(i)];
      o.peers = peers;
      o.brokers = kafka_->bootstrap();
      o.route_by_key = GetParam();
      o.route_refresh_ms = RouteRefreshMs(i);
      if (ManualMonotonic(i)) o.monotonic_clock = &manual_;
      auto instance = Instance::Start(o);
      ASSERT_NE(instance, nullptr);
      instances_.push_back(std::move(instance));
    }
    // 60 ids, 3 events each, in their partitions; instance k serves partitions 2k and 2k + 1.
    base_ = WallClock::Default()->NowMs() - 20'000;
    for (int j = 0; j < 60; ++j) {
      const std::string id = "dev-" + std::to_string(j);
      const int32_t p = ingest::PartitionForKey(GetParam(), id, kPartitions);
      for (int i = 0; i < 3; ++i) Add(id, p, base_ + j * 100 + i);
    }
    for (int32_t p = 0; p < kPartitions; ++p) Serve(p / 2, p);
    ASSERT_TRUE(WaitForRouteMap(0, json::object()));
  }

  // cluster's route_refresh_ms of instance i.
  virtual int64_t RouteRefreshMs(int i) const {
    (void)i;
    return 1000;
  }

  // Whether instance i counts its route map's age on `manual_`.
  virtual bool ManualMonotonic(int i) const {
    (void)i;
    return false;
  }

  void Add(const std::string& id, int32_t partition, int64_t ts) {
    TestEvent e;
    e.id = id;
    e.topic = "events";
    e.partition = partition;
    e.offset = next_[partition]++;
    e.ts_ms = ts;
    e.payload = "{\"v\":" + std::to_string(ts % 7) + "}";
    events_[partition].push_back(e);
  }
  // Instance k serves `partition` with every event of it so far, checked for routing.
  void Serve(int k, int32_t partition) {
    instances_[static_cast<size_t>(k)]->Serve("events", partition);
    instances_[static_cast<size_t>(k)]->Write(events_[partition]);
    instances_[static_cast<size_t>(k)]->ownership()->RouteChecked("events", partition, kPartitions,
                                                                  INT64_MIN);
  }
  // Until instance k's /v1/cluster is complete and its route map names `unroutable` and every
  // other partition routable.
  bool WaitForRouteMap(int k, const json& unroutable) {
    json routable = json::array();
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (!unroutable.contains("events") ||
          std::find(unroutable["events"].begin(), unroutable["events"].end(), p) ==
              unroutable["events"].end()) {
        routable.push_back(p);
      }
    }
    return hotrow::testing::WaitFor(
        [&] {
          const json c = Cluster(k);
          return c.value("complete", false) && c.value("unroutable", json()) == unroutable &&
                 c.value("routable", json()) == json{{"events", routable}};
        },
        std::chrono::seconds(20));
  }
  json Cluster(int k) {
    return testing::Get(instances_[static_cast<size_t>(k)]->port(), "/v1/cluster").json();
  }
  double Asked(int k, const std::string& who) {
    const std::string text =
        testing::Get(instances_[static_cast<size_t>(k)]->port(), "/metrics").body;
    return hotrow::testing::MetricValue(hotrow::testing::ParsePrometheusText(text),
                                        "hotrow_cluster_id_queries_total", {{"asked", who}})
        .value_or(-1);
  }
  // The newest n events of `id` over every partition, as (partition, offset).
  std::vector<std::pair<int32_t, int64_t>> Want(const std::string& id, size_t n) {
    std::vector<TestEvent> all;
    for (const auto& [p, events] : events_) {
      for (const TestEvent& e : events) {
        if (e.id == id) all.push_back(e);
      }
    }
    std::sort(all.begin(), all.end(), [](const TestEvent& a, const TestEvent& b) {
      return std::tie(a.ts_ms, a.partition, a.offset) > std::tie(b.ts_ms, b.partition, b.offset);
    });
    if (all.size() > n) all.resize(n);
    std::vector<std::pair<int32_t, int64_t>> out;
    for (const TestEvent& e : all) out.emplace_back(e.partition, e.offset);
    return out;
  }
  static std::vector<std::pair<int32_t, int64_t>> Got(const json& events) {
    std::vector<std::pair<int32_t, int64_t>> out;
    for (const json& e : events) {
      out.emplace_back(e.at("partition").get<int32_t>(), e.at("offset").get<int64_t>());
    }
    return out;
  }
  json Latest(int k, const std::string& id, int n = 5) {
    return testing::Get(instances_[static_cast<size_t>(k)]->port(),
                        "/v1/events/" + id + "/latest?n=" + std::to_string(n))
        .json();
  }

  hotrow::testing::TempDir dir_;
  ManualClock manual_{1'000'000};  // outlives the instances, whose route threads read it
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::map<int32_t, std::vector<TestEvent>> events_;
  std::map<int32_t, int64_t> next_;
  int64_t base_ = 0;
};

TEST_P(ClusterRouteTest, APerIdQueryAsksOnlyTheOwnerOfItsPartitionAndIsExact) {
  const double routed = Asked(0, "owners"), everyone = Asked(0, "every_instance");
  int asked_elsewhere = 0;
  for (int j = 0; j < 60; ++j) {
    const std::string id = "dev-" + std::to_string(j);
    const json got = Latest(0, id);
    ASSERT_TRUE(got.value("complete", false)) << got.dump();
    EXPECT_EQ(Got(got.at("events")), Want(id, 5)) << id;
    if (ingest::PartitionForKey(GetParam(), id, kPartitions) >= 2) ++asked_elsewhere;
  }
  // Ids of instance 0's own partitions are answered by it alone (no peer asked); the others by
  // their owner alone. None asked every instance.
  EXPECT_EQ(Asked(0, "owners") - routed, 60);
  EXPECT_EQ(Asked(0, "every_instance") - everyone, 0);
  EXPECT_GT(asked_elsewhere, 0);

  // A series and the latest of many ids, routed the same way.
  const std::string a = IdIn(2, GetParam()), b = IdIn(3, GetParam());
  httplib::Client client("127.0.0.1", instances_[0]->port());
  httplib::Result many =
      client.Post("/v1/latest", json{{"ids", {a, b}}, {"n", 2}}.dump(), "application/json");
  ASSERT_TRUE(many && many->status == 200);
  const json m = json::parse(many->body);
  ASSERT_TRUE(m.value("complete", false)) << m.dump();
  EXPECT_EQ(Got(m.at("ids").at(a)), Want(a, 2));
  EXPECT_EQ(Got(m.at("ids").at(b)), Want(b, 2));
  const int64_t now = WallClock::Default()->NowMs();
  const json series =
      testing::Get(instances_[0]->port(),
                   "/v1/events/" + a + "/series?field=v&agg=count&step=1h&from=" +
                       std::to_string(base_ - 1000) + "&to=" + std::to_string(now + 1))
          .json();
  ASSERT_TRUE(series.value("complete", false)) << series.dump();
  ASSERT_EQ(series.at("points").size(), 1u);
  EXPECT_EQ(series.at("points")[0].at("count").get<int>(), 3);
  EXPECT_EQ(Asked(0, "owners") - routed, 62);
}

TEST_P(ClusterRouteTest, APartitionWhereARecordBrokeTheRuleIsAskedTooAndTheAnswerHoldsIt) {
  // An event of x (whose key-partition is 0, instance 0's) stored in partition 4 (instance 2's):
  // instance 2's ingest saw its key break the rule.
  const std::string x = IdIn(0, GetParam());
  Add(x, 4, base_ + 50'000);  // x's newest
  instances_[2]->Write({events_[4].back()});
  instances_[2]->ownership()->RouteBroken("events", 4);
  ASSERT_TRUE(WaitForRouteMap(1, json{{"events", {4}}})) << Cluster(1).dump();
  const double routed = Asked(1, "owners");
  const json got = Latest(1, x);
  ASSERT_TRUE(got.value("complete", false)) << got.dump();
  EXPECT_EQ(Got(got.at("events")), Want(x, 5));
  EXPECT_EQ(Got(got.at("events")).front(),
            (std::pair<int32_t, int64_t>{4, events_[4].back().offset}));
  EXPECT_EQ(Asked(1, "owners") - routed, 1) << "instances 0 and 2 asked, not every instance";
}

TEST_P(ClusterRouteTest, APartitionHandedOverBeforeTheMapSawItIsAnsweredWholeByAskingEveryone) {
  // Partition 0 moves from instance 0 to instance 1; the map (read every second) may still name
  // instance 0. Every answer is complete and exact, routed or asked again of everyone.
  ASSERT_TRUE(WaitForRouteMap(2, json::object()));
  Serve(1, 0);
  instances_[0]->ownership()->Revoked("events", 0);
  const std::string id = IdIn(0, GetParam());
  for (int round = 0; round < 20; ++round) {
    const json got = Latest(2, id);
    ASSERT_TRUE(got.value("complete", false)) << "round " << round << ": " << got.dump();
    ASSERT_EQ(Got(got.at("events")), Want(id, 5)) << "round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(Partitioners, ClusterRouteTest,
                         ::testing::Values(KeyPartitioner::kMurmur2, KeyPartitioner::kCrc32),
                         [](const auto& info) { return ingest::KeyPartitionerName(info.param); });

// Instance 1 reads its route map once (then only when asked to): its map says what the group was.
class ClusterRouteOldMapTest : public ClusterRouteTest {
 protected:
  int64_t RouteRefreshMs(int i) const override { return i == 1 ? 3'600'000 : 1000; }
};

TEST_P(ClusterRouteOldMapTest,
       AnAskedInstanceThatNoLongerVouchesForAPartitionIsAskedAgainOfEveryone) {
  // Instance 1's map, read now, names every partition routable.
  instances_[1]->cluster()->RouteMissed();
  ASSERT_TRUE(WaitForRouteMap(1, json::object())) << Cluster(1).dump();
  // Then an event of x (key-partition 4, instance 2's) is stored in partition 5, also instance 2's:
  // instance 2 no longer vouches for 5, and instance 1's map does not know it.
  const std::string x = IdIn(4, GetParam());
  Add(x, 5, base_ + 50'000);  // x's newest
  instances_[2]->Write({events_[5].back()});
  instances_[2]->ownership()->RouteBroken("events", 5);
  const double retried = testing::Get(instances_[1]->port(), "/v1/cluster")
                             .json()
                             .at("route_queries")
                             .at("retried")
                             .get<double>();
  const json got = Latest(1, x);
  ASSERT_TRUE(got.value("complete", false)) << got.dump();
  EXPECT_EQ(Got(got.at("events")), Want(x, 5)) << got.dump();
  EXPECT_EQ(Got(got.at("events")).front(),
            (std::pair<int32_t, int64_t>{5, events_[5].back().offset}));
  EXPECT_EQ(Cluster(1).at("route_queries").at("retried").get<double>(), retried + 1);
}

INSTANTIATE_TEST_SUITE_P(Partitioners, ClusterRouteOldMapTest,
                         ::testing::Values(KeyPartitioner::kMurmur2, KeyPartitioner::kCrc32),
                         [](const auto& info) { return ingest::KeyPartitionerName(info.param); });

// Instance 1 counts its route map's age on a clock the test moves: the heads of a read can be made
// to arrive long after they were asked for.
class ClusterRouteMapAgeTest : public ClusterRouteTest {
 protected:
  bool ManualMonotonic(int i) const override { return i == 1; }
  std::optional<int64_t> MapAge(int k) {
    const json age = Cluster(k).value("route_map_age_ms", json());
    if (!age.is_number()) return std::nullopt;
    return age.get<int64_t>();
  }
};

TEST_P(ClusterRouteMapAgeTest, AMapIsAsOldAsItsOldestHeadAndNotRoutedByPastTwiceTheRefresh) {
  // Every read's heads arrive 5 s after they were asked for: the maps say every partition routable,
  // but what they say is 5 s old when they are built (the bound is 2 s), so none is routed by.
  instances_[1]->cluster()->set_route_heads_read_for_test([this] { manual_.Advance(5000); });
  instances_[1]->cluster()->RouteMissed();
  ASSERT_TRUE(hotrow::testing::WaitFor([&] { return MapAge(1).value_or(0) >= 5000; },
                                       std::chrono::seconds(20)))
      << Cluster(1).dump();
  ASSERT_TRUE(WaitForRouteMap(1, json::object())) << Cluster(1).dump();
  const std::string x = IdIn(4, GetParam());
  double routed = Asked(1, "owners");
  const double everyone = Asked(1, "every_instance");
  json got = Latest(1, x);
  ASSERT_TRUE(got.value("complete", false)) << got.dump();
  EXPECT_EQ(Got(got.at("events")), Want(x, 5));
  EXPECT_EQ(Asked(1, "owners") - routed, 0);
  EXPECT_EQ(Asked(1, "every_instance") - everyone, 1);

  // Heads that arrive at once (the clock does not move while they are read): routed by.
  instances_[1]->cluster()->set_route_heads_read_for_test(nullptr);
  instances_[1]->cluster()->RouteMissed();
  ASSERT_TRUE(hotrow::testing::WaitFor([&] { return MapAge(1) == std::optional<int64_t>(0); },
                                       std::chrono::seconds(20)))
      << Cluster(1).dump();
  routed = Asked(1, "owners");
  got = Latest(1, x);
  ASSERT_TRUE(got.value("complete", false)) << got.dump();
  EXPECT_EQ(Got(got.at("events")), Want(x, 5));
  EXPECT_EQ(Asked(1, "owners") - routed, 1);
}

INSTANTIATE_TEST_SUITE_P(Partitioners, ClusterRouteMapAgeTest,
                         ::testing::Values(KeyPartitioner::kMurmur2),
                         [](const auto& info) { return ingest::KeyPartitionerName(info.param); });

}  // namespace
}  // namespace hotrow::cluster::route_test
