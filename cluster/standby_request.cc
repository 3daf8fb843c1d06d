#include "cluster/standby_request.h"

#include <algorithm>
#include <utility>

namespace hotrow::cluster {

namespace {
thread_local Partitions standby_request;
thread_local std::map<store::TopicPartition, int64_t> standby_positions;
// What ParseStandbyParam read last on this thread, until SetStandbyRequest takes it.
thread_local std::map<store::TopicPartition, int64_t> parsed_positions;
}  // namespace

const Partitions& StandbyRequest() { return standby_request; }
const std::map<store::TopicPartition, int64_t>& StandbyRequestPositions() {
  return standby_positions;
}
void SetStandbyRequest(Partitions partitions) {
  standby_request = std::move(partitions);
  standby_positions.clear();
  if (standby_request.empty()) {
    parsed_positions.clear();
    return;
  }
  for (auto& [tp, offset] : parsed_positions) {
    if (std::binary_search(standby_request.begin(), standby_request.end(), tp)) {
      standby_positions[tp] = offset;
    }
  }
  parsed_positions.clear();
}
StandbyPositionsScope::StandbyPositionsScope(std::map<store::TopicPartition, int64_t> positions)
    : previous_(std::move(standby_positions)) {
  standby_positions = std::move(positions);
}
StandbyPositionsScope::~StandbyPositionsScope() { standby_positions = std::move(previous_); }
StandbyScope::StandbyScope(Partitions partitions) : previous_(std::move(standby_request)) {
  standby_request = std::move(partitions);
}
StandbyScope::~StandbyScope() { standby_request = std::move(previous_); }

Result<Partitions> ParseStandbyParam(std::string_view text) {
  Partitions out;
  parsed_positions.clear();
  std::map<store::TopicPartition, int64_t> positions;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    int64_t at_least = -1;
    if (const size_t at = item.rfind('@'); at != std::string_view::npos) {
      const std::string_view digits = item.substr(at + 1);
      if (digits.empty() || digits.size() > 18 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return Status::InvalidArgument("standby: expected topic:partition[@offset], got \"" +
                                       std::string(item.substr(0, 64)) + "\"");
      }
      at_least = std::stoll(std::string(digits));
      item = item.substr(0, at);
    }
    const size_t colon = item.rfind(':');
    int32_t partition = -1;
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == item.size() ||
        item.size() - colon > 10 ||
        !std::all_of(item.begin() + static_cast<std::ptrdiff_t>(colon) + 1, item.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return Status::InvalidArgument("standby: expected topic:partition[,topic:partition...], got \"" +
                                     std::string(item.substr(0, 64)) + "\"");
    }
    partition = static_cast<int32_t>(std::stoll(std::string(item.substr(colon + 1))));
    out.push_back({std::string(item.substr(0, colon)), partition});
    if (at_least >= 0) positions[out.back()] = at_least;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.empty()) return Status::InvalidArgument("standby: expected at least one partition");
  parsed_positions = std::move(positions);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string StandbyParam(const Partitions& partitions,
                         const std::map<store::TopicPartition, int64_t>& positions) {
  std::string out;
  for (const store::TopicPartition& tp : partitions) {
    if (!out.empty()) out.push_back(',');
    out.append(tp.topic + ":" + std::to_string(tp.partition));
    auto p = positions.find(tp);
    if (p != positions.end()) out.append("@" + std::to_string(p->second));
  }
  return out;
}

}  // namespace hotrow::cluster
