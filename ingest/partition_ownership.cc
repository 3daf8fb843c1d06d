#include "ingest/partition_ownership.h"

#include <algorithm>

namespace hotrow::ingest {

std::string OwnedPartition::WhyNotServing(int64_t max_staleness_ms) const {
  if (!ready) return "not ready: " + not_ready;
  if (!window_complete) return "the store does not hold its whole window yet";
  if (staleness_ms < 0) {
    return rebuilding() ? "rebuilding its window from Kafka" : "its position is not known yet";
  }
  if (!fresh) {
    return "trails the broker by " + std::to_string(lag()) + " records, the oldest seen " +
           std::to_string(staleness_ms) + " ms ago (cluster.max_staleness " +
           std::to_string(max_staleness_ms) + " ms)";
  }
  return "";
}

double RebuildProgress(const OwnedPartition& p) {
  if (!p.rebuilding()) return 1.0;
  if (p.position < 0 || p.catch_up_to <= 0) return 0.0;
  const int64_t start = std::max<int64_t>(0, p.start_offset);
  if (p.catch_up_to <= start) return 1.0;
  const double done = static_cast<double>(std::max<int64_t>(0, p.position - start));
  return std::min(1.0, done / static_cast<double>(p.catch_up_to - start));
}

std::vector<store::TopicPartition> OwnershipSnapshot::Serving() const {
  std::vector<store::TopicPartition> out;
  for (const OwnedPartition& p : partitions) {
    if (p.serving()) out.push_back({p.topic, p.partition});
  }
  return out;
}

std::vector<store::TopicPartition> OwnershipSnapshot::Stale() const {
  std::vector<store::TopicPartition> out;
  for (const OwnedPartition& p : partitions) {
    if (!p.serving()) out.push_back({p.topic, p.partition});
  }
  return out;
}

bool OwnershipSnapshot::IsServing(const std::string& topic, int32_t partition) const {
  for (const OwnedPartition& p : partitions) {
    if (p.partition == partition && p.topic == topic) return p.serving();
  }
  return false;
}

void PartitionOwnership::NoteHighWatermark(State* s, int64_t high_watermark, int64_t now_ms) {
  if (high_watermark < 0) return;
  if (s->p.catch_up_to < 0) {
    // The first high watermark known when the assignment could not tell one: the target then,
    // and what it covers counts as seen long ago.
    s->p.catch_up_to = high_watermark;
    s->seen.emplace_back(kSeenLongAgo, high_watermark);
  } else if (s->seen.empty() || high_watermark > s->seen.back().second) {
    s->seen.emplace_back(now_ms, high_watermark);
  }
  s->p.high_watermark = std::max(s->p.high_watermark, high_watermark);
  if (s->seen.size() > kMaxSeen) {
    // Merges the two oldest into the older time and the higher mark: an age can only be
    // over-stated by it (a partition judged stale a little early), never under-stated.
    s->seen[1].first = s->seen[0].first;
    s->seen.pop_front();
  }
}

void PartitionOwnership::DropReached(State* s) {
  while (!s->seen.empty() && s->p.position >= 0 && s->seen.front().second <= s->p.position) {
    s->seen.pop_front();
  }
}

void PartitionOwnership::Assigned(const std::string& topic, int32_t partition, int64_t start_offset,
                                  int64_t high_watermark, std::optional<int64_t> run_holds_from_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = owned_[store::TopicPartition{topic, partition}];
  if (s.adopted && !run_holds_from_ms && start_offset >= 0 && s.p.position >= 0 &&
      start_offset >= s.p.position) {
    // Continues an adopted state (Adopt): the same store, from where the other consumer stopped.
    s.adopted = false;
    s.p.start_offset = start_offset;
    s.p.position = start_offset;
    DropReached(&s);
    ++generation_;
    ++version_;
    return;
  }
  s = State{};
  s.p.topic = topic;
  s.p.partition = partition;
  s.p.start_offset = start_offset;
  s.run_holds_from_ms = run_holds_from_ms;
  s.p.position = start_offset >= 0 ? start_offset : -1;
  NoteHighWatermark(&s, high_watermark, options_.clock->NowMs());
  DropReached(&s);
  ++generation_;
  ++version_;
}

void PartitionOwnership::RouteChecked(const std::string& topic, int32_t partition,
                                      int32_t partition_count, int64_t checked_from_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owned_.find(store::TopicPartition{topic, partition});
  if (it == owned_.end()) return;
  it->second.route_checked_from_ms = checked_from_ms;
  it->second.p.route_partitions = partition_count;
  ++version_;
}

void PartitionOwnership::RouteBroken(const std::string& topic, int32_t partition) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owned_.find(store::TopicPartition{topic, partition});
  if (it == owned_.end() || it->second.route_broken) return;
  it->second.route_broken = true;
  ++version_;
}

void PartitionOwnership::Adopt(const PartitionOwnership& from, const std::string& topic,
                               int32_t partition) {
  const store::TopicPartition tp{topic, partition};
  State copy;
  {
    std::lock_guard<std::mutex> lock(from.mu_);
    auto it = from.owned_.find(tp);
    if (it == from.owned_.end()) return;
    copy = it->second;
  }
  copy.adopted = true;
  // Not the route check (routable, CONTRACT.md "Routing by key"): the other consumer's checks
  // vouch only for what it stored while it checked, and a standby consumer checks nothing. The
  // partition is unroutable here until a RouteChecked of this consumer says from when it checks.
  copy.route_checked_from_ms.reset();
  copy.route_broken = false;
  copy.p.route_partitions = 0;
  std::lock_guard<std::mutex> lock(mu_);
  owned_[tp] = std::move(copy);
  ++generation_;
  ++version_;
}

void PartitionOwnership::Revoked(const std::string& topic, int32_t partition) {
  std::lock_guard<std::mutex> lock(mu_);
  if (owned_.erase(store::TopicPartition{topic, partition}) > 0) {
    ++generation_;
    ++version_;
  }
}

void PartitionOwnership::UpdatePosition(const std::string& topic, int32_t partition,
                                        int64_t position, int64_t high_watermark) {
  const int64_t now_ms = options_.clock->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owned_.find(store::TopicPartition{topic, partition});
  if (it == owned_.end()) return;
  State& s = it->second;
  s.p.position = std::max(s.p.position, position);
  NoteHighWatermark(&s, high_watermark, now_ms);
  DropReached(&s);
  ++version_;
}

void PartitionOwnership::SetReadiness(bool ready, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_ != ready || not_ready_ != why) ++version_;
  ready_ = ready;
  not_ready_ = ready ? std::string() : why;
}

std::shared_ptr<const OwnershipSnapshot> PartitionOwnership::Shared() const {
  const int64_t now_ms = options_.clock->NowMs();
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    version = version_;
  }
  {
    std::lock_guard<std::mutex> lock(shared_mu_);
    if (shared_ != nullptr && shared_version_ == version && now_ms >= shared_at_ms_ &&
        now_ms - shared_at_ms_ < kReuseMs) {
      return shared_;
    }
  }
  auto fresh = std::make_shared<const OwnershipSnapshot>(Snapshot());
  std::lock_guard<std::mutex> lock(shared_mu_);
  shared_ = fresh;
  shared_version_ = version;
  shared_at_ms_ = now_ms;
  return fresh;
}

OwnershipSnapshot PartitionOwnership::Snapshot() const {
  const std::map<store::TopicPartition, store::PartitionRun> runs =
      store_ != nullptr ? store_->PartitionRuns()
                        : std::map<store::TopicPartition, store::PartitionRun>{};
  const int64_t window_start = store_ != nullptr ? store_->WindowStartMs() : 0;
  const int64_t now_ms = options_.clock->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  OwnershipSnapshot out;
  out.generation = generation_;
  out.partitions.reserve(owned_.size());
  for (const auto& [tp, s] : owned_) {
    OwnedPartition p = s.p;
    p.ready = ready_;
    p.not_ready = not_ready_;
    // The later of the stored run and the one this assignment begins (recorded with its first
    // record): the store's run may still be the one before.
    auto run = runs.find(tp);
    std::optional<int64_t> holds_from = s.run_holds_from_ms;
    if (run != runs.end()) {
      holds_from = std::max(holds_from.value_or(store::PartitionRun::kHoldsAll),
                            run->second.holds_from_ms);
    }
    p.window_complete = holds_from.has_value() && *holds_from <= window_start;
    if (p.position < 0 || p.catch_up_to < 0) {
      p.staleness_ms = -1;
    } else if (s.seen.empty()) {
      p.staleness_ms = 0;
    } else if (s.seen.front().first == kSeenLongAgo) {
      p.staleness_ms = -1;
    } else {
      p.staleness_ms = std::max<int64_t>(0, now_ms - s.seen.front().first);
    }
    p.fresh = p.staleness_ms >= 0 && p.staleness_ms <= options_.max_staleness_ms;
    p.routable = s.route_checked_from_ms.has_value() && !s.route_broken &&
                 p.route_partitions > 0 && *s.route_checked_from_ms < window_start;
    out.partitions.push_back(std::move(p));
  }
  return out;
}

}  // namespace hotrow::ingest
