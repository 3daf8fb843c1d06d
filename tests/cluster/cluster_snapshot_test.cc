// One view of the ownership per query (CONTRACT.md "Group answers"): every read of a query and
// the head of its answer come from one snapshot, so a partition that stops and starts serving
// while a query runs is reported as the reads saw it. Two in-process instances: A serves
// partitions 0..3 of "events" and B serves partition 3 throughout. A's partition 3 flips (revoked,
// assigned again) in a hook that runs once a query's view is taken and before its reads
// (Cluster::set_view_taken_for_test), so every local answer is read after a flip its view did not
// see, and both states are seen in turn, by construction; a series is also asked while a thread
// flips it as fast as it can. Every id's newest event is in partition 3, so an answer that read
// some ids without it while naming it covered has older events there.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "ingest/embedded_kafka.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster::snapshot_test {
namespace {

using cluster::testing::Instance;
using cluster::testing::InstanceOptions;
using nlohmann::json;
using TestEvent = hotrow::testing::TestEvent;

constexpr int kIds = 1000;
constexpr int32_t kFlipping = 3;

std::string IdName(int i) {
  std::string n = std::to_string(i);
  return "id-" + std::string(4 - n.size(), '0') + n;
}

bool Names(const json& partitions, int32_t partition) {
  const json list = partitions.value("events", json::array());
  for (const json& p : list) {
    if (p.get<int32_t>() == partition) return true;
  }
  return false;
}

class ClusterSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto kafka = ingest::EmbeddedKafka::Start("events", 4);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
    std::vector<int> ports = {hotrow::testing::FreePort(), hotrow::testing::FreePort()};
    std::vector<std::string> peers;
    for (int port : ports) peers.push_back("127.0.0.1:" + std::to_string(port));
    for (int i = 0; i < 2; ++i) {
      InstanceOptions o;
      o.dir = dir_.Sub(i == 0 ? "a" : "b");
      o.port = ports[static_cast<size_t>(i)];
      o.peers = peers;
      o.brokers = kafka_->bootstrap();
      o.index_fields = {"dev"};
      auto instance = Instance::Start(o);
      ASSERT_NE(instance, nullptr);
      (i == 0 ? a_ : b_) = std::move(instance);
    }
    // Every id: an older event in partition id % 3 and its newest in partition 3. "s" holds a
    // series' worth of events in every partition.
    const int64_t base = WallClock::Default()->NowMs() - 30'000;
    std::map<int32_t, int64_t> next;
    std::map<int32_t, std::vector<TestEvent>> by_partition;
    auto add = [&](const std::string& id, int32_t partition, int64_t ts, int v) {
      TestEvent e;
      e.id = id;
      e.topic = "events";
      e.partition = partition;
      e.offset = next[partition]++;
      e.ts_ms = ts;
      e.payload = "{\"v\":" + std::to_string(v) + "}";
      by_partition[partition].push_back(e);
    };
    for (int i = 0; i < kIds; ++i) {
      add(IdName(i), i % 3, base + i, 1);
      add(IdName(i), kFlipping, base + 10'000 + i, 2);
      newest_[IdName(i)] = next[kFlipping] - 1;
    }
    for (int i = 0; i < 8000; ++i) {
      add("s", i % 4, base + 12'000 + i, i % 10);
      series_count_ += 1;
      series_sum_ += i % 10;
    }
    for (int32_t p = 0; p < 4; ++p) {
      a_->Serve("events", p);
      a_->Write(by_partition[p], {"dev"});
    }
    b_->Serve("events", kFlipping);
    b_->Write(by_partition[kFlipping], {"dev"});
    next_flipping_ = next[kFlipping];
    ASSERT_TRUE(hotrow::testing::WaitFor(
        [&] {
          return testing::Get(a_->port(), "/v1/latest?limit=1").json().value("complete", false);
        },
        std::chrono::seconds(15)));
  }

  void TearDown() override {
    StopFlipping();
    if (a_ != nullptr) a_->cluster()->set_view_taken_for_test(nullptr);
  }

  // A's partition 3 as one flip leaves it: serving (assigned, fresh) or revoked.
  void Assign() {
    a_->ownership()->Assigned("events", kFlipping, next_flipping_, next_flipping_);
    a_->ownership()->UpdatePosition("events", kFlipping, next_flipping_, next_flipping_);
  }
  void Revoke() { a_->ownership()->Revoked("events", kFlipping); }

  // From now on each of A's views flips partition 3 once taken: revoked when the view saw it
  // serving, assigned when not. Only local answers are asked of A then (one view each).
  void FlipInEveryView() {
    a_->cluster()->set_view_taken_for_test([this] {
      const bool serving = a_->ownership()->Snapshot().IsServing("events", kFlipping);
      serving ? Revoke() : Assign();
      held_flips_.fetch_add(1);
    });
  }
  // A's partition 3 stops and starts serving over and over until StopFlipping.
  void StartFlipping() {
    flipper_ = std::thread([this] {
      ingest::PartitionOwnership* ownership = a_->ownership();
      while (!stop_.load()) {
        ownership->Revoked("events", kFlipping);
        std::this_thread::sleep_for(std::chrono::microseconds(300));  // pacing, not a wait
        ownership->Assigned("events", kFlipping, next_flipping_, next_flipping_);
        ownership->UpdatePosition("events", kFlipping, next_flipping_, next_flipping_);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        flips_.fetch_add(1);
      }
    });
  }
  void StopFlipping() {
    stop_.store(true);
    if (flipper_.joinable()) flipper_.join();
  }

  std::string IdsBody() const {
    json ids = json::array();
    for (int i = 0; i < kIds; ++i) ids.push_back(IdName(i));
    return json{{"ids", ids}, {"n", 1}}.dump();
  }
  json Post(int port, const std::string& target) const {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(std::chrono::seconds(30));
    httplib::Result res = client.Post(target, IdsBody(), "application/json");
    if (!res || res->status != 200) return json();
    return json::parse(res->body, nullptr, false);
  }

  hotrow::testing::TempDir dir_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  std::unique_ptr<Instance> a_, b_;
  std::map<std::string, int64_t> newest_;  // each id's newest event: its offset in partition 3
  uint64_t series_count_ = 0;
  int64_t series_sum_ = 0;
  int64_t next_flipping_ = 0;
  std::thread flipper_;
  std::atomic<bool> stop_{false};
  std::atomic<int> flips_{0};
  std::atomic<int> held_flips_{0};  // flips made by the view hook
};

// A local answer of the latest of 1000 ids names partition 3 covered exactly when every id's
// answer holds its newest event, from partition 3; else none does. Each answer's reads run after
// a flip its view did not see, in both directions in turn. The merged answer is complete (B serves
// partition 3) and exact.
TEST_F(ClusterSnapshotTest, ALatestOfManyIdsIsReadThroughTheSnapshotItsHeadNames) {
  int covered = 0, not_covered = 0;
  for (int round = 0; round < 20; ++round) {
    const bool serving_at_view = round % 2 == 0;
    serving_at_view ? Assign() : Revoke();
    FlipInEveryView();
    const int held = held_flips_.load();
    const json local = Post(a_->port(), "/v1/latest?local=true");
    a_->cluster()->set_view_taken_for_test(nullptr);
    ASSERT_TRUE(local.is_object()) << "round " << round;
    ASSERT_EQ(held_flips_.load(), held + 1) << "round " << round << ": one view, one flip";
    const bool names_it = Names(local.at("partitions"), kFlipping);
    ASSERT_EQ(names_it, serving_at_view)
        << "round " << round << ": " << local.dump().substr(0, 300);
    (names_it ? covered : not_covered) += 1;
    if (names_it) {
      ASSERT_FALSE(Names(local.at("stale"), kFlipping)) << local.dump().substr(0, 300);
    }
    int from_flipping = 0;
    for (const auto& [id, events] : local.at("ids").items()) {
      ASSERT_EQ(events.size(), 1u) << id;
      if (events[0].at("partition").get<int32_t>() == kFlipping) ++from_flipping;
    }
    EXPECT_EQ(from_flipping, names_it ? kIds : 0)
        << "round " << round << ": partition 3 named " << (names_it ? "covered" : "stale")
        << " but " << from_flipping << " of " << kIds << " ids were read from it";

    const json merged = Post(a_->port(), "/v1/latest");
    ASSERT_TRUE(merged.is_object()) << "round " << round;
    ASSERT_TRUE(merged.value("complete", false)) << merged.dump().substr(0, 300);
    for (const auto& [id, events] : merged.at("ids").items()) {
      ASSERT_EQ(events.size(), 1u) << id;
      ASSERT_EQ(events[0].at("partition").get<int32_t>(), kFlipping)
          << "round " << round << " " << id;
      ASSERT_EQ(events[0].at("offset").get<int64_t>(), newest_.at(id)) << id;
    }
  }
  EXPECT_EQ(covered, 10);
  EXPECT_EQ(not_covered, 10);
}

// A series merged over A and B counts partition 3 once: from A when A's view served it (B, which
// covers it too, is then left out), else from B. Each round's view of A is flipped once taken, in
// both directions in turn; then a thread flips it as fast as it can while more are asked.
TEST_F(ClusterSnapshotTest, ASeriesNeverCountsAPartitionFromTwoInstances) {
  const int64_t now = WallClock::Default()->NowMs();
  const std::string target =
      "/v1/events/s/series?field=v&agg=count,avg&step=1h&from=" + std::to_string(now - 120'000) +
      "&to=" + std::to_string(now + 1);
  int complete = 0;
  for (int round = 0; round < 80; ++round) {
    const bool held = round < 20;
    if (held) {
      round % 2 == 0 ? Assign() : Revoke();
      FlipInEveryView();
    } else if (round == 20) {
      StartFlipping();
    }
    const int flips = held_flips_.load();
    const json got = testing::Get(a_->port(), target).json();
    if (held) {
      a_->cluster()->set_view_taken_for_test(nullptr);
      ASSERT_GE(held_flips_.load(), flips + 1) << "round " << round << ": its view was flipped";
    }
    ASSERT_TRUE(got.is_object()) << "round " << round;
    // B serves partition 3 throughout: with a held flip the answer is complete whichever state
    // A's view saw. Honest otherwise: a partition lost between views.
    if (held) {
      ASSERT_TRUE(got.value("complete", false)) << "round " << round << ": " << got.dump();
    }
    if (!got.value("complete", false)) continue;
    ++complete;
    uint64_t count = 0;
    double sum = 0;
    for (const json& p : got.at("points")) {
      count += p.at("count").get<uint64_t>();
      sum += p.at("avg").get<double>() * static_cast<double>(p.at("count").get<uint64_t>());
    }
    ASSERT_EQ(count, series_count_) << "round " << round << ": " << got.dump().substr(0, 300);
    ASSERT_NEAR(sum, static_cast<double>(series_sum_), 1e-6) << "round " << round;
  }
  EXPECT_GE(complete, 20);
}

// An index query's local answer is read through the view its head names, flipped after its view
// in both directions in turn.
TEST_F(ClusterSnapshotTest, AnIndexQueryIsReadThroughTheSnapshotItsHeadNames) {
  int covered = 0;
  for (int round = 0; round < 40; ++round) {
    const bool serving_at_view = round % 2 == 0;
    serving_at_view ? Assign() : Revoke();
    FlipInEveryView();
    const int held = held_flips_.load();
    const std::string id = IdName(round * 7 % kIds);
    const json local =
        testing::Get(a_->port(), "/v1/index/dev/" + id + "/latest?n=1&local=true").json();
    a_->cluster()->set_view_taken_for_test(nullptr);
    ASSERT_TRUE(local.is_object()) << "round " << round;
    ASSERT_EQ(held_flips_.load(), held + 1) << "round " << round << ": one view, one flip";
    const bool names_it = Names(local.at("partitions"), kFlipping);
    ASSERT_EQ(names_it, serving_at_view) << "round " << round << ": " << local.dump();
    covered += names_it ? 1 : 0;
    ASSERT_EQ(local.at("events").size(), 1u) << local.dump();
    EXPECT_EQ(local.at("events")[0].at("partition").get<int32_t>() == kFlipping, names_it)
        << "round " << round << ": " << local.dump();
  }
  EXPECT_EQ(covered, 20);
}

}  // namespace
}  // namespace hotrow::cluster::snapshot_test
