// A query's partition filter (QueryEngine): a query returns only the rows of the partitions the filter
// accepts, and a filtered-out partition never uses up a latest-N or a limit (cluster mode: an
// instance answers only for the partitions it owns, whatever else its store still holds).

#include <gtest/gtest.h>

// GCC 12 reports a false -Wrestrict in std::string's inlined copies here (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

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

namespace hotrow::partition_filter_test {
namespace {

using query::Event;
using query::Order;
using testing::TestEvent;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kTtlMs = 60'000;

class PartitionFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = kTtlMs;
    options.bucket_ms = 10'000;
    options.salts = 4;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    auto opened = store::EventStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();

    // Partitions 0..3 of topic t; the newest events of every id are in partition 0, which the
    // filter refuses: a filter applied after the limit would come back short.
    std::map<int32_t, int64_t> next;
    std::vector<TestEvent> events;
    for (int i = 0; i < 400; ++i) {
      TestEvent e;
      e.id = "dev-";
      e.id += std::to_string(i % 4);
      e.partition = i < 100 ? (i % 3) + 1 : 0;
      e.ts_ms = kT0 + 1000 + i * 100;
      e.topic = "t";
      e.offset = next[e.partition]++;
      e.payload = "{\"i\":";
      e.payload += std::to_string(i);
      e.payload += '}';
      events.push_back(e);
    }
    store::WriteOutcome outcome;
    ASSERT_TRUE(testing::WriteEvents(store_.get(), events, &outcome).ok());
    ASSERT_EQ(outcome.stored, events.size());
    auto number = store_->TopicNumber("t");
    ASSERT_TRUE(number.ok());
    topic_number_ = number.value();
    for (const TestEvent& e : events) {
      if (accepted_.count(e.partition) == 0) continue;
      oracle_.Add(Event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload}, topic_number_);
    }

    query::QueryOptions q;
    q.threads = 2;
    q.chunk_events = 3;
    filter_ = [this](uint16_t topic, int32_t partition) {
      ++filter_calls_;
      return topic == topic_number_ && accepted_.count(partition) != 0;
    };
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), q);
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0 + kTtlMs};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  uint16_t topic_number_ = 0;
  const std::set<int32_t> accepted_ = {1, 3};
  testing::Oracle oracle_;
  query::PartitionFilter filter_;
  std::atomic<int> filter_calls_{0};
};

TEST_F(PartitionFilterTest, LatestAndRangeReturnOnlyAcceptedPartitionsAndAreNeverShort) {
  const int64_t window = store_->WindowStartMs();
  for (int n : {1, 5, 20, 300}) {
    auto got = engine_->Latest("dev-1", n, &filter_);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(testing::DiffEvents(oracle_.Latest("dev-1", n, window), got.value()), "") << n;
  }
  for (int64_t limit : {3, 1000}) {
    for (Order order : {Order::kDesc, Order::kAsc}) {
      auto got = engine_->Range("dev-3", kT0, kT0 + kTtlMs, limit, order, &filter_);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(
          testing::DiffEvents(oracle_.Range("dev-3", kT0, kT0 + kTtlMs, limit, order, window),
                              got.value()),
          "")
          << limit;
    }
  }
  EXPECT_GT(filter_calls_.load(), 0);
}

TEST_F(PartitionFilterTest, ScanReturnsOnlyAcceptedPartitions) {
  std::vector<Event> got;
  Status st = engine_->Scan(
      kT0, kT0 + kTtlMs, query::kNoLimit,
      [&](const Event& e) {
        got.push_back(e);
        return true;
      },
      &filter_);
  ASSERT_TRUE(st.ok()) << st.ToString();
  testing::Oracle::SortCanonical(&got);
  EXPECT_EQ(testing::DiffEvents(oracle_.Scan(kT0, kT0 + kTtlMs, store_->WindowStartMs()), got),
            "");
}

}  // namespace
}  // namespace hotrow::partition_filter_test
