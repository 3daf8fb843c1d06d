#include "ingest/partition_ownership.h"

#include <algorithm>

namespace hotrow::ingest {

bool ReachedCatchUp(int64_t start_offset, int64_t catch_up_to, int64_t position) {
  if (catch_up_to == 0) return true;  // an empty partition: nothing to rebuild
  if (catch_up_to < 0 || position < 0) return false;  // not known yet
  if (start_offset >= catch_up_to) return true;
  return position >= catch_up_to;
}

double RebuildProgress(const OwnedPartition& p) {
  if (p.caught_up) return 1.0;
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

bool OwnershipSnapshot::IsServing(const std::string& topic, int32_t partition) const {
  for (const OwnedPartition& p : partitions) {
    if (p.partition == partition && p.topic == topic) return p.serving();
  }
  return false;
}

void PartitionOwnership::Assigned(const std::string& topic, int32_t partition,
                                  int64_t start_offset, bool window_complete,
                                  int64_t high_watermark) {
  std::lock_guard<std::mutex> lock(mu_);
  OwnedPartition& p = owned_[store::TopicPartition{topic, partition}];
  if (!p.topic.empty() && !p.caught_up) --rebuilding_;  // assigned again without a revocation
  p = OwnedPartition{};
  p.topic = topic;
  p.partition = partition;
  p.start_offset = start_offset;
  p.window_complete = window_complete;
  p.catch_up_to = high_watermark;
  p.position = start_offset >= 0 ? start_offset : -1;
  p.caught_up = ReachedCatchUp(start_offset, high_watermark, p.position);
  if (!p.caught_up) ++rebuilding_;
  ++generation_;
}

void PartitionOwnership::Revoked(const std::string& topic, int32_t partition) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owned_.find(store::TopicPartition{topic, partition});
  if (it == owned_.end()) return;
  if (!it->second.caught_up) --rebuilding_;
  owned_.erase(it);
  ++generation_;
}

void PartitionOwnership::UpdatePosition(const std::string& topic, int32_t partition,
                                        int64_t position, int64_t high_watermark) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owned_.find(store::TopicPartition{topic, partition});
  if (it == owned_.end()) return;
  OwnedPartition& p = it->second;
  p.position = std::max(p.position, position);
  // The first high watermark known when the assignment could not tell one: the target then.
  if (p.catch_up_to < 0 && high_watermark >= 0) p.catch_up_to = high_watermark;
  if (!p.caught_up && ReachedCatchUp(p.start_offset, p.catch_up_to, p.position)) {
    p.caught_up = true;
    --rebuilding_;
  }
}

bool PartitionOwnership::AnyRebuilding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rebuilding_ > 0;
}

OwnershipSnapshot PartitionOwnership::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  OwnershipSnapshot out;
  out.generation = generation_;
  out.partitions.reserve(owned_.size());
  for (const auto& [tp, p] : owned_) out.partitions.push_back(p);
  return out;
}

}  // namespace hotrow::ingest
