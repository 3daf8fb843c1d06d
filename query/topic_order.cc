#include "query/topic_order.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace hotrow::query {

TopicOrder::TopicOrder(const store::EventStore& store) {
  std::vector<std::pair<std::string, uint16_t>> names;
  for (uint32_t n = 0; n <= UINT16_MAX; ++n) {
    std::optional<std::string> name = store.TopicName(static_cast<uint16_t>(n));
    if (!name) break;  // numbers are given densely from 0
    names.emplace_back(std::move(*name), static_cast<uint16_t>(n));
  }
  std::sort(names.begin(), names.end());
  ranks_.resize(names.size());
  for (size_t rank = 0; rank < names.size(); ++rank) {
    ranks_[names[rank].second] = static_cast<uint32_t>(rank);
    in_number_order_ = in_number_order_ && names[rank].second == rank;
  }
}

}  // namespace hotrow::query
