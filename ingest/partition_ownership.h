#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "store/event_store.h"

// Which partitions this instance owns now, and which of them it can answer for (CONTRACT.md,
// "Cluster mode in production settings").
//
// A partition *serves* (counts toward a complete answer) only while, checked at every snapshot:
// - it is owned;
// - its instance is ready: the store is open and ingestion is neither stalled nor out of disk
//   (Ingestor::Ready, passed in by SetReadiness);
// - its window is complete: the store holds every record from the window's start up to its
//   position (store::PartitionRun: a run that began with auto.offset.reset=latest holds the
//   window only once the window has passed since the jump);
// - it is fresh: the oldest record the broker holds and the store lacks was first seen in the
//   broker's high watermark at most max_staleness_ms ago (0 when the store lacks nothing). The
//   records the broker held when the partition was assigned count as seen long ago: a partition
//   being rebuilt from Kafka is not fresh until it has reached that high watermark.
// Nothing is latched: a partition that was serving stops the moment one of these fails.
namespace hotrow::ingest {

struct OwnershipOptions {
  // cluster.max_staleness: how long the oldest record the broker holds and the store lacks may
  // have been in the broker for the partition to count as fresh. Default: 5 s.
  int64_t max_staleness_ms = 5000;
  // Where "now" comes from for those ages. Not owned. Default: the system clock.
  const Clock* clock = WallClock::Default();
};

// One owned partition, as judged at one moment.
struct OwnedPartition {
  std::string topic;
  int32_t partition = 0;
  // Where consuming started: an offset, or a logical one (-2 beginning, -1 end).
  int64_t start_offset = -1;
  // The broker's high watermark when the partition was assigned (the rebuild's target); -1 when
  // it could not say (then the first one seen).
  int64_t catch_up_to = -1;
  // The next offset this instance will store (everything before is stored); -1 when unknown.
  int64_t position = -1;
  // The broker's high watermark as last seen; -1 when unknown.
  int64_t high_watermark = -1;
  // How long the oldest record the broker holds and the store lacks has been seen in the broker;
  // 0 when the store lacks nothing seen; -1 when unknown (no position or high watermark known
  // yet, or it lacks records the broker held at the assignment: it is being rebuilt).
  int64_t staleness_ms = -1;
  // The store holds the partition's whole window (store::EventStore::PartitionRuns).
  bool window_complete = false;
  // The instance is ready (SetReadiness); when not, why.
  bool ready = false;
  std::string not_ready;
  // staleness_ms is known and within max_staleness_ms.
  bool fresh = false;
  // Routing by key (cluster.route_by_key, ingest/key_route.h): every record of the partition the
  // store holds in the window was checked as it was ingested (its key is its event id, and the
  // partitioner puts that key in this partition of `route_partitions`), and none broke the rule.
  // Then the partition holds no event of an id the partitioner puts elsewhere.
  bool routable = false;
  int32_t route_partitions = 0;  // the topic's partition count it was checked against; 0: none

  bool serving() const { return ready && window_complete && fresh; }
  // Not serving although owned: answers name it "stale".
  bool stale() const { return !serving(); }
  // Still short of the high watermark of its assignment (replaying the window from Kafka).
  bool rebuilding() const { return catch_up_to < 0 || position < catch_up_to; }
  // Records the store lacks; 0 when unknown.
  int64_t lag() const {
    return high_watermark >= 0 && position >= 0 ? std::max<int64_t>(0, high_watermark - position)
                                                : 0;
  }
  // Why it does not serve, for /v1/cluster and logs ("" when it serves).
  std::string WhyNotServing(int64_t max_staleness_ms) const;
};

// Pure: the fraction 0..1 of the rebuild done: (position - start) / (catch_up_to - start), 1 once
// reached, 0 when nothing is known. A logical start counts as offset 0.
double RebuildProgress(const OwnedPartition& p);

// A consistent view of the ownership at one moment.
struct OwnershipSnapshot {
  // Bumped on every assignment or revocation (not on progress): two snapshots with the same
  // generation own the same partitions.
  uint64_t generation = 0;
  std::vector<OwnedPartition> partitions;  // by (topic, partition)
  // The partitions followed as a standby (cluster.standby_replicas), judged alike: filled by
  // cluster::Cluster from the standby consumer's own PartitionOwnership; never in Serving() or
  // Stale(). Empty otherwise.
  std::vector<OwnedPartition> followed;

  // The serving partitions, the owned ones that do not serve, and whether (topic, partition)
  // serves.
  std::vector<store::TopicPartition> Serving() const;
  std::vector<store::TopicPartition> Stale() const;
  bool IsServing(const std::string& topic, int32_t partition) const;
};

// The ownership state, fed by the ingestor's rebalance callback (Assigned, Revoked), by the
// positions it reports (UpdatePosition, from Ingestor::Stats()) and by its readiness
// (SetReadiness, from Ingestor::Ready()).
//
// Thread-safety: every method may be called from any thread.
class PartitionOwnership {
 public:
  // `store` (not owned; null: no window is ever complete) tells which partitions' windows the
  // store holds whole.
  explicit PartitionOwnership(const store::EventStore* store, OwnershipOptions options = {})
      : store_(store), options_(options) {}
  PartitionOwnership(const PartitionOwnership&) = delete;
  PartitionOwnership& operator=(const PartitionOwnership&) = delete;

  const OwnershipOptions& options() const { return options_; }

  // The partition is assigned to this instance, starting at `start_offset` (maybe logical), with
  // the broker's high watermark `high_watermark` (-1 unknown) at that moment. `run_holds_from_ms`
  // is the holds_from_ms of the run this start begins (store::PartitionRun), or nullopt when it
  // continues the store's run: the store records a run with its first record, so until then (a
  // quiet partition, or one that started at its end) the ownership judges the window by it.
  void Assigned(const std::string& topic, int32_t partition, int64_t start_offset,
                int64_t high_watermark, std::optional<int64_t> run_holds_from_ms = std::nullopt);
  // Standbys (cluster.standby_replicas, standby_handover.h): takes (topic, partition)'s state from
  // `from` (the other consumer's ownership of the same store), its freshness included, as if it
  // had been assigned here; a later Assigned that continues the store's run at or after its
  // position keeps it. Never its route check: an adopted partition is not routable until this
  // consumer's RouteChecked (and then only once the window has passed it). No-op when `from` does
  // not hold it.
  void Adopt(const PartitionOwnership& from, const std::string& topic, int32_t partition);
  // The partition is revoked or lost: this instance no longer answers for it, whatever its store
  // still holds.
  void Revoked(const std::string& topic, int32_t partition);
  // The position of an owned partition (the next offset stored) and the broker's high watermark
  // now (-1 unknown). Partitions not owned are ignored.
  void UpdatePosition(const std::string& topic, int32_t partition, int64_t position,
                      int64_t high_watermark);
  // Routing by key: from now on the records of the owned partition are checked against the rule
  // (OwnedPartition::routable) with `partition_count` partitions; those the store holds from
  // before had event times below `checked_from_ms` (the store's clock; INT64_MIN: the store holds
  // none of the window from before: the consumer reads the whole window). The partition is
  // routable once the window starts after checked_from_ms, unless RouteBroken. Not owned: ignored.
  void RouteChecked(const std::string& topic, int32_t partition, int32_t partition_count,
                    int64_t checked_from_ms);
  // A record of the owned partition broke the rule: it is not routable while it stays owned
  // (called before the record is handed to a store writer, so no answer reads it routed).
  void RouteBroken(const std::string& topic, int32_t partition);
  // Whether the instance can answer at all (Ingestor::Ready): when not, no partition serves, and
  // `why` says so. Starts ready.
  void SetReadiness(bool ready, const std::string& why);

  OwnershipSnapshot Snapshot() const;
  // The same, shared: reused by every caller until the ownership changes or the clock has moved
  // kReuseMs (a query asks for it several times; each asks the store for its runs).
  std::shared_ptr<const OwnershipSnapshot> Shared() const;
  static constexpr int64_t kReuseMs = 20;

 private:
  // What is kept per owned partition: the snapshot's fields, and the high watermarks seen, each
  // with the time it was first seen, oldest first, only those above the position (kSeenLongAgo
  // for what the broker held at the assignment).
  struct State {
    OwnedPartition p;
    std::optional<int64_t> run_holds_from_ms;      // Assigned's
    std::optional<int64_t> route_checked_from_ms;  // RouteChecked's; none: not checked
    bool route_broken = false;
    bool adopted = false;                          // Adopt's, until an Assigned continues it
    std::deque<std::pair<int64_t, int64_t>> seen;  // (first seen ms, high watermark)
  };
  static constexpr int64_t kSeenLongAgo = INT64_MIN;
  static constexpr size_t kMaxSeen = 64;
  void NoteHighWatermark(State* s, int64_t high_watermark, int64_t now_ms);
  static void DropReached(State* s);

  const store::EventStore* const store_;
  const OwnershipOptions options_;
  mutable std::mutex mu_;
  uint64_t generation_ = 0;                       // GUARDED_BY(mu_)
  std::map<store::TopicPartition, State> owned_;  // GUARDED_BY(mu_)
  bool ready_ = true;                             // GUARDED_BY(mu_)
  std::string not_ready_;                         // GUARDED_BY(mu_)
  uint64_t version_ = 0;                          // GUARDED_BY(mu_), bumped by every change
  // Shared()'s last snapshot, the version and time it was made at.
  mutable std::mutex shared_mu_;
  mutable std::shared_ptr<const OwnershipSnapshot> shared_;  // GUARDED_BY(shared_mu_)
  mutable uint64_t shared_version_ = 0;                      // GUARDED_BY(shared_mu_)
  mutable int64_t shared_at_ms_ = 0;                         // GUARDED_BY(shared_mu_)
};

}  // namespace hotrow::ingest
