// The standby rounds of a group answer (CONTRACT.md "cluster.standby_replicas"), in process: real
// HttpServers on loopback, each with its own store, ownership and Cluster. A standby's copy counts
// only when it holds what the partition's owner last gave this instance, and a standby that does
// not give what it was asked for (it stopped between the rounds) is replaced by another one.

// GCC 12 reports a false -Wrestrict in std::string's inlined copies of "literal" + string
// (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "ingest/embedded_kafka.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster::standby_rounds {
namespace {

using nlohmann::json;
using testing::Answer;
using testing::Get;
using testing::Instance;
using testing::InstanceOptions;
using TestEvent = hotrow::testing::TestEvent;

// Event times within the store's window (its clock is the wall clock).
const int64_t kT0 = WallClock::Default()->NowMs() - 60'000;
const char* const kLatest = "/v1/events/dev/latest?n=100";

std::vector<TestEvent> Events(int64_t first_offset, int count) {
  std::vector<TestEvent> out;
  for (int i = 0; i < count; ++i) {
    const int64_t offset = first_offset + i;
    out.push_back({"dev", kT0 + offset, "events", 0, offset, "{\"n\":" + std::to_string(i) + "}"});
  }
  return out;
}

// Three instances with standbys over one embedded broker (one partition, for the metadata).
class ClusterStandbyRoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto kafka = ingest::EmbeddedKafka::Start("events", 1);
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
      o.standby = true;
      auto instance = Instance::Start(o);
      ASSERT_NE(instance, nullptr);
      instances_.push_back(std::move(instance));
    }
  }
  Instance& at(int i) { return *instances_[static_cast<size_t>(i)]; }

  // Asks instance 0 until its answer says complete (the metadata is read in the background).
  json AskUntilComplete() {
    json last;
    hotrow::testing::WaitFor(
        [&] {
          const Answer a = Get(at(0).port(), kLatest);
          last = a.json();
          return a.status == 200 && last.is_object() && last.value("complete", false);
        },
        std::chrono::seconds(15));
    return last;
  }

  hotrow::testing::TempDir dir_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  std::vector<std::unique_ptr<Instance>> instances_;
};

TEST_F(ClusterStandbyRoundsTest, AStandbyBehindWhatItsOwnerGaveIsNotCountedUntilItHoldsIt) {
  // Instance 1 owns events:0 and has stored offsets 0..9; instance 2 follows it, fresh by its own
  // consumer's view, and has stored 0..4.
  at(1).Serve("events", 0);
  at(1).Write(Events(0, 10));
  at(2).Follow("events", 0);
  at(2).Write(Events(0, 5));
  json j = AskUntilComplete();
  ASSERT_TRUE(j.value("complete", false)) << j.dump();
  ASSERT_EQ(j.at("events").size(), 10u) << j.dump();
  EXPECT_FALSE(j.contains("from_standby")) << j.dump();

  // The owner stops serving it: the standby's copy lacks 5 events the last answer gave.
  at(1).ownership()->SetReadiness(false, "stalled (test)");
  Answer a = Get(at(0).port(), kLatest);
  ASSERT_EQ(a.status, 200) << a.body;
  j = a.json();
  EXPECT_FALSE(j.value("complete", true)) << j.dump();
  EXPECT_EQ(j.value("stale", json()), json::parse(R"({"events":[0]})")) << j.dump();
  EXPECT_TRUE(j.at("events").empty()) << j.dump();

  // Once it holds them, it answers.
  at(2).Write(Events(5, 5));
  a = Get(at(0).port(), kLatest);
  ASSERT_EQ(a.status, 200) << a.body;
  j = a.json();
  EXPECT_TRUE(j.value("complete", false)) << j.dump();
  EXPECT_EQ(j.value("from_standby", json()), json::parse(R"({"events":[0]})")) << j.dump();
  EXPECT_EQ(j.at("events").size(), 10u) << j.dump();
}

TEST_F(ClusterStandbyRoundsTest, AStandbyThatStopsBetweenTheRoundsIsReplacedByAnother) {
  // No owner; instances 1 and 2 follow events:0, both whole and caught up.
  for (int i : {1, 2}) {
    at(i).Follow("events", 0);
    at(i).Write(Events(0, 10));
  }
  // Between the first round (both named it as a standby) and the second, instance 1 stops serving
  // it, as a stopping instance whose standby consumer stopped would.
  std::atomic<bool> armed{false};
  at(0).cluster()->set_between_rounds_for_test([&] {
    if (armed.exchange(false)) at(1).followed()->SetReadiness(false, "stopping (test)");
  });
  json j = AskUntilComplete();
  ASSERT_TRUE(j.value("complete", false)) << j.dump();
  EXPECT_EQ(j.value("from_standby", json()), json::parse(R"({"events":[0]})")) << j.dump();

  armed.store(true);
  const Answer a = Get(at(0).port(), kLatest);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_FALSE(armed.load()) << "the hook did not run";
  j = a.json();
  EXPECT_TRUE(j.value("complete", false)) << j.dump();
  EXPECT_EQ(j.value("from_standby", json()), json::parse(R"({"events":[0]})")) << j.dump();
  EXPECT_EQ(j.at("events").size(), 10u) << j.dump();
}

}  // namespace
}  // namespace hotrow::cluster::standby_rounds
