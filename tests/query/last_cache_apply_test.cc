// The last-N cache with its rows applied off the writer's thread (query/last_cache.h, "Applied off
// the writer's thread"), against the same cache applying them inside the call (apply_thread off),
// fed the same calls: with the cache's thread stopped (every read must add what its shard lacks of
// the queued Writes), across bucket drops and forgotten partitions made while Writes are queued,
// through the walk of every id, and under writers and readers racing (label `concurrent`).

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/last_cache.h"
#include "tests/support/process.h"

namespace hotrow::last_cache_apply_test {
namespace {

using query::CachedEvent;
using query::LastCache;
using query::LastCacheOptions;

LastCacheOptions Options(bool apply_thread, int depth = 4, size_t bytes = size_t{64} << 20) {
  LastCacheOptions options;
  options.depth = depth;
  options.max_bytes = bytes;
  options.apply_thread = apply_thread;
  return options;
}

// One Write's rows, with the storage their views point into.
struct Batch {
  std::vector<keying::RowKey> keys;
  std::vector<std::string> values;
  void Add(const std::string& id, int64_t ts_ms, int32_t partition, int64_t offset) {
    values.push_back(keying::EncodeRowValue(id, id + "@" + std::to_string(ts_ms)));
    keying::RowKey key;
    key.id_hash = keying::IdHash(id);
    key.ts_ms = ts_ms;
    key.partition = partition;
    key.offset = offset;
    keys.push_back(key);
  }
  void WriteTo(LastCache* cache) const {
    std::vector<store::WrittenRow> rows;
    for (size_t i = 0; i < keys.size(); ++i) rows.push_back({keys[i], values[i]});
    cache->RowsWritten(rows);
  }
};

struct Answer {
  bool exact = false;
  std::vector<CachedEvent> events;
};
Answer LatestOf(LastCache* cache, const std::string& id, int n, int64_t window_start_ms = 0,
                const query::PartitionFilter* filter = nullptr) {
  Answer answer;
  answer.exact = cache->Latest(id, keying::IdHash(id), n, window_start_ms, filter, &answer.events);
  return answer;
}

// Every id's answers for every n, from both caches, equal.
void ExpectSameAnswers(LastCache* queued, LastCache* direct, int ids, int depth,
                       int64_t window_start_ms = 0, const std::string& prefix = "dev-") {
  for (int i = 0; i < ids; ++i) {
    const std::string id = prefix + std::to_string(i);
    for (int n = 1; n <= depth; ++n) {
      const Answer a = LatestOf(queued, id, n, window_start_ms);
      const Answer b = LatestOf(direct, id, n, window_start_ms);
      ASSERT_EQ(a.exact, b.exact) << id << " n=" << n;
      ASSERT_EQ(a.events.size(), b.events.size()) << id << " n=" << n;
      for (size_t k = 0; k < a.events.size(); ++k) {
        EXPECT_EQ(a.events[k].ts_ms, b.events[k].ts_ms) << id << " n=" << n;
        EXPECT_EQ(a.events[k].partition, b.events[k].partition) << id << " n=" << n;
        EXPECT_EQ(a.events[k].offset, b.events[k].offset) << id << " n=" << n;
        EXPECT_EQ(a.events[k].payload, b.events[k].payload) << id << " n=" << n;
      }
    }
  }
}

// Random Writes of `ids` ids over `partitions` partitions, late rows and ties among them.
std::vector<Batch> RandomBatches(int batches, int rows_per_batch, int ids, int partitions,
                                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Batch> out(static_cast<size_t>(batches));
  int64_t offset = 0;
  for (int b = 0; b < batches; ++b) {
    for (int r = 0; r < rows_per_batch; ++r) {
      const int64_t ts = 1000 + b * 100 + static_cast<int64_t>(rng() % 300);  // late and tied
      out[static_cast<size_t>(b)].Add("dev-" + std::to_string(rng() % ids), ts,
                                      static_cast<int32_t>(rng() % partitions), offset++);
    }
  }
  return out;
}

// With the cache's thread stopped, nothing queued reaches the shards but through the reads: every
// read must still answer as the cache that adds rows inside Write does.
TEST(LastCacheApplyTest, AReadSeesEveryQueuedWriteWhileTheThreadIsStopped) {
  LastCache queued(Options(true));
  LastCache direct(Options(false));
  queued.SetKnownFrom(0);
  direct.SetKnownFrom(0);
  queued.PauseApplyForTest(true);
  const std::vector<Batch> batches = RandomBatches(20, 50, 30, 3, 7);
  for (size_t b = 0; b < batches.size(); ++b) {
    batches[b].WriteTo(&queued);
    batches[b].WriteTo(&direct);
    if (b % 5 == 4) {
      ASSERT_NO_FATAL_FAILURE(ExpectSameAnswers(&queued, &direct, 30, 4));
    }
  }
  EXPECT_GT(queued.Stats().applied_by_readers, 0u);
  EXPECT_EQ(queued.Stats().applied_by_thread, 0u);
  EXPECT_EQ(queued.Stats().ids, direct.Stats().ids);
  queued.PauseApplyForTest(false);
  queued.WaitForApplied();
  for (const Batch& b : RandomBatches(10, 50, 30, 3, 8)) {
    b.WriteTo(&queued);
    b.WriteTo(&direct);
  }
  ASSERT_NO_FATAL_FAILURE(ExpectSameAnswers(&queued, &direct, 30, 4));
}

// A bucket drop and a ForgetPartitions apply to the rows queued before them, as they do to rows
// added inside Write: with the thread stopped, a drop that skipped the queued rows would show
// dropped rows once they were added, and a forget would keep a revoked partition's rows.
TEST(LastCacheApplyTest, DropsAndForgottenPartitionsApplyToRowsQueuedBeforeThem) {
  LastCache queued(Options(true));
  LastCache direct(Options(false));
  queued.SetKnownFrom(0);
  direct.SetKnownFrom(0);
  queued.PauseApplyForTest(true);
  std::vector<Batch> batches = RandomBatches(30, 40, 20, 4, 11);
  // Ids written only before the drop, all of their rows older than it: gone with it.
  for (int b = 0; b <= 12; ++b) {
    for (int k = 0; k < 5; ++k) {
      batches[static_cast<size_t>(b)].Add("old-" + std::to_string(k), 1000 + b, k % 4, 100000 + b);
    }
  }
  // Ids written only on the partition forgotten, before it is: gone with it.
  for (int b = 13; b <= 20; ++b) {
    for (int k = 0; k < 5; ++k) {
      batches[static_cast<size_t>(b)].Add("gone-" + std::to_string(k), 2000 + b, 2, 200000 + b);
    }
  }
  const query::PartitionFilter revoked = [](uint16_t, int32_t partition) { return partition == 2; };
  for (size_t b = 0; b < batches.size(); ++b) {
    batches[b].WriteTo(&queued);
    batches[b].WriteTo(&direct);
    if (b == 12) {
      queued.BucketsDropped(1900);
      direct.BucketsDropped(1900);
    }
    if (b == 20) {
      queued.ForgetPartitions(revoked);
      direct.ForgetPartitions(revoked);
    }
  }
  // Read with no window, so that a dropped row the cache kept would be returned.
  ASSERT_NO_FATAL_FAILURE(ExpectSameAnswers(&queued, &direct, 20, 4, 0));
  ASSERT_NO_FATAL_FAILURE(ExpectSameAnswers(&queued, &direct, 5, 4, 0, "old-"));
  ASSERT_NO_FATAL_FAILURE(ExpectSameAnswers(&queued, &direct, 5, 4, 0, "gone-"));
  EXPECT_EQ(queued.Stats().ids, direct.Stats().ids);
  EXPECT_EQ(queued.Stats().applied_by_thread, 0u);
}

// The walk of every id, and Complete, see the ids of queued Writes.
TEST(LastCacheApplyTest, TheWalkOfEveryIdSeesQueuedWrites) {
  LastCache queued(Options(true));
  LastCache direct(Options(false));
  queued.SetKnownFrom(0);
  direct.SetKnownFrom(0);
  queued.PauseApplyForTest(true);
  for (const Batch& b : RandomBatches(8, 50, 40, 2, 13)) {
    b.WriteTo(&queued);
    b.WriteTo(&direct);
  }
  // The walk first: Complete would add the queued Writes before it.
  auto a = queued.NewestAfter("", "", 1000, 0, nullptr, nullptr);
  ASSERT_TRUE(queued.Complete(0));
  auto b = direct.NewestAfter("", "", 1000, 0, nullptr, nullptr);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(a->size(), b->size());
  EXPECT_EQ(a->size(), 40u);
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].id, (*b)[i].id);
    ASSERT_EQ((*a)[i].newest.has_value(), (*b)[i].newest.has_value());
    if ((*a)[i].newest) {
      EXPECT_EQ((*a)[i].newest->offset, (*b)[i].newest->offset);
    }
  }
}

// A Write waits while max_queued_rows are queued: with the thread stopped, the queue never holds
// more than the bound, and every row is seen once the thread runs again.
TEST(LastCacheApplyTest, TheQueueIsBounded) {
  LastCacheOptions options = Options(true);
  options.max_queued_rows = 100;
  LastCache queued(options);
  LastCache direct(Options(false));
  queued.SetKnownFrom(0);
  direct.SetKnownFrom(0);
  queued.PauseApplyForTest(true);
  const std::vector<Batch> batches = RandomBatches(6, 40, 10, 1, 17);
  std::atomic<size_t> written{0};
  std::thread writer([&] {
    for (const Batch& b : batches) {
      b.WriteTo(&queued);
      written.fetch_add(1);
    }
  });
  // Two Writes (80 rows) fit; the third waits for the thread.
  ASSERT_TRUE(hotrow::testing::WaitFor([&] { return queued.Stats().queued_rows == 80; }));
  EXPECT_LE(written.load(), 2u);
  queued.PauseApplyForTest(false);
  writer.join();
  queued.WaitForApplied();
  EXPECT_EQ(queued.Stats().queued_rows, 0u);
  for (const Batch& b : batches) b.WriteTo(&direct);
  ASSERT_NO_FATAL_FAILURE(ExpectSameAnswers(&queued, &direct, 10, 4));
}

// Writers on several threads and readers racing them, the thread paused and resumed meanwhile: a
// read that starts after a Write returned sees its row, and at the end every answer is the direct
// cache's (each id is written by one writer, in order).
TEST(LastCacheApplyTest, ReadersRacingWritersSeeEveryReturnedWrite) {
  constexpr int kWriters = 3;
  constexpr int kWrites = 400;
  LastCache queued(Options(true, 4));
  queued.SetKnownFrom(0);
  std::vector<std::atomic<int64_t>> returned(kWriters);
  for (auto& r : returned) r.store(-1);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::atomic<int64_t> checks{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      while (!stop.load()) {
        const int w = static_cast<int>(checks.load() + r) % kWriters;
        const int64_t ts = returned[static_cast<size_t>(w)].load();
        if (ts < 0) continue;
        const Answer got = LatestOf(&queued, "writer-" + std::to_string(w), 1);
        if (!got.exact || got.events.empty() || got.events.front().ts_ms < ts) wrong.fetch_add(1);
        checks.fetch_add(1);
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i) {
        Batch b;
        const int64_t ts = 1000 + i;
        b.Add("writer-" + std::to_string(w), ts, w, i);
        for (int k = 0; k < 20; ++k) b.Add("other-" + std::to_string((i * 7 + k) % 50), ts, w, i);
        b.WriteTo(&queued);
        returned[static_cast<size_t>(w)].store(ts);
        if (w == 0 && i % 50 == 0) queued.PauseApplyForTest(i % 100 == 0);
      }
    });
  }
  for (std::thread& t : writers) t.join();
  queued.PauseApplyForTest(false);
  // Let the readers check after the last Writes returned.
  const int64_t seen = checks.load();
  ASSERT_TRUE(hotrow::testing::WaitFor([&] { return checks.load() > seen + 10; }));
  stop.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  for (int w = 0; w < kWriters; ++w) {
    const Answer got = LatestOf(&queued, "writer-" + std::to_string(w), 4);
    ASSERT_TRUE(got.exact);
    ASSERT_EQ(got.events.size(), 4u);
    EXPECT_EQ(got.events.front().ts_ms, 1000 + kWrites - 1);
  }
}

}  // namespace
}  // namespace hotrow::last_cache_apply_test
