// The query engine under concurrency: the limit on queries at once, many callers against the
// oracle, queries while buckets are written and dropped, the cursor cache, the pool size.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/time_format.h"
#include "query/query_engine.h"
#include "tests/query/query_engine_test_base.h"
#include "tests/support/process.h"

namespace hotrow::query_engine_test {
namespace {

// Holds queries open inside their sinks, deterministically: each held scan signals when it is
// inside its sink and waits there until released.
class HeldScans {
 public:
  explicit HeldScans(QueryEngine* engine) : engine_(engine) {}
  ~HeldScans() { ReleaseAndJoin(); }

  void Start(int count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this] {
        bool first = true;
        Status st = engine_->Scan(0, INT64_MAX, query::kNoLimit, [&](const Event&) {
          if (first) {
            first = false;
            std::unique_lock<std::mutex> lock(mu_);
            ++inside_;
            cv_.notify_all();
            cv_.wait(lock, [&] { return released_; });
          }
          return true;
        });
        std::lock_guard<std::mutex> lock(mu_);
        statuses_.push_back(st);
      });
    }
  }
  bool AwaitInside(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return inside_ >= count; });
  }
  std::vector<Status> ReleaseAndJoin() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
      cv_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    return statuses_;
  }

 private:
  QueryEngine* const engine_;
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  bool released_ = false;
  std::vector<Status> statuses_;
  std::vector<std::thread> threads_;
};

TEST_F(QueryEngineTest, MoreQueriesThanTheLimitAtOnceAreBusy) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  ASSERT_NO_FATAL_FAILURE(Write(Spread(100)));
  auto engine = NewEngine(/*threads=*/2, /*max_concurrent=*/2);

  // Runs `query` on another thread so that an engine that queues instead of refusing shows up as
  // a failure, not a hang.
  auto refused = [&](std::function<Status()> query, const std::string& name) {
    auto future = std::async(std::launch::async, std::move(query));
    if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << name << " blocked instead of answering Busy";
      return;
    }
    Status st = future.get();
    EXPECT_TRUE(st.IsBusy()) << name << " -> " << st.ToString();
  };
  {
    HeldScans held(engine.get());
    held.Start(2);
    ASSERT_TRUE(held.AwaitInside(2)) << "two scans never reached their sinks";
    refused([&] { return engine->Latest("dev-1", 10).status(); }, "Latest");
    refused([&] { return engine->Range("dev-1", 0, INT64_MAX, 10, Order::kAsc).status(); },
            "Range");
    refused(
        [&] {
          return engine->Scan(0, INT64_MAX, query::kNoLimit, [](const Event&) { return true; });
        },
        "Scan");
    for (const Status& st : held.ReleaseAndJoin()) EXPECT_TRUE(st.ok()) << st.ToString();
  }
  // The refused queries left nothing counted: with one scan held, another query still runs.
  {
    HeldScans held(engine.get());
    held.Start(1);
    ASSERT_TRUE(held.AwaitInside(1));
    auto future = std::async(std::launch::async, [&] { return engine->Latest("dev-1", 10); });
    ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    Result<std::vector<Event>> got = future.get();
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    for (const Status& st : held.ReleaseAndJoin()) EXPECT_TRUE(st.ok()) << st.ToString();
  }
}

TEST_F(QueryEngineTest, ManyCallersAtOnceGetTheOraclesAnswers) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  std::mt19937_64 rng(testing::TestSeed(7));
  const std::vector<std::string> ids = {"dev-1", "dev-10", "dev-100", "a/b", "x"};
  std::vector<TestEvent> events;
  testing::Oracle oracle;
  for (int i = 0; i < 800; ++i) {
    events.push_back(Ev(ids[rng() % ids.size()], kT0 + static_cast<int64_t>(rng() % 55'000), "t",
                        static_cast<int32_t>(rng() % 4)));
    oracle.Add(ToEvent(events.back()), *store_->TopicNumber("t"));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  auto engine = NewEngine(2);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      std::mt19937_64 local(static_cast<uint64_t>(c) + 1);
      for (int i = 0; i < 150; ++i) {
        const std::string& id = ids[local() % ids.size()];
        const int n = 1 + static_cast<int>(local() % 60);
        Result<std::vector<Event>> got = engine->Latest(id, n);
        if (!got.ok() || *got != oracle.Latest(id, n, store_->WindowStartMs())) ++mismatches;
        const int64_t from = kT0 + static_cast<int64_t>(local() % 30'000);
        const int64_t to = from + 1 + static_cast<int64_t>(local() % 30'000);
        got = engine->Range(id, from, to, 25, Order::kAsc);
        if (!got.ok() ||
            *got != oracle.Range(id, from, to, 25, Order::kAsc, store_->WindowStartMs())) {
          ++mismatches;
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Queries racing writes, clock moves and bucket drops: every answer is ok, holds only written
// events of the asked id, in order, and nothing older than the window as it was when the query
// started (the window only moves forward).
TEST_F(QueryEngineTest, QueriesRunWhileBucketsAreWrittenAndDropped) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  auto engine = NewEngine(2);
  std::mutex mu;
  std::set<std::string> written;  // payloads, recorded before their Write
  std::atomic<bool> stop{false};
  std::atomic<int> problems{0};
  std::string first_problem;
  auto problem = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (problems++ == 0) first_problem = what;
  };
  auto known = [&](const Event& e) {
    std::lock_guard<std::mutex> lock(mu);
    return written.count(e.payload) == 1;
  };

  std::thread writer([&] {
    std::mt19937_64 rng(testing::TestSeed(11));
    for (int round = 0; round < 200 && problems == 0; ++round) {
      clock_.Advance(1000);
      std::vector<TestEvent> batch;
      for (int i = 0; i < 20; ++i) {
        batch.push_back(Ev("dev-" + std::to_string(rng() % 8),
                           clock_.NowMs() - static_cast<int64_t>(rng() % 50'000), "t",
                           static_cast<int32_t>(rng() % 3)));
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        for (const TestEvent& e : batch) written.insert(e.payload);
      }
      store::WriteOutcome outcome;
      Status st = testing::WriteEvents(store_.get(), batch, &outcome);
      if (!st.ok() || outcome.stored != batch.size()) problem("write: " + st.ToString());
      Result<size_t> dropped = store_->DropExpiredBuckets();
      if (!dropped.ok()) problem("drop: " + dropped.status().ToString());
    }
    stop = true;
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      for (uint64_t i = 0; !stop; ++i) {
        const std::string id = "dev-" + std::to_string((i + static_cast<uint64_t>(r)) % 8);
        const int64_t window_start = store_->WindowStartMs();
        Result<std::vector<Event>> got = engine->Latest(id, 20);
        if (!got.ok()) {
          problem("Latest: " + got.status().ToString());
          continue;
        }
        for (size_t k = 0; k < got->size(); ++k) {
          const Event& e = (*got)[k];
          if (e.id != id || !known(e) || e.ts_ms < window_start ||
              (k > 0 && e.ts_ms > (*got)[k - 1].ts_ms)) {
            problem("Latest(" + id + ") returned " + testing::Describe(e) + " at " +
                    std::to_string(k) + ", window start " + std::to_string(window_start));
          }
        }
        int64_t scanned = 0;
        Status st = engine->Scan(0, INT64_MAX, 300, [&](const Event& e) {
          ++scanned;
          if (!known(e) || e.ts_ms < window_start) problem("Scan returned " + testing::Describe(e));
          return true;
        });
        if (!st.ok()) problem("Scan: " + st.ToString());
        if (scanned > 300) problem("Scan passed its limit: " + std::to_string(scanned));
      }
    });
  }
  writer.join();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(problems.load(), 0) << first_problem;
}

// latest-N at the seek floor: one cursor per bucket per thread (not one per salt), at most one
// seek per salt (fewer where the id filter shows a salt's rows too old for the answer), and a
// salt's rows read only while they can still be in the answer. Rows written after a
// cursor was cached are seen by the next query.
TEST_F(QueryEngineTest, LatestReadsOnlyTheRowsItNeedsOnCachedCursors) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  std::vector<TestEvent> events;
  for (int i = 0; i < 3000; ++i) {
    events.push_back(Ev(i % 3 == 0 ? "other" : "dev", kT0 + 50'000 + i, "t", i % 7));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  auto engine = NewEngine(2, 64, QueryOptions().chunk_events);  // the production chunk size
  const query::QueryWorkStats before = engine->Work();
  Result<std::vector<Event>> got = engine->Latest("dev", 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 10u);
  EXPECT_EQ(got->front().ts_ms, kT0 + 50'000 + 2999);
  const query::QueryWorkStats first = engine->Work();
  EXPECT_EQ(first.iterators_created - before.iterators_created, 1u);  // one bucket
  // At most one seek per salt, and only the salts whose rows are new enough for the answer.
  const SeekBounds first_bounds = LatestSeekBounds(events, "dev", 10);
  EXPECT_GE(first.seeks - before.seeks, first_bounds.must);
  EXPECT_LE(first.seeks - before.seeks, first_bounds.may);
  // Every salt reads the rows that enter the best 10 so far and one more that cannot: about
  // 10 * (1 + ln 16) + 16 = 54 here (63 measured). The pool path read a first chunk of 16 rows from
  // every salt (256); reading every salt to 10 rows would be 160.
  const uint64_t rows = first.rows_read - before.rows_read;
  EXPECT_LE(rows, 80u) << "latest-10 read " << rows << " rows";

  // A newer event after the cursor was cached: the next query sees it, on the same cursor.
  events.push_back(Ev("dev", kT0 + 59'000, "t", 3));
  ASSERT_NO_FATAL_FAILURE(Write({events.back()}));
  got = engine->Latest("dev", 10);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 10u);
  EXPECT_EQ(got->front().ts_ms, kT0 + 59'000);
  const query::QueryWorkStats second = engine->Work();
  EXPECT_EQ(second.iterators_created, first.iterators_created);
  const SeekBounds second_bounds = LatestSeekBounds(events, "dev", 10);
  EXPECT_GE(second.seeks - first.seeks, second_bounds.must);
  EXPECT_LE(second.seeks - first.seeks, second_bounds.may);
}

// Small queries keep their candidate rows and payload buffers per thread between queries: a query
// its sink stopped early, or one of another id, topic or order, leaves nothing in the next answer.
TEST_F(QueryEngineTest, SmallQueriesOnOneThreadDoNotLeakRowsIntoEachOther) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  std::vector<TestEvent> events;
  for (int i = 0; i < 400; ++i) {
    events.push_back(
        Ev(i % 2 == 0 ? "a" : "b", kT0 + 1000 + i * 97, i % 3 == 0 ? "u" : "t", i % 5));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  auto oracle = [&](const std::string& id, Order order, size_t n) {
    std::vector<Event> want;
    for (const TestEvent& e : events) {
      if (e.id == id) want.push_back(ToEvent(e));
    }
    auto newer = [](const Event& x, const Event& y) {
      return std::tie(x.ts_ms, x.topic, x.partition, x.offset) >
             std::tie(y.ts_ms, y.topic, y.partition, y.offset);
    };
    std::sort(want.begin(), want.end(), [&](const Event& x, const Event& y) {
      return order == Order::kDesc ? newer(x, y) : newer(y, x);
    });
    want.resize(std::min(n, want.size()));
    return want;
  };
  auto engine = NewEngine();
  for (int round = 0; round < 3; ++round) {
    // Stopped by its sink after one event, with 9 more candidates kept.
    int taken = 0;
    Status st = engine->RangeTo("a", 0, kMaxTimeMs, 10, Order::kDesc, [&](const Event&) {
      ++taken;
      return false;
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(taken, 1);
    Result<std::vector<Event>> got = engine->Latest("b", 10);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, oracle("b", Order::kDesc, 10));
    got = engine->Range("a", 0, kMaxTimeMs, 7, Order::kAsc);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, oracle("a", Order::kAsc, 7));
    got = engine->Latest("a", 3);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, oracle("a", Order::kDesc, 3));
  }
}

TEST_F(QueryEngineTest, ThreadsIsThePoolSize) {
  ASSERT_NO_FATAL_FAILURE(OpenStore());
  EXPECT_EQ(NewEngine(3)->threads(), 3);
  EXPECT_EQ(NewEngine(1)->threads(), 1);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(NewEngine(0)->threads(), cores > 0 ? cores : NewEngine(0)->threads());
}

}  // namespace
}  // namespace hotrow::query_engine_test
