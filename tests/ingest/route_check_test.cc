// Routing by key checked as records are ingested (CONTRACT.md "Group answers",
// `cluster.route_by_key`; ingest/partition_ownership.h, OwnedPartition::routable): on the
// embedded broker, records keyed by their event id and put in the partition the partitioner gives
// that id leave their partition routable; one record keyed by another string, or put elsewhere,
// makes its partition unroutable, and only it.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "ingest/ingestor.h"
#include "ingest/key_route.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using testing::IngestTestBase;
using testing::kTopic;
using testing::TestProducer;

class RouteCheckTest : public IngestTestBase,
                       public ::testing::WithParamInterface<KeyPartitioner> {
 protected:
  // Partitions 0..3 routable after `ids` events keyed by their id, each in its partitioner's
  // partition; then what `spoil` adds.
  std::map<int32_t, bool> Routable(const std::function<void(TestProducer*)>& spoil) {
    std::map<int32_t, bool> out;
    TestProducer producer(kafka_->bootstrap());
    for (int i = 0; i < 200; ++i) {
      const std::string id = "dev-" + std::to_string(i);
      const int32_t p = PartitionForKey(GetParam(), id, partitions_);
      producer.Produce(kTopic, p, id, R"({"event_id":")" + id + R"("})");
    }
    spoil(&producer);
    producer.Flush();
    hotrow::testing::TempDir dir;
    auto store = OpenStore(dir.Sub("store"));
    if (store == nullptr) return out;
    PartitionOwnership ownership(store.get());
    IngestOptions options = Options();
    options.ownership = &ownership;
    options.route_by_key = GetParam();
    auto ingestor = StartIngestor(options, store.get());
    if (ingestor == nullptr) return out;
    EXPECT_TRUE(WaitCaughtUp(*store, *ingestor));
    const IngestStats stats = ingestor->Stats();
    route_broken_ = stats.route_broken;
    for (const OwnedPartition& p : ownership.Snapshot().partitions) {
      EXPECT_EQ(p.route_partitions, partitions_) << p.partition;
      out[p.partition] = p.routable;
    }
    EXPECT_TRUE(ingestor->Stop().ok());
    return out;
  }
  uint64_t route_broken_ = 0;
};

TEST_P(RouteCheckTest, RecordsKeyedByTheirIdInTheirPartitionLeaveEveryPartitionRoutable) {
  const std::map<int32_t, bool> routable = Routable([](TestProducer*) {});
  EXPECT_EQ(routable, (std::map<int32_t, bool>{{0, true}, {1, true}, {2, true}, {3, true}}));
  EXPECT_EQ(route_broken_, 0u);
}

TEST_P(RouteCheckTest, AKeyThatIsNotTheIdOrAPartitionThatIsNotTheKeysBreaksOnlyItsPartition) {
  const std::map<int32_t, bool> routable = Routable([this](TestProducer* producer) {
    // In partition 1, a record whose key is not its id; in partition 2, a record keyed by its id
    // but put in the partition after the partitioner's.
    producer->Produce(kTopic, 1, "another-key", R"({"event_id":"dev-x"})");
    std::string id;
    for (int i = 0; id.empty(); ++i) {
      const std::string candidate = "odd-" + std::to_string(i);
      if (PartitionForKey(GetParam(), candidate, partitions_) != 2) id = candidate;
    }
    producer->Produce(kTopic, 2, id, R"({"event_id":")" + id + R"("})");
  });
  EXPECT_EQ(routable, (std::map<int32_t, bool>{{0, true}, {1, false}, {2, false}, {3, true}}));
  EXPECT_EQ(route_broken_, 2u);
}

INSTANTIATE_TEST_SUITE_P(Partitioners, RouteCheckTest,
                         ::testing::Values(KeyPartitioner::kMurmur2, KeyPartitioner::kCrc32),
                         [](const auto& info) { return KeyPartitionerName(info.param); });

}  // namespace
}  // namespace hotrow::ingest
