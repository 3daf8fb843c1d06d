// The event store's window and expiry against real RocksDB: rows outside the window at write
// time, bucket drops with a controlled clock, snapshots across a drop, disk space after a drop.

#include "tests/store/event_store_test_base.h"

namespace hotrow::store_test {
namespace {

TEST_F(EventStoreTest, ExpiredAndFutureRowsAreCountedAndNotStored) {
  ASSERT_NO_FATAL_FAILURE(Open());
  const int64_t now = clock_.NowMs();
  const int64_t window_start = now - kTtlMs;
  ASSERT_EQ(store_->WindowStartMs(), window_start);
  const std::vector<TestEvent> expired = {Ev("a", window_start - 1), Ev("a", 1),
                                          Ev("b", window_start - kTtlMs)};
  const std::vector<TestEvent> future = {Ev("a", now + kMaxFutureMs + 1),
                                         Ev("c", now + 100 * kTtlMs)};
  const std::vector<TestEvent> stored = {Ev("a", window_start), Ev("b", now),
                                         Ev("c", now + kMaxFutureMs)};
  std::vector<TestEvent> batch;
  for (const auto* part : {&expired, &future, &stored})
    batch.insert(batch.end(), part->begin(), part->end());
  WriteOutcome outcome = Write(batch);
  EXPECT_EQ(outcome.expired, expired.size());
  EXPECT_EQ(outcome.future, future.size());
  EXPECT_EQ(outcome.stored, stored.size());
  EXPECT_EQ(outcome.duplicate, 0u);
  EXPECT_EQ(DiffSets(Sorted(stored), EventsOf(Rows())), "");
  EXPECT_EQ(store_->Stats().events, stored.size());
  // The offsets of the whole batch are recorded: the refused records were handled too.
  EXPECT_EQ(store_->StoredOffsets().at(TopicPartition{"t", 0}), batch.back().offset + 1);
}

TEST_F(EventStoreTest, BucketsAreDroppedOnlyWhenTheirWholeSpanIsOlderThanTheWindow) {
  ASSERT_NO_FATAL_FAILURE(Open());
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 0u) << "an empty store has nothing to drop";

  std::vector<TestEvent> events;
  for (int b = 0; b < 3; ++b) {
    events.push_back(Ev("dev-1", kT0 + b * kBucketMs));
    events.push_back(Ev("dev-2", kT0 + b * kBucketMs + kBucketMs - 1));
  }
  ASSERT_EQ(Write(events).stored, events.size());
  ASSERT_EQ(store_->Buckets().size(), 3u);

  // The window starts on the last millisecond of bucket 0: that millisecond is still in it.
  clock_.Set(kT0 + kBucketMs - 1 + kTtlMs);
  dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 0u) << "dropped a bucket whose last millisecond is in the window";
  EXPECT_EQ(store_->Buckets().size(), 3u);

  // One millisecond later the whole of bucket 0 is older than the window.
  clock_.Advance(1);
  dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 1u);
  auto buckets = store_->Buckets();
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets.front()->start_ms(), kT0 + kBucketMs);
  dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 0u) << "dropping twice";
  EXPECT_EQ(DiffSets(Sorted({events.begin() + 2, events.end()}), EventsOf(Rows())), "");

  // Reopen: the dropped bucket stays gone.
  buckets.clear();  // a held bucket keeps the database open
  ASSERT_NO_FATAL_FAILURE(Open());
  buckets = store_->Buckets();
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets.front()->start_ms(), kT0 + kBucketMs);

  // Far later everything goes.
  clock_.Set(kT0 + 100 * kTtlMs);
  dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 2u);
  EXPECT_TRUE(store_->Buckets().empty());
  EXPECT_TRUE(Rows().empty());
}

// Header: "expired: older than the window, or in a bucket already dropped". A wall clock can step
// back (NTP); an event for a bucket dropped before must still be refused, not resurrect it.
TEST_F(EventStoreTest, EventsForADroppedBucketAreExpiredEvenWhenTheClockStepsBack) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_EQ(Write({Ev("dev-1", kT0 + 100), Ev("dev-1", kT0 + 2 * kBucketMs)}).stored, 2u);
  clock_.Set(kT0 + kBucketMs + kTtlMs);
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok());
  ASSERT_EQ(*dropped, 1u);
  clock_.Set(kT0 + kTtlMs);  // back: bucket 0's span is inside the window again
  WriteOutcome outcome = Write({Ev("dev-1", kT0 + 200)});
  EXPECT_EQ(outcome.expired, 1u);
  EXPECT_EQ(outcome.stored, 0u);
  for (const auto& bucket : store_->Buckets()) EXPECT_NE(bucket->start_ms(), kT0);
}

TEST_F(EventStoreTest, ABucketSnapshotStaysReadableAfterItsDrop) {
  ASSERT_NO_FATAL_FAILURE(Open());
  std::vector<TestEvent> events;
  for (int i = 0; i < 200; ++i)
    events.push_back(Ev("dev-" + std::to_string(i % 9), kT0 + i * 7, "t", i % 3));
  ASSERT_EQ(Write(events).stored, events.size());
  const auto snapshot = store_->Buckets();
  ASSERT_EQ(snapshot.size(), 1u);
  const auto before = EventsOf(Rows());

  clock_.Set(kT0 + kBucketMs + kTtlMs);
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok());
  ASSERT_EQ(*dropped, 1u);
  EXPECT_TRUE(store_->Buckets().empty());

  std::vector<TestEvent> read;
  auto it = snapshot[0]->NewIterator(keying::KeyRange{"", ""}, false);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view id;
    std::string_view payload;
    keying::RowKey key;
    ASSERT_TRUE(keying::DecodeRowKey(it->key(), &key));
    ASSERT_TRUE(keying::DecodeRowValue(it->value(), &id, &payload));
    read.push_back(TestEvent{std::string(id), key.ts_ms, "t", key.partition, key.offset,
                             std::string(payload)});
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  EXPECT_EQ(DiffSets(before, Sorted(read)), "");
}

// Where the bytes of the store are, to say why space did not return.
std::string ListFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::string out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      out += "  " + it->path().filename().string() + " " + std::to_string(it->file_size(size_ec)) +
             "\n";
    }
  }
  return out;
}

TEST_F(EventStoreTest, DiskSpaceReturnsAfterBucketsAreDropped) {
  StoreOptions options = Options();
  options.write_buffer_bytes = 4 << 20;
  ASSERT_NO_FATAL_FAILURE(Open(options));
  // 20k events of 1 KB in two buckets to be dropped, a few in a bucket that stays.
  for (int batch = 0; batch < 20; ++batch) {
    std::vector<TestEvent> events;
    for (int i = 0; i < 1000; ++i) {
      events.push_back(Ev("dev-" + std::to_string(i % 100), kT0 + (batch % 2) * kBucketMs + i, "t",
                          i % 4, 1024));
    }
    ASSERT_EQ(Write(events).stored, events.size());
  }
  std::vector<TestEvent> keep;
  for (int i = 0; i < 50; ++i)
    keep.push_back(Ev("dev-keep", kT0 + 5 * kBucketMs + i, "t", 0, 1024));
  ASSERT_EQ(Write(keep).stored, keep.size());
  const uint64_t full = testing::DiskUsageBytes(options.path);
  ASSERT_GT(full, 15u << 20) << "the data never reached the disk?\n" << ListFiles(options.path);

  auto snapshot = store_->Buckets();
  clock_.Set(kT0 + 2 * kBucketMs + kTtlMs);
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  ASSERT_EQ(*dropped, 2u);
  // Held snapshot: still readable.
  {
    auto it = snapshot[0]->NewIterator(keying::KeyRange{"", ""}, false);
    it->SeekToFirst();
    ASSERT_TRUE(it->Valid()) << it->status().ToString();
  }
  snapshot.clear();

  // The service drops on a timer; do as it does while waiting for background deletion.
  uint64_t now_bytes = full;
  const bool returned = testing::WaitFor(
      [&] {
        Result<size_t> again = store_->DropExpiredBuckets();
        (void)again;
        now_bytes = testing::DiskUsageBytes(options.path);
        return now_bytes < full / 4;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(50));
  EXPECT_TRUE(returned) << "disk usage " << full << " bytes before the drop, still " << now_bytes
                        << " bytes 30 s after; files:\n"
                        << ListFiles(options.path);
  EXPECT_EQ(DiffSets(Sorted(keep), EventsOf(Rows())), "");
}

}  // namespace
}  // namespace hotrow::store_test
