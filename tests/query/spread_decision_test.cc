// Under salt_by: adaptive a per-id read of the store decides which salts of a bucket to read (the
// home salt of a cold id, every salt of one the bucket spread) and then reads them. A write that
// turns the id hot between the decision and the read must be read whole or not at all: never its
// rows in the home salt without those in the others. The engine's salts_decided_hook
// (QueryOptions) writes such a batch right after each decision; every answer must then equal the
// store's answer before that batch or the one after it. Covered: the small path (a cached cursor
// per bucket: latest and ranges up to kSmallQueryLimit), the large range (per-salt streams,
// on the caller alone and with a pool worker) and the series.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/salter.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/temp_dir.h"

namespace hotrow::spread_decision_test {
namespace {

using query::Event;
using query::Order;
using query::QueryEngine;
using query::QueryOptions;
using store::TopicPartition;
using testing::TestEvent;

constexpr int64_t kBucketMs = 10'000;
constexpr int64_t kTtlMs = 60'000;
constexpr int64_t kT0 = 1'700'000'000'000;  // a multiple of kBucketMs
constexpr int kSalts = 16;
const std::string kId = "device-x";
// Rows of other ids, one each, and of kId, before the batch; then the batch's rows of kId. With
// the hot rule below (a fifth of the bucket's rows, at least 8) kId turns hot at its 13th row:
// the batch's first 9 rows go to its home salt, the other 31 over every salt.
constexpr int kOthers = 50;
constexpr int kColdRows = 3;
constexpr int kBatchRows = 40;

class SpreadDecisionTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.salts = kSalts;
    options.salt_by = keying::SaltBy::kAdaptive;
    options.hot = keying::HotRule{0.2, 8};
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();

    std::vector<TestEvent> before;
    for (int i = 0; i < kOthers; ++i) before.push_back(Ev("other-" + std::to_string(i), 10 + i));
    for (int i = 0; i < kColdRows; ++i) before.push_back(Ev(kId, 100 + i));
    ASSERT_NO_FATAL_FAILURE(Write(before));
    ASSERT_FALSE(Bucket().SpreadsId(keying::IdHash(kId)));

    QueryOptions q;
    q.threads = GetParam();
    q.chunk_events = 4;
    q.last_cache = 0;  // reads the store
    plain_ = std::make_unique<QueryEngine>(store_.get(), q);
    q.salts_decided_hook = [this](int64_t bucket_start_ms) {
      if (bucket_start_ms != kT0 || written_.exchange(true)) return;
      std::vector<TestEvent> batch;
      for (int i = 0; i < kBatchRows; ++i) batch.push_back(Ev(kId, 1000 + 10 * i));
      Write(batch);
    };
    hooked_ = std::make_unique<QueryEngine>(store_.get(), q);
  }

  // An event of `id` at kT0 + at_ms on the next offset of partition 0, its field "v" its offset.
  TestEvent Ev(const std::string& id, int64_t at_ms) {
    TestEvent e;
    e.id = id;
    e.ts_ms = kT0 + at_ms;
    e.topic = "t";
    e.partition = 0;
    e.offset = next_offset_++;
    e.payload = "{\"v\":" + std::to_string(e.offset) + "}";
    return e;
  }

  void Write(const std::vector<TestEvent>& events) {
    store::WriteOutcome outcome;
    const Status st = testing::WriteEvents(store_.get(), events, &outcome);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(outcome.stored, events.size());
  }

  const store::Bucket& Bucket() const { return *store_->Buckets().front(); }

  // `query` asked of the engine whose hook writes the batch, against the same query asked of the
  // plain engine before and after that batch.
  template <typename Answer>
  void ExpectWholeOrNothing(const std::function<Answer(QueryEngine*)>& query,
                            const std::function<std::string(const Answer&)>& describe) {
    const Answer before = query(plain_.get());
    const Answer answer = query(hooked_.get());
    ASSERT_TRUE(written_.load()) << "the hook never ran";
    const Answer after = query(plain_.get());
    // The batch did turn the id hot, with rows outside its home salt: the case under test.
    ASSERT_TRUE(Bucket().SpreadsId(keying::IdHash(kId)));
    ASSERT_NE(describe(before), describe(after));
    EXPECT_TRUE(answer == before || answer == after)
        << "read part of a write: " << describe(answer) << "\nbefore it: " << describe(before)
        << "\nafter it: " << describe(after);
  }

  void ExpectRangeWholeOrNothing(int64_t limit, Order order) {
    auto query = [&](QueryEngine* engine) {
      Result<std::vector<Event>> r = engine->Range(kId, kT0, kT0 + kBucketMs, limit, order);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      return r.ok() ? std::move(r).value() : std::vector<Event>();
    };
    auto describe = [](const std::vector<Event>& events) {
      std::string out = std::to_string(events.size()) + " events:";
      for (const Event& e : events) out += " " + std::to_string(e.offset);
      return out;
    };
    ExpectWholeOrNothing<std::vector<Event>>(query, describe);
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0 + kTtlMs / 2};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<QueryEngine> plain_;
  std::unique_ptr<QueryEngine> hooked_;
  std::atomic<bool> written_{false};
  int64_t next_offset_ = 0;
};

TEST_P(SpreadDecisionTest, LatestOnACachedCursorReadsAWriteTurningTheIdHotWholeOrNotAtAll) {
  auto query = [](QueryEngine* engine) {
    Result<std::vector<Event>> r = engine->Latest(kId, 100);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : std::vector<Event>();
  };
  auto describe = [](const std::vector<Event>& events) {
    return std::to_string(events.size()) + " events";
  };
  ExpectWholeOrNothing<std::vector<Event>>(query, describe);
}

TEST_P(SpreadDecisionTest, SmallRangeNewestFirstReadsAWriteTurningTheIdHotWholeOrNotAtAll) {
  ExpectRangeWholeOrNothing(query::kSmallQueryLimit, Order::kDesc);
}

TEST_P(SpreadDecisionTest, SmallRangeOldestFirstReadsAWriteTurningTheIdHotWholeOrNotAtAll) {
  ExpectRangeWholeOrNothing(query::kSmallQueryLimit, Order::kAsc);
}

TEST_P(SpreadDecisionTest, LargeRangeNewestFirstReadsAWriteTurningTheIdHotWholeOrNotAtAll) {
  ExpectRangeWholeOrNothing(1000, Order::kDesc);
}

TEST_P(SpreadDecisionTest, LargeRangeOldestFirstReadsAWriteTurningTheIdHotWholeOrNotAtAll) {
  ExpectRangeWholeOrNothing(1000, Order::kAsc);
}

TEST_P(SpreadDecisionTest, SeriesCountsAWriteTurningTheIdHotWholeOrNotAtAll) {
  auto query = [](QueryEngine* engine) {
    Result<query::SeriesAnswer> r = engine->Series(kId, "v", kT0, kT0 + kBucketMs, 100);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->points : std::vector<query::SeriesPoint>();
  };
  auto describe = [](const std::vector<query::SeriesPoint>& points) {
    uint64_t count = 0;
    for (const query::SeriesPoint& p : points) count += p.count;
    return std::to_string(points.size()) + " points of " + std::to_string(count) + " events";
  };
  ExpectWholeOrNothing<std::vector<query::SeriesPoint>>(query, describe);
}

// One query thread (a bucket's salts read on the caller, one cursor passed on) and two (a pool
// worker reads salts too, each stream its own cursor).
INSTANTIATE_TEST_SUITE_P(, SpreadDecisionTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_threads";
                         });

}  // namespace
}  // namespace hotrow::spread_decision_test
