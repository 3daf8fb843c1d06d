// PartitionOwnership: which partitions an instance owns and which of them it answers for.

#include "ingest/partition_ownership.h"

#include <gtest/gtest.h>

namespace hotrow::ingest {
namespace {

constexpr int64_t kBeginning = -2;  // RD_KAFKA_OFFSET_BEGINNING

TEST(PartitionOwnershipTest, ReachedCatchUpNeedsAKnownTargetAndPosition) {
  EXPECT_TRUE(ReachedCatchUp(kBeginning, 0, -1));  // empty partition
  EXPECT_FALSE(ReachedCatchUp(kBeginning, -1, 100));
  EXPECT_FALSE(ReachedCatchUp(kBeginning, 100, -1));
  EXPECT_FALSE(ReachedCatchUp(kBeginning, 100, 99));
  EXPECT_TRUE(ReachedCatchUp(kBeginning, 100, 100));
  EXPECT_TRUE(ReachedCatchUp(120, 100, 120));  // started past the target already
}

TEST(PartitionOwnershipTest, ANewOwnerRebuildsThenServes) {
  PartitionOwnership own;
  own.Assigned("t", 3, kBeginning, /*window_complete=*/true, /*high_watermark=*/1000);
  OwnershipSnapshot s = own.Snapshot();
  ASSERT_EQ(s.partitions.size(), 1u);
  EXPECT_TRUE(s.partitions[0].rebuilding());
  EXPECT_FALSE(s.IsServing("t", 3));
  EXPECT_TRUE(s.Serving().empty());
  EXPECT_TRUE(own.AnyRebuilding());

  own.UpdatePosition("t", 3, 400, 1500);
  s = own.Snapshot();
  EXPECT_NEAR(RebuildProgress(s.partitions[0]), 0.4, 1e-9);
  EXPECT_FALSE(s.IsServing("t", 3));

  own.UpdatePosition("t", 3, 1000, 1600);  // the target is the watermark seen at assignment
  s = own.Snapshot();
  EXPECT_TRUE(s.IsServing("t", 3));
  EXPECT_EQ(RebuildProgress(s.partitions[0]), 1.0);
  EXPECT_FALSE(own.AnyRebuilding());
  // Latched: a position report that is older never takes it back.
  own.UpdatePosition("t", 3, 10, 2000);
  EXPECT_TRUE(own.Snapshot().IsServing("t", 3));
}

TEST(PartitionOwnershipTest, AnIncompleteWindowNeverServes) {
  PartitionOwnership own;
  own.Assigned("t", 0, -1, /*window_complete=*/false, 0);
  const OwnershipSnapshot s = own.Snapshot();
  EXPECT_FALSE(s.partitions[0].rebuilding());
  EXPECT_FALSE(s.IsServing("t", 0));
}

TEST(PartitionOwnershipTest, AnUnknownWatermarkIsLearntFromTheFirstReport) {
  PartitionOwnership own;
  own.Assigned("t", 1, 50, true, -1);
  EXPECT_FALSE(own.Snapshot().IsServing("t", 1));  // position 50 of an unknown end
  own.UpdatePosition("t", 1, 60, 80);
  EXPECT_FALSE(own.Snapshot().IsServing("t", 1));
  own.UpdatePosition("t", 1, 80, 90);
  EXPECT_TRUE(own.Snapshot().IsServing("t", 1));
}

TEST(PartitionOwnershipTest, RevocationEndsServingAndBumpsTheGeneration) {
  PartitionOwnership own;
  own.Assigned("t", 0, 10, true, 10);
  own.Assigned("t", 1, 0, true, 0);
  const OwnershipSnapshot before = own.Snapshot();
  EXPECT_EQ(before.Serving().size(), 2u);
  own.UpdatePosition("t", 0, 11, 11);  // progress keeps the generation
  EXPECT_EQ(own.Snapshot().generation, before.generation);
  own.Revoked("t", 0);
  own.Revoked("t", 7);  // not owned: ignored
  const OwnershipSnapshot after = own.Snapshot();
  EXPECT_NE(after.generation, before.generation);
  EXPECT_FALSE(after.IsServing("t", 0));
  EXPECT_TRUE(after.IsServing("t", 1));
  own.UpdatePosition("t", 0, 100, 100);  // a late report of a revoked partition
  EXPECT_EQ(own.Snapshot().partitions.size(), 1u);
}

TEST(PartitionOwnershipTest, ReassignmentRestartsTheRebuild) {
  PartitionOwnership own;
  own.Assigned("t", 2, kBeginning, true, 100);
  own.Assigned("t", 2, 40, true, 200);  // assigned again (no revocation seen)
  EXPECT_TRUE(own.AnyRebuilding());
  own.UpdatePosition("t", 2, 200, 200);
  EXPECT_FALSE(own.AnyRebuilding());
  own.Revoked("t", 2);
  EXPECT_FALSE(own.AnyRebuilding());
}

}  // namespace
}  // namespace hotrow::ingest
