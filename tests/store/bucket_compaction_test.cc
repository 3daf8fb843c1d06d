// A bucket that stopped receiving writes is compacted once into one sorted run (store/
// bucket_compactor.h), so that a salt seek probes one table file instead of one per flush; every
// row stays readable.

#include <gtest/gtest.h>

#include <vector>

#include "common/clock.h"
#include "common/thread_priority.h"
#include "keying/row_key.h"
#include "store/event_store.h"
#include "tests/store/numbered_events.h"
#include "tests/support/threads.h"

namespace hotrow::store::bucket_compaction_test {
namespace {

using testing::ThreadsNamed;

constexpr int64_t kNow = 1'700'000'040'000;
constexpr int64_t kBucketMs = 60'000;
// A bucket that closed three minutes before kNow.
constexpr int64_t kClosedStart = (kNow / kBucketMs - 3) * kBucketMs;

void WriteEvents(EventStore* store, int64_t first, int64_t count, int64_t first_ts) {
  WriteNumberedEvents(store, first, count, first_ts,
                      [](int64_t i) { return "dev-" + std::to_string(i % 50); });
}

BucketStats BucketAt(const EventStore& store, int64_t start) {
  for (const BucketStats& b : store.Stats().buckets) {
    if (b.start_ms == start) return b;
  }
  ADD_FAILURE() << "no bucket at " << start;
  return BucketStats();
}

size_t RowsIn(const EventStore& store, int64_t start) {
  size_t rows = 0;
  for (const auto& bucket : store.Buckets()) {
    if (bucket->start_ms() != start) continue;
    auto it = bucket->NewIterator(keying::KeyRange{"", ""}, /*within_id_prefix=*/false);
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++rows;
    EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  }
  return rows;
}

class BucketCompactionTest : public ManualClockStoreTest {
 protected:
  BucketCompactionTest() : ManualClockStoreTest(kNow, kBucketMs, 4) {}
};

TEST_F(BucketCompactionTest, AClosedBucketQuietFor30SecondsBecomesOneSortedRun) {
  auto store = std::move(EventStore::Open(Options()).value());
  // Three rounds of late events into the same closed bucket, each flushed once the bucket has
  // been quiet for 30 s: one table file each, unless the quiet bucket is compacted.
  for (int round = 0; round < 3; ++round) {
    WriteEvents(store.get(), round * 1000, 1000, kClosedStart + round * 1000);
    clock_.Advance(31'000);
    ASSERT_TRUE(store->DropExpiredBuckets().ok());
    store->WaitForCompactions();
  }
  EXPECT_EQ(BucketAt(*store, kClosedStart).sorted_runs, 1);
  EXPECT_EQ(BucketAt(*store, kClosedStart).events, 3000u);
  EXPECT_EQ(RowsIn(*store, kClosedStart), 3000u);
}

TEST_F(BucketCompactionTest, ClosedBucketsFoundAtOpenAreCompacted) {
  // Each reopen turns what the write-ahead log holds into one table file of the bucket.
  for (int round = 0; round < 2; ++round) {
    auto store = std::move(EventStore::Open(Options()).value());
    WriteEvents(store.get(), round * 1000, 1000, kClosedStart + round * 1000);
  }
  auto store = std::move(EventStore::Open(Options()).value());
  store->WaitForCompactions();
  EXPECT_EQ(BucketAt(*store, kClosedStart).sorted_runs, 1);
  EXPECT_EQ(RowsIn(*store, kClosedStart), 2000u);
}

TEST_F(BucketCompactionTest, TheBucketBeingWrittenIsLeftAlone) {
  const int64_t current = (kNow / kBucketMs) * kBucketMs;
  {
    auto store = std::move(EventStore::Open(Options()).value());
    WriteEvents(store.get(), 0, 1000, current);
  }
  {
    auto store = std::move(EventStore::Open(Options()).value());
    WriteEvents(store.get(), 1000, 1000, current + 1000);
  }
  auto store = std::move(EventStore::Open(Options()).value());
  store->WaitForCompactions();
  EXPECT_EQ(BucketAt(*store, current).sorted_runs, 2);  // one table file per reopen
  EXPECT_EQ(RowsIn(*store, current), 2000u);
}

bool AnyBatch(const std::vector<int>& tids) {
  for (int tid : tids) {
    if (IsBatchThread(tid)) return true;
  }
  return false;
}

TEST_F(BucketCompactionTest, FlushAndCompactionThreadsRunAsBatchThreads) {
  // Answers never wait behind ingest: the threads that flushed and compacted run under
  // SCHED_BATCH (common/thread_priority.h), the thread that asked does not.
  // Two flushed files of one closed bucket: a compaction that merges them (one file would be
  // moved, not compacted, and RocksDB tells no listener of a move).
  auto store = std::move(EventStore::Open(Options()).value());
  for (int round = 0; round < 2; ++round) {
    WriteEvents(store.get(), round * 1000, 1000, kClosedStart + round * 1000);
    clock_.Advance(31'000);
    ASSERT_TRUE(store->DropExpiredBuckets().ok());  // flushes the quiet bucket, queues compaction
    store->WaitForCompactions();
  }
  EXPECT_EQ(BucketAt(*store, kClosedStart).sorted_runs, 1);
  EXPECT_TRUE(AnyBatch(ThreadsNamed("rocksdb:high"))) << "no flush thread runs as batch";
  EXPECT_TRUE(AnyBatch(ThreadsNamed("rocksdb:low"))) << "no compaction thread runs as batch";
  EXPECT_FALSE(IsBatchThread());
}

}  // namespace
}  // namespace hotrow::store::bucket_compaction_test
