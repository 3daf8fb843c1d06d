#include "cluster/route.h"

#include <algorithm>

namespace hotrow::cluster {

RouteMap BuildRouteMap(const GroupPartitions& metadata,
                       const std::vector<std::optional<LocalHead>>& heads, int64_t asked_at_ms) {
  RouteMap map;
  map.read = true;
  map.oldest_head_ms = asked_at_ms;
  map.all.insert(metadata.partitions.begin(), metadata.partitions.end());
  map.unknown_topics = metadata.unknown_topics;
  // The metadata's count of each topic.
  std::map<std::string, int32_t> listed;
  for (const store::TopicPartition& tp : metadata.partitions) listed[tp.topic] += 1;
  std::map<std::string, int32_t> counts = listed;
  std::set<std::string> disagree;
  std::set<store::TopicPartition> twice;
  for (size_t i = 0; i < heads.size(); ++i) {
    if (!heads[i]) continue;
    const LocalHead& head = *heads[i];
    for (const auto& [topic, count] : head.route_partitions) {
      auto [it, added] = counts.emplace(topic, count);
      if (!added && it->second != count) disagree.insert(topic);
    }
    for (const store::TopicPartition& tp : head.partitions) {
      map.all.insert(tp);
      if (!map.serving.emplace(tp, i).second) twice.insert(tp);
    }
    map.all.insert(head.stale.begin(), head.stale.end());
    for (const store::TopicPartition& tp : head.routable) {
      if (std::binary_search(head.partitions.begin(), head.partitions.end(), tp)) {
        map.routable.insert(tp);
      }
    }
  }
  for (const store::TopicPartition& tp : twice) {
    map.serving.erase(tp);
    map.routable.erase(tp);
  }
  // A count holds when the instances agree on it, the metadata too, and it names every partition
  // of the topic the group knows of.
  for (const auto& [topic, count] : counts) {
    if (disagree.count(topic) != 0) continue;
    int32_t known = 0;
    bool beyond = false;
    for (const store::TopicPartition& tp : map.all) {
      if (tp.topic != topic) continue;
      ++known;
      beyond = beyond || tp.partition >= count;
    }
    if (beyond || known != count) continue;
    map.partition_counts.emplace(topic, count);
  }
  return map;
}

std::optional<RoutePlan> PlanRoute(const RouteMap& map, ingest::KeyPartitioner partitioner,
                                   const std::vector<std::string>& ids, size_t instances,
                                   int64_t now_ms, int64_t max_age_ms) {
  if (partitioner == ingest::KeyPartitioner::kOff || ids.empty() || !map.read ||
      now_ms - map.oldest_head_ms > max_age_ms || !map.unknown_topics.empty() || map.all.empty()) {
    return std::nullopt;
  }
  std::set<store::TopicPartition> needed;
  std::set<std::string> topics;
  for (const store::TopicPartition& tp : map.all) {
    topics.insert(tp.topic);
    if (map.routable.count(tp) == 0) needed.insert(tp);
  }
  for (const std::string& topic : topics) {
    auto count = map.partition_counts.find(topic);
    if (count == map.partition_counts.end()) return std::nullopt;
    for (const std::string& id : ids) {
      needed.insert({topic, ingest::PartitionForKey(partitioner, id, count->second)});
    }
  }
  RoutePlan plan;
  plan.ask.assign(instances, false);
  for (const store::TopicPartition& tp : needed) {
    auto owner = map.serving.find(tp);
    if (owner == map.serving.end() || owner->second >= instances) return std::nullopt;
    plan.ask[owner->second] = true;
  }
  if (std::all_of(plan.ask.begin(), plan.ask.end(), [](bool a) { return a; })) return std::nullopt;
  plan.needed.assign(needed.begin(), needed.end());
  return plan;
}

Partitions Unroutable(const RouteMap& map) {
  Partitions out;
  for (const store::TopicPartition& tp : map.all) {
    if (map.routable.count(tp) == 0 || !map.unknown_topics.empty() ||
        map.partition_counts.count(tp.topic) == 0) {
      out.push_back(tp);
    }
  }
  return out;
}

}  // namespace hotrow::cluster
