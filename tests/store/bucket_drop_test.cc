// Dropping an expired bucket must not delete its table files on the caller's thread: the caller
// holds the store's writers out while it drops, and at 100M events a bucket's files are a
// gigabyte. RocksDB deletes them in a background job (avoid_unnecessary_blocking_io); the files
// are still deleted. Nor may the drop hold writers out while RocksDB drops the bucket (a MANIFEST
// write): only while the bucket leaves the store's map.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store::bucket_drop_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

// The table files deleted while `watching`, and whether any was deleted on `caller`'s thread.
struct Deletions {
  std::mutex mu;
  std::condition_variable cv;
  bool watching = false;
  int deleted = 0;
  bool on_caller = false;
  std::thread::id caller;
};

// A store of 4 salts under `dir`, with one-minute buckets and a one-minute window by `clock`.
StoreOptions OneMinuteWindow(testing::TempDir& dir, ManualClock* clock) {
  StoreOptions options;
  options.path = dir.Sub("store");
  options.wall_clock = clock;
  options.salts = 4;
  options.ttl_ms = 60'000;
  options.bucket_ms = 60'000;
  return options;
}

TEST(BucketDropTest, TheDroppedBucketsFilesAreDeletedOffTheCallersThread) {
  testing::TempDir dir;
  ManualClock clock(kNow);
  Deletions deletions;
  StoreOptions options = OneMinuteWindow(dir, &clock);
  options.table_file_deleted_hook = [&deletions](const std::string&) {
    std::lock_guard lock(deletions.mu);
    if (!deletions.watching) return;
    ++deletions.deleted;
    if (std::this_thread::get_id() == deletions.caller) deletions.on_caller = true;
    deletions.cv.notify_all();
  };
  {
    auto store = std::move(EventStore::Open(options).value());
    const uint16_t topic = *store->TopicNumber("events");
    WriteBatchInput batch;
    for (int64_t i = 0; i < 20'000; ++i) {
      const std::string id = "dev-" + std::to_string(i % 100);
      keying::RowKey key{store->salter().SaltOf("events", 0, i, id), keying::IdHash(id),
                         kNow - 15'000 + i / 2, topic, 0, i};
      batch.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, R"({"v":1})")});
    }
    batch.next_offsets[{"events", 0}] = 20'000;
    WriteOutcome outcome;
    ASSERT_TRUE(store->Write(batch, &outcome).ok());
  }
  auto store = std::move(EventStore::Open(options).value());  // the rows are in a table file now
  store->WaitForCompactions();
  ASSERT_EQ(store->Buckets().size(), 1u);

  clock.Advance(120'000);
  {
    std::lock_guard lock(deletions.mu);
    deletions.watching = true;
    deletions.caller = std::this_thread::get_id();
  }
  auto dropped = store->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  ASSERT_EQ(*dropped, 1u);
  std::unique_lock lock(deletions.mu);
  deletions.cv.wait(lock, [&] { return deletions.deleted > 0; });  // still deleted, elsewhere
  EXPECT_FALSE(deletions.on_caller) << "a table file was deleted by DropExpiredBuckets' caller";
}

// One event of `id` at `ts_ms`, offset `offset` of events/0.
void AddRow(EventStore& store, uint16_t topic, const std::string& id, int64_t ts_ms, int64_t offset,
            WriteBatchInput* batch) {
  keying::RowKey key{store.salter().SaltOf("events", 0, offset, id), keying::IdHash(id), ts_ms,
                     topic, 0, offset};
  batch->rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, R"({"v":1})")});
  batch->next_offsets[{"events", 0}] = offset + 1;
}

TEST(BucketDropTest, AWriteCompletesWhileRocksDbDropsTheBucket) {
  testing::TempDir dir;
  ManualClock clock(kNow);
  // The write issued while the drop is held in its hook; whether it returned before the hook let go.
  std::future<Status> write_done;
  bool returned_during_drop = false;
  std::unique_ptr<EventStore> store;
  WriteBatchInput fresh;
  StoreOptions options = OneMinuteWindow(dir, &clock);
  options.drop_hook = [&] {
    write_done = std::async(std::launch::async, [&] {
      WriteOutcome outcome;
      return store->Write(fresh, &outcome);
    });
    // A guard against a hang when writers are held out, not a measure of time.
    returned_during_drop = write_done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  };
  store = std::move(EventStore::Open(options).value());
  const uint16_t topic = *store->TopicNumber("events");
  {
    WriteBatchInput batch;
    for (int64_t i = 0; i < 1'000; ++i) AddRow(*store, topic, "old", kNow - 15'000 + i, i, &batch);
    WriteOutcome outcome;
    ASSERT_TRUE(store->Write(batch, &outcome).ok());
  }
  clock.Advance(120'000);
  AddRow(*store, topic, "new", clock.NowMs() - 1'000, 1'000, &fresh);

  auto dropped = store->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 1u);
  ASSERT_TRUE(write_done.valid());
  EXPECT_TRUE(returned_during_drop) << "a Write waited for RocksDB's drop of an expired bucket";
  const Status written = write_done.get();
  ASSERT_TRUE(written.ok()) << written.ToString();
  const auto buckets = store->Buckets();
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_GT(buckets.front()->end_ms(), clock.NowMs() - 1'000);
}

}  // namespace
}  // namespace hotrow::store::bucket_drop_test
