#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster/coverage.h"
#include "cluster/local_answer.h"
#include "ingest/key_route.h"

// Routing a per-id query to the owner of its id's partition (CONTRACT.md "Group answers",
// `cluster.route_by_key`), as Kafka Streams' interactive queries do with queryMetadataForKey, but
// checked: an instance vouches for a partition as routable only when every record of its window
// it holds was seen to be keyed by its id and put in that partition by the partitioner
// (ingest/partition_ownership.h, OwnedPartition::routable). A query of ids asks the instances
// serving their partitions and every partition not vouched for; the others cannot hold an event
// of those ids. Pure; unit-tested in tests/cluster/cluster_route_test.cc.
namespace hotrow::cluster {

// The group as the instances last described themselves (their /v1/cluster?local=true heads),
// read in the background by Cluster.
struct RouteMap {
  // Whether it was ever read; false: never routed by.
  bool read = false;
  // When its oldest head was asked for (ms on the reader's monotonic clock, Cluster's
  // monotonic_clock): no head it holds says less than what its instance held then, so its age
  // (now - oldest_head_ms) bounds how long ago any of its claims was true. A slow peer makes the
  // whole map that much older, never newer than what it holds.
  int64_t oldest_head_ms = 0;
  // Every partition the group must cover: the metadata's and every one an instance reported.
  std::set<store::TopicPartition> all;
  std::vector<std::string> unknown_topics;  // the metadata's (RouteMap routes none then)
  // The partition count each topic's records were checked against, when every instance that
  // reported one and the metadata agree; a topic absent here is never routed.
  std::map<std::string, int32_t> partition_counts;
  // The one instance serving each partition (index: 0 this one, i + 1 peers[i]); a partition
  // two instances said they served (a handoff seen from both sides) is absent.
  std::map<store::TopicPartition, size_t> serving;
  // The partitions their serving instance vouched for as routable.
  std::set<store::TopicPartition> routable;
};

// `heads[i]` is instance i's head (nullopt: it did not answer, or was refused), the first of them
// asked for at `asked_at_ms` (the reader's monotonic clock).
RouteMap BuildRouteMap(const GroupPartitions& metadata,
                       const std::vector<std::optional<LocalHead>>& heads, int64_t asked_at_ms);

// Whom a query of `ids` asks, and the partitions their answers must cover.
struct RoutePlan {
  std::vector<bool> ask;  // per instance, as RouteMap's indexes
  Partitions needed;      // sorted: the ids' partitions and every one not routable
};
// The plan, or nullopt when the query must ask every instance: routing is off, the map is older
// than `max_age_ms` (its oldest head's age at `now_ms`, the same monotonic clock) or never read, a
// topic's count or a needed partition's serving instance is not known, or every instance would be
// asked anyway.
std::optional<RoutePlan> PlanRoute(const RouteMap& map, ingest::KeyPartitioner partitioner,
                                   const std::vector<std::string>& ids, size_t instances,
                                   int64_t now_ms, int64_t max_age_ms);

// The partitions of `map.all` per-id queries ask as if unrouted (for /v1/cluster): not vouched
// for, or of a topic whose partition count is not agreed, or every one while a topic's partition
// list is unknown. Sorted.
Partitions Unroutable(const RouteMap& map);

}  // namespace hotrow::cluster
