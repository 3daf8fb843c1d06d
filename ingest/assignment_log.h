#pragma once

#include <string>
#include <vector>

#include "ingest/start_offset.h"
#include "store/event_store.h"

// The log line an operator reads when partitions are assigned: one per assignment, however many
// partitions it holds. Pure: unit-tested in tests/ingest/assignment_log_test.cc.
namespace hotrow::ingest {

// One partition of an assignment and where it starts (ChooseStartOffset).
struct AssignedStart {
  store::TopicPartition tp;
  StartOffset start;
};

// The assignment's line, after "ingest: ": the partitions grouped by how they start, each group's
// reason once (StartOffset::Describe), groups apart by "; " in the order of their first partition:
//   assigned 16 partitions: events/0-15 from the beginning (auto.offset.reset: nothing stored, ...)
//   assigned 3 partitions: events/0 at 120, events/1 at 98 (store: where the store's records of
//   the partition end); events/2 at 5000 [offsets 100..4999 cold] (window: the first record ...)
// Partitions that start at a logical offset (auto.offset.reset) are named as ranges; those that
// start at an offset each with it and its StartOffset::detail. "following" instead of "assigned"
// for the standby consumer (`standby`). Empty `assigned`: "assigned 0 partitions".
std::string DescribeAssignment(std::vector<AssignedStart> assigned, bool standby);

// "events/0-3,5, other/1": the partitions as ranges, per topic, in order; duplicates once.
std::string DescribePartitionRanges(std::vector<store::TopicPartition> partitions);

}  // namespace hotrow::ingest
