#include "ingest/partition_fence.h"

namespace hotrow::ingest {

PartitionFence::Write::Write(Write&& other) noexcept
    : fence_(other.fence_), ticket_(other.ticket_), closed_(std::move(other.closed_)) {
  other.fence_ = nullptr;
}

PartitionFence::Write::~Write() {
  if (fence_ != nullptr) fence_->EndWrite(ticket_);
}

std::vector<store::TopicPartition> PartitionFence::Write::StillOpen(
    const std::map<store::TopicPartition, uint64_t>& epochs) const {
  std::vector<store::TopicPartition> out;
  std::lock_guard<std::mutex> lock(fence_->mu_);
  for (const auto& [tp, epoch] : epochs) {
    if (fence_->IsOpenLocked(tp, epoch)) out.push_back(tp);
  }
  return out;
}

uint64_t PartitionFence::Open(const store::TopicPartition& tp) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t epoch = ++last_epoch_;
  open_[tp] = epoch;
  return epoch;
}

void PartitionFence::Close(const std::vector<store::TopicPartition>& partitions) {
  std::unique_lock<std::mutex> lock(mu_);
  for (const store::TopicPartition& tp : partitions) open_.erase(tp);
  // Every write that began before this point holds a ticket below `begun`.
  const uint64_t begun = next_ticket_;
  ++closes_waiting_;
  ended_.wait(lock, [&] { return under_way_.empty() || *under_way_.begin() >= begun; });
  --closes_waiting_;
}

bool PartitionFence::IsOpenLocked(const store::TopicPartition& tp, uint64_t epoch) const {
  auto it = open_.find(tp);
  return it != open_.end() && it->second == epoch;
}

bool PartitionFence::IsOpen(const store::TopicPartition& tp, uint64_t epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  return IsOpenLocked(tp, epoch);
}

PartitionFence::Write PartitionFence::BeginWrite(
    const std::map<store::TopicPartition, uint64_t>& epochs) {
  std::lock_guard<std::mutex> lock(mu_);
  Write write(this, next_ticket_++);
  under_way_.insert(write.ticket_);
  for (const auto& [tp, epoch] : epochs) {
    if (!IsOpenLocked(tp, epoch)) write.closed_.insert(tp);
  }
  return write;
}

void PartitionFence::EndWrite(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    under_way_.erase(ticket);
  }
  ended_.notify_all();
}

size_t PartitionFence::WritesUnderWay() const {
  std::lock_guard<std::mutex> lock(mu_);
  return under_way_.size();
}

size_t PartitionFence::ClosesWaiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closes_waiting_;
}

}  // namespace hotrow::ingest
