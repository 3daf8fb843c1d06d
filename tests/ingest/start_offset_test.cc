// ChooseStartOffset: where a newly assigned partition starts, from what the store, the group and
// the broker say. Pure: every case is a table row.

#include "ingest/start_offset.h"

#include <gtest/gtest.h>

namespace hotrow::ingest {
namespace {

constexpr int64_t kBeginning = -2;  // RD_KAFKA_OFFSET_BEGINNING

StartOffsetInputs In(int64_t stored, int64_t committed, bool other, int64_t window) {
  StartOffsetInputs in;
  in.stored = stored;
  in.committed = committed;
  in.committed_by_other_store = other;
  in.window_offset = window;
  in.reset_offset = kBeginning;
  return in;
}

TEST(StartOffsetTest, TheStoreWinsOverAGroupCommitAheadOfIt) {
  // A power cut: the commit reached the group, the unsynced store write did not.
  StartOffset s = ChooseStartOffset(In(100, 250, false, -1));
  EXPECT_EQ(s.offset, 100);
  EXPECT_EQ(s.reason, StartReason::kStore);
  EXPECT_NE(s.why.find("not used"), std::string::npos) << s.why;
}

TEST(StartOffsetTest, TheStoreWinsOverAGroupCommitBehindIt) {
  StartOffset s = ChooseStartOffset(In(100, 40, true, -1));
  EXPECT_EQ(s.offset, 100);
  EXPECT_EQ(s.reason, StartReason::kStore);
  EXPECT_TRUE(s.window_complete);
}

TEST(StartOffsetTest, ACommitOfAnotherStoreAheadOfThisOneDoesNotWin) {
  // Another instance owned the partition meanwhile; its store holds 100..249. This store answers
  // for the partition alone once it owns it again, so it reads 100..249 itself (CONTRACT.md,
  // `cluster.peers`): jumping to 250 would leave a hole in its window.
  StartOffset s = ChooseStartOffset(In(100, 250, true, -1));
  EXPECT_EQ(s.offset, 100);
  EXPECT_EQ(s.reason, StartReason::kStore);
  EXPECT_TRUE(s.window_complete);
  EXPECT_NE(s.why.find("another store"), std::string::npos) << s.why;
}

TEST(StartOffsetTest, ANewOwnerRebuildsTheWindowInsteadOfJumpingToTheGroupsCommit) {
  // Nothing in this store: the group's commit (this store's or another's) is not where its
  // window starts. It replays from the window's start, else from the partition's beginning.
  for (bool other : {false, true}) {
    StartOffset by_time = ChooseStartOffset(In(-1, 70, other, 30));
    EXPECT_EQ(by_time.offset, 30) << other;
    EXPECT_EQ(by_time.reason, StartReason::kWindow) << other;
    EXPECT_TRUE(by_time.window_complete) << other;
    EXPECT_NE(by_time.why.find("not used"), std::string::npos) << by_time.why;
    StartOffset reset = ChooseStartOffset(In(-1, 70, other, -1));
    EXPECT_EQ(reset.offset, kBeginning) << other;
    EXPECT_EQ(reset.reason, StartReason::kReset) << other;
    EXPECT_TRUE(reset.may_read_cold) << other;
    EXPECT_TRUE(reset.window_complete) << other;
  }
}

TEST(StartOffsetTest, AResetToTheEndLeavesTheWindowIncomplete) {
  StartOffsetInputs in = In(-1, -1, false, -1);
  in.reset_offset = -1;  // RD_KAFKA_OFFSET_END: what is already in the window is never read
  StartOffset s = ChooseStartOffset(in);
  EXPECT_EQ(s.offset, -1);
  EXPECT_FALSE(s.window_complete);
}

TEST(StartOffsetTest, AStoredOffsetOlderThanTheWindowStartsAtTheWindow) {
  StartOffset s = ChooseStartOffset(In(100, 100, false, 5000));
  EXPECT_EQ(s.offset, 5000);
  EXPECT_EQ(s.reason, StartReason::kWindow);
  EXPECT_FALSE(s.may_read_cold);
  EXPECT_NE(s.why.find("100..4999"), std::string::npos) << s.why;
}

TEST(StartOffsetTest, AStoredOffsetInsideTheWindowIsKept) {
  for (int64_t window : {0, 99, 100}) {
    StartOffset s = ChooseStartOffset(In(100, -1, false, window));
    EXPECT_EQ(s.offset, 100) << window;
    EXPECT_EQ(s.reason, StartReason::kStore) << window;
    EXPECT_FALSE(s.may_read_cold) << window;
  }
}

TEST(StartOffsetTest, NothingKnownStartsAtTheWindowElseAtTheReset) {
  StartOffset by_time = ChooseStartOffset(In(-1, -1, false, 42));
  EXPECT_EQ(by_time.offset, 42);
  EXPECT_EQ(by_time.reason, StartReason::kWindow);
  StartOffset reset = ChooseStartOffset(In(-1, -1, false, -1));
  EXPECT_EQ(reset.offset, kBeginning);
  EXPECT_EQ(reset.reason, StartReason::kReset);
  EXPECT_TRUE(reset.may_read_cold);
}

TEST(StartOffsetTest, WhenTheBrokerCannotNameTheWindowColdRecordsMayFollow) {
  // The embedded broker answers offsets-for-times with -1: the poller skips cold records on
  // their timestamps (skipped_cold), not as rejected input.
  StartOffset s = ChooseStartOffset(In(100, -1, false, -1));
  EXPECT_EQ(s.offset, 100);
  EXPECT_TRUE(s.may_read_cold);
}

TEST(StartOffsetTest, ExhaustiveNeverAGapInTheStoresRecords) {
  // Over a small grid: the start is never below the store's offset, never below the window, above
  // the store's offset only for the window (what is skipped is cold), never at a group commit the
  // store has not reached, and the window is always complete with a reset to the beginning.
  for (int64_t stored = -1; stored <= 4; ++stored) {
    for (int64_t committed = -1; committed <= 4; ++committed) {
      for (int other = 0; other <= 1; ++other) {
        for (int64_t window = -1; window <= 4; ++window) {
          StartOffset s = ChooseStartOffset(In(stored, committed, other != 0, window));
          const std::string at = std::to_string(stored) + "," + std::to_string(committed) + "," +
                                 std::to_string(other) + "," + std::to_string(window);
          if (stored >= 0) {
            EXPECT_GE(s.offset, stored) << at;
          }
          if (window >= 0) {
            EXPECT_GE(s.offset, window) << at;
          }
          if (stored >= 0 && s.offset > stored) {
            EXPECT_EQ(s.offset, window) << at;
          }
          if (stored < 0 && window < 0) {
            EXPECT_EQ(s.offset, kBeginning) << at;
          }
          EXPECT_TRUE(s.window_complete) << at;
          EXPECT_FALSE(s.why.empty()) << at;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hotrow::ingest
