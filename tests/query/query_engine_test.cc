// The query engine's behaviour beyond what the oracle test compares: hash collisions, argument
// errors, early stops, the window filter before a drop. Under concurrency:
// query_engine_concurrency_test.cc.

#include "query/query_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/time_format.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "keying/salter.h"
#include "tests/query/query_engine_test_base.h"
#include "tests/support/process.h"

namespace hotrow::query_engine_test {
namespace {

// True when `message` holds `word` as a whole word ("n" in "n must be 1..10000", not in "and").
bool NamesWord(const std::string& message, const std::string& word) {
  const std::regex re("(^|[^A-Za-z0-9_])" + word + "([^A-Za-z0-9_]|$)");
  return std::regex_search(message, re);
}

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

// With salts by record a sparse id sits in a few salts of a bucket: latest-N seeks only those
// (each bucket's id filter rules the others out), and an id the store has never seen costs no seek.
TEST_F(QueryEngineTest, LatestSeeksOnlyTheSaltsThatHoldTheId) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  std::vector<TestEvent> events;
  std::set<uint8_t> sparse_salts;
  for (int i = 0; i < 2000; ++i) {
    events.push_back(Ev(i % 500 == 0 ? "sparse" : "busy", kT0 + 50'000 + i));
    if (events.back().id == "sparse") {
      sparse_salts.insert(store_->salter().SaltOf("t", 0, events.back().offset, events.back().id));
    }
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  ASSERT_EQ(sparse_salts.size(), 4u);  // 4 events in 4 salts of 16
  auto engine = NewEngine();
  const query::QueryWorkStats before = engine->Work();
  Result<std::vector<Event>> got = engine->Latest("sparse", 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 4u);
  const query::QueryWorkStats after = engine->Work();
  EXPECT_EQ(after.seeks - before.seeks, sparse_salts.size());
  got = engine->Latest("never-seen", 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(engine->Work().seeks, after.seeks);
}

// latest-N completing its answer from an older bucket seeks there only the salts whose newest row
// of the id can still enter it (the bucket's id filter bounds each salt's newest time), and
// answers exactly what reading every salt would.
TEST_F(QueryEngineTest, LatestSkipsSaltsWhoseRowsAreAllTooOldForTheAnswer) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  const int64_t older = kT0 + 30'000, newest = kT0 + 40'000;  // two buckets
  std::vector<TestEvent> events;
  std::set<uint8_t> older_salts, newest_salts;
  for (int i = 0; i < 32; ++i) {
    events.push_back(Ev("x", older + 150 + i * 300));  // over the whole older bucket
    older_salts.insert(store_->salter().SaltOf("t", 0, events.back().offset, "x"));
  }
  for (int i = 0; i < 2; ++i) {
    events.push_back(Ev("x", newest + 1000 + i));
    newest_salts.insert(store_->salter().SaltOf("t", 0, events.back().offset, "x"));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  auto engine = NewEngine();
  const query::QueryWorkStats before = engine->Work();
  Result<std::vector<Event>> got = engine->Latest("x", 5);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  std::vector<Event> want;
  for (size_t i = events.size(); i-- > events.size() - 5;) want.push_back(ToEvent(events[i]));
  EXPECT_EQ(*got, want);
  const uint64_t seeks = engine->Work().seeks - before.seeks;
  // The 3 older events it needs are in the older bucket's last 900 ms: few of the salts holding
  // "x" there have a row that new.
  EXPECT_LT(seeks, newest_salts.size() + older_salts.size() / 2)
      << older_salts.size() << " older salts hold x";
}

// A busy id, as in a dashboard's view of a chatty device: an event every 10 ms, so that every salt
// holds a row of the id near the bucket's newest time. The filter's bound is fine enough (a 255th
// of the bucket, 40 ms here) to skip the salts whose newest row is older than the answer's oldest:
// with fifteenths (667 ms) all 16 were sought.
TEST_F(QueryEngineTest, LatestOfABusyIdSeeksOnlyTheSaltsWithRowsAsNewAsItsAnswer) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  const int64_t start = kT0 + 47'000;  // one bucket: [kT0 + 40 s, kT0 + 50 s)
  std::vector<TestEvent> events;
  for (int i = 0; i < 200; ++i) events.push_back(Ev("x", start + i * 10));
  ASSERT_NO_FATAL_FAILURE(Write(events));
  const SeekBounds bounds = LatestSeekBounds(events, "x", 10);
  ASSERT_LT(bounds.may, 16u) << "the data should leave salts too old for the answer";
  auto engine = NewEngine();
  const query::QueryWorkStats before = engine->Work();
  Result<std::vector<Event>> got = engine->Latest("x", 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  std::vector<Event> want;
  for (size_t i = events.size(); i-- > events.size() - 10;) want.push_back(ToEvent(events[i]));
  EXPECT_EQ(*got, want);
  const uint64_t seeks = engine->Work().seeks - before.seeks;
  EXPECT_GE(seeks, bounds.must);
  EXPECT_LE(seeks, bounds.may);
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

// A range past kSmallQueryLimit is read bucket by bucket, later buckets ahead on the pool: cut by
// its limit inside a bucket, as a vector, streamed and encoded, it is still the first `limit`
// events of the answer, in order, with 1 and 2 query threads.
TEST_F(QueryEngineTest, LargeRangesCutInsideABucketAreTheFirstEventsOfTheAnswer) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  std::vector<TestEvent> events;
  for (int i = 0; i < 1500; ++i) {  // 300 per bucket over 5 buckets, ties in time included
    // Topic "b" is numbered first: ties in time sort by name, not by number.
    events.push_back(Ev("dev-x", kT0 + 1000 + (i / 2) * 33, i % 2 ? "a" : "b", i % 3));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  testing::Oracle oracle;
  for (const TestEvent& e : events) {
    oracle.Add(ToEvent(e), *store_->TopicNumber(e.topic));
  }
  const auto encode = [](const Event& e, std::string* out) {
    out->append(std::to_string(e.offset) + "/" + e.topic + "/" + std::to_string(e.partition) + ";");
  };
  for (int threads : {1, 2}) {
    auto engine = NewEngine(threads, 64, /*chunk_events=*/64);
    for (Order order : {Order::kDesc, Order::kAsc}) {
      for (int64_t limit : {257, 450, 1000}) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " limit=" + std::to_string(limit) +
                     (order == Order::kAsc ? " asc" : " desc"));
        const std::vector<Event> want =
            oracle.Range("dev-x", 0, INT64_MAX, limit, order, store_->WindowStartMs());
        ASSERT_EQ(want.size(), static_cast<size_t>(limit));
        Result<std::vector<Event>> got = engine->Range("dev-x", 0, INT64_MAX, limit, order);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(testing::DiffEvents(want, *got), "");
        std::string want_text, got_text;
        for (const Event& e : want) encode(e, &want_text);
        int64_t texts = 0;
        Status st = engine->RangeEncoded("dev-x", 0, INT64_MAX, limit, order, encode,
                                         [&](std::string_view text, int64_t n) {
                                           got_text.append(text);
                                           texts += n;
                                           return true;
                                         });
        ASSERT_TRUE(st.ok()) << st.ToString();
        EXPECT_EQ(texts, limit);
        const auto [at, _] =
            std::mismatch(got_text.begin(), got_text.end(), want_text.begin(), want_text.end());
        EXPECT_TRUE(got_text == want_text)
            << got_text.size() << " bytes of text, expected " << want_text.size()
            << "; they differ from byte " << (at - got_text.begin()) << ": \""
            << got_text.substr(static_cast<size_t>(at - got_text.begin()), 40) << "\"";
      }
    }
  }
}

// A large range whose first bucket holds its whole answer (a busy id) reads no other bucket: its
// pool worker starts reading ahead only once the first bucket is known to hold too few events.
TEST_F(QueryEngineTest, LargeRangeOfABusyIdFilledByTheFirstBucketReadsNoOther) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  std::vector<TestEvent> events;
  for (int i = 0; i < 3000; ++i) {  // 1000 in the newest bucket, 2000 in the two before it
    events.push_back(Ev("busy", kT0 + 1000 + i * 9, "t", i % 3));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  ASSERT_GE(store_->Buckets().size(), 3u);
  // The buckets whose salts a range decided, that is the buckets it opened.
  std::mutex mu;
  std::set<int64_t> opened;
  QueryOptions q;
  q.threads = 2;
  q.max_concurrent_queries = 64;
  q.last_cache = 0;
  q.salts_decided_hook = [&](int64_t bucket_start_ms) {
    std::lock_guard lock(mu);
    opened.insert(bucket_start_ms);
  };
  auto engine = std::make_unique<QueryEngine>(store_.get(), q);
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int64_t got = 0;
    Status st = engine->RangeEncoded(
        "busy", 0, INT64_MAX, 300, Order::kDesc,
        [](const Event& e, std::string* out) { out->append(std::to_string(e.offset) + ";"); },
        [&](std::string_view, int64_t n) {
          got += n;
          return true;
        });
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(got, 300);
    std::lock_guard lock(mu);
    EXPECT_EQ(opened, std::set<int64_t>{store_->Buckets().back()->start_ms()});
    opened.clear();
  }
}

// A large range with a pool worker reads its first bucket's salts on the pool and merges them on
// its own thread (bucket_range.h); the salts pass their cursors on, so that bucket makes one cursor
// per thread that reads it (2 at most), not one per salt; every later bucket is read whole on one
// thread, one cursor that its salts pass on. Every event comes once, in order.
TEST_F(QueryEngineTest, LargeRangeReadsTheFirstBucketBySaltAndLaterBucketsWholeOnOneThread) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  std::vector<TestEvent> events;
  for (int i = 0; i < 1600; ++i) {  // 250-400 per bucket over 5 buckets, every salt in each
    events.push_back(Ev("dev-x", kT0 + 1000 + i * 25, "t", i % 3));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  const size_t buckets = store_->Buckets().size();
  ASSERT_EQ(buckets, 5u);
  auto engine = NewEngine(/*threads=*/2, 64, QueryOptions().chunk_events);
  const query::QueryWorkStats before = engine->Work();
  int64_t got = 0, last_ts = INT64_MAX;
  bool in_order = true;
  Status st = engine->RangeEncoded(
      "dev-x", 0, INT64_MAX, query::kMaxRangeLimit, Order::kDesc,
      [](const Event& e, std::string* out) { out->append(std::to_string(e.ts_ms) + ";"); },
      [&](std::string_view text, int64_t n) {
        got += n;
        for (size_t at = 0; at < text.size();) {
          const size_t end = text.find(';', at);
          const int64_t ts = std::stoll(std::string(text.substr(at, end - at)));
          in_order = in_order && ts < last_ts;
          last_ts = ts;
          at = end + 1;
        }
        return true;
      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, 1600);
  EXPECT_TRUE(in_order);
  const query::QueryWorkStats after = engine->Work();
  EXPECT_LE(after.iterators_created - before.iterators_created, 2 + (buckets - 1));
  EXPECT_GE(after.iterators_created - before.iterators_created, buckets);
}

// While a large range's thread merges its first bucket, its pool worker already reads the second:
// the first event of the answer is held in the sink until the second bucket's salts are decided,
// which only the worker can do then (bucket_range.h). Bounded wait: it fails rather than hangs.
TEST_F(QueryEngineTest, LargeRangeReadsItsSecondBucketAheadWhileTheFirstIsMerged) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 16));
  std::vector<TestEvent> events;
  for (int i = 0; i < 1600; ++i) {  // 250-400 per bucket over 5 buckets
    events.push_back(Ev("dev-x", kT0 + 1000 + i * 25, "t", i % 3));
  }
  ASSERT_NO_FATAL_FAILURE(Write(events));
  const auto all = store_->Buckets();  // oldest first
  ASSERT_EQ(all.size(), 5u);
  const int64_t second = all[all.size() - 2]->start_ms();  // newest first: the second read
  std::mutex mu;
  std::condition_variable cv;
  bool second_opened = false;
  QueryOptions q;
  q.threads = 2;
  q.max_concurrent_queries = 64;
  q.last_cache = 0;
  q.salts_decided_hook = [&](int64_t bucket_start_ms) {
    if (bucket_start_ms != second) return;
    std::lock_guard lock(mu);
    second_opened = true;
    cv.notify_all();
  };
  auto engine = std::make_unique<QueryEngine>(store_.get(), q);
  bool first_call = true, ahead = false;
  int64_t got = 0;
  Status st = engine->RangeEncoded(
      "dev-x", 0, INT64_MAX, query::kMaxRangeLimit, Order::kDesc,
      [](const Event& e, std::string* out) { out->append(std::to_string(e.ts_ms) + ";"); },
      [&](std::string_view, int64_t n) {
        if (first_call) {
          first_call = false;
          std::unique_lock lock(mu);
          ahead = cv.wait_for(lock, std::chrono::seconds(60), [&] { return second_opened; });
        }
        got += n;
        return true;
      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, 1600);
  EXPECT_TRUE(ahead) << "the second bucket was not opened while the first was merged";
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

// RangeEach: the ascending range with no limit, stopped by its sink (a stream's replay keeps the
// few events it owes out of an id's whole window).
TEST_F(QueryEngineTest, RangeEachReadsEveryEventOldestFirstUntilTheSinkStops) {
  OpenStore();
  auto engine = NewEngine();
  Write(Spread(600));
  Result<std::vector<Event>> range =
      engine->Range("dev-1", 0, kMaxTimeMs, query::kMaxRangeLimit, Order::kAsc);
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->size(), 120u);
  std::vector<Event> each;
  ASSERT_TRUE(engine
                  ->RangeEach("dev-1", 0, kMaxTimeMs,
                              [&](const Event& e) {
                                each.push_back(e);
                                return true;
                              })
                  .ok());
  EXPECT_EQ(each, *range);
  each.clear();
  ASSERT_TRUE(engine
                  ->RangeEach("dev-1", 0, kMaxTimeMs,
                              [&](const Event& e) {
                                each.push_back(e);
                                return each.size() < 7;
                              })
                  .ok());
  EXPECT_EQ(each, std::vector<Event>(range->begin(), range->begin() + 7));
  EXPECT_FALSE(engine->RangeEach("dev-1", 5, 5, [](const Event&) { return true; }).ok());
}

}  // namespace
}  // namespace hotrow::query_engine_test
