#include "ingest/standby_handover.h"

namespace hotrow::ingest {

void StandbyHandover::SetStandbyClose(CloseFn close) {
  std::lock_guard<std::mutex> lock(mu_);
  close_ = std::move(close);
}

void StandbyHandover::SetStandbyOwnership(PartitionOwnership* followed) {
  std::lock_guard<std::mutex> lock(mu_);
  followed_ = followed;
}

void StandbyHandover::SetStandbyFollows(FollowsFn follows) {
  std::lock_guard<std::mutex> lock(mu_);
  follows_ = std::move(follows);
}

void StandbyHandover::Take(const std::vector<TopicPartition>& partitions,
                           PartitionOwnership* owner) {
  if (partitions.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  owned_.insert(partitions.begin(), partitions.end());
  if (owner != nullptr && followed_ != nullptr) {
    for (const TopicPartition& tp : partitions) owner->Adopt(*followed_, tp.topic, tp.partition);
  }
  ++generation_;
  // Under the lock: the standby cannot open one of them meanwhile (OpenUnlessOwned), and cannot
  // clear its close while it runs. The close waits only for the standby's writers, which never
  // take this lock.
  if (close_) close_(partitions);
}

void StandbyHandover::Release(const std::vector<TopicPartition>& partitions,
                              const PartitionOwnership* owner) {
  if (partitions.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const TopicPartition& tp : partitions) {
    owned_.erase(tp);
    if (followed_ == nullptr) continue;
    if (owner != nullptr && follows_ && follows_(tp)) {
      followed_->Adopt(*owner, tp.topic, tp.partition);
    } else {
      followed_->Revoked(tp.topic, tp.partition);
    }
  }
  ++generation_;
}

std::vector<store::TopicPartition> StandbyHandover::Owned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<TopicPartition>(owned_.begin(), owned_.end());
}

bool StandbyHandover::IsOwned(const TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  return owned_.count(tp) != 0;
}

uint64_t StandbyHandover::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

uint64_t StandbyHandover::OpenUnlessOwned(const TopicPartition& tp,
                                          const std::function<uint64_t()>& open) {
  std::lock_guard<std::mutex> lock(mu_);
  if (owned_.count(tp) != 0) return 0;
  return open();
}

}  // namespace hotrow::ingest
