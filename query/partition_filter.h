#pragma once

#include <cstdint>
#include <functional>

namespace hotrow::query {

// Whether a query may return the rows of (topic number, partition): see
// QueryOptions::partition_filter.
using PartitionFilter = std::function<bool(uint16_t topic_number, int32_t partition)>;

}  // namespace hotrow::query
