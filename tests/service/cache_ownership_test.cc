// CacheOwnership (service/cache_ownership.h): the partitions an instance stops owning leave its
// last-N cache, those revoked and assigned back between two polls stay, and every answer stays the
// store's.

#include "service/cache_ownership.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "tests/support/event_gen.h"
#include "tests/support/temp_dir.h"

namespace hotrow::service {
namespace {

constexpr int64_t kNow = 1'700'000'060'000;

// A store with two engines over it: `engine` with the last-N cache, `reads_store` without, so
// that every cached answer can be compared with the store's.
class CacheOwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.salts = 4;
    options.wall_clock = &clock_;
    Result<std::unique_ptr<store::EventStore>> opened = store::EventStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
    query::QueryOptions q;
    q.threads = 1;
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), q);
    q.last_cache = 0;
    reads_store_ = std::make_unique<query::QueryEngine>(store_.get(), q);
    engine_->WaitForCacheRebuild();
  }

  testing::TempDir dir_;
  ManualClock clock_{kNow};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  std::unique_ptr<query::QueryEngine> reads_store_;
};

TEST_F(CacheOwnershipTest, PartitionsNoLongerOwnedLeaveTheCacheAndAnswersStayTheStores) {
  query::QueryEngine& engine = *engine_;
  query::QueryEngine& reads_store = *reads_store_;
  ingest::PartitionOwnership ownership(store_.get());
  CacheOwnership sync(&ownership, &engine, store_.get());
  ownership.Assigned("t", 0, 0, 0);
  ownership.Assigned("t", 1, 0, 0);
  EXPECT_EQ(sync.Poll(), 0u);

  std::vector<testing::TestEvent> events;
  for (int i = 0; i < 12; ++i) {
    events.push_back(
        {"d", kNow - 30'000 + i * 100, "t", i % 2, i / 2, "{\"i\":" + std::to_string(i) + "}"});
  }
  store::WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store_.get(), events, &outcome).ok());
  const uint64_t bytes = engine.Cache().cache.bytes;

  // Revoked and assigned back before the next poll: nothing is forgotten.
  ownership.Revoked("t", 0);
  ownership.Assigned("t", 0, 6, 6);
  EXPECT_EQ(sync.Poll(), 0u);
  EXPECT_EQ(engine.Cache().cache.bytes, bytes);

  ownership.Revoked("t", 1);
  EXPECT_EQ(sync.Poll(), 1u);
  EXPECT_LT(engine.Cache().cache.bytes, bytes);
  // This engine has no partition filter (a single instance's answers hold every stored row):
  // the cache now misses what it forgot and the store answers.
  for (int n = 1; n <= 12; ++n) {
    Result<std::vector<query::Event>> got = engine.Latest("d", n);
    Result<std::vector<query::Event>> want = reads_store.Latest("d", n);
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_EQ(*got, *want) << "n=" << n;
  }
  EXPECT_EQ(sync.Poll(), 0u);  // the generation did not move
}

// cluster.standby_replicas: a partition the owner gives up and the standby continues
// (StandbyHandover::Release: the standby's ownership adopts it before the owner revokes it) keeps
// its rows, and an answer read as a standby (a filter of the followed partitions) is the store's;
// a partition neither owned nor followed leaves the cache.
TEST_F(CacheOwnershipTest, APartitionTheStandbyFollowsKeepsItsRowsAndItsAnswersAreTheStores) {
  query::QueryEngine& engine = *engine_;
  query::QueryEngine& reads_store = *reads_store_;
  ingest::PartitionOwnership owned(store_.get());
  ingest::PartitionOwnership followed(store_.get());
  CacheOwnership sync(&owned, &engine, store_.get());
  sync.set_followed(&followed);
  owned.Assigned("t", 0, 0, 0);
  owned.Assigned("t", 1, 0, 0);
  followed.Assigned("t", 2, 0, 0);
  EXPECT_EQ(sync.Poll(), 0u);

  std::vector<testing::TestEvent> events;
  for (int i = 0; i < 18; ++i) {
    events.push_back(
        {"d", kNow - 30'000 + i * 100, "t", i % 3, i / 3, "{\"i\":" + std::to_string(i) + "}"});
  }
  store::WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store_.get(), events, &outcome).ok());
  const uint64_t bytes = engine.Cache().cache.bytes;

  // t/1 handed from the owner to the standby: held throughout, nothing forgotten.
  followed.Adopt(owned, "t", 1);
  owned.Revoked("t", 1);
  EXPECT_EQ(sync.Poll(), 0u) << "a partition the standby continues was forgotten";
  EXPECT_EQ(engine.Cache().cache.bytes, bytes);

  // What a standby answer reads (?standby=t:1,t:2): the followed partitions only.
  Result<uint16_t> topic = store_.get()->TopicNumber("t");
  ASSERT_TRUE(topic.ok());
  const query::PartitionFilter standby = [t = *topic](uint16_t number, int32_t partition) {
    return number == t && (partition == 1 || partition == 2);
  };
  for (int n = 1; n <= 18; ++n) {
    Result<std::vector<query::Event>> got = engine.Latest("d", n, &standby);
    Result<std::vector<query::Event>> want = reads_store.Latest("d", n, &standby);
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_EQ(*got, *want) << "n=" << n;
  }

  // No longer followed either: forgotten.
  followed.Revoked("t", 2);
  EXPECT_EQ(sync.Poll(), 1u);
  EXPECT_LT(engine.Cache().cache.bytes, bytes);
  for (int n = 1; n <= 18; ++n) {
    EXPECT_EQ(*engine.Latest("d", n), *reads_store.Latest("d", n)) << "n=" << n;
  }
}

}  // namespace
}  // namespace hotrow::service
