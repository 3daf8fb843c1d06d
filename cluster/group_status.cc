// GET /v1/cluster and its ?local=true form (CONTRACT.md "cluster.peers"): this instance's status
// and every instance's, with the group's coverage.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/group_query.h"
#include "cluster/partition_holders.h"
#include "common/clock.h"
#include "wire/event_json.h"

namespace hotrow::cluster {

std::string LocalStatusJson(Cluster* cluster) {
  const ingest::OwnershipSnapshot s = cluster->Local();
  std::string body = "{\"address\":";
  wire::AppendJsonString(cluster->options().self, &body);
  bool ready = true;
  std::string not_ready;
  int64_t lag = 0;
  body.append(",\"owned\":[");
  for (size_t i = 0; i < s.partitions.size(); ++i) {
    const ingest::OwnedPartition& p = s.partitions[i];
    ready = ready && p.ready;
    if (!p.ready) not_ready = p.not_ready;
    lag += p.lag();
    if (i != 0) body.push_back(',');
    body.append("{\"topic\":");
    wire::AppendJsonString(p.topic, &body);
    body.append(",\"partition\":" + std::to_string(p.partition) + ",\"serving\":" +
                (p.serving() ? "true" : "false") + ",\"ready\":" + (p.ready ? "true" : "false") +
                ",\"window_complete\":" + (p.window_complete ? "true" : "false") +
                ",\"rebuilding\":" + (p.rebuilding() ? "true" : "false") +
                ",\"position\":" + std::to_string(p.position) + ",\"high_watermark\":" +
                std::to_string(p.high_watermark) + ",\"lag\":" + std::to_string(p.lag()) +
                ",\"staleness_ms\":" + std::to_string(p.staleness_ms) +
                ",\"catch_up_to\":" + std::to_string(p.catch_up_to) +
                ",\"progress\":" + std::to_string(ingest::RebuildProgress(p)));
    if (cluster->routing()) body.append(p.routable ? ",\"routable\":true" : ",\"routable\":false");
    const std::string why = p.WhyNotServing(cluster->max_staleness_ms());
    if (!why.empty()) {
      body.append(",\"why\":");
      wire::AppendJsonString(why, &body);
    }
    body.push_back('}');
  }
  body.append("],\"ready\":");
  body.append(ready ? "true" : "false");
  if (!ready) {
    body.append(",\"not_ready\":");
    wire::AppendJsonString(not_ready, &body);
  }
  body.append(",\"lag\":" + std::to_string(lag) +
              ",\"max_staleness_ms\":" + std::to_string(cluster->max_staleness_ms()));
  if (!s.followed.empty()) {
    // The partitions followed as a standby (cluster.standby_replicas), with their lag.
    body.append(",\"followed\":[");
    for (size_t i = 0; i < s.followed.size(); ++i) {
      const ingest::OwnedPartition& p = s.followed[i];
      if (i != 0) body.push_back(',');
      body.append("{\"topic\":");
      wire::AppendJsonString(p.topic, &body);
      body.append(",\"partition\":" + std::to_string(p.partition) + ",\"serving\":" +
                  (p.serving() ? "true" : "false") + ",\"position\":" + std::to_string(p.position) +
                  ",\"high_watermark\":" + std::to_string(p.high_watermark) + ",\"lag\":" +
                  std::to_string(p.lag()) + ",\"staleness_ms\":" + std::to_string(p.staleness_ms));
      const std::string why = p.WhyNotServing(cluster->max_staleness_ms());
      if (!why.empty()) {
        body.append(",\"why\":");
        wire::AppendJsonString(why, &body);
      }
      body.push_back('}');
    }
    body.push_back(']');
  }
  AppendLocalHead(cluster->Head(s), &body);
  body.push_back('}');
  return body;
}

std::string GroupStatusJson(Cluster* cluster) {
  std::string mine;
  std::vector<PeerReply> replies =
      cluster->peers().AskAll("/v1/cluster?local=true", [&] { mine = LocalStatusJson(cluster); });
  std::vector<PeerCoverage> coverage(1 + replies.size());
  LocalHead self;
  coverage[0].answered = ParseClusterLocal(mine, &self).ok();
  coverage[0].covered = self.partitions;
  coverage[0].stale = self.stale;
  // Who holds each partition (owner and standbys), from the same statuses.
  std::vector<InstanceHoldings> holdings(1 + replies.size());
  if (coverage[0].answered) {
    (void)ReadHoldings(mine, cluster->options().self, &holdings[0]);
  }
  std::string body = "{\"self\":";
  wire::AppendJsonString(cluster->options().self, &body);
  auto append_instance = [&](const std::string& address, bool is_self, bool reachable,
                             const LocalHead* head, const std::string& status,
                             const std::string& error) {
    body.append("{\"address\":");
    wire::AppendJsonString(address, &body);
    body.append(std::string(",\"self\":") + (is_self ? "true" : "false") +
                ",\"reachable\":" + (reachable ? "true" : "false") +
                ",\"answered\":" + (head != nullptr ? "true" : "false"));
    if (head != nullptr) {
      body.append(std::string(",\"ready\":") + (head->ready ? "true" : "false") +
                  ",\"lag\":" + std::to_string(head->lag) + ",\"stale\":");
      AppendPartitionsJson(head->stale, &body);
      std::string_view trimmed = status;
      while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) {
        trimmed.remove_suffix(1);
      }
      body.append(",\"status\":");
      body.append(trimmed);
    } else {
      body.append(",\"error\":");
      wire::AppendJsonString(error.empty() ? "not a hotrow cluster answer" : error, &body);
    }
    body.push_back('}');
  };
  body.append(",\"instances\":[");
  append_instance(cluster->options().self, true, true, &self, mine, "");
  for (size_t i = 0; i < replies.size(); ++i) {
    LocalHead head;
    std::string why;
    const bool accepted = ReadPeerStatus(cluster, replies[i], &head, &why);
    if (accepted) {
      coverage[i + 1] = {true, head.partitions, head.stale};
      // A status that names its group but whose lists cannot be read holds nothing in the view.
      if (!ReadHoldings(replies[i].body, replies[i].peer, &holdings[i + 1]).ok()) {
        holdings[i + 1] = InstanceHoldings{};
      }
    }
    body.push_back(',');
    append_instance(replies[i].peer, false, replies[i].status != 0, accepted ? &head : nullptr,
                    replies[i].body, why);
  }
  body.push_back(']');
  if (cluster->routing()) {
    // Routing by key (cluster/route.h): the partitions per-id queries ask as if unrouted, from the
    // last route map, and how this instance's per-id queries were answered.
    const RouteCounts counts = cluster->route_counts();
    const RouteMap map = cluster->route_map();
    body.append(",\"route_by_key\":\"");
    body.append(ingest::KeyPartitionerName(cluster->options().route_by_key));
    body.append("\",\"route_map_age_ms\":");
    const std::optional<int64_t> age = cluster->route_map_age_ms();
    body.append(age ? std::to_string(*age) : "null");
    const Partitions unroutable = Unroutable(map);
    Partitions routable;
    for (const store::TopicPartition& tp : map.all) {
      if (!std::binary_search(unroutable.begin(), unroutable.end(), tp)) routable.push_back(tp);
    }
    body.append(",\"routable\":");
    AppendPartitionsJson(routable, &body);
    body.append(",\"unroutable\":");
    AppendPartitionsJson(unroutable, &body);
    body.append(",\"route_queries\":{\"routed\":" + std::to_string(counts.routed) +
                ",\"everyone\":" + std::to_string(counts.everyone) +
                ",\"retried\":" + std::to_string(counts.retried) + "}");
  }
  const GroupPartitions known = cluster->KnownPartitions();
  AppendHoldersJson(CollectHolders(known.partitions, holdings), &body);
  AppendCoverageJson(DecideCoverage(known, coverage), &body);
  body.push_back('}');
  return body;
}

}  // namespace hotrow::cluster
