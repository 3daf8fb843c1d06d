// The last-N cache (query/last_cache.h) against the store and a brute-force oracle: after every
// step of a random run of writes (late events, ties, replays, failed writes, many ids), the window
// moving and buckets dropped, partitions moving away and back (the cluster's partition filter and
// ForgetPartitions, as a rebalance makes them) and restarts (the store reopened, the cache rebuilt,
// checked while the rebuild runs and after), every answer of an engine with the cache equals the
// same query on an engine that reads the store, and the oracle's: latest-N for n up to one past the
// cache's depth, the latest of many ids and every page of the latest of every id. Run for every
// salt_by, with a cap that holds every id and with one that evicts.
//
// A second test writes from one thread while others read, and checks that every cached answer is
// the oracle's answer after some number of Writes between the query's start and its end: what a
// query sees is all of a Write or none of it, and never less than what had returned.
//
// Each parameter runs HOTROW_ORACLE_ROUNDS rounds (default 1) with seeds S, S+1, ... where S is
// $HOTROW_TEST_SEED or a fixed default; a failure names the seed and the step.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/sanitizers.h"
#include "common/clock.h"
#include "keying/salter.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/temp_dir.h"

namespace hotrow::last_cache_oracle_test {
namespace {

using keying::SaltBy;
using query::Event;
using query::QueryEngine;
using query::QueryOptions;
using store::TopicPartition;
using testing::Oracle;
using testing::TestEvent;

constexpr int64_t kBucketMs = 1000;
constexpr int64_t kTtlMs = 10 * kBucketMs;
constexpr int64_t kT0 = 1'700'000'000'000;
constexpr uint64_t kDefaultSeed = 20261126;
constexpr int kDepth = 4;
// Under AddressSanitizer every step costs five times as much (an evicting parameter took 122 s in
// CI): half the steps and writes there still bring every kind of step (each run restarts at
// least once: checked below), and the Release run makes them all.
#ifdef HOTROW_ASAN
constexpr int kSteps = 80;
constexpr int kWritesDuringReads = 150;
#else
constexpr int kSteps = 160;
constexpr int kWritesDuringReads = 400;
#endif

struct Param {
  SaltBy salt_by;
  size_t cap_bytes;  // of the cache
};
std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::string(keying::SaltByName(info.param.salt_by)) +
         (info.param.cap_bytes < (size_t{1} << 20) ? "_evicting" : "_roomy");
}

class LastCacheOracleTest : public ::testing::TestWithParam<Param> {
 protected:
  void StartRound(int round) {
    cached_.reset();
    reads_store_.reset();
    store_.reset();
    seed_ = testing::TestSeed(kDefaultSeed) + static_cast<uint64_t>(round);
    rng_.seed(seed_ * 31 + static_cast<uint64_t>(GetParam().salt_by));
    dir_ = std::make_unique<testing::TempDir>();
    clock_.Set(kT0 + kTtlMs);
    oracle_ = Oracle();
    next_offset_.clear();
    batches_.clear();
    serving_ = std::make_shared<std::set<TopicPartition>>();
    for (const char* topic : {"t", "u"}) {
      for (int p = 0; p < 3; ++p) serving_->insert({topic, p});
    }
    ids_.clear();
    for (int i = 0; i < 150; ++i) ids_.push_back("dev-" + std::to_string(i));
    ids_.push_back("dev-1/x");
    ids_.push_back(std::string("nul\0id", 6));
    ids_.push_back(std::string(256, 'z'));
    ASSERT_NO_FATAL_FAILURE(Open());
  }

  void Open() {
    cached_.reset();
    reads_store_.reset();
    store_.reset();
    store::StoreOptions options;
    options.path = dir_->Sub("store");
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
    options.salt_by = GetParam().salt_by;
    options.hot = keying::HotRule{0.05, 4};
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    // Both engines ask the same filter: the partitions "this instance" serves.
    auto serving = serving_;
    store::EventStore* s = store_.get();
    filter_ = [serving, s] {
      auto copy = std::make_shared<std::set<TopicPartition>>(*serving);
      return query::PartitionFilter([copy, s](uint16_t topic, int32_t partition) {
        return copy->count({s->TopicName(topic).value_or("?"), partition}) != 0;
      });
    };
    QueryOptions q;
    q.threads = 2;
    q.chunk_events = 3;
    q.last_cache = 0;
    reads_store_ = std::make_unique<QueryEngine>(store_.get(), q);
    q.last_cache = kDepth;
    q.last_cache_bytes = GetParam().cap_bytes;
    cached_ = std::make_unique<QueryEngine>(store_.get(), q);
  }

  std::string Where(const std::string& step) const {
    return "[seed " + std::to_string(seed_) + ", " + step + "] ";
  }

  // A batch: mostly recent events, some late, some already out of the window, ties, a skew
  // towards the first ids.
  std::vector<TestEvent> NewBatch() {
    std::vector<TestEvent> batch;
    const int size = std::uniform_int_distribution<int>(1, 60)(rng_);
    const int64_t now = clock_.NowMs();
    for (int i = 0; i < size; ++i) {
      TestEvent e;
      const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
      e.id = ids_[static_cast<size_t>(u * u * u * static_cast<double>(ids_.size()))];
      const int kind = std::uniform_int_distribution<int>(0, 99)(rng_);
      if (kind < 70) {
        e.ts_ms = now - std::uniform_int_distribution<int64_t>(0, 400)(rng_);
      } else if (kind < 95) {
        e.ts_ms = now - std::uniform_int_distribution<int64_t>(0, kTtlMs - 1)(rng_);
      } else {
        e.ts_ms = now - kTtlMs - std::uniform_int_distribution<int64_t>(1, 3000)(rng_);
      }
      if (kind % 7 == 0) e.ts_ms = now - 100;  // ties
      e.topic = std::uniform_int_distribution<int>(0, 3)(rng_) == 0 ? "u" : "t";
      e.partition = std::uniform_int_distribution<int>(0, 2)(rng_);
      e.payload = "{\"v\":" + std::to_string(rng_() % 1000) + "}";
      batch.push_back(e);
    }
    testing::AssignOffsets(&batch, &next_offset_);
    return batch;
  }

  void WriteStep() {
    const int kind = std::uniform_int_distribution<int>(0, 99)(rng_);
    if (kind < 8 && !batches_.empty()) {
      // A replay: every row is a duplicate; nothing changes.
      const auto& old = batches_[rng_() % batches_.size()];
      store::WriteOutcome outcome;
      ASSERT_TRUE(testing::WriteEvents(store_.get(), old, &outcome).ok());
      ASSERT_EQ(outcome.stored, 0u) << Where("replay");
      return;
    }
    std::vector<TestEvent> batch = NewBatch();
    if (kind < 11) {
      // A Write that fails writes nothing, and the cache shows none of it.
      store::WriteBatchInput input;
      for (const TestEvent& e : batch) {
        Result<store::Row> row = testing::MakeRow(store_.get(), e);
        ASSERT_TRUE(row.ok());
        input.rows.push_back(*row);
      }
      input.rows.push_back({"not a key", "x"});
      for (const TestEvent& e : batch) {
        int64_t& next = input.next_offsets[{e.topic, e.partition}];
        next = std::max(next, e.offset + 1);
      }
      store::WriteOutcome outcome;
      ASSERT_FALSE(store_->Write(input, &outcome).ok());
      for (const TestEvent& e : batch) --next_offset_[{e.topic, e.partition}];
      return;
    }
    const int64_t window_start = store_->WindowStartMs();
    store::WriteOutcome outcome;
    ASSERT_TRUE(testing::WriteEvents(store_.get(), batch, &outcome).ok());
    size_t stored = 0;
    for (const TestEvent& e : batch) {
      if (e.ts_ms < window_start) continue;
      ++stored;
      Result<uint16_t> number = store_->TopicNumber(e.topic);
      ASSERT_TRUE(number.ok());
      oracle_.Add(Event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload}, *number);
    }
    ASSERT_EQ(outcome.stored, stored) << Where("write");
    batches_.push_back(std::move(batch));
  }

  // Partitions move away and come back; what moved away is forgotten by the cache, as the
  // service's housekeeping does in cluster mode.
  void RebalanceStep() {
    std::vector<TopicPartition> all;
    for (const char* topic : {"t", "u"}) {
      for (int p = 0; p < 3; ++p) all.push_back({topic, p});
    }
    const TopicPartition tp = all[rng_() % all.size()];
    if (serving_->count(tp) != 0 && serving_->size() > 1) {
      serving_->erase(tp);
      if (rng_() % 2 == 0) {
        store::EventStore* s = store_.get();
        cached_->ForgetPartitions([s, tp](uint16_t topic, int32_t partition) {
          return partition == tp.partition && s->TopicName(topic) == tp.topic;
        });
      }
    } else {
      serving_->insert(tp);
    }
  }

  // The oracle's n newest of `id`, of the serving partitions.
  std::vector<Event> Want(const std::string& id, int n) const {
    std::vector<Event> all = oracle_.Latest(id, 1 << 20, store_->WindowStartMs());
    std::vector<Event> out;
    for (Event& e : all) {
      if (static_cast<int>(out.size()) == n) break;
      if (serving_->count({e.topic, e.partition}) != 0) out.push_back(std::move(e));
    }
    return out;
  }

  void CheckAll(const std::string& step) {
    std::vector<std::string> ids = ids_;
    ids.push_back("never-written");
    for (const std::string& id : ids) {
      for (int n : {1, 2, kDepth, kDepth + 1}) {
        const query::PartitionFilter filter = filter_();  // one per query, as a handler's
        Result<std::vector<Event>> got = cached_->Latest(id, n, &filter);
        Result<std::vector<Event>> from_store = reads_store_->Latest(id, n, &filter);
        ASSERT_TRUE(got.ok() && from_store.ok()) << Where(step);
        ++queries_;
        const std::vector<Event> want = Want(id, n);
        ASSERT_EQ(*from_store, want)
            << Where(step) << "store path, id " << testing::EscapeBytes(id) << " n=" << n << "\n"
            << testing::DiffEvents(want, *from_store);
        ASSERT_EQ(*got, want) << Where(step) << "cached, id " << testing::EscapeBytes(id)
                              << " n=" << n << "\n"
                              << testing::DiffEvents(want, *got);
      }
    }
    std::vector<std::string> some(ids.begin(), ids.begin() + 20);
    some.push_back("never-written");
    const query::PartitionFilter filter = filter_();
    Result<std::vector<std::vector<Event>>> many = cached_->LatestMany(some, 2, &filter);
    ASSERT_TRUE(many.ok());
    for (size_t i = 0; i < some.size(); ++i) ASSERT_EQ((*many)[i], Want(some[i], 2)) << Where(step);
    // Every page of the latest of every id, and of one prefix.
    for (const std::string prefix : {"", "dev-1"}) {
      std::vector<Event> want;
      std::vector<std::string> sorted = ids;
      std::sort(sorted.begin(), sorted.end());
      for (const std::string& id : sorted) {
        if (!id.starts_with(prefix)) continue;
        std::vector<Event> newest = Want(id, 1);
        if (!newest.empty()) want.push_back(newest.front());
      }
      for (QueryEngine* engine : {cached_.get(), reads_store_.get()}) {
        std::vector<Event> got;
        std::string after;
        for (int page = 0; page < 100; ++page) {
          Result<query::LatestAllPage> p = engine->LatestAll(prefix, after, 17, &filter);
          ASSERT_TRUE(p.ok()) << Where(step) << p.status().ToString();
          if (engine == cached_.get() && p->from_cache) ++latest_all_from_cache_;
          got.insert(got.end(), p->events.begin(), p->events.end());
          if (!p->next) break;
          after = *p->next;
        }
        ASSERT_EQ(got, want) << Where(step) << (engine == cached_.get() ? "cached" : "store")
                             << " latest of every id, prefix \"" << prefix << "\"\n"
                             << testing::DiffEvents(want, got);
      }
    }
  }

  ManualClock clock_{kT0 + kTtlMs};
  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<QueryEngine> cached_;
  std::unique_ptr<QueryEngine> reads_store_;
  std::shared_ptr<std::set<TopicPartition>> serving_;
  // The filter of one query of both engines: the partitions in serving_ when it is made.
  std::function<query::PartitionFilter()> filter_;
  Oracle oracle_;
  std::vector<std::string> ids_;
  std::map<TopicPartition, int64_t> next_offset_;
  std::vector<std::vector<TestEvent>> batches_;
  std::mt19937_64 rng_;
  uint64_t seed_ = 0;
  uint64_t queries_ = 0;
  uint64_t latest_all_from_cache_ = 0;
};

int Rounds() {
  const char* env = std::getenv("HOTROW_ORACLE_ROUNDS");
  return env != nullptr ? std::max(1, std::atoi(env)) : 1;
}

TEST_P(LastCacheOracleTest, EveryCachedAnswerIsTheStoresUnderWritesExpiryRebalancesAndRestarts) {
  uint64_t hits = 0, misses = 0, evicted = 0, restarts = 0;
  for (int round = 0; round < Rounds(); ++round) {
    ASSERT_NO_FATAL_FAILURE(StartRound(round));
    for (int step = 0; step < kSteps; ++step) {
      const int kind = std::uniform_int_distribution<int>(0, 99)(rng_);
      std::string name;
      if (kind < 70) {
        name = "write";
        ASSERT_NO_FATAL_FAILURE(WriteStep());
      } else if (kind < 85) {
        name = "expiry";
        clock_.Advance(std::uniform_int_distribution<int64_t>(0, 1500)(rng_));
        ASSERT_TRUE(store_->DropExpiredBuckets().ok());
      } else if (kind < 96) {
        name = "rebalance";
        RebalanceStep();
      } else {
        name = "restart";
        const query::LastCacheStats before = cached_->Cache().cache;
        hits += before.hits;
        misses += before.misses;
        evicted += before.evicted;
        ++restarts;
        ASSERT_NO_FATAL_FAILURE(Open());
        // While the rebuild runs, and once it is done.
        ASSERT_NO_FATAL_FAILURE(CheckAll("restart, rebuilding, step " + std::to_string(step)));
        cached_->WaitForCacheRebuild();
        name = "restart, rebuilt";
      }
      ASSERT_NO_FATAL_FAILURE(CheckAll(name + ", step " + std::to_string(step)));
    }
    const query::LastCacheStats stats = cached_->Cache().cache;
    hits += stats.hits;
    misses += stats.misses;
    evicted += stats.evicted;
    EXPECT_LE(stats.bytes, GetParam().cap_bytes);
  }
  // The comparisons were of cached answers, not of store reads behind a cache that never hit.
  std::printf(
      "hits %llu, misses %llu, evicted %llu, restarts %llu, latest-of-every-id pages from "
      "the cache %llu\n",
      static_cast<unsigned long long>(hits), static_cast<unsigned long long>(misses),
      static_cast<unsigned long long>(evicted), static_cast<unsigned long long>(restarts),
      static_cast<unsigned long long>(latest_all_from_cache_));
  EXPECT_GT(hits, misses / 4);
  EXPECT_GT(hits, 1000u);
  EXPECT_GE(restarts, 1u) << "no restart came up: the rebuild went unchecked";
  if (GetParam().cap_bytes < (size_t{1} << 20)) {
    EXPECT_GT(evicted, 0u);
  } else {
    EXPECT_GT(latest_all_from_cache_, 0u);
  }
}

// While one thread writes, readers ask. What "exact" means while Writes run:
// - the cache's answer (a hit) is the oracle's answer after k Writes for some k between the Writes
//   that had returned when the query started and those that had started when it ended: all of a
//   Write or none of it, and never less than what had returned;
// - any answer of the engine (a hit, or a read of the store, which reads each bucket and salt at
//   its own moment) holds every event of the Writes that had returned when it started that belongs
//   in it, and nothing of a Write that had not started when it ended.
TEST_P(LastCacheOracleTest, AnAnswerDuringWritesSeesEveryWriteThatReturnedAndHitsSeeWholeWrites) {
  ASSERT_NO_FATAL_FAILURE(StartRound(0));
  cached_->WaitForCacheRebuild();
  // The cache alone, beside the engine's, so that a reader knows a hit from a store read.
  query::LastCache cache(query::LastCacheOptions{kDepth, GetParam().cap_bytes});
  store_->AddWriteObserver(&cache);
  cache.SetKnownFrom(store_->WindowStartMs());  // the store is empty
  // Topics numbered against their names' order, so that ties in time are reordered by name
  // (query/topic_order.h) in every answer, the raw cache's too.
  ASSERT_TRUE(store_->TopicNumber("u").ok());
  ASSERT_TRUE(store_->TopicNumber("t").ok());
  const query::TopicOrder topics(*store_);
  ASSERT_FALSE(topics.InNumberOrder());
  constexpr int kWrites = kWritesDuringReads;
  std::vector<std::vector<TestEvent>> planned;
  for (int i = 0; i < kWrites; ++i) {
    std::vector<TestEvent> batch = NewBatch();
    std::erase_if(batch, [&](const TestEvent& e) { return e.ts_ms < store_->WindowStartMs(); });
    planned.push_back(std::move(batch));
  }
  struct Asked {
    std::string id;
    int n;
    int returned_before;  // Writes that had returned when the query started
    int started_after;    // Writes that had started when it ended
    bool hit;             // answered by `cache` (else by the engine)
    std::vector<Event> answer;
  };
  std::atomic<int> returned{0}, started{0};
  std::atomic<bool> done{false};
  std::vector<std::vector<Asked>> asked(2);
  std::vector<std::thread> readers;
  const int64_t window_start = store_->WindowStartMs();
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937_64 rng(seed_ + static_cast<uint64_t>(r));
      std::vector<query::CachedEvent> cached;
      while (!done.load()) {
        Asked a;
        a.id = ids_[rng() % 12];  // the busiest ids
        a.n = 1 + static_cast<int>(rng() % kDepth);
        a.returned_before = returned.load();
        if (rng() % 2 == 0) {
          a.hit = cache.Latest(a.id, keying::IdHash(a.id), a.n, window_start, nullptr, &cached,
                               &topics);
          if (!a.hit) continue;  // the engine's answers are the ones that read the store
          for (query::CachedEvent& c : cached) {
            a.answer.push_back(Event{a.id, c.ts_ms, store_->TopicName(c.topic).value_or("?"),
                                     c.partition, c.offset, std::move(c.payload)});
          }
        } else {
          a.hit = false;
          const query::PartitionFilter filter = filter_();
          Result<std::vector<Event>> got = cached_->Latest(a.id, a.n, &filter);
          if (!got.ok()) std::abort();
          a.answer = std::move(got).value();
        }
        a.started_after = started.load();
        asked[static_cast<size_t>(r)].push_back(std::move(a));
      }
    });
  }
  for (int i = 0; i < kWrites; ++i) {
    started.store(i + 1);
    store::WriteOutcome outcome;
    ASSERT_TRUE(testing::WriteEvents(store_.get(), planned[static_cast<size_t>(i)], &outcome).ok());
    ASSERT_EQ(outcome.stored, planned[static_cast<size_t>(i)].size());
    returned.store(i + 1);
  }
  done.store(true);
  for (std::thread& t : readers) t.join();
  store_->RemoveWriteObserver(&cache);

  // Every event with the index of the Write that stored it, each id's newest first.
  struct Stored {
    Event event;
    std::tuple<int64_t, std::string, int32_t, int64_t> key;  // ties by topic name
    int write;
  };
  std::map<std::string, std::vector<Stored>> by_id;
  for (int i = 0; i < kWrites; ++i) {
    for (const TestEvent& e : planned[static_cast<size_t>(i)]) {
      by_id[e.id].push_back({Event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload},
                             std::make_tuple(e.ts_ms, e.topic, e.partition, e.offset), i});
    }
  }
  for (auto& [id, events] : by_id) {
    std::sort(events.begin(), events.end(),
              [](const Stored& a, const Stored& b) { return a.key > b.key; });
  }
  // The oracle after the first k Writes.
  auto at = [&](const std::string& id, int n, int k) {
    std::vector<Event> out;
    for (const Stored& s : by_id[id]) {
      if (static_cast<int>(out.size()) == n) break;
      if (s.write < k) out.push_back(s.event);
    }
    return out;
  };
  size_t hits = 0, reads = 0, during = 0;
  for (const auto& list : asked) {
    for (const Asked& a : list) {
      during += a.started_after > a.returned_before;
      if (a.hit) {
        ++hits;
        bool whole = false;
        for (int k = a.returned_before; k <= a.started_after && !whole; ++k) {
          whole = a.answer == at(a.id, a.n, k);
        }
        ASSERT_TRUE(whole) << Where("concurrent") << "the cache's latest " << a.n << " of " << a.id
                           << " asked between Writes " << a.returned_before << " and "
                           << a.started_after << " is no state of the store then:\n"
                           << testing::DiffEvents(at(a.id, a.n, a.returned_before), a.answer);
        continue;
      }
      ++reads;
      // Newest first, nothing of a Write not yet started, and every event of a returned Write
      // that is newer than the answer's last (or any, when the answer is short) is in it.
      std::vector<const Stored*> shown;
      for (const Event& e : a.answer) {
        const Stored* found = nullptr;
        for (const Stored& s : by_id[a.id]) {
          if (s.event == e) found = &s;
        }
        ASSERT_NE(found, nullptr) << Where("concurrent") << "an event no Write stored";
        ASSERT_LT(found->write, a.started_after) << Where("concurrent") << "from the future";
        ASSERT_TRUE(shown.empty() || shown.back()->key > found->key) << "not newest first";
        shown.push_back(found);
      }
      ASSERT_LE(static_cast<int>(a.answer.size()), a.n);
      for (const Stored& s : by_id[a.id]) {
        if (s.write >= a.returned_before) continue;
        const bool short_answer = static_cast<int>(shown.size()) < a.n;
        if (!short_answer && s.key < shown.back()->key) break;
        ASSERT_TRUE(std::find(shown.begin(), shown.end(), &s) != shown.end())
            << Where("concurrent") << "latest " << a.n << " of " << a.id
            << " misses an event of Write " << s.write << ", which returned before it was asked"
            << " (asked between Writes " << a.returned_before << " and " << a.started_after
            << "):\n"
            << testing::DiffEvents(at(a.id, a.n, a.returned_before), a.answer);
      }
    }
  }
  std::printf("%zu cache answers and %zu engine answers checked, %zu of them during a Write\n",
              hits, reads, during);
  EXPECT_GT(hits, 1000u);
  EXPECT_GT(reads, 1000u);
}

INSTANTIATE_TEST_SUITE_P(, LastCacheOracleTest,
                         ::testing::Values(Param{SaltBy::kRecord, size_t{64} << 20},
                                           Param{SaltBy::kId, size_t{64} << 20},
                                           Param{SaltBy::kAdaptive, size_t{64} << 20},
                                           Param{SaltBy::kRecord, size_t{48} << 10},
                                           Param{SaltBy::kAdaptive, size_t{48} << 10}),
                         ParamName);

}  // namespace
}  // namespace hotrow::last_cache_oracle_test
