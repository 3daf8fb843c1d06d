#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "query/query_engine.h"
#include "query/series_answer.h"
#include "query/thread_pool.h"
#include "store/event_store.h"

namespace hotrow::query {

class TopicOrder;

// What a series reads and where it runs.
struct SeriesRun {
  store::EventStore* store = nullptr;
  ThreadPool* pool = nullptr;
  int max_workers = 0;                      // pool threads a query may hold besides its own
  const PartitionFilter* filter = nullptr;  // null: every partition
  QueryWork* work = nullptr;                // null: not counted
  // Ranks topics by name for `last`'s ties in time (query/topic_order.h); null: by number.
  const TopicOrder* topics = nullptr;
  // QueryOptions::salts_decided_hook, run once each bucket's salts are decided; null: none.
  const SaltsDecidedHook* decided_hook = nullptr;
};

// The series of `field` over the events of `id`. The events are those latest and range answer:
// from <= ts < to and ts >= the window's start. Every (bucket, salt) that may hold the id is read
// by one task on the pool (query/salt_tasks.h), which aggregates its rows into partial
// aggregates per step (count, sum, min, max, last with its key); the caller merges them. The merge
// is associative, so no event is ever sorted or buffered. Every task reads at one ReadPoint of the
// store, taken before the salts are decided (as RangeOverBuckets does, query/bucket_range.h), so
// a write landing meanwhile is counted whole or not at all.
// REQUIRES: CheckSeriesArgs(from_ms, to_ms, step_ms).ok(); field not empty.
Result<SeriesAnswer> IdSeries(const SeriesRun& run, std::string_view id, std::string_view field,
                              int64_t from_ms, int64_t to_ms, int64_t step_ms);

}  // namespace hotrow::query
