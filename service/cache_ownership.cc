#include "service/cache_ownership.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <string>

namespace hotrow::service {

size_t CacheOwnership::Poll() {
  // Owned first: a partition handed between the two ownerships is adopted by the one that gets it
  // before the other lets it go (standby_handover.h), so it is in one of these two reads.
  const ingest::OwnershipSnapshot now = ownership_->Snapshot();
  std::optional<ingest::OwnershipSnapshot> follows;
  if (followed_ != nullptr) follows = followed_->Snapshot();
  const uint64_t followed_generation = follows ? follows->generation : 0;
  if (now.generation == generation_ && followed_generation == followed_generation_) return 0;
  generation_ = now.generation;
  followed_generation_ = followed_generation;
  std::set<store::TopicPartition> held;
  for (const ingest::OwnedPartition& p : now.partitions) held.insert({p.topic, p.partition});
  if (follows) {
    for (const ingest::OwnedPartition& p : follows->partitions) held.insert({p.topic, p.partition});
  }
  std::set<store::TopicPartition> lost;
  for (const store::TopicPartition& tp : held_) {
    if (held.count(tp) == 0) lost.insert(tp);
  }
  held_ = std::move(held);
  if (lost.empty()) return 0;
  const store::EventStore* store = store_;
  engine_->ForgetPartitions([store, &lost](uint16_t topic, int32_t partition) {
    const std::optional<std::string> name = store->TopicName(topic);
    return name.has_value() && lost.count(store::TopicPartition{*name, partition}) != 0;
  });
  spdlog::info(
      "query: the last-N cache forgot the rows of {} partition(s) neither owned nor followed",
      lost.size());
  return lost.size();
}

}  // namespace hotrow::service
