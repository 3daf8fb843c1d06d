#include "ingest/assignment_log.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace hotrow::ingest {
namespace {

bool IsLogical(int64_t offset) { return offset < 0; }

// "from the beginning" for a logical offset; "" for an offset (each partition names its own).
std::string DescribeLogical(int64_t offset) {
  switch (offset) {
    case kOffsetBeginning:
      return "from the beginning";
    case kOffsetEnd:
      return "from the end";
    case kOffsetInvalid:
      return "from the group's committed offset";
    default:
      return "from offset " + std::to_string(offset);
  }
}

// Partitions that start the same way: the same reason and why, and the same logical offset (all
// offsets that are not logical count as one).
struct GroupKey {
  StartReason reason;
  std::string why;
  int64_t logical;
  friend bool operator==(const GroupKey&, const GroupKey&) = default;
};

GroupKey KeyOf(const StartOffset& start) {
  return GroupKey{start.reason, start.why, IsLogical(start.offset) ? start.offset : 0};
}

}  // namespace

std::string DescribePartitionRanges(std::vector<store::TopicPartition> partitions) {
  std::sort(partitions.begin(), partitions.end());
  partitions.erase(std::unique(partitions.begin(), partitions.end()), partitions.end());
  std::string out;
  for (size_t i = 0; i < partitions.size();) {
    const std::string& topic = partitions[i].topic;
    if (!out.empty()) out += ", ";
    out += topic;
    out += '/';
    bool first = true;
    while (i < partitions.size() && partitions[i].topic == topic) {
      size_t last = i;
      while (last + 1 < partitions.size() && partitions[last + 1].topic == topic &&
             partitions[last + 1].partition == partitions[last].partition + 1) {
        ++last;
      }
      if (!first) out += ',';
      out += std::to_string(partitions[i].partition);
      if (last > i) {
        out += '-';
        out += std::to_string(partitions[last].partition);
      }
      first = false;
      i = last + 1;
    }
  }
  return out;
}

std::string DescribeAssignment(std::vector<AssignedStart> assigned, bool standby) {
  std::sort(assigned.begin(), assigned.end(),
            [](const AssignedStart& a, const AssignedStart& b) { return a.tp < b.tp; });
  // The groups in the order of their first partition; an assignment has a handful at most.
  std::vector<std::pair<GroupKey, std::vector<const AssignedStart*>>> groups;
  for (const AssignedStart& a : assigned) {
    const GroupKey key = KeyOf(a.start);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& group) { return group.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(&a);
  }
  std::string out = std::string(standby ? "following " : "assigned ") +
                    std::to_string(assigned.size()) +
                    (assigned.size() == 1 ? " partition" : " partitions");
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& [key, members] = groups[g];
    out += g == 0 ? ": " : "; ";
    if (IsLogical(members.front()->start.offset)) {
      std::vector<store::TopicPartition> tps;
      for (const AssignedStart* a : members) tps.push_back(a->tp);
      out += DescribePartitionRanges(std::move(tps)) + " " + DescribeLogical(key.logical);
    } else {
      for (size_t i = 0; i < members.size(); ++i) {
        const AssignedStart& a = *members[i];
        if (i > 0) out += ", ";
        out += a.tp.topic;
        out += '/';
        out += std::to_string(a.tp.partition);
        out += " at ";
        out += std::to_string(a.start.offset);
        if (!a.start.detail.empty()) out += " [" + a.start.detail + "]";
      }
    }
    out += " (" + members.front()->start.Describe() + ")";
  }
  return out;
}

}  // namespace hotrow::ingest
