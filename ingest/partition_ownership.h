#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/event_store.h"

// Which partitions this instance owns now, and which of them it can answer for (CONTRACT.md,
// cluster.peers: an answer is complete only from partitions owned with a complete window).
//
// A partition is *serving* when it is owned, its window is complete (the store holds every record
// from the window's start, or the partition's first record, up to its position: see
// StartOffset::window_complete) and it has caught up: its position has reached the high
// watermark the broker reported when the partition was assigned. Until then it is *rebuilding*
// (replaying the window from Kafka) and a `?local=true` query does not count it as covered.
// Once caught up, a partition stays serving until it is revoked or lost.
namespace hotrow::ingest {

// One owned partition.
struct OwnedPartition {
  std::string topic;
  int32_t partition = 0;
  // Where consuming started: an offset, or a logical one (-2 beginning, -1 end).
  int64_t start_offset = -1;
  // The store will hold the whole window once caught up (StartOffset::window_complete).
  bool window_complete = false;
  // The broker's high watermark when the partition was assigned; -1 when it could not say.
  int64_t catch_up_to = -1;
  // The next offset this instance will store (everything before is stored); -1 when unknown.
  int64_t position = -1;
  // Latched: the position reached catch_up_to once.
  bool caught_up = false;

  bool serving() const { return window_complete && caught_up; }
  bool rebuilding() const { return !caught_up; }
};

// Pure: whether a partition that started at `start_offset` (maybe logical) and must reach
// `catch_up_to` has done so at `position`. A target of 0 (an empty partition) is reached at once,
// an unknown target (-1) or position never.
bool ReachedCatchUp(int64_t start_offset, int64_t catch_up_to, int64_t position);

// Pure: the fraction 0..1 of the rebuild done: (position - start) / (catch_up_to - start), 1 when
// caught up, 0 when nothing is known. A logical start counts as offset 0.
double RebuildProgress(const OwnedPartition& p);

// A consistent view of the ownership at one moment.
struct OwnershipSnapshot {
  // Bumped on every assignment or revocation (not on progress): two snapshots with the same
  // generation own the same partitions.
  uint64_t generation = 0;
  std::vector<OwnedPartition> partitions;  // by (topic, partition)

  // The serving partitions, and whether (topic, partition) is one of them.
  std::vector<store::TopicPartition> Serving() const;
  bool IsServing(const std::string& topic, int32_t partition) const;
};

// The ownership state, fed by the ingestor's rebalance callback (Assigned, Revoked) and by the
// positions it reports (UpdatePositions, from Ingestor::Stats()).
//
// Thread-safety: every method may be called from any thread.
class PartitionOwnership {
 public:
  PartitionOwnership() = default;
  PartitionOwnership(const PartitionOwnership&) = delete;
  PartitionOwnership& operator=(const PartitionOwnership&) = delete;

  // The partition is assigned to this instance, starting at `start_offset` (maybe logical) with
  // a window complete from there or not, and the broker's high watermark `high_watermark`
  // (-1 unknown) at that moment.
  void Assigned(const std::string& topic, int32_t partition, int64_t start_offset,
                bool window_complete, int64_t high_watermark);
  // The partition is revoked or lost: this instance no longer answers for it, whatever its store
  // still holds.
  void Revoked(const std::string& topic, int32_t partition);
  // The position of an owned partition (the next offset stored) and the broker's high watermark
  // now (-1 unknown; it becomes the target when the assignment could not tell one). Partitions
  // not owned are ignored.
  void UpdatePosition(const std::string& topic, int32_t partition, int64_t position,
                      int64_t high_watermark);

  // Whether some owned partition is still rebuilding (positions are worth refreshing).
  bool AnyRebuilding() const;

  OwnershipSnapshot Snapshot() const;

 private:
  mutable std::mutex mu_;
  uint64_t generation_ = 0;                                // GUARDED_BY(mu_)
  std::map<store::TopicPartition, OwnedPartition> owned_;  // GUARDED_BY(mu_)
  int rebuilding_ = 0;                                     // GUARDED_BY(mu_)
};

}  // namespace hotrow::ingest
