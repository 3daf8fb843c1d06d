#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <vector>

#include "ingest/partition_ownership.h"
#include "store/event_store.h"

// The hand-over of partitions between an instance's two consumers of one store
// (CONTRACT.md "cluster.standby_replicas"): the group consumer, which owns what Kafka's assignor
// gives it, and the standby consumer, which follows partitions it does not own. Both write the
// same store exactly alike, and EventStore::Write requires that no two writes under way carry the
// same partition, so a partition is written by one of them at a time:
// - Take (the group consumer's assignment, before it reads the store's offsets): the partitions
//   are marked owned and the standby's fence closes them, which waits for its writes of them under
//   way; from then on the standby writes nothing of them and the store's offset is final, so the
//   owner continues from exactly where the standby stopped.
// - Release (the group consumer's revocation or loss, after its own fence closed them): the
//   standby may follow them again, from the store's offset. Only a partition the standby follows
//   (SetStandbyFollows) keeps answering here as a standby meanwhile: one it does not follow would
//   answer for a moment and then go when the standby's next check drops it, and an answer that
//   chose this instance for it in between would find it gone; its own standbys serve it instead.
// - OpenUnlessOwned (the standby's assignment): opens a partition in the standby's fence under the
//   same lock Take holds, unless it is owned, so a Take either sees the partition open and closes
//   it, or the standby sees it owned and never opens it.
//
// Thread-safety: every method may be called from any thread.
namespace hotrow::ingest {

class StandbyHandover {
 public:
  using TopicPartition = store::TopicPartition;
  using CloseFn = std::function<void(const std::vector<TopicPartition>&)>;

  // The standby consumer's fence close (PartitionFence::Close), or none. Cleared (an empty
  // function) by the standby once none of its writers can write any more.
  void SetStandbyClose(CloseFn close);
  // The standby's ownership (not owned; null: none). A partition the group consumer takes keeps
  // its standby entry there (the standby does not revoke it: it answers until the owner serves,
  // cluster::Cluster drops it then); Release drops it, as the standby assigns it afresh if it
  // follows it again.
  void SetStandbyOwnership(PartitionOwnership* followed);
  // Whether the standby consumer follows a partition when the group consumer does not own it
  // (standby_set.h Follows), or none (an empty function: it follows nothing).
  using FollowsFn = std::function<bool(const TopicPartition&)>;
  void SetStandbyFollows(FollowsFn follows);

  // The group consumer is assigned `partitions`: returns once the standby consumer no longer
  // writes any of them.
  // `owner` (the group consumer's ownership; null: none) adopts the standby's state of each
  // (PartitionOwnership::Adopt), so a partition followed and caught up serves as owned at once.
  void Take(const std::vector<TopicPartition>& partitions, PartitionOwnership* owner = nullptr);
  // The group consumer gave `partitions` up (revoked or lost) and no longer writes them. Called
  // before `owner` revokes them: the standby's ownership adopts the state of those the standby
  // follows, so they keep answering as a standby from this store while the standby consumer
  // continues them; it drops its entry of the others.
  void Release(const std::vector<TopicPartition>& partitions,
               const PartitionOwnership* owner = nullptr);

  // The partitions the group consumer owns, sorted.
  std::vector<TopicPartition> Owned() const;
  bool IsOwned(const TopicPartition& tp) const;
  // Bumped by every Take and Release.
  uint64_t generation() const;

  // Runs `open` (the standby's PartitionFence::Open of `tp`) and returns its epoch, or returns 0
  // without running it when the group consumer owns `tp`.
  uint64_t OpenUnlessOwned(const TopicPartition& tp, const std::function<uint64_t()>& open);

 private:
  mutable std::mutex mu_;
  std::set<TopicPartition> owned_;          // GUARDED_BY(mu_)
  uint64_t generation_ = 0;                 // GUARDED_BY(mu_)
  CloseFn close_;                           // GUARDED_BY(mu_)
  PartitionOwnership* followed_ = nullptr;  // GUARDED_BY(mu_)
  FollowsFn follows_;                       // GUARDED_BY(mu_)
};

}  // namespace hotrow::ingest
