// Freshness and whole windows with a real Ingestor on the embedded broker, in process
// (CONTRACT.md, "Cluster mode in production settings"): a partition counts toward a complete
// answer only while its owner is fresh and its store holds the whole window, judged every time.

// GCC 12 reports a false -Wrestrict in std::string's inlined copies of "literal" + string
// (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "ingest/embedded_kafka.h"
#include "ingest/ingestor.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster {
namespace {

using nlohmann::json;
using testing::Get;
using testing::Instance;
using testing::InstanceOptions;

// Blocks the ingestor's poller while closed (IngestOptions::before_poll_for_test): a stuck
// poller, while librdkafka's fetcher goes on seeing the broker's new records.
class PollerGate {
 public:
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
};

class ClusterFreshnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto kafka = ingest::EmbeddedKafka::Start("events", 2);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
  }
  void TearDown() override {
    gate_.Open();  // a failed wait must not leave the poller stuck in the hook
    if (ingestor_) StopIngestor();
  }

  void StartInstance(const Clock* clock, int64_t max_staleness_ms) {
    InstanceOptions o;
    o.dir = dir_.Sub("instance");
    o.port = hotrow::testing::FreePort();
    o.peers = {"127.0.0.1:" + std::to_string(o.port)};  // a group of one: the fan-out applies
    o.brokers = kafka_->bootstrap();
    o.clock = clock;
    o.max_staleness_ms = max_staleness_ms;
    instance_ = Instance::Start(o);
    ASSERT_NE(instance_, nullptr);
  }

  void StartIngestor(const std::map<std::string, std::string>& extra = {}) {
    ingest::IngestOptions options;
    options.brokers = kafka_->bootstrap();
    options.topics = {"events"};
    options.group_id = "freshness";
    options.properties = ingest::testing::FastGroupProperties();
    for (const auto& [k, v] : extra) options.properties[k] = v;
    options.batch_max_ms = 20;
    options.writers = 1;
    options.ownership = instance_->ownership();
    options.before_poll_for_test = [this] { gate_.Pass(); };
    auto ingestor = ingest::Ingestor::Start(options, instance_->store());
    ASSERT_TRUE(ingestor.ok()) << ingestor.status().ToString();
    ingestor_ = std::move(ingestor).value();
    instance_->cluster()->set_ingestor(ingestor_.get());
  }

  void StopIngestor() {
    instance_->cluster()->set_ingestor(nullptr);
    ASSERT_TRUE(ingestor_->Stop().ok());
    ingestor_.reset();
  }

  void Produce(int per_partition, int64_t ts_ms) {
    ingest::testing::TestProducer producer(kafka_->bootstrap());
    for (int p = 0; p < 2; ++p) {
      for (int i = 0; i < per_partition; ++i) {
        producer.Produce("events", p, std::nullopt,
                         "{\"event_id\":\"dev-1\",\"ts\":" + std::to_string(ts_ms) + "}");
      }
    }
    producer.Flush();
  }

  json Local() { return Get(instance_->port(), "/v1/cluster?local=true").json(); }

  hotrow::testing::TempDir dir_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  std::unique_ptr<Instance> instance_;
  PollerGate gate_;
  std::unique_ptr<ingest::Ingestor> ingestor_;
};

// The poller is stuck (the writer gets nothing more) while records keep arriving: within
// cluster.max_staleness the partitions are named stale and answers are incomplete; once the
// poller goes on, complete again.
TEST_F(ClusterFreshnessTest, AStuckPollerMakesItsPartitionsStale) {
  StartInstance(WallClock::Default(), 1000);
  StartIngestor();
  Produce(10, WallClock::Default()->NowMs());
  const std::string latest = "/v1/events/dev-1/latest?n=5";
  ASSERT_TRUE(hotrow::testing::WaitFor(
      [&] { return Get(instance_->port(), latest).json().value("complete", false); },
      std::chrono::seconds(30)))
      << Local().dump();

  gate_.Close();
  Produce(10, WallClock::Default()->NowMs());
  json answer;
  ASSERT_TRUE(hotrow::testing::WaitFor(
      [&] {
        answer = Get(instance_->port(), latest).json();
        return answer.contains("stale") && answer.at("stale") == json::parse("{\"events\":[0,1]}");
      },
      std::chrono::seconds(30)))
      << answer.dump() << "\n"
      << Local().dump();
  EXPECT_FALSE(answer.at("complete").get<bool>());
  const json local = Local();
  for (const json& p : local.at("owned")) {
    EXPECT_FALSE(p.at("serving").get<bool>()) << local.dump();
    EXPECT_GT(p.at("lag").get<int64_t>(), 0) << local.dump();
  }

  gate_.Open();
  EXPECT_TRUE(hotrow::testing::WaitFor(
      [&] { return Get(instance_->port(), latest).json().value("complete", false); },
      std::chrono::seconds(30)))
      << Local().dump();
  StopIngestor();
}

// auto.offset.reset=latest skips what the partitions held before the first start: incomplete,
// and still incomplete after a restart within the window (the store's offset is not a whole
// window), until the window has passed since the jump.
TEST_F(ClusterFreshnessTest, AfterAJumpToTheEndTheWindowIsIncompleteUntilItHasPassed) {
  const int64_t t0 = WallClock::Default()->NowMs();
  ManualClock clock(t0);
  StartInstance(&clock, 5000);
  Produce(5, t0 - 1000);  // before the first start: skipped by the jump
  StartIngestor({{"auto.offset.reset", "latest"}});
  auto owned = [&] { return Local().value("owned", json::array()); };
  ASSERT_TRUE(
      hotrow::testing::WaitFor([&] { return owned().size() == 2; }, std::chrono::seconds(30)))
      << Local().dump();
  // The consumer settles on the end of each partition when it starts fetching: produce until
  // records after the jump are stored in both.
  ASSERT_TRUE(hotrow::testing::WaitFor(
      [&] {
        Produce(1, t0);
        return instance_->store()->StoredOffsets().size() == 2;
      },
      std::chrono::seconds(30)))
      << Local().dump();
  ASSERT_EQ(instance_->store()->PartitionRuns().size(), 2u);
  for (const json& p : owned()) {
    EXPECT_FALSE(p.at("window_complete").get<bool>()) << Local().dump();
    EXPECT_FALSE(p.at("serving").get<bool>());
  }

  // A restart within the window: the store's offsets continue the run, which still lacks what
  // the jump skipped.
  StopIngestor();
  StartIngestor({{"auto.offset.reset", "latest"}});
  ASSERT_TRUE(hotrow::testing::WaitFor(
      [&] {
        const json o = owned();
        return o.size() == 2 && o[0].at("position").get<int64_t>() >= 5 &&
               o[1].at("position").get<int64_t>() >= 5;
      },
      std::chrono::seconds(30)))
      << Local().dump();
  for (const json& p : owned()) {
    EXPECT_FALSE(p.at("window_complete").get<bool>()) << "after a restart: " << Local().dump();
  }
  EXPECT_FALSE(
      Get(instance_->port(), "/v1/events/dev-1/latest?n=5").json().value("complete", true));

  // The window (10 minutes) has passed since the jump: nothing it skipped is in it any more.
  clock.Advance(10 * 60 * 1000 + 1000);
  for (const json& p : owned()) {
    EXPECT_TRUE(p.at("window_complete").get<bool>()) << Local().dump();
  }
  StopIngestor();
}

}  // namespace
}  // namespace hotrow::cluster
