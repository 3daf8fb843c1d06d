// DescribeAssignment: the one log line of an assignment, however many partitions it holds. Pure:
// starts made by ChooseStartOffset itself, as the rebalance makes them.

#include "ingest/assignment_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hotrow::ingest::assignment_log_test {
namespace {

size_t Count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

StartOffsetInputs In(int64_t stored, TimeOffset window, int64_t end = -1,
                     int64_t reset = kOffsetBeginning) {
  StartOffsetInputs in;
  in.stored = stored;
  in.window = window;
  in.end = end;
  in.reset_offset = reset;
  return in;
}

AssignedStart At(const std::string& topic, int32_t partition, const StartOffsetInputs& in) {
  return AssignedStart{store::TopicPartition{topic, partition}, ChooseStartOffset(in)};
}

TEST(AssignmentLogTest, SixteenPartitionsFromTheBeginningAreOneRangeAndTheReasonOnce) {
  std::vector<AssignedStart> assigned;
  // In the order librdkafka may hand them: not sorted.
  for (int32_t p : {3, 0, 15, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}) {
    assigned.push_back(At("events", p, In(-1, TimeOffset::Unknown())));
  }
  const std::string line = DescribeAssignment(assigned, /*standby=*/false);
  const std::string why = ChooseStartOffset(In(-1, TimeOffset::Unknown())).Describe();
  EXPECT_EQ(line, "assigned 16 partitions: events/0-15 from the beginning (" + why + ")");
  EXPECT_EQ(Count(line, "auto.offset.reset"), 1u) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

TEST(AssignmentLogTest, PartitionsAreGroupedByHowTheyStartEachReasonOnce) {
  const std::vector<AssignedStart> assigned = {
      At("events", 0, In(120, TimeOffset::Unknown())),  // the store's offset
      At("events", 1, In(100, TimeOffset::At(5000))),   // the window, past the store's
      At("events", 2, In(-1, TimeOffset::Unknown())),   // auto.offset.reset: beginning
      At("events", 3, In(98, TimeOffset::Unknown())),   // the store's offset
      At("events", 4, In(-1, TimeOffset::Unknown())),   // auto.offset.reset: beginning
      At("events", 5, In(-1, TimeOffset::Unknown())),   // auto.offset.reset: beginning
      At("events", 7, In(-1, TimeOffset::Unknown())),   // auto.offset.reset: beginning
      At("events", 8, In(-1, TimeOffset::Unknown(), -1, kOffsetEnd)),  // latest: another group
      At("events", 9, In(7, TimeOffset::NoneNewer(), 900)),            // the end
      At("events", 10, In(200, TimeOffset::At(6000))),  // the window, past the store's
      At("other", 0, In(-1, TimeOffset::Unknown())),    // auto.offset.reset: beginning
  };
  const std::string line = DescribeAssignment(assigned, /*standby=*/false);
  const std::string store = ChooseStartOffset(In(120, TimeOffset::Unknown())).Describe();
  const std::string window = ChooseStartOffset(In(100, TimeOffset::At(5000))).Describe();
  const std::string beginning = ChooseStartOffset(In(-1, TimeOffset::Unknown())).Describe();
  const std::string latest =
      ChooseStartOffset(In(-1, TimeOffset::Unknown(), -1, kOffsetEnd)).Describe();
  const std::string end = ChooseStartOffset(In(7, TimeOffset::NoneNewer(), 900)).Describe();
  EXPECT_EQ(line, "assigned 11 partitions: events/0 at 120, events/3 at 98 (" + store +
                      "); events/1 at 5000 [offsets 100..4999 cold], events/10 at 6000 [offsets "
                      "200..5999 cold] (" +
                      window + "); events/2,4-5,7, other/0 from the beginning (" + beginning +
                      "); events/8 from the end (" + latest +
                      "); events/9 at 900 [the store's offset 7] (" + end + ")");
  for (const std::string& reason : {store, window, beginning, latest, end}) {
    EXPECT_EQ(Count(line, reason), 1u) << reason << "\n" << line;
  }
}

TEST(AssignmentLogTest, OnePartitionTheStandbyAndNone) {
  EXPECT_EQ(DescribeAssignment({At("t", 4, In(10, TimeOffset::Unknown()))}, /*standby=*/true),
            "following 1 partition: t/4 at 10 (" +
                ChooseStartOffset(In(10, TimeOffset::Unknown())).Describe() + ")");
  EXPECT_EQ(DescribeAssignment({}, false), "assigned 0 partitions");
}

TEST(AssignmentLogTest, RangesPerTopicInOrderDuplicatesOnce) {
  using TP = store::TopicPartition;
  EXPECT_EQ(DescribePartitionRanges({}), "");
  EXPECT_EQ(DescribePartitionRanges({TP{"a", 0}}), "a/0");
  EXPECT_EQ(DescribePartitionRanges({TP{"b", 2}, TP{"a", 1}, TP{"a", 0}, TP{"a", 3}, TP{"a", 1},
                                     TP{"b", 0}, TP{"b", 1}, TP{"a", 5}, TP{"a", 4}}),
            "a/0-1,3-5, b/0-2");
  EXPECT_EQ(DescribePartitionRanges({TP{"a", 0}, TP{"a", 2}, TP{"a", 4}}), "a/0,2,4");
}

}  // namespace
}  // namespace hotrow::ingest::assignment_log_test
