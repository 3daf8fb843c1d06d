#pragma once

#include <cstdint>
#include <set>

#include "ingest/partition_ownership.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::service {

// In cluster mode, tells the query engine's last-N cache of the partitions this instance stopped
// owning, so that it frees their rows (query::QueryEngine::ForgetPartitions). Answers are exact
// without it: the cluster's partition filter applies to cached rows as to stored ones, and a
// partition that comes back finds its rows raised above the cache's floors. What it saves is the
// memory of rows no query of this instance returns.
//
// With standbys (cluster.standby_replicas, set_followed) a partition counts as held while it is
// owned or followed: the standby answers for it from the same cache, so a partition its owner gives
// up and the standby continues (ingest/standby_handover.h) keeps its rows, and one that leaves both
// is forgotten.
//
// Operation: Poll compares the ownerships' generations with the ones it saw last; when one moved,
// the partitions held then and not now are forgotten. A partition revoked and assigned back between
// two polls (an eager rebalance) is kept. Housekeeping polls it every second.
//
// Thread-safety: Poll from one thread at a time.
class CacheOwnership {
 public:
  // Nothing is owned; each must outlive this object.
  CacheOwnership(const ingest::PartitionOwnership* ownership, query::QueryEngine* engine,
                 const store::EventStore* store)
      : ownership_(ownership), engine_(engine), store_(store) {}

  // The ownership of the partitions followed as a standby (not owned; null: none). Before the
  // first Poll.
  void set_followed(const ingest::PartitionOwnership* followed) { followed_ = followed; }

  // Returns how many partitions were forgotten.
  size_t Poll();

 private:
  const ingest::PartitionOwnership* const ownership_;
  query::QueryEngine* const engine_;
  const store::EventStore* const store_;
  const ingest::PartitionOwnership* followed_ = nullptr;
  uint64_t generation_ = 0, followed_generation_ = 0;
  std::set<store::TopicPartition> held_;  // owned or followed, at those generations
};

}  // namespace hotrow::service
