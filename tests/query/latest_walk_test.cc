// The latest of every id (QueryEngine::LatestAll) walks the last-N cache's shards one after the
// other. An eviction or a ForgetPartitions that lands in a shard the walk has not read yet must
// neither skip an id nor repeat one: every page, and every page after it, is what an engine that
// reads the store answers. The cache's walk hook (QueryOptions::cache_walk_hook) lands them there:
// it runs on the walking thread before each shard is read. With one query thread the shards are
// read in order on the caller; with two, in two groups at once (the caller and a pool worker).

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/temp_dir.h"

namespace hotrow::latest_walk_test {
namespace {

using query::Event;
using query::QueryEngine;
using query::QueryOptions;
using store::TopicPartition;
using testing::TestEvent;

constexpr int64_t kBucketMs = 1000;
constexpr int64_t kTtlMs = 10 * kBucketMs;
constexpr int64_t kT0 = 1'700'000'000'000;
// Four shards of 256 KiB (LastCache makes shards of 256 KiB or more, in powers of two).
constexpr size_t kCacheBytes = size_t{1} << 20;
constexpr int kDevices = 100;
// Big enough that a few hundred ids fill a shard.
const std::string kPayloadPad(2000, 'x');

class LatestWalkTest : public ::testing::TestWithParam<int> {
 protected:
  // A store, an engine with the cache whose walk runs `hook` before each shard, and one that
  // reads the store, with GetParam() query threads.
  void Open(std::function<void(size_t shard)> hook) {
    cached_.reset();
    reads_store_.reset();
    store_.reset();
    next_offset_.clear();
    dir_ = std::make_unique<testing::TempDir>();
    store::StoreOptions options;
    options.path = dir_->Sub("store");
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    QueryOptions q;
    q.threads = GetParam();
    q.last_cache = 4;
    q.last_cache_bytes = kCacheBytes;
    q.cache_walk_hook = std::move(hook);
    cached_ = std::make_unique<QueryEngine>(store_.get(), q);
    cached_->WaitForCacheRebuild();
    q.last_cache = 0;
    q.cache_walk_hook = nullptr;
    reads_store_ = std::make_unique<QueryEngine>(store_.get(), q);
  }

  TestEvent Ev(const std::string& id, int64_t ts, int32_t partition) {
    TestEvent e;
    e.id = id;
    e.ts_ms = ts;
    e.topic = "t";
    e.partition = partition;
    e.offset = next_offset_[{e.topic, partition}]++;
    e.payload = "{\"o\":" + std::to_string(e.offset) + ",\"pad\":\"" + kPayloadPad + "\"}";
    return e;
  }

  void Write(const std::vector<TestEvent>& events) {
    store::WriteOutcome outcome;
    const Status st = testing::WriteEvents(store_.get(), events, &outcome);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(outcome.stored, events.size());
  }

  // kDevices ids "dev-N", two events each; device N's on partition N % 2.
  void WriteDevices() {
    std::vector<TestEvent> events;
    for (int i = 0; i < kDevices; ++i) {
      for (int k = 0; k < 2; ++k) {
        events.push_back(Ev("dev-" + std::to_string(i), kT0 + 100 * k + i, i % 2));
      }
    }
    ASSERT_NO_FATAL_FAILURE(Write(events));
  }

  // Every page of the latest of every id with `prefix`, `limit` ids a page, concatenated.
  std::vector<Event> AllPages(QueryEngine* engine, const std::string& prefix, int64_t limit) {
    std::vector<Event> all;
    std::string after;
    for (int pages = 0; pages < 1000; ++pages) {
      Result<query::LatestAllPage> page = engine->LatestAll(prefix, after, limit);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      all.insert(all.end(), page->events.begin(), page->events.end());
      if (!page->next) break;
      after = *page->next;
    }
    return all;
  }

  // The walk's answer, paged by `limit`, against the store's: the same ids, once each, with the
  // same newest event.
  void ExpectTheStoresAnswer(int64_t limit) {
    const std::vector<Event> walked = AllPages(cached_.get(), "dev-", limit);
    const std::vector<Event> expected = AllPages(reads_store_.get(), "dev-", 100000);
    ASSERT_EQ(expected.size(), static_cast<size_t>(kDevices));
    std::set<std::string> seen;
    for (const Event& e : walked) EXPECT_TRUE(seen.insert(e.id).second) << "repeated: " << e.id;
    std::set<std::string> skipped;
    for (const Event& e : expected) {
      if (seen.count(e.id) == 0) skipped.insert(e.id);
    }
    EXPECT_TRUE(skipped.empty()) << skipped.size() << " ids skipped, the first "
                                 << *skipped.begin();
    EXPECT_TRUE(walked == expected) << testing::DiffEvents(expected, walked);
  }

  std::unique_ptr<testing::TempDir> dir_;
  ManualClock clock_{kT0 + kTtlMs / 2};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<QueryEngine> cached_;
  std::unique_ptr<QueryEngine> reads_store_;
  std::map<TopicPartition, int64_t> next_offset_;
};

// Ids "other-N" written after the devices evict the least recently written ids of every shard,
// the devices first.
TEST_P(LatestWalkTest, AnEvictionInAShardNotYetWalkedSkipsNoIdOnAnyPage) {
  for (int64_t limit : {1000, 7}) {
    SCOPED_TRACE("page of " + std::to_string(limit));
    std::atomic<bool> fired{false};
    ASSERT_NO_FATAL_FAILURE(Open([&](size_t shard) {
      if (shard != 1 || fired.exchange(true)) return;
      std::vector<TestEvent> others;
      for (int i = 0; i < 600; ++i) {
        others.push_back(Ev("other-" + std::to_string(i), kT0 + 500, 0));
      }
      Write(others);
    }));
    ASSERT_NO_FATAL_FAILURE(WriteDevices());
    ASSERT_EQ(cached_->Cache().cache.evicted, 0u);
    ASSERT_NO_FATAL_FAILURE(ExpectTheStoresAnswer(limit));
    EXPECT_TRUE(fired.load());
    EXPECT_GT(cached_->Cache().cache.evicted, 0u);  // the hook did evict
  }
}

// The cache forgets partition 1 (this instance stopped owning it) while the walk runs; the
// engine's filter (none here) still accepts it, so its devices stay in the answer.
TEST_P(LatestWalkTest, APartitionForgottenMidWalkSkipsNoIdOnAnyPage) {
  for (int64_t limit : {1000, 7}) {
    SCOPED_TRACE("page of " + std::to_string(limit));
    std::atomic<bool> fired{false};
    ASSERT_NO_FATAL_FAILURE(Open([&](size_t shard) {
      if (shard != 1 || fired.exchange(true)) return;
      cached_->ForgetPartitions([](uint16_t, int32_t partition) { return partition == 1; });
    }));
    ASSERT_NO_FATAL_FAILURE(WriteDevices());
    ASSERT_NO_FATAL_FAILURE(ExpectTheStoresAnswer(limit));
    EXPECT_TRUE(fired.load());
  }
}

INSTANTIATE_TEST_SUITE_P(, LatestWalkTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_threads";
                         });

}  // namespace
}  // namespace hotrow::latest_walk_test
