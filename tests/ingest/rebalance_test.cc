// Two Ingestors in one consumer group, each with its own store (the scale-out setup: each
// instance owns the store of its partitions). One leaves mid-stream; the union of both stores
// must hold every record exactly once. Run with both rebalance protocols.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "ingest/ingestor.h"
#include "ingest/synthetic_producer.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using testing::Assigned;
using testing::CheckExactlyOnce;
using testing::ControlledStore;
using testing::IngestTestBase;
using testing::Key;
using testing::kTopic;
using testing::OffsetCounts;
using testing::ReadStore;
using testing::StoredEvent;
using testing::TestProducer;
using testing::WallNow;
using namespace std::chrono_literals;

// Parameters: the assignment strategy, and the writer count.
class RebalanceTest : public IngestTestBase,
                      public ::testing::WithParamInterface<std::tuple<const char*, int>> {
 protected:
  RebalanceTest() {
    partitions_ = 8;
    writers_ = std::get<1>(GetParam());
  }
};

// Each instance answers from its own store for the partitions it owns (docs/RELIABILITY.md, "Where
// a partition starts"), so a new owner rebuilds the window of a partition it takes over from Kafka
// rather than continuing after the previous owner's commit: once caught up, a's store alone holds
// every record exactly once.
TEST_P(RebalanceTest, OneConsumerLeavesMidStreamAndTheNewOwnerHoldsEveryRecordOnce) {
  TempDir dir;
  auto store_a = OpenStore(dir.Sub("a"));
  auto store_b = OpenStore(dir.Sub("b"));
  ASSERT_NE(store_a, nullptr);
  ASSERT_NE(store_b, nullptr);
  IngestOptions options = Options("rebalance-group");
  options.properties["partition.assignment.strategy"] = std::get<0>(GetParam());
  auto a = StartIngestor(options, store_a.get());
  auto b = StartIngestor(options, store_b.get());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    return Assigned(*a) > 0 && Assigned(*b) > 0 &&
           Assigned(*a) + Assigned(*b) == static_cast<size_t>(partitions_);
  })) << "a has "
      << Assigned(*a) << ", b has " << Assigned(*b);

  ProducerOptions popts;
  popts.brokers = kafka_->bootstrap();
  popts.topic = kTopic;
  popts.rate = 4000;
  popts.count = 14000;
  auto producer = SyntheticProducer::Create(popts);
  ASSERT_TRUE(producer.ok());
  (*producer)->Start();

  // b leaves mid-stream; a takes over its partitions and replays them from the window's start.
  ASSERT_TRUE(WaitFor([&] { return (*producer)->delivered() >= 5000; }));
  ASSERT_TRUE(WaitFor([&] { return b->Stats().events_stored > 0; }));
  ASSERT_TRUE(b->Stop().ok());
  EXPECT_EQ(b->Stats().last_error.find("timed out"), std::string::npos) << b->Stats().last_error;
  ASSERT_TRUE(WaitFor([&] { return Assigned(*a) == static_cast<size_t>(partitions_); }));
  Status produced = (*producer)->Wait();
  ASSERT_TRUE(produced.ok()) << produced.ToString();

  std::map<int32_t, int64_t> high = High();
  auto caught_up = [&] {
    std::map<store::TopicPartition, int64_t> offsets_a = store_a->StoredOffsets();
    for (const auto& [partition, hw] : high) {
      store::TopicPartition tp{kTopic, partition};
      if ((offsets_a.count(tp) ? offsets_a[tp] : 0) < hw) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitFor(caught_up, 60s));
  IngestStats stats_a = a->Stats();
  ASSERT_TRUE(a->Stop().ok());
  EXPECT_EQ(a->Stats().last_error.find("timed out"), std::string::npos) << a->Stats().last_error;

  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(*store_a), kTopic), high), "");
  EXPECT_EQ(stats_a.duplicates, 0u);
  // b's copy of what it consumed stays in its store (no longer counted: b owns nothing), once.
  const auto from_b = OffsetCounts(ReadStore(*store_b), kTopic);
  EXPECT_GT(from_b.size(), 0u);
  for (const auto& [at, count] : from_b) EXPECT_EQ(count, 1) << at.first << "/" << at.second;
}

// One consumer whose writer fell behind when the group rebalanced (eager: everything is revoked,
// then assigned again).
class PausedRebalanceTest : public IngestTestBase {
 protected:
  PausedRebalanceTest() { partitions_ = 8; }
};

// librdkafka keeps an application's pause on a partition through an eager revocation and the
// assignment after it. a is paused (its writer blocked) when b joins; its writer catches up
// during the revocation, so a resumes while it owns nothing; the partitions it is then given,
// paused before, must be read. (Failed before assignments set the pause state of every
// partition: a's half stayed paused and was never read again.)
TEST_F(PausedRebalanceTest, PartitionsPausedWhenRevokedAreReadOnceAssignedAgain) {
  TempDir dir;
  ControlledStore store_a(OpenStore(dir.Sub("a")));
  auto store_b = OpenStore(dir.Sub("b"));
  ASSERT_NE(store_b, nullptr);
  TestProducer producer(kafka_->bootstrap());
  for (int i = 0; i < 4000; ++i) {
    producer.Produce(kTopic, i % partitions_, Key(i % 50),
                     R"({"ts":)" + std::to_string(WallNow()) + "}");
  }
  producer.Flush();

  IngestOptions options = Options("paused-rebalance-group");
  options.properties["partition.assignment.strategy"] = "range";
  IngestOptions options_a = options;
  options_a.batch_max_events = 20;
  options_a.queue_max_batches = 2;
  store_a.SetGate(false);  // a's writer blocks on its first batch
  auto a = StartIngestor(options_a, &store_a);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    const IngestStats s = a->Stats();
    return Assigned(*a) == static_cast<size_t>(partitions_) && s.partitions[0].paused;
  })) << "a never paused";

  // b joins: a's revocation waits for its writer, which is still blocked. Then the writer goes on.
  const uint64_t rebalances = a->Stats().rebalances;
  auto b = StartIngestor(options, store_b.get());
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitFor([&] { return a->Stats().rebalances > rebalances; }));
  store_a.SetGate(true);
  ASSERT_TRUE(WaitFor([&] {
    return Assigned(*a) > 0 && Assigned(*b) > 0 &&
           Assigned(*a) + Assigned(*b) == static_cast<size_t>(partitions_);
  }));

  // Every partition is read to its end by its new owner (or was by a before the rebalance).
  const std::map<int32_t, int64_t> high = High();
  auto caught_up = [&] {
    std::map<store::TopicPartition, int64_t> offsets_a = store_a.StoredOffsets();
    std::map<store::TopicPartition, int64_t> offsets_b = store_b->StoredOffsets();
    for (const auto& [partition, hw] : high) {
      store::TopicPartition tp{kTopic, partition};
      if (std::max(offsets_a[tp], offsets_b[tp]) < hw) return false;
    }
    return true;
  };
  EXPECT_TRUE(WaitFor(caught_up, 60s)) << "a has " << Assigned(*a) << " partitions, paused: "
                                       << a->Stats().partitions[0].paused;
  ASSERT_TRUE(a->Stop().ok());
  ASSERT_TRUE(b->Stop().ok());
}

INSTANTIATE_TEST_SUITE_P(
    Protocols, RebalanceTest,
    ::testing::Combine(::testing::Values("range,roundrobin", "cooperative-sticky"),
                       ::testing::Values(1, 3)),
    [](const ::testing::TestParamInfo<std::tuple<const char*, int>>& info) {
      return std::string(std::get<0>(info.param)[0] == 'c' ? "Cooperative" : "Eager") +
             "Writers" + std::to_string(std::get<1>(info.param));
    });

}  // namespace
}  // namespace hotrow::ingest
