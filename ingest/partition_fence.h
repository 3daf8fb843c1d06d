#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "store/event_store.h"

namespace hotrow::ingest {

// Which partitions the store writers may still write and commit for: the fence between a
// revocation or a loss and the writes under way (CONTRACT.md "Round 3 additions", Ingest:
// nothing is written or committed for a lost partition after the loss is known).
//
// Operation
// - An assigned partition is opened at a new epoch (Open). The poller tags each batch's part of a
//   partition with the epoch its records were read at.
// - A writer begins each store write attempt with BeginWrite, which names the parts no longer
//   open at their epoch (the writer leaves them out), and keeps the returned Write until the
//   write and its group commit are done. Write::StillOpen names the parts it may commit.
// - Close (a revocation or a loss) closes partitions, then waits until every Write begun before it
//   has ended. So once Close returns, no write of those partitions is under way or can begin, and
//   no commit of them can follow: a write under way when the loss is learnt finishes before the
//   loss is acted on, and commits only if it found its partitions open before the Close began
//   (its commit is then queued before Close returns, ahead of the unassignment).
// - A Close waits only for writes begun before it (one store write each, not a retry loop: a
//   writer asks again before every attempt), never for later ones.
//
// Tested in tests/ingest/partition_fence_test.cc.
//
// Thread-safety: every method may be called from any thread.
class PartitionFence {
 public:
  PartitionFence() = default;
  PartitionFence(const PartitionFence&) = delete;
  PartitionFence& operator=(const PartitionFence&) = delete;

  // A write under way, from BeginWrite until it is destroyed. Move-only.
  class Write {
   public:
    Write(Write&& other) noexcept;
    Write& operator=(Write&&) = delete;
    ~Write();
    // The parts that were not open at their epoch when the write began: leave them out.
    const std::set<store::TopicPartition>& closed() const { return closed_; }
    // The parts of `epochs` still open at their epoch now. A Close begun since waits for this
    // Write to end, so a commit of these parts made before the Write ends precedes its return.
    std::vector<store::TopicPartition> StillOpen(
        const std::map<store::TopicPartition, uint64_t>& epochs) const;

   private:
    friend class PartitionFence;
    Write(PartitionFence* fence, uint64_t ticket) : fence_(fence), ticket_(ticket) {}
    PartitionFence* fence_;
    uint64_t ticket_;
    std::set<store::TopicPartition> closed_;
  };

  // Opens `tp` (again) and returns its new epoch, never 0.
  uint64_t Open(const store::TopicPartition& tp);

  // Closes `partitions` (those not open are ignored), then returns once every Write begun before
  // this call has ended.
  void Close(const std::vector<store::TopicPartition>& partitions);

  // Whether `tp` is open at `epoch`.
  bool IsOpen(const store::TopicPartition& tp, uint64_t epoch) const;

  // Begins a write of parts at `epochs` (partition -> the epoch its records were read at).
  Write BeginWrite(const std::map<store::TopicPartition, uint64_t>& epochs);

  // Writes begun and not yet ended, and Close calls waiting for them (for tests).
  size_t WritesUnderWay() const;
  size_t ClosesWaiting() const;

 private:
  void EndWrite(uint64_t ticket);
  bool IsOpenLocked(const store::TopicPartition& tp, uint64_t epoch) const;

  mutable std::mutex mu_;
  std::condition_variable ended_;
  uint64_t last_epoch_ = 0;                         // GUARDED_BY(mu_)
  std::map<store::TopicPartition, uint64_t> open_;  // GUARDED_BY(mu_)
  uint64_t next_ticket_ = 1;                        // GUARDED_BY(mu_)
  std::set<uint64_t> under_way_;                    // GUARDED_BY(mu_)
  size_t closes_waiting_ = 0;                       // GUARDED_BY(mu_)
};

}  // namespace hotrow::ingest
