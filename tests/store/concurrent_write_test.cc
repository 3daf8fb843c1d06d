// Parallel EventStore::Write calls of disjoint partitions against a serial oracle of the same
// batches: the same rows, counters and offsets, and a store that reopens (every bucket's rows
// match its counters). Also: a store whose counters were written as plain values (before they
// became merge operands) opens and keeps counting right. Label `concurrent`: also runs under TSan.

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "store/event_store.h"
#include "store/store_metadata.h"
#include "tests/support/event_gen.h"
#include "tests/support/process.h"
#include "tests/support/raw_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using store::EventStore;
using store::StoreOptions;
using store::TopicPartition;
using store::WriteOutcome;
using testing::TestEvent;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kBucketMs = 10'000;
constexpr int64_t kTtlMs = 60'000;
constexpr int kWriters = 4;
constexpr int kPartitions = 8;  // partition p belongs to writer p % kWriters
constexpr int kBatchesPerWriter = 40;
constexpr int kEventsPerBatch = 50;

// "<prefix><n>", formatted: g++ 12 warns falsely (-Wrestrict) on "literal" + std::to_string(n).
std::string Named(const char* prefix, int n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s%d", prefix, n);
  return buf;
}

class ConcurrentWriteTest : public ::testing::Test {
 protected:
  StoreOptions Options(const std::string& name) const {
    StoreOptions options;
    options.path = dir_.Sub(name);
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    return options;
  }

  static std::unique_ptr<EventStore> Open(const StoreOptions& options) {
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // Each writer's batches: events of its own partitions, spread over the window's buckets (so
  // that writers create buckets at the same time), with some replays of earlier offsets.
  std::vector<std::vector<std::vector<TestEvent>>> Batches() const {
    std::vector<std::vector<std::vector<TestEvent>>> out(kWriters);
    std::map<int32_t, int64_t> next_offset;
    const std::vector<std::string> topics = {"a", "b"};
    for (int w = 0; w < kWriters; ++w) {
      for (int b = 0; b < kBatchesPerWriter; ++b) {
        std::vector<TestEvent> batch;
        for (int i = 0; i < kEventsPerBatch; ++i) {
          TestEvent e;
          e.partition = w + kWriters * (i % (kPartitions / kWriters));
          e.topic = topics[i % 3 == 0 ? 0 : 1];
          e.offset = next_offset[e.partition * 2 + (e.topic == "a")]++;
          e.id = Named("dev-", (b * 7 + i * 13) % 97);
          e.ts_ms = kT0 + ((b * kEventsPerBatch + i) * 997) % kTtlMs;
          e.payload = Named("{\"n\":", b * 1000 + i) + "}";
          batch.push_back(e);
        }
        out[static_cast<size_t>(w)].push_back(batch);
        if (b % 10 == 9) out[static_cast<size_t>(w)].push_back(batch);  // a replay
      }
    }
    return out;
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0 + kTtlMs - 1};
};

std::vector<TestEvent> AllEvents(const EventStore& store) {
  Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(store);
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<TestEvent> events;
  if (rows.ok()) {
    for (const auto& row : *rows) events.push_back(row.event);
  }
  std::sort(events.begin(), events.end());
  return events;
}

TEST_F(ConcurrentWriteTest, ParallelWritersOfDisjointPartitionsStoreWhatASerialWriterStores) {
  const auto batches = Batches();

  // The oracle: every batch, one after another.
  auto serial = Open(Options("serial"));
  ASSERT_NE(serial, nullptr);
  ASSERT_TRUE(serial->TopicNumber("a").ok());
  ASSERT_TRUE(serial->TopicNumber("b").ok());
  WriteOutcome serial_total;
  for (const auto& per_writer : batches) {
    for (const auto& batch : per_writer) {
      WriteOutcome outcome;
      ASSERT_TRUE(testing::WriteEvents(serial.get(), batch, &outcome).ok());
      serial_total.stored += outcome.stored;
      serial_total.duplicate += outcome.duplicate;
    }
  }

  auto parallel = Open(Options("parallel"));
  ASSERT_NE(parallel, nullptr);
  ASSERT_TRUE(parallel->TopicNumber("a").ok());
  ASSERT_TRUE(parallel->TopicNumber("b").ok());
  std::atomic<size_t> stored{0}, duplicate{0};
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      ready.fetch_add(1);
      while (ready.load() < kWriters) std::this_thread::yield();  // start together
      for (const auto& batch : batches[static_cast<size_t>(w)]) {
        WriteOutcome outcome;
        if (!testing::WriteEvents(parallel.get(), batch, &outcome).ok()) failures.fetch_add(1);
        stored.fetch_add(outcome.stored);
        duplicate.fetch_add(outcome.duplicate);
      }
    });
  }
  // Readers run meanwhile: stats and bucket snapshots never wait for, nor break, a write.
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      store::StoreStats stats = parallel->Stats();
      uint64_t sum = 0;
      for (const auto& b : stats.buckets) sum += b.events;
      EXPECT_EQ(sum, stats.events);
      (void)parallel->Buckets();
      (void)parallel->StoredOffsets();
    }
  });
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  ASSERT_EQ(failures.load(), 0);

  EXPECT_EQ(stored.load(), serial_total.stored);
  EXPECT_EQ(duplicate.load(), serial_total.duplicate);
  EXPECT_GT(serial_total.duplicate, 0u);
  EXPECT_EQ(parallel->StoredOffsets(), serial->StoredOffsets());
  const std::vector<TestEvent> want = AllEvents(*serial);
  EXPECT_EQ(want.size(), serial_total.stored);
  EXPECT_TRUE(AllEvents(*parallel) == want);
  const store::StoreStats a = serial->Stats(), b = parallel->Stats();
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.salt_events, b.salt_events);
  ASSERT_EQ(a.buckets.size(), b.buckets.size());
  for (size_t i = 0; i < a.buckets.size(); ++i) {
    EXPECT_EQ(a.buckets[i].start_ms, b.buckets[i].start_ms);
    EXPECT_EQ(a.buckets[i].events, b.buckets[i].events);
    EXPECT_EQ(a.buckets[i].bytes, b.buckets[i].bytes);
  }

  // The counters on disk (merge operands) agree with the rows: the store reopens, same figures.
  parallel.reset();
  parallel = Open(Options("parallel"));
  ASSERT_NE(parallel, nullptr);
  const store::StoreStats c = parallel->Stats();
  EXPECT_EQ(c.events, a.events);
  EXPECT_EQ(c.salt_events, a.salt_events);
  EXPECT_EQ(parallel->StoredOffsets(), serial->StoredOffsets());
}

TEST_F(ConcurrentWriteTest, DropsWaitForWritesUnderWayAndWritesGoOnAfter) {
  auto store = Open(Options("drops"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->TopicNumber("a").ok());
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      int64_t offset = 0;
      for (int b = 0; b < 200; ++b) {
        std::vector<TestEvent> batch;
        for (int i = 0; i < 20; ++i) {
          TestEvent e{Named("id-", i), clock_.NowMs() - (i * 2999) % kTtlMs, "a", w,
                      offset++, "{}"};
          batch.push_back(e);
        }
        WriteOutcome outcome;
        if (!testing::WriteEvents(store.get(), batch, &outcome).ok()) failures.fetch_add(1);
      }
    });
  }
  std::thread dropper([&] {
    for (int i = 0; i < 100 && !done.load(); ++i) {
      clock_.Advance(500);
      if (!store->DropExpiredBuckets().ok()) failures.fetch_add(1);
    }
  });
  for (auto& t : writers) t.join();
  done = true;
  dropper.join();
  EXPECT_EQ(failures.load(), 0);
  // Every live bucket's rows match its counters: the store reopens.
  store.reset();
  EXPECT_NE(Open(Options("drops")), nullptr);
}

TEST_F(ConcurrentWriteTest, CountersWrittenAsPlainValuesByAnOlderStoreStillCountRight) {
  const StoreOptions options = Options("old");
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  std::vector<TestEvent> first, second;
  for (int i = 0; i < 30; ++i) {
    first.push_back({Named("d", i), kT0 + i * 700, "a", 0, i, "{}"});
    second.push_back({Named("e", i), kT0 + i * 900, "a", 0, 30 + i, "{\"x\":1}"});
  }
  WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store.get(), first, &outcome).ok());
  ASSERT_EQ(outcome.stored, first.size());
  store.reset();

  // Rewrite every counter as a plain value (Put, then compacted), as stores written before the
  // counters became merge operands hold them.
  size_t rewritten = 0;
  {
    std::unique_ptr<testing::RawStore> raw = testing::RawStore::Open(options.path);
    ASSERT_NE(raw, nullptr);
    rocksdb::DB* db = raw->db();
    rocksdb::ColumnFamilyHandle* meta = raw->metadata();
    std::map<std::string, std::string> counters;
    {
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), meta));
      for (it->Seek(store::kStatPrefix); it->Valid() && it->key().starts_with(store::kStatPrefix);
           it->Next()) {
        counters[it->key().ToString()] = it->value().ToString();
      }
      ASSERT_TRUE(it->status().ok());
    }
    ASSERT_FALSE(counters.empty());
    for (const auto& [key, value] : counters) ASSERT_TRUE(db->Put({}, meta, key, value).ok());
    rewritten = counters.size();
    ASSERT_TRUE(db->CompactRange({}, meta, nullptr, nullptr).ok());
  }
  ASSERT_GT(rewritten, 0u);

  store = Open(options);  // reopening counts every bucket's rows against its counters
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Stats().events, first.size());
  ASSERT_TRUE(testing::WriteEvents(store.get(), second, &outcome).ok());
  ASSERT_EQ(outcome.stored, second.size());
  EXPECT_EQ(store->Stats().events, first.size() + second.size());
  store.reset();
  store = Open(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Stats().events, first.size() + second.size());
}

// Not concurrency, but the store's housekeeping beside the writers: a bucket that stops
// receiving writes is flushed (a table file appears), so that it does not pin WAL files.
TEST_F(ConcurrentWriteTest, ABucketThatStopsReceivingWritesIsFlushed) {
  const StoreOptions options = Options("idle");
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  auto tables = [&] {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(options.path)) {
      n += entry.path().extension() == ".sst" ? 1 : 0;
    }
    return n;
  };
  std::vector<TestEvent> events;
  for (int i = 0; i < 20; ++i) events.push_back({Named("d", i), kT0 + kTtlMs - 5000, "a", 0, i, "{}"});
  WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store.get(), events, &outcome).ok());
  ASSERT_EQ(outcome.stored, events.size());
  ASSERT_TRUE(store->DropExpiredBuckets().ok());
  EXPECT_EQ(tables(), 0u);  // written a moment ago: still in its memtable

  clock_.Advance(31'000);  // nothing written for 31 s
  ASSERT_TRUE(store->DropExpiredBuckets().ok());
  EXPECT_TRUE(testing::WaitFor([&] { return tables() >= 1; }, std::chrono::seconds(30)))
      << "the idle bucket was not flushed";
}

}  // namespace
}  // namespace hotrow
