#include "cluster/standby_request.h"

#include <algorithm>
#include <utility>

namespace hotrow::cluster {

namespace {
thread_local Partitions standby_request;
}  // namespace

const Partitions& StandbyRequest() { return standby_request; }
void SetStandbyRequest(Partitions partitions) { standby_request = std::move(partitions); }
StandbyScope::StandbyScope(Partitions partitions) : previous_(std::move(standby_request)) {
  standby_request = std::move(partitions);
}
StandbyScope::~StandbyScope() { standby_request = std::move(previous_); }

Result<Partitions> ParseStandbyParam(std::string_view text) {
  Partitions out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
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
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.empty()) return Status::InvalidArgument("standby: expected at least one partition");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string StandbyParam(const Partitions& partitions) {
  std::string out;
  for (const store::TopicPartition& tp : partitions) {
    if (!out.empty()) out.push_back(',');
    out.append(tp.topic + ":" + std::to_string(tp.partition));
  }
  return out;
}

}  // namespace hotrow::cluster
