// The query engine's behaviour beyond what the oracle test compares: hash collisions, argument
// errors, early stops, the concurrency limit, the window filter before a drop, concurrent callers.

#include "query/query_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/time_format.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "keying/salter.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using keying::SaltBy;
using query::Event;
using query::Order;
using query::QueryEngine;
using query::QueryOptions;
using store::EventStore;
using store::StoreOptions;
using store::TopicPartition;
using testing::TestEvent;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kBucketMs = 10'000;
constexpr int64_t kTtlMs = 60'000;

// True when `message` holds `word` as a whole word ("n" in "n must be 1..10000", not in "and").
bool NamesWord(const std::string& message, const std::string& word) {
  const std::regex re("(^|[^A-Za-z0-9_])" + word + "([^A-Za-z0-9_]|$)");
  return std::regex_search(message, re);
}

class QueryEngineTest : public ::testing::Test {
 protected:
  void OpenStore(SaltBy salt_by = SaltBy::kRecord, int salts = 4) {
    StoreOptions options;
    options.path = dir_.Sub("store-" + std::to_string(++opened_));
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.salts = salts;
    options.salt_by = salt_by;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  std::unique_ptr<QueryEngine> NewEngine(int threads = 2, int max_concurrent = 64,
                                         size_t chunk_events = 3) {
    QueryOptions q;
    q.threads = threads;
    q.max_concurrent_queries = max_concurrent;
    q.chunk_events = chunk_events;
    return std::make_unique<QueryEngine>(store_.get(), q);
  }

  // An event of `id` at `ts` on the next offset of (topic, partition).
  TestEvent Ev(const std::string& id, int64_t ts, const std::string& topic = "t",
               int32_t partition = 0) {
    TestEvent e;
    e.id = id;
    e.ts_ms = ts;
    e.topic = topic;
    e.partition = partition;
    e.offset = next_offset_[TopicPartition{topic, partition}]++;
    e.payload =
        "{\"id\":\"" + testing::EscapeBytes(id) + "\",\"o\":" + std::to_string(e.offset) + "}";
    return e;
  }

  static Event ToEvent(const TestEvent& e) {
    return Event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload};
  }

  void Write(const std::vector<TestEvent>& events) {
    store::WriteOutcome outcome;
    Status st = testing::WriteEvents(store_.get(), events, &outcome);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(outcome.stored, events.size());
  }

  // `count` events over a few ids, partitions and buckets, all in the window.
  std::vector<TestEvent> Spread(int count) {
    std::vector<TestEvent> events;
    for (int i = 0; i < count; ++i) {
      events.push_back(
          Ev("dev-" + std::to_string(i % 5), kT0 + 1000 + (i * 397) % 50'000, "t", i % 3));
    }
    return events;
  }

  testing::TempDir dir_;
  int opened_ = 0;
  ManualClock clock_{kT0 + kTtlMs};
  std::unique_ptr<EventStore> store_;
  std::map<TopicPartition, int64_t> next_offset_;
};

// Rows whose key carries id A's hash but whose value holds id B are what an XXH3 collision between
// A and B would leave on disk. Under salt_by=id they are planted in A's salt (the worst case: hash
// and salt both collide). They must never come back as A's events, nor use up A's n or limit; B,
// which hashes elsewhere, does not find them either.
TEST_F(QueryEngineTest, HashCollisionNeverReturnsAnotherIdsEvents) {
  for (SaltBy salt_by : {SaltBy::kRecord, SaltBy::kId}) {
    SCOPED_TRACE(std::string("salt_by=") + std::string(keying::SaltByName(salt_by)));
    next_offset_.clear();
    ASSERT_NO_FATAL_FAILURE(OpenStore(salt_by, 4));
    const std::string a = "device-A";
    const std::string b = "device-B";
    std::vector<TestEvent> a_events;
    for (int i = 0; i < 6; ++i) a_events.push_back(Ev(a, kT0 + 10'000 + i * 5'000, "t", i % 2));
    const TestEvent b_real = Ev(b, kT0 + 12'000, "t", 0);
    std::vector<TestEvent> to_write = a_events;
    to_write.push_back(b_real);
    ASSERT_NO_FATAL_FAILURE(Write(to_write));

    // The planted rows: newer than, older than and tied with A's events.
    store::WriteBatchInput planted;
    const uint16_t topic = *store_->TopicNumber("t");
    std::vector<int64_t> planted_times = {kT0 + 9'000, kT0 + 20'000, kT0 + 36'000, kT0 + 50'000};
    for (int64_t ts : planted_times) {
      TestEvent e = Ev(b, ts, "t", 0);
      keying::RowKey key;
      key.salt = salt_by == SaltBy::kId ? store_->salter().SaltOfId(a)
                                        : store_->salter().SaltOf("t", 0, e.offset, b);
      key.id_hash = keying::IdHash(a);
      key.ts_ms = ts;
      key.topic = topic;
      key.partition = 0;
      key.offset = e.offset;
      planted.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(b, e.payload)});
      planted.next_offsets[TopicPartition{"t", 0}] = e.offset + 1;
    }
    store::WriteOutcome outcome;
    Status st = store_->Write(planted, &outcome);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(outcome.stored, planted_times.size());

    std::vector<Event> a_newest_first;
    for (auto it = a_events.rbegin(); it != a_events.rend(); ++it)
      a_newest_first.push_back(ToEvent(*it));
    std::vector<Event> a_oldest_first(a_newest_first.rbegin(), a_newest_first.rend());
    for (int threads : {1, 2}) {
      SCOPED_TRACE("threads=" + std::to_string(threads));
      auto engine = NewEngine(threads);
      Result<std::vector<Event>> latest = engine->Latest(a, 100);
      ASSERT_TRUE(latest.ok()) << latest.status().ToString();
      EXPECT_EQ(testing::DiffEvents(a_newest_first, *latest), "");
      latest = engine->Latest(a, 1);
      ASSERT_TRUE(latest.ok()) << latest.status().ToString();
      EXPECT_EQ(testing::DiffEvents({a_newest_first[0]}, *latest), "");
      latest = engine->Latest(a, 3);
      ASSERT_TRUE(latest.ok()) << latest.status().ToString();
      EXPECT_EQ(testing::DiffEvents({a_newest_first.begin(), a_newest_first.begin() + 3}, *latest),
                "");

      Result<std::vector<Event>> range = engine->Range(a, 0, INT64_MAX, 1000, Order::kDesc);
      ASSERT_TRUE(range.ok()) << range.status().ToString();
      EXPECT_EQ(testing::DiffEvents(a_newest_first, *range), "");
      range = engine->Range(a, 0, INT64_MAX, 2, Order::kAsc);
      ASSERT_TRUE(range.ok()) << range.status().ToString();
      EXPECT_EQ(testing::DiffEvents({a_oldest_first[0], a_oldest_first[1]}, *range), "");

      // B sees its one real event, none of the planted rows.
      latest = engine->Latest(b, 100);
      ASSERT_TRUE(latest.ok()) << latest.status().ToString();
      EXPECT_EQ(testing::DiffEvents({ToEvent(b_real)}, *latest), "");
      range = engine->Range(b, 0, INT64_MAX, 1000, Order::kAsc);
      ASSERT_TRUE(range.ok()) << range.status().ToString();
      EXPECT_EQ(testing::DiffEvents({ToEvent(b_real)}, *range), "");

      // A scan labels every row with the id in its value: A's events are exactly A's.
      std::mutex mu;
      std::vector<Event> scanned_a;
      size_t scanned = 0;
      st = engine->Scan(0, INT64_MAX, query::kNoLimit, [&](const Event& e) {
        std::lock_guard<std::mutex> lock(mu);
        ++scanned;
        if (e.id == a) scanned_a.push_back(e);
        return true;
      });
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(scanned, a_events.size() + 1 + planted_times.size());
      testing::Oracle::SortCanonical(&scanned_a);
      std::vector<Event> want = a_oldest_first;
      testing::Oracle::SortCanonical(&want);
      EXPECT_EQ(testing::DiffEvents(want, scanned_a), "");
    }
    store_.reset();
  }
}

TEST_F(QueryEngineTest, BadArgumentsAreInvalidArgumentNamingTheArgument) {
  ASSERT_NO_FATAL_FAILURE(OpenStore());
  ASSERT_NO_FATAL_FAILURE(Write({Ev("dev-1", kT0 + 30'000)}));
  auto engine = NewEngine();
  bool sink_called = false;
  auto sink = [&](const Event&) {
    sink_called = true;
    return true;
  };
  auto expect_invalid = [](const Status& st, const std::vector<std::string>& words,
                           const std::string& call) {
    EXPECT_TRUE(st.IsInvalidArgument()) << call << " -> " << st.ToString();
    for (const std::string& word : words) {
      EXPECT_TRUE(NamesWord(st.message(), word))
          << call << ": message \"" << st.message() << "\" does not name \"" << word << "\"";
    }
  };
  for (int n : {0, -1, query::kMaxLatest + 1, INT32_MIN, INT32_MAX}) {
    expect_invalid(engine->Latest("dev-1", n).status(), {"n"},
                   "Latest(n=" + std::to_string(n) + ")");
  }
  const int64_t t = kT0 + 30'000;
  expect_invalid(engine->Range("dev-1", t, t, 10, Order::kDesc).status(), {"from", "to"},
                 "Range(from == to)");
  expect_invalid(engine->Range("dev-1", t + 1, t, 10, Order::kAsc).status(), {"from", "to"},
                 "Range(from > to)");
  for (int64_t limit : {int64_t{0}, int64_t{-1}, query::kMaxRangeLimit + 1, INT64_MIN}) {
    expect_invalid(engine->Range("dev-1", kT0, kT0 + kTtlMs, limit, Order::kDesc).status(),
                   {"limit"}, "Range(limit=" + std::to_string(limit) + ")");
    expect_invalid(engine->RangeTo("dev-1", kT0, kT0 + kTtlMs, limit, Order::kDesc, sink),
                   {"limit"}, "RangeTo(limit=" + std::to_string(limit) + ")");
  }
  expect_invalid(engine->RangeTo("dev-1", t, t, 10, Order::kDesc, sink), {"from", "to"},
                 "RangeTo(from == to)");
  for (int64_t limit : {int64_t{0}, int64_t{-5}, INT64_MIN}) {
    expect_invalid(engine->Scan(kT0, kT0 + kTtlMs, limit, sink), {"limit"},
                   "Scan(limit=" + std::to_string(limit) + ")");
  }
  expect_invalid(engine->Scan(t, t, 10, sink), {"from", "to"}, "Scan(from == to)");
  expect_invalid(engine->Scan(t, t - 1000, query::kNoLimit, sink), {"from", "to"},
                 "Scan(from > to)");
  EXPECT_FALSE(sink_called) << "a refused query must not stream anything";
}

TEST_F(QueryEngineTest, ArgumentsOnTheBoundsAreAccepted) {
  ASSERT_NO_FATAL_FAILURE(OpenStore());
  const TestEvent e = Ev("dev-1", kT0 + 30'000);
  ASSERT_NO_FATAL_FAILURE(Write({e}));
  auto engine = NewEngine();
  for (int n : {1, query::kMaxLatest}) {
    Result<std::vector<Event>> got = engine->Latest("dev-1", n);
    ASSERT_TRUE(got.ok()) << "n=" << n << ": " << got.status().ToString();
    EXPECT_EQ(testing::DiffEvents({ToEvent(e)}, *got), "");
  }
  for (int64_t limit : {int64_t{1}, query::kMaxRangeLimit}) {
    Result<std::vector<Event>> got =
        engine->Range("dev-1", e.ts_ms, e.ts_ms + 1, limit, Order::kAsc);  // a 1 ms range
    ASSERT_TRUE(got.ok()) << "limit=" << limit << ": " << got.status().ToString();
    EXPECT_EQ(testing::DiffEvents({ToEvent(e)}, *got), "");
  }
  for (int64_t limit : {int64_t{1}, query::kNoLimit}) {
    int calls = 0;
    Status st = engine->Scan(e.ts_ms, e.ts_ms + 1, limit, [&](const Event& got) {
      ++calls;
      EXPECT_EQ(got, ToEvent(e));
      return true;
    });
    ASSERT_TRUE(st.ok()) << "limit=" << limit << ": " << st.ToString();
    EXPECT_EQ(calls, 1);
  }
}

// Times are never negative; a negative bound is either refused as InvalidArgument or read as
// "from the beginning", never a crash or a wrong answer.
TEST_F(QueryEngineTest, NegativeFromIsRefusedOrMeansFromTheBeginning) {
  ASSERT_NO_FATAL_FAILURE(OpenStore());
  const TestEvent e = Ev("dev-1", kT0 + 30'000);
  ASSERT_NO_FATAL_FAILURE(Write({e}));
  auto engine = NewEngine();
  Result<std::vector<Event>> got = engine->Range("dev-1", -1000, INT64_MAX, 10, Order::kDesc);
  if (got.ok()) {
    EXPECT_EQ(testing::DiffEvents({ToEvent(e)}, *got), "");
  } else {
    EXPECT_TRUE(got.status().IsInvalidArgument()) << got.status().ToString();
    EXPECT_TRUE(NamesWord(got.status().message(), "from")) << got.status().ToString();
  }
  int calls = 0;
  Status st = engine->Scan(-1000, INT64_MAX, query::kNoLimit, [&](const Event&) {
    ++calls;
    return true;
  });
  if (st.ok()) {
    EXPECT_EQ(calls, 1);
  } else {
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_EQ(calls, 0);
  }
}

TEST_F(QueryEngineTest, EmptyStoreAndUnknownIdsAnswerNothing) {
  ASSERT_NO_FATAL_FAILURE(OpenStore());
  auto engine = NewEngine();
  Result<std::vector<Event>> got = engine->Latest("nobody", 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->empty());
  int calls = 0;
  Status st = engine->Scan(0, INT64_MAX, query::kNoLimit, [&](const Event&) {
    ++calls;
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(calls, 0);

  ASSERT_NO_FATAL_FAILURE(Write({Ev("dev-1", kT0 + 30'000)}));
  for (const std::string& id :
       {std::string("dev-"), std::string("dev-10"), std::string("dev-1\0", 6)}) {
    got = engine->Latest(id, 10);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->empty()) << "id " << testing::EscapeBytes(id);
    got = engine->Range(id, 0, INT64_MAX, 10, Order::kAsc);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->empty()) << "id " << testing::EscapeBytes(id);
  }
}

TEST_F(QueryEngineTest, ScanStopsWhenTheSinkReturnsFalse) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  ASSERT_NO_FATAL_FAILURE(Write(Spread(600)));
  for (int threads : {1, 2}) {
    auto engine = NewEngine(threads);
    for (int stop_at : {1, 5, 37}) {
      SCOPED_TRACE("threads=" + std::to_string(threads) + " stop_at=" + std::to_string(stop_at));
      std::atomic<int> calls{0};
      Status st = engine->Scan(0, INT64_MAX, query::kNoLimit,
                               [&](const Event&) { return calls.fetch_add(1) + 1 < stop_at; });
      EXPECT_TRUE(st.ok() || st.code() == Status::Code::kCancelled) << st.ToString();
      EXPECT_EQ(calls.load(), stop_at);
      // Run another full scan through the same pool: any per-salt work of the stopped scan still
      // queued would run before or with it, and must not call the old sink.
      int total = 0;
      st = engine->Scan(0, INT64_MAX, query::kNoLimit, [&](const Event&) {
        ++total;
        return true;
      });
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(total, 600);
      EXPECT_EQ(calls.load(), stop_at) << "the sink was called after it returned false";
    }
  }
}

TEST_F(QueryEngineTest, RangeStopsAtItsLimitAndWhenTheSinkReturnsFalse) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  std::vector<TestEvent> events;
  for (int i = 0; i < 50; ++i) events.push_back(Ev("dev-x", kT0 + 1000 + i * 1000, "t", i % 3));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  std::vector<Event> newest_first;
  for (auto it = events.rbegin(); it != events.rend(); ++it) newest_first.push_back(ToEvent(*it));
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    auto engine = NewEngine(threads);
    Result<std::vector<Event>> got = engine->Range("dev-x", 0, INT64_MAX, 7, Order::kDesc);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(testing::DiffEvents({newest_first.begin(), newest_first.begin() + 7}, *got), "");
    got = engine->Range("dev-x", 0, INT64_MAX, 7, Order::kAsc);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(testing::DiffEvents({newest_first.rbegin(), newest_first.rbegin() + 7}, *got), "");

    std::vector<Event> streamed;
    Status st = engine->RangeTo("dev-x", 0, INT64_MAX, 7, Order::kDesc, [&](const Event& e) {
      streamed.push_back(e);
      return true;
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(testing::DiffEvents({newest_first.begin(), newest_first.begin() + 7}, streamed), "");

    std::atomic<int> calls{0};
    st = engine->RangeTo("dev-x", 0, INT64_MAX, 1000, Order::kAsc,
                         [&](const Event&) { return calls.fetch_add(1) + 1 < 4; });
    EXPECT_TRUE(st.ok() || st.code() == Status::Code::kCancelled) << st.ToString();
    EXPECT_EQ(calls.load(), 4);
    got = engine->Latest("dev-x", 1);  // flush the pool
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(calls.load(), 4) << "the sink was called after it returned false";
  }
}

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

// The window filter holds between drops: a bucket partly (or wholly) older than now - ttl that is
// still on disk returns nothing older than the window start.
TEST_F(QueryEngineTest, NothingOlderThanTheWindowIsReturnedBeforeItsBucketIsDropped) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 3));
  std::vector<TestEvent> events;
  for (int64_t ts = kT0; ts < kT0 + kTtlMs; ts += 2'500) events.push_back(Ev("dev-1", ts));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  const int64_t window_start = kT0 + 25'000;  // mid-bucket
  clock_.Set(window_start + kTtlMs);
  ASSERT_EQ(store_->WindowStartMs(), window_start);
  ASSERT_FALSE(store_->Buckets().empty());
  ASSERT_LT(store_->Buckets().front()->start_ms(), window_start) << "nothing left to filter";

  std::vector<Event> want;  // newest first, ts >= window_start
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->ts_ms >= window_start) want.push_back(ToEvent(*it));
  }
  ASSERT_EQ(want.back().ts_ms, window_start) << "the event on the window start must be kept";
  auto engine = NewEngine();
  Result<std::vector<Event>> got = engine->Latest("dev-1", 100);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(testing::DiffEvents(want, *got), "");
  got = engine->Range("dev-1", kT0, kT0 + kTtlMs, 100, Order::kDesc);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(testing::DiffEvents(want, *got), "");
  got = engine->Range("dev-1", kT0, window_start, 100, Order::kDesc);  // wholly before the window
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(testing::DiffEvents({}, *got), "");
  std::vector<Event> scanned;
  Status st = engine->Scan(0, INT64_MAX, query::kNoLimit, [&](const Event& e) {
    scanned.push_back(e);
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  testing::Oracle::SortCanonical(&scanned);
  testing::Oracle::SortCanonical(&want);
  EXPECT_EQ(testing::DiffEvents(want, scanned), "");
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

// latest-N at the seek floor: one cursor per bucket per thread (not one per salt), one seek per
// salt, and a salt's rows read only while they can still be in the answer. Rows written after a
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
  EXPECT_EQ(first.seeks - before.seeks, 16u);                         // one per salt
  // Every salt reads the rows that enter the best 10 so far and one more that cannot: about
  // 10 * (1 + ln 16) + 16 = 54 here (63 measured). The pool path read a first chunk of 16 rows from
  // every salt (256); reading every salt to 10 rows would be 160.
  const uint64_t rows = first.rows_read - before.rows_read;
  EXPECT_LE(rows, 80u) << "latest-10 read " << rows << " rows";

  // A newer event after the cursor was cached: the next query sees it, on the same cursor.
  ASSERT_NO_FATAL_FAILURE(Write({Ev("dev", kT0 + 59'000, "t", 3)}));
  got = engine->Latest("dev", 10);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 10u);
  EXPECT_EQ(got->front().ts_ms, kT0 + 59'000);
  const query::QueryWorkStats second = engine->Work();
  EXPECT_EQ(second.iterators_created, first.iterators_created);
  EXPECT_EQ(second.seeks - first.seeks, 16u);
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
}  // namespace hotrow
