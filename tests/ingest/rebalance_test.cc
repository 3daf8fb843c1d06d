// Two Ingestors in one consumer group, each with its own store (the scale-out setup: each
// instance owns the store of its partitions). One leaves mid-stream; the union of both stores
// must hold every record exactly once. Run with both rebalance protocols.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

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
using testing::CheckExactlyOnce;
using testing::IngestTestBase;
using testing::kTopic;
using testing::OffsetCounts;
using testing::ReadStore;
using testing::StoredEvent;
using namespace std::chrono_literals;

class RebalanceTest : public IngestTestBase, public ::testing::WithParamInterface<const char*> {
 protected:
  RebalanceTest() { partitions_ = 8; }
};

size_t Assigned(const Ingestor& ingestor) { return ingestor.Stats().partitions.size(); }

TEST_P(RebalanceTest, OneConsumerLeavesMidStreamAndTheUnionHoldsEveryRecordOnce) {
  TempDir dir;
  auto store_a = OpenStore(dir.Sub("a"));
  auto store_b = OpenStore(dir.Sub("b"));
  ASSERT_NE(store_a, nullptr);
  ASSERT_NE(store_b, nullptr);
  IngestOptions options = Options("rebalance-group");
  options.properties["partition.assignment.strategy"] = GetParam();
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

  // b leaves mid-stream; a takes over its partitions from where b's store and commits left them.
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
    std::map<store::TopicPartition, int64_t> offsets_b = store_b->StoredOffsets();
    for (const auto& [partition, hw] : high) {
      store::TopicPartition tp{kTopic, partition};
      int64_t next = std::max(offsets_a.count(tp) ? offsets_a[tp] : 0,
                              offsets_b.count(tp) ? offsets_b[tp] : 0);
      if (next < hw) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitFor(caught_up, 60s));
  IngestStats stats_a = a->Stats();
  ASSERT_TRUE(a->Stop().ok());
  EXPECT_EQ(a->Stats().last_error.find("timed out"), std::string::npos) << a->Stats().last_error;

  std::vector<StoredEvent> all = ReadStore(*store_a);
  std::vector<StoredEvent> from_b = ReadStore(*store_b);
  EXPECT_GT(from_b.size(), 0u);
  EXPECT_GT(all.size(), 0u);
  all.insert(all.end(), from_b.begin(), from_b.end());
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(all, kTopic), high), "");
  EXPECT_EQ(stats_a.duplicates, 0u);
}

INSTANTIATE_TEST_SUITE_P(Protocols, RebalanceTest,
                         ::testing::Values("range,roundrobin", "cooperative-sticky"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param[0] == 'c' ? "Cooperative" : "Eager");
                         });

}  // namespace
}  // namespace hotrow::ingest
