// PartitionOwnership: which partitions an instance owns and which of them it answers for
// (ingest/partition_ownership.h): ready, fresh and with its whole window, judged at every
// snapshot, never latched.

#include "ingest/partition_ownership.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

constexpr int64_t kBeginning = -2;  // RD_KAFKA_OFFSET_BEGINNING
constexpr int64_t kT0 = 1'700'000'000'000;

class PartitionOwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.salts = 1;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    auto store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  // Records a run of t/partition holding every record from `holds_from_ms`.
  void Run(int32_t partition, int64_t holds_from_ms) {
    store::WriteBatchInput batch;
    batch.run_starts[store::TopicPartition{"t", partition}] = {0, holds_from_ms};
    store::WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
  }
  OwnershipOptions Options() {
    OwnershipOptions o;
    o.max_staleness_ms = 5000;
    o.clock = &clock_;
    return o;
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0};
  std::unique_ptr<store::EventStore> store_;
};

TEST_F(PartitionOwnershipTest, ANewOwnerRebuildsThenServesOnlyWhileFresh) {
  Run(3, store::PartitionRun::kHoldsAll);
  PartitionOwnership own(store_.get(), Options());
  own.Assigned("t", 3, kBeginning, /*high_watermark=*/1000);
  OwnershipSnapshot s = own.Snapshot();
  ASSERT_EQ(s.partitions.size(), 1u);
  EXPECT_TRUE(s.partitions[0].rebuilding());
  EXPECT_FALSE(s.IsServing("t", 3));
  EXPECT_EQ(s.Stale(), (std::vector<store::TopicPartition>{{"t", 3}}));

  own.UpdatePosition("t", 3, 400, 1500);
  s = own.Snapshot();
  EXPECT_NEAR(RebuildProgress(s.partitions[0]), 0.4, 1e-9);
  EXPECT_EQ(s.partitions[0].staleness_ms, -1);  // what the broker held at the assignment
  EXPECT_FALSE(s.IsServing("t", 3));

  clock_.Advance(1000);
  own.UpdatePosition("t", 3, 1000, 1600);  // past the assignment's high watermark
  s = own.Snapshot();
  EXPECT_EQ(RebuildProgress(s.partitions[0]), 1.0);
  EXPECT_EQ(s.partitions[0].staleness_ms, 1000);  // 1500 first seen 1 s ago
  EXPECT_TRUE(s.IsServing("t", 3));

  // Nothing stored for 6 s while the broker's end moved on: stale, not latched as serving.
  clock_.Advance(5000);
  s = own.Snapshot();
  EXPECT_EQ(s.partitions[0].staleness_ms, 6000);
  EXPECT_FALSE(s.IsServing("t", 3));
  EXPECT_NE(s.partitions[0].WhyNotServing(5000).find("trails the broker"), std::string::npos);
  own.UpdatePosition("t", 3, 1600, 1600);
  EXPECT_TRUE(own.Snapshot().IsServing("t", 3));
}

TEST_F(PartitionOwnershipTest, StalenessIsTheAgeOfTheOldestRecordTheStoreLacks) {
  Run(0, store::PartitionRun::kHoldsAll);
  PartitionOwnership own(store_.get(), Options());
  own.Assigned("t", 0, 10, 10);
  EXPECT_EQ(own.Snapshot().partitions[0].staleness_ms, 0);
  own.UpdatePosition("t", 0, 10, 20);  // records 10..19 seen at T0
  clock_.Advance(1000);
  own.UpdatePosition("t", 0, 10, 30);  // 20..29 seen at T0 + 1 s
  clock_.Advance(2000);
  EXPECT_EQ(own.Snapshot().partitions[0].staleness_ms, 3000);
  own.UpdatePosition("t", 0, 25, 30);  // lacks 25..29, seen 2 s ago
  EXPECT_EQ(own.Snapshot().partitions[0].staleness_ms, 2000);
  EXPECT_EQ(own.Snapshot().partitions[0].lag(), 5);
  own.UpdatePosition("t", 0, 30, 30);
  EXPECT_EQ(own.Snapshot().partitions[0].staleness_ms, 0);

  // More high watermarks than are kept: the oldest merge, which may only over-state an age.
  for (int i = 1; i <= 200; ++i) {
    clock_.Advance(10);
    own.UpdatePosition("t", 0, 30, 30 + i);
  }
  for (int i = 0; i <= 200; i += 20) {
    own.UpdatePosition("t", 0, 30 + i, 230);
    const int64_t true_age = 2000 - 10 * i;  // record 30 + i was first seen (i + 1) * 10 ms in
    EXPECT_GE(own.Snapshot().partitions[0].staleness_ms, true_age - 10) << i;
  }
}

TEST_F(PartitionOwnershipTest, AnInstanceNotReadyServesNothing) {
  Run(0, store::PartitionRun::kHoldsAll);
  PartitionOwnership own(store_.get(), Options());
  own.Assigned("t", 0, 5, 5);
  EXPECT_TRUE(own.Snapshot().IsServing("t", 0));
  own.SetReadiness(false, "ingestion paused: the disk is full");
  const OwnershipSnapshot s = own.Snapshot();
  EXPECT_FALSE(s.IsServing("t", 0));
  EXPECT_NE(s.partitions[0].WhyNotServing(5000).find("the disk is full"), std::string::npos);
  own.SetReadiness(true, "");
  EXPECT_TRUE(own.Snapshot().IsServing("t", 0));
}

TEST_F(PartitionOwnershipTest, TheWindowIsWholeOnlyOnceItHasPassedSinceAJump) {
  PartitionOwnership own(store_.get(), Options());
  own.Assigned("t", 0, 5, 5);
  EXPECT_FALSE(own.Snapshot().partitions[0].window_complete);  // no run recorded: not known
  Run(0, kT0);  // a jump to the end at T0 (auto.offset.reset=latest)
  EXPECT_FALSE(own.Snapshot().IsServing("t", 0));
  clock_.Advance(store_->options().ttl_ms - 1);
  EXPECT_FALSE(own.Snapshot().partitions[0].window_complete);
  clock_.Advance(1);
  EXPECT_TRUE(own.Snapshot().partitions[0].window_complete);
  EXPECT_TRUE(own.Snapshot().IsServing("t", 0));
}

TEST_F(PartitionOwnershipTest, RevokedIsForgottenAndBumpsTheGeneration) {
  PartitionOwnership own(store_.get(), Options());
  own.Assigned("t", 0, 0, 0);
  const uint64_t g = own.Snapshot().generation;
  own.UpdatePosition("t", 0, 10, 10);
  EXPECT_EQ(own.Snapshot().generation, g);
  own.Revoked("t", 0);
  EXPECT_TRUE(own.Snapshot().partitions.empty());
  EXPECT_GT(own.Snapshot().generation, g);
  own.UpdatePosition("t", 0, 20, 20);  // not owned: ignored
  EXPECT_TRUE(own.Snapshot().partitions.empty());
}

// Routing by key: a partition handed to the standby consumer (which checks nothing it stores) and
// taken back continues the store's run, so it is routable only by the rule for a resume from the
// store's offset (CONTRACT.md "Routing by key"), and never while its partition count is unknown.
TEST_F(PartitionOwnershipTest, APartitionTakenBackFromTheStandbyComesBackUnroutable) {
  Run(0, store::PartitionRun::kHoldsAll);
  PartitionOwnership owner(store_.get(), Options());
  PartitionOwnership standby(store_.get(), Options());
  owner.Assigned("t", 0, kBeginning, /*high_watermark=*/100);
  owner.UpdatePosition("t", 0, 100, 100);
  owner.RouteChecked("t", 0, /*partition_count=*/4, /*checked_from_ms=*/INT64_MIN);
  ASSERT_TRUE(owner.Snapshot().partitions.at(0).routable);

  // Revoked: the standby adopts it (StandbyHandover::Release) and stores records it never checks.
  standby.Adopt(owner, "t", 0);
  owner.Revoked("t", 0);
  EXPECT_FALSE(standby.Snapshot().partitions.at(0).routable);
  EXPECT_EQ(standby.Snapshot().partitions.at(0).route_partitions, 0);
  standby.UpdatePosition("t", 0, 150, 150);

  // Assigned back (StandbyHandover::Take, then Assigned at the store's offset), and the
  // partition count cannot be read: no RouteChecked. It serves, and is not routable, however long.
  owner.Adopt(standby, "t", 0);
  owner.Assigned("t", 0, /*start_offset=*/150, /*high_watermark=*/150);
  OwnershipSnapshot s = owner.Snapshot();
  ASSERT_TRUE(s.IsServing("t", 0));
  EXPECT_FALSE(s.partitions.at(0).routable);
  EXPECT_EQ(s.partitions.at(0).route_partitions, 0);
  clock_.Advance(11 * 60 * 1000);  // past the window (store.ttl 10 min)
  owner.UpdatePosition("t", 0, 150, 150);
  s = owner.Snapshot();
  ASSERT_TRUE(s.IsServing("t", 0));
  EXPECT_FALSE(s.partitions.at(0).routable);

  // The count read: checked from now on, what the store holds from before was not: routable once
  // that has left the window.
  const int64_t checked_from = clock_.NowMs() + 1000;
  owner.RouteChecked("t", 0, 4, checked_from);
  EXPECT_FALSE(owner.Snapshot().partitions.at(0).routable);
  clock_.Advance(11 * 60 * 1000);
  owner.UpdatePosition("t", 0, 150, 150);
  EXPECT_TRUE(owner.Snapshot().partitions.at(0).routable);
}

}  // namespace
}  // namespace hotrow::ingest
