#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "query/query_engine.h"
#include "query/thread_pool.h"
#include "query/topic_order.h"
#include "store/event_store.h"

namespace hotrow::query {

// What a latest-of-every-id read of the store reads and where it runs.
struct LatestAllRun {
  store::EventStore* store = nullptr;
  ThreadPool* pool = nullptr;
  int max_workers = 0;                      // pool threads a query may hold besides its own
  const PartitionFilter* filter = nullptr;  // null: every partition
  QueryWork* work = nullptr;                // null: not counted
  const TopicOrder* topics = nullptr;       // ties in time order topics by it; null: by number
};

// The newest event (in window, of a partition the filter accepts) of each of the first `max_ids`
// ids, in byte order, that are after `after` and start with `prefix`, read from the store alone:
// what the last-N cache answers when it holds every id (QueryEngine::LatestAll), and what is read
// when it does not. Into `out`, one event per id, in id order.
//
// Plan (DESIGN.md "Round 3 notes", latest of every id): buckets newest first; in each, one task
// per salt on the pool reads the salt's rows in key order, where each id's rows come newest first,
// so the first row of an id in a salt is its newest there (with the rows tied with it in time
// when topics rank otherwise than their numbers) and the rest of its rows are stepped over
// without being copied. Ids found in a newer bucket are skipped in older ones, and so are ids
// beyond the `max_ids` smallest found so far: memory stays bounded by max_ids per salt.
//
// REQUIRES: max_ids >= 1.
Status LatestAllFromStore(const LatestAllRun& run, std::string_view prefix, std::string_view after,
                          size_t max_ids, std::vector<Event>* out);

}  // namespace hotrow::query
