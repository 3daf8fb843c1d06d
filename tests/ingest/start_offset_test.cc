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
  EXPECT_NE(s.why.find("ignored"), std::string::npos) << s.why;
}

TEST(StartOffsetTest, TheStoreWinsOverAGroupCommitBehindIt) {
  StartOffset s = ChooseStartOffset(In(100, 40, true, -1));
  EXPECT_EQ(s.offset, 100);
  EXPECT_EQ(s.reason, StartReason::kStore);
}

TEST(StartOffsetTest, ACommitOfAnotherStoreAheadOfThisOneWins) {
  // Another instance owned the partition meanwhile; its store holds 100..249.
  StartOffset s = ChooseStartOffset(In(100, 250, true, -1));
  EXPECT_EQ(s.offset, 250);
  EXPECT_EQ(s.reason, StartReason::kOtherStore);
}

TEST(StartOffsetTest, TheGroupsOffsetWhenTheStoreHasNone) {
  StartOffset s = ChooseStartOffset(In(-1, 70, false, -1));
  EXPECT_EQ(s.offset, 70);
  EXPECT_EQ(s.reason, StartReason::kGroup);
  EXPECT_TRUE(s.may_read_cold);
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

TEST(StartOffsetTest, ExhaustiveNeverBehindTheStoreUnlessAnotherStoreHoldsTheGap) {
  // Over a small grid: the start is never below the store's offset, never below the window, and
  // above the store's offset only for the window or another store's commit.
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
            EXPECT_TRUE(s.offset == window || (other != 0 && s.offset == committed)) << at;
          }
          EXPECT_FALSE(s.why.empty()) << at;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hotrow::ingest
