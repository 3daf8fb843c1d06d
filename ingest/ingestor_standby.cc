// Standby mode of IngestorImpl (IngestOptions::standby), on the poller thread: the set of
// partitions followed, assigned and revoked through the same OnAssign / OnRevoke as the group's
// assignments, so a followed partition starts, is batched, written and fenced exactly as an owned
// one.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ingest/ingestor_impl.h"
#include "ingest/standby_set.h"

namespace hotrow::ingest::internal {

namespace {

TopicPartitionListPtr ToList(const std::vector<TopicPartition>& partitions) {
  TopicPartitionListPtr list(
      rd_kafka_topic_partition_list_new(std::max(1, static_cast<int>(partitions.size()))));
  for (const TopicPartition& tp : partitions) {
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
  }
  return list;
}

}  // namespace

void IngestorImpl::FollowStandbySet() {
  const int64_t now = SteadyNowMs();
  const uint64_t generation = options_.handover->generation();
  if (generation == follow_generation_ && now < next_follow_steady_ms_) return;
  follow_generation_ = generation;
  next_follow_steady_ms_ = now + kFollowCheckMs;
  if (follow_counts_.size() < options_.topics.size() || now >= next_counts_steady_ms_) {
    const std::set<std::string> topics(options_.topics.begin(), options_.topics.end());
    std::map<std::string, int32_t> counts = PartitionCounts(topics, 2000);
    for (auto& [topic, count] : counts) follow_counts_[topic] = count;
    // Every second while a topic's count is unknown, else every kFollowCountsMs.
    next_counts_steady_ms_ =
        now + (counts.size() < topics.size() ? kFollowCheckMs : kFollowCountsMs);
  }
  const std::vector<std::pair<std::string, int32_t>> counts(follow_counts_.begin(),
                                                            follow_counts_.end());
  const std::vector<TopicPartition> want =
      StandbySet(options_.standby.peers, options_.standby.self, options_.standby.replicas, counts,
                 options_.handover->Owned());
  std::vector<TopicPartition> drop, add;
  for (const auto& [tp, cursor] : cursors_) {
    if (!std::binary_search(want.begin(), want.end(), tp)) drop.push_back(tp);
  }
  for (const TopicPartition& tp : want) {
    if (cursors_.count(tp) == 0) add.push_back(tp);
  }
  if (!drop.empty()) {
    // What was read is written first (a taken partition's fence is closed already, so nothing of
    // it is); its rows stay and expire with their buckets.
    TopicPartitionListPtr list = ToList(drop);
    OnRevoke(list.get(), /*cooperative=*/true);
  }
  if (!add.empty()) {
    TopicPartitionListPtr list = ToList(add);
    OnAssign(list.get(), /*cooperative=*/true);
  }
  // An entry of a partition this instance no longer follows at all (the standby set changed):
  // nothing keeps it fresh, so it goes. Not one it follows but has no cursor of: that is one the
  // group consumer gave up (StandbyHandover::Release adopted it) after `want` was computed above,
  // and it answers from its adopted state until the next check, at once, continues it.
  if (options_.ownership != nullptr) {
    for (const OwnedPartition& p : options_.ownership->Snapshot().partitions) {
      const TopicPartition tp{p.topic, p.partition};
      if (cursors_.count(tp) == 0 && !options_.handover->IsOwned(tp) &&
          !Follows(options_.standby.peers, options_.standby.self, options_.standby.replicas,
                   p.topic, p.partition, /*owned=*/false)) {
        options_.ownership->Revoked(p.topic, p.partition);
      }
    }
  }
}

}  // namespace hotrow::ingest::internal
