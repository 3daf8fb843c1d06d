#pragma once

#include <cstdint>
#include <functional>

namespace hotrow::query {

// Whether a query may return the rows of (topic number, partition). A query is handed one and
// applies it to every read it makes (QueryEngine; in cluster mode built once per query from one
// snapshot of the ownership, cluster::QueryView).
using PartitionFilter = std::function<bool(uint16_t topic_number, int32_t partition)>;

}  // namespace hotrow::query
