// Ties in time across topics (CONTRACT.md "HTTP API": ties in ts by (topic, partition, offset), in
// the direction of ts, topics by name): one store whose topic numbers run against name order
// ("b" seen first) orders them by name on every path (the small per-id path, the per-salt pool
// path, the index), so that it agrees with the cluster's merge and with any other store.

#include "query/topic_order.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "query/index_query.h"
#include "query/query_engine.h"
#include "tests/support/event_gen.h"
#include "tests/support/temp_dir.h"

namespace hotrow::query {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

class TopicOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.salts = 4;
    options.wall_clock = &clock_;
    options.index_fields = {"site"};
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    auto store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    // "b" first: number 0; "a" then: number 1. Two partitions each, two offsets each, one time.
    store::WriteBatchInput batch;
    for (const std::string topic : {"b", "a"}) {
      for (int32_t p = 0; p < 2; ++p) {
        for (int64_t offset = 0; offset < 2; ++offset) {
          testing::TestEvent e{
              "dev", kT0 + 5, topic,
              p,     offset,  "\"" + topic + std::to_string(p) + std::to_string(offset) + "\""};
          Result<store::Row> row = testing::MakeRow(store_.get(), e);
          ASSERT_TRUE(row.ok());
          row->index.push_back({"site", "s"});
          batch.rows.push_back(std::move(row).value());
        }
      }
    }
    store::WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
    ASSERT_EQ(outcome.stored, 8u);
    QueryOptions q;
    q.threads = 2;
    engine_ = std::make_unique<QueryEngine>(store_.get(), q);
  }

  static std::vector<std::string> Payloads(const std::vector<Event>& events) {
    std::vector<std::string> out;
    for (const Event& e : events) out.push_back(e.payload.substr(1, 3));
    return out;
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0 + 1000};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<QueryEngine> engine_;
};

TEST_F(TopicOrderTest, RanksFollowNamesNotNumbers) {
  const TopicOrder order(*store_);
  EXPECT_FALSE(order.InNumberOrder());
  EXPECT_LT(order.Rank(*store_->TopicNumber("a")), order.Rank(*store_->TopicNumber("b")));
  EXPECT_GT(order.Rank(7), order.Rank(1));  // a number given later ranks after the known ones
}

TEST_F(TopicOrderTest, EveryPathOrdersTiesByTopicName) {
  const std::vector<std::string> desc = {"b11", "b10", "b01", "b00", "a11", "a10", "a01", "a00"};
  const std::vector<std::string> asc(desc.rbegin(), desc.rend());
  for (int n = 1; n <= 8; ++n) {
    const std::vector<std::string> want_desc(desc.begin(), desc.begin() + n);
    const std::vector<std::string> want_asc(asc.begin(), asc.begin() + n);
    Result<std::vector<Event>> latest = engine_->Latest("dev", n);  // the small path
    ASSERT_TRUE(latest.ok());
    EXPECT_EQ(Payloads(*latest), want_desc) << n;
    for (int64_t limit : {int64_t{n}, int64_t{n} + kSmallQueryLimit}) {  // both paths
      Result<std::vector<Event>> range = engine_->Range("dev", kT0, kT0 + 10, limit, Order::kAsc);
      ASSERT_TRUE(range.ok());
      if (limit == n) {
        EXPECT_EQ(Payloads(*range), want_asc) << limit;
      }
      Result<std::vector<Event>> back = engine_->Range("dev", kT0, kT0 + 10, limit, Order::kDesc);
      ASSERT_TRUE(back.ok());
      if (limit == n) {
        EXPECT_EQ(Payloads(*back), want_desc) << limit;
      }
      if (limit > n) {
        EXPECT_EQ(Payloads(*range), asc) << limit;
        EXPECT_EQ(Payloads(*back), desc) << limit;
      }
    }
    const IndexQuery index(store_.get(), nullptr);
    Result<IndexAnswer> by_index = index.Latest("site", "s", n);
    ASSERT_TRUE(by_index.ok());
    EXPECT_EQ(Payloads(by_index->events), want_desc) << n;
    Result<IndexAnswer> by_index_asc = index.Range("site", "s", kT0, kT0 + 10, n, Order::kAsc);
    ASSERT_TRUE(by_index_asc.ok());
    EXPECT_EQ(Payloads(by_index_asc->events), want_asc) << n;
  }
}

}  // namespace
}  // namespace hotrow::query
