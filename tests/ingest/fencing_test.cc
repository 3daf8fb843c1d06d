// What a revocation or a loss does to the records read and not yet written (CONTRACT.md "Round 3
// additions", Ingest): on the loss of some partitions, nothing of the partitions still owned is
// dropped or skipped, and nothing is written or committed for a lost partition after the loss is
// known; a revocation that cannot write gives its partitions up within a bound instead of holding
// the group. Two Ingestors in one group against the embedded broker; the store of the first one
// refuses writes while its partitions are taken away, so that records of every partition are in
// its open, pending, queued and retried batches at that moment.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "ingest/ingestor.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using testing::CheckExactlyOnce;
using testing::CheckWholeFromZero;
using testing::ControlledStore;
using testing::IngestTestBase;
using testing::Key;
using testing::kTopic;
using testing::OffsetCounts;
using testing::ReadStore;
using testing::TestProducer;
using namespace std::chrono_literals;

class FencingTest : public IngestTestBase, public ::testing::WithParamInterface<int> {
 protected:
  FencingTest() { writers_ = GetParam(); }

  void Produce(TestProducer* producer, int from, int n) {
    for (int i = from; i < from + n; ++i) {
      producer->Produce(kTopic, i % partitions_, Key(i), R"({"event_id":")" + Key(i) + R"("})");
    }
    producer->Flush();
  }

  static std::set<int32_t> Partitions(const Ingestor& ingestor) {
    std::set<int32_t> out;
    for (const PartitionStats& p : ingestor.Stats().partitions) out.insert(p.partition);
    return out;
  }

  // The partitions of kTopic that `store` holds a row or an offset of.
  static std::set<int32_t> Held(const store::EventStore& store) {
    std::set<int32_t> out;
    for (const auto& [at, n] : OffsetCounts(ReadStore(store), kTopic)) out.insert(at.first);
    for (const auto& [tp, next] : store.StoredOffsets()) {
      if (tp.topic == kTopic) out.insert(tp.partition);
    }
    return out;
  }

  // Waits until every partition's end is in one of the stores.
  bool WaitBothCaughtUp(const store::EventStore& a, const store::EventStore& b) {
    const std::map<int32_t, int64_t> high = High();
    return WaitFor(
        [&] {
          std::map<store::TopicPartition, int64_t> offsets_a = a.StoredOffsets();
          std::map<store::TopicPartition, int64_t> offsets_b = b.StoredOffsets();
          for (const auto& [partition, hw] : high) {
            store::TopicPartition tp{kTopic, partition};
            if (std::max(offsets_a[tp], offsets_b[tp]) < hw) return false;
          }
          return true;
        },
        60s);
  }
};
HOTROW_WITH_WRITERS(FencingTest);

// a owns every partition and has read 2000 records into batches it cannot write yet; b joins and
// a gives half of its partitions up, as lost (cooperative-sticky moves only those, so a keeps the
// others: the partial loss that librdkafka reports when a revocation it queued meets a poller
// that was stuck past max.poll.interval.ms). Then a's store accepts writes again. a's store must
// hold each record of the partitions it kept, none of those it lost; each store has no hole.
// (Failed before the loss removed only the lost partitions' records: the kept partitions' records
// were dropped too, and a then stored their next offsets past them.)
TEST_P(FencingTest, APartialLossKeepsWhatWasReadOfThePartitionsStillOwned) {
  TempDir dir;
  ControlledStore store_a(OpenStore(dir.Sub("a")));
  auto store_b = OpenStore(dir.Sub("b"));
  ASSERT_NE(store_b, nullptr);
  TestProducer producer(kafka_->bootstrap());
  Produce(&producer, 0, 2000);

  IngestOptions options = Options("partial-loss");
  options.properties["partition.assignment.strategy"] = std::string("cooperative-sticky");
  std::atomic<bool> lose{false};
  IngestOptions options_a = options;
  options_a.batch_max_events = 100;
  options_a.queue_max_batches = 100;  // everything read is queued: no pause
  options_a.revocation_lost_for_test = [&] { return lose.load(); };
  store_a.FailNext(1 << 30, Status::IOError("test: the store refuses writes"));
  auto a = StartIngestor(options_a, &store_a);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitFor([&] { return a->Stats().records_consumed >= 2000; }, 60s));
  ASSERT_EQ(Partitions(*a).size(), static_cast<size_t>(partitions_));

  lose.store(true);
  auto b = StartIngestor(options, store_b.get());
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitFor(
      [&] {
        return !Partitions(*b).empty() &&
               Partitions(*a).size() + Partitions(*b).size() == static_cast<size_t>(partitions_);
      },
      60s))
      << "a has " << Partitions(*a).size() << ", b has " << Partitions(*b).size();
  lose.store(false);
  const std::set<int32_t> kept = Partitions(*a);
  const std::set<int32_t> lost = Partitions(*b);
  ASSERT_FALSE(kept.empty());
  store_a.FailNext(0, Status::Ok());

  // More records for every partition: a writes its kept partitions' next offsets past them.
  Produce(&producer, 2000, 1000);
  ASSERT_TRUE(WaitBothCaughtUp(store_a, *store_b));
  EXPECT_GT(a->Stats().batches_discarded, 0u);
  ASSERT_TRUE(a->Stop().ok());
  ASSERT_TRUE(b->Stop().ok());

  EXPECT_EQ(CheckWholeFromZero(store_a, kTopic), "");
  EXPECT_EQ(CheckWholeFromZero(*store_b, kTopic), "");
  // Nothing of a lost partition was written after the loss: a's writes all failed before it.
  std::set<int32_t> held = Held(store_a);
  for (int32_t p : lost) EXPECT_EQ(held.count(p), 0u) << "a wrote lost partition " << p;
  for (int32_t p : kept) EXPECT_EQ(held.count(p), 1u) << "a wrote nothing of kept partition " << p;
  std::map<std::pair<int32_t, int64_t>, int> either;
  for (const store::EventStore* store :
       {static_cast<store::EventStore*>(&store_a), store_b.get()}) {
    for (const auto& [at, count] : OffsetCounts(ReadStore(*store), kTopic)) either[at] = 1;
  }
  EXPECT_EQ(CheckExactlyOnce(either, High()), "");
}

// a's disk is full when b joins (eager: every partition is revoked). Its revocation cannot write
// what it read; it gives the partitions up within revoke_drain_ms instead of holding the group's
// rebalance until the disk frees, and writes nothing of them once the disk frees (another
// instance owns them). (Failed before the drain was bounded: b got no partition while a's disk
// stayed full, and a wrote b's partitions once it freed.)
TEST_P(FencingTest, ARevocationThatCannotWriteGivesThePartitionsUpWithinItsBound) {
  TempDir dir;
  ControlledStore store_a(OpenStore(dir.Sub("a")));
  auto store_b = OpenStore(dir.Sub("b"));
  ASSERT_NE(store_b, nullptr);
  TestProducer producer(kafka_->bootstrap());
  Produce(&producer, 0, 2000);

  IngestOptions options = Options("full-disk-revoke");
  options.properties["partition.assignment.strategy"] = std::string("range");
  IngestOptions options_a = options;
  options_a.revoke_drain_ms = 1000;
  store_a.FailNext(1 << 30, Status::NoSpace("test: no space left on device"));
  auto a = StartIngestor(options_a, &store_a);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    const IngestStats s = a->Stats();
    return s.out_of_disk && s.records_consumed > 0;
  }));

  auto b = StartIngestor(options, store_b.get());
  ASSERT_NE(b, nullptr);
  // The disk is still full: the group must not wait for it.
  ASSERT_TRUE(WaitFor(
      [&] {
        return !Partitions(*b).empty() &&
               Partitions(*a).size() + Partitions(*b).size() == static_cast<size_t>(partitions_);
      },
      30s))
      << "a has " << Partitions(*a).size() << ", b has " << Partitions(*b).size();
  const std::set<int32_t> given_up = Partitions(*b);
  store_a.FailNext(0, Status::Ok());
  Produce(&producer, 2000, 1000);
  ASSERT_TRUE(WaitBothCaughtUp(store_a, *store_b));
  EXPECT_GT(a->Stats().batches_discarded, 0u);
  ASSERT_TRUE(a->Stop().ok());

  std::set<int32_t> held = Held(store_a);
  for (int32_t p : given_up) EXPECT_EQ(held.count(p), 0u) << "a wrote given-up partition " << p;
  EXPECT_EQ(CheckWholeFromZero(store_a, kTopic), "");
  ASSERT_TRUE(b->Stop().ok());
  EXPECT_EQ(CheckWholeFromZero(*store_b, kTopic), "");
}

}  // namespace
}  // namespace hotrow::ingest
