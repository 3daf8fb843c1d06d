#include "cluster/device_merge.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

namespace hotrow::cluster {
namespace {

bool OwnedBy(const CoverageDecision& decision, size_t index, const std::string& topic,
             int32_t partition) {
  auto it = decision.owner.find(store::TopicPartition{topic, partition});
  return it != decision.owner.end() && it->second == index;
}

// The contract's order of events tied in time: topic name, partition, offset.
auto Key(const PeerEvent& e) { return std::tie(e.ts_ms, e.topic, e.partition, e.offset); }

}  // namespace

MergedLatestAll MergeLatestAll(const std::vector<const PeerLatestAll*>& per_instance,
                               const CoverageDecision& decision, int64_t limit) {
  MergedLatestAll out;
  // The smallest last id of a full page: ids after it may be on that instance, unsent.
  std::optional<std::string> bound;
  for (const PeerLatestAll* page : per_instance) {
    if (page == nullptr || !page->next) continue;
    if (!bound || *page->next < *bound) bound = page->next;
  }
  // std::string compares as unsigned bytes (char_traits<char>::compare is memcmp's order).
  std::map<std::string, const PeerEvent*> newest;
  for (size_t i = 0; i < per_instance.size(); ++i) {
    if (per_instance[i] == nullptr) continue;
    for (const PeerEvent& e : per_instance[i]->events) {
      if (bound && e.id > *bound) continue;
      if (!OwnedBy(decision, i, e.topic, e.partition)) continue;
      const PeerEvent*& slot = newest[e.id];
      if (slot == nullptr || Key(e) > Key(*slot)) slot = &e;
    }
  }
  for (const auto& [id, e] : newest) {
    if (static_cast<int64_t>(out.events.size()) == limit) {
      out.next = out.events.back().id;  // more ids than the page holds
      return out;
    }
    out.events.push_back(*e);
  }
  if (bound) out.next = out.events.empty() ? *bound : out.events.back().id;
  return out;
}

std::vector<std::vector<PeerEvent>> MergeLatestIds(
    const std::vector<std::string>& ids,
    const std::vector<const std::map<std::string, std::vector<PeerEvent>>*>& per_instance,
    const CoverageDecision& decision, int n) {
  std::vector<std::vector<PeerEvent>> out(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    std::vector<std::vector<PeerEvent>> per_peer(per_instance.size());
    for (size_t i = 0; i < per_instance.size(); ++i) {
      if (per_instance[i] == nullptr) continue;
      auto it = per_instance[i]->find(ids[k]);
      if (it != per_instance[i]->end()) per_peer[i] = it->second;
    }
    out[k] = MergePeerEvents(std::move(per_peer), decision, n, query::Order::kDesc);
  }
  return out;
}

PeerSeries MergeSeries(const std::vector<const PeerSeries*>& per_instance,
                       const std::vector<Partitions>& covered, int64_t step_ms,
                       CoverageDecision* decision) {
  PeerSeries out;
  out.step_ms = step_ms;
  std::map<int64_t, PeerSeriesPoint> steps;
  std::set<store::TopicPartition> lost;
  for (size_t i = 0; i < per_instance.size(); ++i) {
    if (per_instance[i] == nullptr) continue;
    bool whole = true;
    for (const store::TopicPartition& tp : covered[i]) {
      whole = whole && OwnedBy(*decision, i, tp.topic, tp.partition);
    }
    if (!whole) {
      for (const auto& [tp, owner] : decision->owner) {
        if (owner == i) lost.insert(tp);
      }
      continue;
    }
    const PeerSeries& s = *per_instance[i];
    out.absent += s.absent;
    out.not_number += s.not_number;
    for (const PeerSeriesPoint& p : s.points) {
      auto [it, fresh] = steps.try_emplace(p.t_ms, p);
      if (fresh) continue;
      PeerSeriesPoint& m = it->second;
      m.count += p.count;
      m.sum += p.sum;
      m.min = std::min(m.min, p.min);
      m.max = std::max(m.max, p.max);
      if (std::tie(p.last_ts_ms, p.last_topic, p.last_partition, p.last_offset) >
          std::tie(m.last_ts_ms, m.last_topic, m.last_partition, m.last_offset)) {
        m.last = p.last;
        m.last_ts_ms = p.last_ts_ms;
        m.last_topic = p.last_topic;
        m.last_partition = p.last_partition;
        m.last_offset = p.last_offset;
      }
    }
  }
  for (auto& [t, p] : steps) out.points.push_back(std::move(p));
  if (!lost.empty()) {
    for (const store::TopicPartition& tp : lost) {
      decision->owner.erase(tp);
      decision->missing.push_back(tp);
    }
    std::sort(decision->missing.begin(), decision->missing.end());
    decision->missing.erase(std::unique(decision->missing.begin(), decision->missing.end()),
                            decision->missing.end());
    decision->complete = false;
  }
  return out;
}

}  // namespace hotrow::cluster
