// The last-N cache (query/last_cache.h) through the query engine, against a real RocksDB store:
// write-through after the store's write, the rules that make a hit exact (depth, floors, the
// window, the partition filter), eviction under its byte cap, bucket drops, forgotten
// partitions, and the rebuild after a restart. Each test compares the cached answer with the same
// query read from the store (an engine with the cache off on the same store).

#include "query/last_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/last_cache_rebuild.h"
#include "tests/query/query_engine_test_base.h"
#include "tests/support/process.h"

namespace hotrow::query_engine_test {
namespace {

class LastCacheTest : public QueryEngineTest {
 protected:
  // An engine with the cache on; waits for its rebuild.
  std::unique_ptr<QueryEngine> CachedEngine(int depth = 4, size_t bytes = size_t{8} << 20,
                                            std::function<query::PartitionFilter()> filter = {},
                                            int threads = 2) {
    QueryOptions q;
    q.threads = threads;
    q.last_cache = depth;
    q.last_cache_bytes = bytes;
    filter_ = std::move(filter);
    auto engine = std::make_unique<QueryEngine>(store_.get(), q);
    engine->WaitForCacheRebuild();
    return engine;
  }
  std::unique_ptr<QueryEngine> StoreEngine(std::function<query::PartitionFilter()> filter = {}) {
    QueryOptions q;
    q.threads = 2;
    q.last_cache = 0;
    filter_ = std::move(filter);
    return std::make_unique<QueryEngine>(store_.get(), q);
  }
  // The filter one query reads through (the one CachedEngine or StoreEngine was made with), made
  // now; null: every row.
  std::optional<query::PartitionFilter> Filter() const {
    if (!filter_) return std::nullopt;
    return filter_();
  }
  static const query::PartitionFilter* Ptr(const std::optional<query::PartitionFilter>& f) {
    return f ? &*f : nullptr;
  }
  std::vector<Event> Get(QueryEngine* engine, const std::string& id, int n) const {
    const std::optional<query::PartitionFilter> filter = Filter();
    Result<std::vector<Event>> got = engine->Latest(id, n, Ptr(filter));
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.ok() ? *got : std::vector<Event>{};
  }
  // Latest(id, n) of `cached` equals the store's, and says whether it was a hit.
  bool ExpectSame(QueryEngine* cached, QueryEngine* store, const std::string& id, int n) {
    const uint64_t hits = cached->Cache().cache.hits;
    const std::vector<Event> got = Get(cached, id, n);
    const bool hit = cached->Cache().cache.hits > hits;
    const std::vector<Event> want = Get(store, id, n);
    EXPECT_EQ(got, want) << id << " n=" << n << (hit ? " (hit)" : " (miss)") << "\n"
                         << testing::DiffEvents(want, got);
    return hit;
  }

  std::function<query::PartitionFilter()> filter_;  // the engines' queries' (empty: none)
};

TEST_F(LastCacheTest, AWriteIsAnsweredFromTheCacheOnceItReturnedWithNoStoreRead) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto cached = CachedEngine(4);
  auto store = StoreEngine();
  std::vector<TestEvent> events;
  for (int i = 0; i < 10; ++i) events.push_back(Ev("dev", kT0 + 40'000 + i * 100, "t", i % 2));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  const uint64_t seeks = cached->Work().seeks;
  for (int n = 1; n <= 4; ++n) EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "dev", n));
  EXPECT_EQ(cached->Work().seeks, seeks) << "a hit reads nothing from the store";
  // Above the depth: the store, even for an id with fewer events than the depth.
  ASSERT_NO_FATAL_FAILURE(Write({Ev("few", kT0 + 40'000)}));
  EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "few", 4));
  EXPECT_EQ(cached->Work().seeks, seeks);
  EXPECT_FALSE(ExpectSame(cached.get(), store.get(), "few", 5));
  EXPECT_GT(cached->Work().seeks, seeks);
  EXPECT_FALSE(ExpectSame(cached.get(), store.get(), "dev", 5));
}

// A Write that fails writes nothing, and the cache shows nothing of it either.
TEST_F(LastCacheTest, AFailedWriteNeverShows) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto cached = CachedEngine(4);
  std::vector<TestEvent> good = {Ev("dev", kT0 + 40'000), Ev("dev", kT0 + 40'001)};
  store::WriteBatchInput batch;
  for (const TestEvent& e : good) {
    Result<store::Row> row = testing::MakeRow(store_.get(), e);
    ASSERT_TRUE(row.ok());
    batch.rows.push_back(*row);
  }
  batch.rows.push_back({std::string(5, 'x'), "not a row of this store"});
  batch.next_offsets[{"t", 0}] = 2;
  store::WriteOutcome outcome;
  ASSERT_FALSE(store_->Write(batch, &outcome).ok());
  EXPECT_TRUE(Get(cached.get(), "dev", 4).empty());
  EXPECT_EQ(cached->Cache().cache.ids, 0u);
}

// The cache is written before Write returns: a reader that starts after it returned always sees
// the row, while a writer writes as fast as it can.
TEST_F(LastCacheTest, AQueryStartedAfterAWriteReturnedSeesIt) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto cached = CachedEngine(4);
  std::atomic<int64_t> written_ts{-1};
  std::atomic<bool> stop{false};
  std::atomic<int> checked{0}, wrong{0};
  std::thread reader([&] {
    while (!stop.load()) {
      const int64_t ts = written_ts.load();
      if (ts < 0) continue;
      Result<std::vector<Event>> got = cached->Latest("dev", 1);
      if (!got.ok() || got->empty() || got->front().ts_ms < ts) ++wrong;
      ++checked;
    }
  });
  for (int i = 0; i < 300; ++i) {
    ASSERT_NO_FATAL_FAILURE(Write({Ev("dev", kT0 + 40'000 + i)}));
    written_ts.store(kT0 + 40'000 + i);
    // Every few Writes, let the reader check at least once after this one returned.
    if (i % 10 == 0) {
      const int before = checked.load();
      ASSERT_TRUE(hotrow::testing::WaitFor([&] { return checked.load() > before + 1; }));
    }
  }
  stop.store(true);
  reader.join();
  EXPECT_GT(checked.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(cached->Cache().cache.hits, 0u);
}

// Late events, ties within a millisecond, several partitions: the cache keeps the newest `depth`
// and its floor says what it dropped; every answer equals the store's.
TEST_F(LastCacheTest, LateEventsAndTiesAtTheDepthStayExact) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto cached = CachedEngine(3);
  auto store = StoreEngine();
  ASSERT_NO_FATAL_FAILURE(Write({Ev("d", kT0 + 45'000, "t", 0), Ev("d", kT0 + 45'000, "t", 1),
                                 Ev("d", kT0 + 45'000, "u", 0), Ev("d", kT0 + 45'000, "t", 2)}));
  for (int n = 1; n <= 3; ++n) ExpectSame(cached.get(), store.get(), "d", n);
  // Late: older than everything kept; then one in between.
  ASSERT_NO_FATAL_FAILURE(Write({Ev("d", kT0 + 30'000)}));
  ASSERT_NO_FATAL_FAILURE(Write({Ev("d", kT0 + 46'000), Ev("d", kT0 + 44'000)}));
  for (int n = 1; n <= 3; ++n) ExpectSame(cached.get(), store.get(), "d", n);
  EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "d", 1));
}

// An id with fewer events than the depth is answered whole from the cache (its floor is below
// the window); an id the cache holds nothing of has no event, and that costs no read either.
TEST_F(LastCacheTest, FewEventsAndUnknownIdsAreAnsweredWhole) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto cached = CachedEngine(8);
  auto store = StoreEngine();
  ASSERT_NO_FATAL_FAILURE(Write({Ev("few", kT0 + 40'000), Ev("few", kT0 + 41'000)}));
  const uint64_t seeks = cached->Work().seeks;
  EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "few", 8));
  EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "never-written", 8));
  EXPECT_EQ(cached->Work().seeks, seeks);
}

// Nothing older than the window, before or after its bucket is dropped; a drop frees the rows.
TEST_F(LastCacheTest, TheWindowMovesAndDroppedBucketsLeaveTheCache) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto cached = CachedEngine(4);
  auto store = StoreEngine();
  std::vector<TestEvent> events;
  for (int i = 0; i < 6; ++i) events.push_back(Ev("d", kT0 + 5'000 + i * 10'000));
  events.push_back(Ev("gone", kT0 + 5'000));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  for (int step = 0; step < 5; ++step) {
    for (int n = 1; n <= 4; ++n) ExpectSame(cached.get(), store.get(), "d", n);
    ExpectSame(cached.get(), store.get(), "gone", 1);
    clock_.Advance(10'000);
    if (step % 2 == 1) {
      ASSERT_TRUE(store_->DropExpiredBuckets().ok());
    }
  }
  ASSERT_TRUE(store_->DropExpiredBuckets().ok());
  // "gone" had one event, in a dropped bucket: its entry went with it.
  EXPECT_EQ(cached->Cache().cache.ids, 1u);
  EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "gone", 1));
}

// A cap far below what the ids need: the cache stays under it by evicting the least recently
// written ids, and an evicted id is read from the store, exactly.
TEST_F(LastCacheTest, TheByteCapHoldsAndEvictedIdsAreReadFromTheStore) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  const size_t cap = 64 << 10;
  auto cached = CachedEngine(4, cap);
  auto store = StoreEngine();
  std::vector<TestEvent> events;
  // Id after id, each with its 4 events: the ids written last are the ones kept.
  for (int i = 0; i < 4000; ++i) {
    events.push_back(Ev("dev-" + std::to_string(i / 4), kT0 + 30'000 + i, "t", i % 3));
    if (events.size() == 500) {
      ASSERT_NO_FATAL_FAILURE(Write(events));
      events.clear();
      EXPECT_LE(cached->Cache().cache.bytes, cap);
    }
  }
  const query::LastCacheStats stats = cached->Cache().cache;
  EXPECT_LE(stats.bytes, cap);
  EXPECT_GT(stats.evicted, 0u);
  EXPECT_LT(stats.ids, 1000u);
  int hits = 0;
  for (int i = 0; i < 1000; i += 7) {
    hits += ExpectSame(cached.get(), store.get(), "dev-" + std::to_string(i), 2);
  }
  EXPECT_GT(hits, 0);
  EXPECT_LT(hits, 1000 / 7);
  // The most recently written ids are held; the first ones were evicted.
  EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "dev-999", 4));
  EXPECT_FALSE(ExpectSame(cached.get(), store.get(), "dev-0", 1));
}

// The bytes the cache counts follow what it holds as events come and go: an entry that took new
// events in its oldest's slots and lost old ones to a drop counts what an entry given only the
// events it ends with counts. (An entry's slots and payload buffers are reused, so its count is
// kept up as it changes rather than recomputed.)
TEST(LastCacheBytesTest, TheCountFollowsWhatAnEntryHolds) {
  const std::string payload(100, 'x');  // past std::string's inline buffer: a heap of its own
  auto rows_of = [&](const std::string& id, int64_t from_ms, int count,
                     std::vector<std::string>* values) {
    std::vector<store::WrittenRow> rows;
    values->clear();
    for (int i = 0; i < count; ++i) values->push_back(keying::EncodeRowValue(id, payload));
    for (int i = 0; i < count; ++i) {
      keying::RowKey key;
      key.id_hash = keying::IdHash(id);
      key.ts_ms = from_ms + i * 1000;
      key.offset = key.ts_ms;
      rows.push_back({key, (*values)[static_cast<size_t>(i)]});
    }
    return rows;
  };
  std::vector<std::string> values;
  query::LastCache churned({8, size_t{64} << 20});
  churned.SetKnownFrom(0);  // as if a rebuild had read an empty store
  churned.RowsWritten(rows_of("d", 1'000, 8, &values));
  const uint64_t full = churned.Stats().bytes;
  churned.BucketsDropped(4'500);  // the 4 oldest go
  EXPECT_GE(full - churned.Stats().bytes, 4 * payload.size());
  churned.RowsWritten(rows_of("d", 9'000, 12, &values));  // 4 into free slots, 8 over the oldest
  ASSERT_EQ(churned.Stats().ids, 1u);

  query::LastCache fresh({8, size_t{64} << 20});
  fresh.SetKnownFrom(0);
  fresh.RowsWritten(rows_of("d", 13'000, 8, &values));  // the 8 the churned entry ends with
  EXPECT_EQ(churned.Stats().bytes, fresh.Stats().bytes);
  std::vector<query::CachedEvent> a, b;
  ASSERT_TRUE(churned.Latest("d", keying::IdHash("d"), 8, 0, nullptr, &a));
  ASSERT_TRUE(fresh.Latest("d", keying::IdHash("d"), 8, 0, nullptr, &b));
  ASSERT_EQ(a.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].offset, b[i].offset);
}

// The partition filter (cluster mode) applies to cached rows as to stored ones; ForgetPartitions
// frees a partition's rows and raises the floors, and answers stay exact.
TEST_F(LastCacheTest, ThePartitionFilterAndForgottenPartitionsStayExact) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto serving = std::make_shared<std::atomic<int>>(3);  // partitions 0..serving-1
  auto filter = [serving] {
    const int n = serving->load();
    return query::PartitionFilter([n](uint16_t, int32_t p) { return p < n; });
  };
  auto cached = CachedEngine(4, size_t{8} << 20, filter);
  auto store = StoreEngine(filter);
  std::vector<TestEvent> events;
  for (int i = 0; i < 30; ++i) events.push_back(Ev("d", kT0 + 40'000 + i * 7, "t", i % 3));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  for (int n = 1; n <= 4; ++n) EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "d", n));
  serving->store(2);
  for (int n = 1; n <= 4; ++n) ExpectSame(cached.get(), store.get(), "d", n);
  cached->ForgetPartitions([](uint16_t, int32_t p) { return p == 2; });
  for (int n = 1; n <= 4; ++n) ExpectSame(cached.get(), store.get(), "d", n);
  // Partition 2 comes back (its rows never left the store): the floor keeps the answer exact.
  serving->store(3);
  for (int n = 1; n <= 4; ++n) ExpectSame(cached.get(), store.get(), "d", n);
  ASSERT_NO_FATAL_FAILURE(Write({Ev("d", kT0 + 50'000, "t", 0), Ev("d", kT0 + 50'001, "t", 1),
                                 Ev("d", kT0 + 50'002, "t", 2), Ev("d", kT0 + 50'003, "t", 0)}));
  for (int n = 1; n <= 4; ++n) EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "d", n));
}

// An id the cache cannot tell in the walk of every id (its entry full of rows the filter rejects,
// its floor above the window's start) is read from the store and counted as one miss, not asked
// of the cache a second time.
TEST_F(LastCacheTest, TheWalkOfEveryIdCountsAnIdItCannotTellOnce) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto filter = [] { return query::PartitionFilter([](uint16_t, int32_t p) { return p == 0; }); };
  std::vector<TestEvent> events;
  for (int i = 0; i < 4; ++i) events.push_back(Ev("told", kT0 + 40'000 + i, "t", 0));
  for (int i = 0; i < 4; ++i) events.push_back(Ev("untold", kT0 + 40'000 + i, "t", 0));
  for (int i = 0; i < 4; ++i) events.push_back(Ev("untold", kT0 + 45'000 + i, "t", 1));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  auto cached = CachedEngine(4, size_t{8} << 20, filter);
  auto store = StoreEngine(filter);
  const query::LastCacheStats before = cached->Cache().cache;
  const std::optional<query::PartitionFilter> f = Filter();
  Result<query::LatestAllPage> got = cached->LatestAll("", "", 10, Ptr(f));
  Result<query::LatestAllPage> want = store->LatestAll("", "", 10, Ptr(f));
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_TRUE(got->from_cache);
  EXPECT_EQ(got->events, want->events);
  ASSERT_EQ(got->events.size(), 2u);
  const query::LastCacheStats after = cached->Cache().cache;
  EXPECT_EQ(after.hits - before.hits, 1u);      // "told"
  EXPECT_EQ(after.misses - before.misses, 1u);  // "untold", read from the store
}

// After a restart the cache is rebuilt from the store, newest bucket first: once the rebuild is
// done every id is answered from it; a row both rebuilt and written meanwhile is kept once.
TEST_F(LastCacheTest, ARestartRebuildsTheCacheFromTheStore) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  std::vector<TestEvent> events;
  for (int i = 0; i < 600; ++i) {
    events.push_back(Ev("dev-" + std::to_string(i % 50), kT0 + 1'000 + i * 90, "t", i % 2));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  auto cached = CachedEngine(4);
  auto store = StoreEngine();
  const query::LastCacheStatus status = cached->Cache();
  EXPECT_FALSE(status.rebuild.running);
  EXPECT_TRUE(status.rebuild.whole);
  EXPECT_EQ(status.rebuild.buckets_done, status.rebuild.buckets_total);
  EXPECT_EQ(status.cache.ids, 50u);
  const uint64_t seeks = cached->Work().seeks;
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "dev-" + std::to_string(i), 4));
  }
  EXPECT_EQ(cached->Work().seeks, seeks);
  // Rows met twice (rebuilt, then written again by a replay that the store refuses as duplicates)
  // and new rows.
  store::WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store_.get(), {events.back()}, &outcome).ok());
  EXPECT_EQ(outcome.duplicate, 1u);
  ASSERT_NO_FATAL_FAILURE(Write({Ev("dev-7", kT0 + 59'000)}));
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(ExpectSame(cached.get(), store.get(), "dev-" + std::to_string(i), 4));
  }
}

// The rebuild steps over an id's rows in a salt once depth + 1 of them were offered (they are
// older than depth of its rows): with salt_by id every row of an id is in one salt, so a busy id's
// rows are mostly stepped over. Answers stay exact: with ties in time at the depth, under a
// partition filter that leaves fewer than depth rows above the floor, and for an id sharing the
// busy id's hash (rows planted as an XXH3 collision would leave them), whose rows sit among the
// stepped-over ones.
TEST_F(LastCacheTest, TheRebuildStepsOverRowsPastAnIdsDepthAndStaysExact) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kId, 4));
  std::vector<TestEvent> events;
  for (int i = 0; i < 60; ++i) {
    // Pairs tied in time, over three partitions, in one bucket: no older bucket raises its floor.
    events.push_back(Ev("busy", kT0 + 40'000 + (i / 2) * 150, "t", i % 3));
  }
  for (int i = 0; i < 120; ++i) {
    events.push_back(Ev("dev-" + std::to_string(i % 12), kT0 + 30'000 + i * 150, "t", i % 3));
  }
  events.push_back(Ev("few", kT0 + 44'000, "t", 1));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  // Rows of "other" keyed with busy's hash in busy's salt, among and below busy's rows.
  store::WriteBatchInput planted;
  const uint16_t topic = *store_->TopicNumber("t");
  size_t planted_rows = 0;
  for (int64_t ts : {kT0 + 40'100, kT0 + 42'100, kT0 + 44'300}) {
    TestEvent e = Ev("other", ts, "t", 2);
    keying::RowKey key{
        store_->salter().SaltOfId("busy"), keying::IdHash("busy"), ts, topic, 2, e.offset};
    planted.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue("other", e.payload)});
    planted.next_offsets[TopicPartition{"t", 2}] = e.offset + 1;
    ++planted_rows;
  }
  store::WriteOutcome outcome;
  ASSERT_TRUE(store_->Write(planted, &outcome).ok());
  ASSERT_EQ(outcome.stored, planted_rows);

  auto filter = [] { return query::PartitionFilter([](uint16_t, int32_t p) { return p != 1; }); };
  for (bool filtered : {false, true}) {
    SCOPED_TRACE(filtered ? "partitions 0 and 2" : "every partition");
    auto cached = filtered ? CachedEngine(4, size_t{8} << 20, filter) : CachedEngine(4);
    auto store = filtered ? StoreEngine(filter) : StoreEngine();
    const query::LastCacheStatus status = cached->Cache();
    ASSERT_TRUE(status.rebuild.whole);
    // Of busy's 60 rows, 5 are offered.
    EXPECT_LE(status.rebuild.rows, events.size() + planted_rows - 55);
    std::vector<std::string> ids = {"busy", "few", "nobody"};
    for (int i = 0; i < 12; ++i) ids.push_back("dev-" + std::to_string(i));
    for (const std::string& id : ids) {
      for (int n = 1; n <= 4; ++n) ExpectSame(cached.get(), store.get(), id, n);
    }
  }
  // The id sharing busy's hash, asked of a rebuilt cache under that hash, as a query of it would:
  // every planted row, though they lie among busy's rows past its depth.
  query::LastCache cache(query::LastCacheOptions{4, size_t{8} << 20});
  store_->AddWriteObserver(&cache);
  {
    query::LastCacheRebuild rebuild(store_.get(), &cache);
    rebuild.Wait();
  }
  store_->RemoveWriteObserver(&cache);
  std::vector<query::CachedEvent> got;
  EXPECT_TRUE(
      cache.Latest("other", keying::IdHash("busy"), 4, store_->WindowStartMs(), nullptr, &got));
  std::vector<int64_t> times;
  for (const query::CachedEvent& e : got) times.push_back(e.ts_ms);
  EXPECT_EQ(times, (std::vector<int64_t>{kT0 + 44'300, kT0 + 42'100, kT0 + 40'100}));
}

// While the rebuild has not read a bucket, nothing is answered from the cache: every query reads
// the store, and gets the store's answer.
TEST_F(LastCacheTest, BeforeTheRebuildHasReadABucketEveryQueryReadsTheStore) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  ASSERT_NO_FATAL_FAILURE(Write({Ev("old", kT0 + 40'000)}));
  query::LastCache cache(query::LastCacheOptions{4, size_t{1} << 20});
  store_->AddWriteObserver(&cache);
  ASSERT_NO_FATAL_FAILURE(Write({Ev("new", kT0 + 41'000)}));
  std::vector<query::CachedEvent> out;
  const int64_t window_start = store_->WindowStartMs();
  EXPECT_FALSE(cache.Latest("old", keying::IdHash("old"), 1, window_start, nullptr, &out));
  EXPECT_FALSE(cache.Latest("new", keying::IdHash("new"), 1, window_start, nullptr, &out))
      << "a row written since the cache was attached says nothing of older ones";
  EXPECT_FALSE(cache.Complete(window_start));
  cache.SetKnownFrom(kT0 + 40'000);
  EXPECT_TRUE(cache.Latest("new", keying::IdHash("new"), 1, window_start, nullptr, &out));
  store_->RemoveWriteObserver(&cache);
}

TEST_F(LastCacheTest, LatestManyAndLatestAllFromTheCacheEqualTheStoreRead) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  std::vector<TestEvent> events;
  for (int i = 0; i < 400; ++i) {
    events.push_back(Ev("dev-" + std::to_string(i % 37), kT0 + 20'000 + i * 97, "t", i % 3));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  auto store = StoreEngine();
  // The walk of every id reads the cache's shards on as many threads as the engine has (one,
  // two and four runs merged), each page the same.
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto cached = CachedEngine(4, size_t{8} << 20, {}, threads);
    std::vector<std::string> ids = {"dev-1", "nobody", "dev-36", "dev-1"};
    const std::optional<query::PartitionFilter> f = Filter();
    Result<std::vector<std::vector<Event>>> many = cached->LatestMany(ids, 3, Ptr(f));
    Result<std::vector<std::vector<Event>>> want_many = store->LatestMany(ids, 3, Ptr(f));
    ASSERT_TRUE(many.ok() && want_many.ok());
    EXPECT_EQ(*many, *want_many);
    for (const std::string prefix : {"", "dev-1", "dev-2", "zzz"}) {
      for (int64_t limit : {1, 5, 100}) {
        std::string after;
        while (true) {
          Result<query::LatestAllPage> got = cached->LatestAll(prefix, after, limit, Ptr(f));
          Result<query::LatestAllPage> want = store->LatestAll(prefix, after, limit, Ptr(f));
          ASSERT_TRUE(got.ok() && want.ok());
          EXPECT_TRUE(got->from_cache);
          EXPECT_FALSE(want->from_cache);
          EXPECT_EQ(got->events, want->events) << prefix << " after " << after;
          EXPECT_EQ(got->next, want->next);
          if (!got->next) break;
          after = *got->next;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hotrow::query_engine_test
