#include "service/cache_ownership.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <string>

namespace hotrow::service {

size_t CacheOwnership::Poll() {
  const ingest::OwnershipSnapshot now = ownership_->Snapshot();
  if (now.generation == generation_) return 0;
  generation_ = now.generation;
  std::set<store::TopicPartition> owned;
  for (const ingest::OwnedPartition& p : now.partitions) owned.insert({p.topic, p.partition});
  std::set<store::TopicPartition> lost;
  for (const store::TopicPartition& tp : owned_) {
    if (owned.count(tp) == 0) lost.insert(tp);
  }
  owned_ = std::move(owned);
  if (lost.empty()) return 0;
  const store::EventStore* store = store_;
  engine_->ForgetPartitions([store, &lost](uint16_t topic, int32_t partition) {
    const std::optional<std::string> name = store->TopicName(topic);
    return name.has_value() && lost.count(store::TopicPartition{*name, partition}) != 0;
  });
  spdlog::info("query: the last-N cache forgot the rows of {} partition(s) no longer owned",
               lost.size());
  return lost.size();
}

}  // namespace hotrow::service
