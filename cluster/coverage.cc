#include "cluster/coverage.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "wire/event_json.h"

namespace hotrow::cluster {

CoverageDecision DecideCoverage(const GroupPartitions& all,
                                const std::vector<PeerCoverage>& peers) {
  CoverageDecision out;
  std::set<store::TopicPartition> owned_stale;
  // Every partition the group must cover: the metadata's and every one an instance reports as
  // assigned to it (a topic that grew is known to the instances it was assigned to before the
  // metadata is read again), so none is ever absent from both.
  std::set<store::TopicPartition> every(all.partitions.begin(), all.partitions.end());
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!peers[i].answered) continue;
    for (const store::TopicPartition& tp : peers[i].covered) out.owner.emplace(tp, i);
    owned_stale.insert(peers[i].stale.begin(), peers[i].stale.end());
    every.insert(peers[i].stale.begin(), peers[i].stale.end());
  }
  for (const store::TopicPartition& tp : every) {
    if (out.owner.count(tp) != 0) continue;
    (owned_stale.count(tp) != 0 ? out.stale : out.missing).push_back(tp);
  }
  for (Partitions* list : {&out.missing, &out.stale}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  out.unknown_topics = all.unknown_topics;
  out.complete = out.missing.empty() && out.stale.empty() && out.unknown_topics.empty();
  return out;
}

std::vector<PeerEvent> MergePeerEvents(std::vector<std::vector<PeerEvent>> per_peer,
                                       const CoverageDecision& decision, int64_t limit,
                                       query::Order order) {
  std::vector<PeerEvent> all;
  for (size_t i = 0; i < per_peer.size(); ++i) {
    for (PeerEvent& e : per_peer[i]) {
      auto it = decision.owner.find(store::TopicPartition{e.topic, e.partition});
      if (it == decision.owner.end() || it->second != i) continue;
      all.push_back(std::move(e));
    }
  }
  auto key = [](const PeerEvent& e) { return std::tie(e.ts_ms, e.topic, e.partition, e.offset); };
  if (order == query::Order::kDesc) {
    std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return key(a) > key(b); });
  } else {
    std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  }
  // The same record twice (an instance that answered twice): once.
  all.erase(std::unique(all.begin(), all.end(),
                        [&](const auto& a, const auto& b) { return key(a) == key(b); }),
            all.end());
  if (limit >= 0 && static_cast<int64_t>(all.size()) > limit) all.resize(static_cast<size_t>(limit));
  return all;
}

void AppendPartitionsJson(Partitions partitions, std::string* out) {
  std::sort(partitions.begin(), partitions.end());
  out->push_back('{');
  for (size_t i = 0; i < partitions.size(); ++i) {
    const bool new_topic = i == 0 || partitions[i].topic != partitions[i - 1].topic;
    if (new_topic) {
      if (i != 0) out->append("],");
      wire::AppendJsonString(partitions[i].topic, out);
      out->append(":[");
    } else {
      out->push_back(',');
    }
    out->append(std::to_string(partitions[i].partition));
  }
  if (!partitions.empty()) out->push_back(']');
  out->push_back('}');
}

std::vector<Partitions> ChooseStandbys(const CoverageDecision& decision,
                                       const std::vector<Partitions>& standby) {
  std::vector<Partitions> ask(standby.size());
  for (const Partitions* uncovered : {&decision.missing, &decision.stale}) {
    for (const store::TopicPartition& tp : *uncovered) {
      for (size_t i = 0; i < standby.size(); ++i) {
        if (std::find(standby[i].begin(), standby[i].end(), tp) != standby[i].end()) {
          ask[i].push_back(tp);
          break;
        }
      }
    }
  }
  for (Partitions& list : ask) std::sort(list.begin(), list.end());
  return ask;
}

void MarkFromStandby(CoverageDecision* decision, size_t first) {
  decision->from_standby.clear();
  for (const auto& [tp, index] : decision->owner) {
    if (index >= first) decision->from_standby.push_back(tp);
  }
}

void AppendCoverageJson(const CoverageDecision& decision, std::string* out) {
  if (!decision.from_standby.empty()) {
    out->append(",\"from_standby\":");
    AppendPartitionsJson(decision.from_standby, out);
  }
  if (decision.complete) {
    out->append(",\"complete\":true");
    return;
  }
  out->append(",\"complete\":false,\"missing\":");
  AppendPartitionsJson(decision.missing, out);
  out->append(",\"stale\":");
  AppendPartitionsJson(decision.stale, out);
  if (!decision.unknown_topics.empty()) {
    out->append(",\"unknown_topics\":[");
    for (size_t i = 0; i < decision.unknown_topics.size(); ++i) {
      if (i != 0) out->push_back(',');
      wire::AppendJsonString(decision.unknown_topics[i], out);
    }
    out->push_back(']');
  }
}

}  // namespace hotrow::cluster
