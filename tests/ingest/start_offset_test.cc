// ChooseStartOffset: where a newly assigned partition starts, from what the store and the broker
// say. Pure: every case is a table row, and a grid over every kind of answer.

#include "ingest/start_offset.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hotrow::ingest {
namespace {

StartOffsetInputs In(int64_t stored, TimeOffset window, int64_t end = -1,
                     int64_t reset = kOffsetBeginning) {
  StartOffsetInputs in;
  in.stored = stored;
  in.window = window;
  in.end = end;
  in.reset_offset = reset;
  return in;
}

size_t Count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST(StartOffsetTest, TheStoreWinsWhenTheBrokerCannotPlaceTheWindow) {
  // Whatever the group committed (it is not an input at all): a power cut may have kept the
  // commit and lost the store's unsynced write, and another store's commit does not hold this
  // store's window.
  StartOffset s = ChooseStartOffset(In(100, TimeOffset::Unknown()));
  EXPECT_EQ(s.offset, 100);
  EXPECT_EQ(s.reason, StartReason::kStore);
  EXPECT_TRUE(s.window_complete);
  EXPECT_TRUE(s.may_read_cold);
}

TEST(StartOffsetTest, AStoredOffsetOlderThanTheWindowStartsAtTheWindow) {
  StartOffset s = ChooseStartOffset(In(100, TimeOffset::At(5000)));
  EXPECT_EQ(s.offset, 5000);
  EXPECT_EQ(s.reason, StartReason::kWindow);
  EXPECT_FALSE(s.may_read_cold);
  EXPECT_TRUE(s.window_complete);
  EXPECT_NE(s.detail.find("100..4999"), std::string::npos) << s.detail;
}

TEST(StartOffsetTest, AStoredOffsetInsideTheWindowIsKept) {
  for (int64_t window : {0, 99, 100}) {
    StartOffset s = ChooseStartOffset(In(100, TimeOffset::At(window)));
    EXPECT_EQ(s.offset, 100) << window;
    EXPECT_EQ(s.reason, StartReason::kStore) << window;
    EXPECT_FALSE(s.may_read_cold) << window;
  }
}

TEST(StartOffsetTest, NoRecordNewerThanTheWindowStartsAtTheEndAskedBefore) {
  // The broker answered offsets-for-times with -1: nothing is that new. The partition starts at
  // the end asked just before (records arriving after it are read), with a complete window (an
  // empty one), and reads nothing cold.
  StartOffset fresh = ChooseStartOffset(In(-1, TimeOffset::NoneNewer(), 7000));
  EXPECT_EQ(fresh.offset, 7000);
  EXPECT_EQ(fresh.reason, StartReason::kEnd);
  EXPECT_TRUE(fresh.window_complete);
  EXPECT_FALSE(fresh.may_read_cold);
  StartOffset behind = ChooseStartOffset(In(100, TimeOffset::NoneNewer(), 7000));
  EXPECT_EQ(behind.offset, 7000);
  EXPECT_EQ(behind.reason, StartReason::kEnd);
  StartOffset at_end = ChooseStartOffset(In(7000, TimeOffset::NoneNewer(), 7000));
  EXPECT_EQ(at_end.offset, 7000);
  EXPECT_EQ(at_end.reason, StartReason::kStore);
  EXPECT_FALSE(at_end.may_read_cold);
}

TEST(StartOffsetTest, NoRecordNewerWithoutAKnownEndIsReadAsUnknown) {
  // The logical end would skip records produced between the two questions: never used.
  StartOffset s = ChooseStartOffset(In(-1, TimeOffset::NoneNewer(), -1));
  EXPECT_EQ(s.offset, kOffsetBeginning);
  EXPECT_EQ(s.reason, StartReason::kReset);
  EXPECT_TRUE(s.may_read_cold);
}

TEST(StartOffsetTest, NothingKnownStartsAtTheReset) {
  StartOffset beginning = ChooseStartOffset(In(-1, TimeOffset::Unknown()));
  EXPECT_EQ(beginning.offset, kOffsetBeginning);
  EXPECT_EQ(beginning.reason, StartReason::kReset);
  EXPECT_TRUE(beginning.may_read_cold);
  EXPECT_TRUE(beginning.window_complete);
  // latest: what is already in the window is never read.
  StartOffset latest = ChooseStartOffset(In(-1, TimeOffset::Unknown(), 50, kOffsetEnd));
  EXPECT_EQ(latest.offset, kOffsetEnd);
  EXPECT_FALSE(latest.window_complete);
  // error: librdkafka starts at the group's commit, which does not hold this store's window.
  StartOffset error = ChooseStartOffset(In(-1, TimeOffset::Unknown(), 50, kOffsetInvalid));
  EXPECT_EQ(error.offset, kOffsetInvalid);
  EXPECT_FALSE(error.window_complete);
}

TEST(StartOffsetTest, TheLogLineNamesTheReasonOnce) {
  // "assigned events/0 from the beginning (auto.offset.reset: nothing stored, ...)".
  for (const StartOffset& s : {ChooseStartOffset(In(-1, TimeOffset::Unknown())),
                               ChooseStartOffset(In(-1, TimeOffset::Unknown(), -1, kOffsetEnd)),
                               ChooseStartOffset(In(5, TimeOffset::Unknown())),
                               ChooseStartOffset(In(5, TimeOffset::At(9))),
                               ChooseStartOffset(In(5, TimeOffset::NoneNewer(), 9))}) {
    const std::string line = s.Describe();
    const std::string name = StartReasonName(s.reason);
    EXPECT_EQ(line.rfind(name + ": ", 0), 0u) << line;
    EXPECT_EQ(Count(line, name + ": "), 1u) << line;
    EXPECT_NE(line.substr(name.size() + 2).rfind(name, 0), 0u) << line;
    if (s.reason == StartReason::kReset) {
      EXPECT_EQ(Count(line, name), 1u) << line;
    }
  }
}

TEST(StartOffsetTest, ExhaustiveNeverAGapInTheStoresRecords) {
  // Over a grid of stored offsets, every kind of broker answer, ends and resets: the start is
  // never below the store's offset, never below the window, above the store's offset only for
  // the window or the end (what is skipped is cold), and the window is complete exactly when the
  // start cannot skip a record of it; cold records may follow exactly when the broker did not
  // place the start at or after the window.
  std::vector<TimeOffset> answers = {TimeOffset::Unknown(), TimeOffset::NoneNewer()};
  for (int64_t w = 0; w <= 4; ++w) answers.push_back(TimeOffset::At(w));
  for (int64_t stored = -1; stored <= 5; ++stored) {
    for (const TimeOffset& window : answers) {
      for (int64_t end = -1; end <= 5; ++end) {
        if (window.kind == TimeOffset::Kind::kOffset && end >= 0 && window.offset > end) continue;
        for (int64_t reset : {kOffsetBeginning, kOffsetEnd, kOffsetInvalid}) {
          const StartOffset s = ChooseStartOffset(In(stored, window, end, reset));
          const std::string at = std::to_string(stored) + "," +
                                 std::to_string(static_cast<int>(window.kind)) + "/" +
                                 std::to_string(window.offset) + "," + std::to_string(end) + "," +
                                 std::to_string(reset);
          const bool placed = window.kind == TimeOffset::Kind::kOffset ||
                              (window.kind == TimeOffset::Kind::kNoneNewer && end >= 0);
          if (stored >= 0) {
            EXPECT_GE(s.offset, stored) << at;
            if (s.offset > stored) {
              EXPECT_TRUE(s.reason == StartReason::kWindow || s.reason == StartReason::kEnd) << at;
            }
          }
          if (window.kind == TimeOffset::Kind::kOffset) {
            EXPECT_GE(s.offset, window.offset) << at;
          }
          if (window.kind == TimeOffset::Kind::kNoneNewer && end >= 0) {
            EXPECT_GE(s.offset, end) << at;
          }
          if (stored < 0 && !placed) {
            EXPECT_EQ(s.offset, reset) << at;
            EXPECT_EQ(s.window_complete, reset == kOffsetBeginning) << at;
          } else {
            EXPECT_GE(s.offset, 0) << at;
            EXPECT_TRUE(s.window_complete) << at;
          }
          EXPECT_EQ(s.may_read_cold, !placed) << at;
          EXPECT_FALSE(s.why.empty()) << at;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hotrow::ingest
