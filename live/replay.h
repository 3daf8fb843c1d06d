#pragma once

#include <cstddef>
#include <vector>

#include "common/status.h"
#include "live/position.h"
#include "live/subscription.h"
#include "query/partition_filter.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::live {

// What a resume sends from the store before the live feed (CONTRACT.md "Live", "Resuming").
struct Replay {
  // Per partition in offset order, partitions in (topic, partition) order.
  std::vector<LiveEventPtr> events;
  // More than the limit were owed: `events` holds the lowest of them by (topic, partition,
  // offset), so that each partition's part is a prefix of what it owes and a position advanced
  // over them is exact; the stream ends after them and the next resume continues from there.
  bool truncated = false;
};

// One event as streams send it, encoded once (wire/event_json.h).
LiveEventPtr MakeLiveEvent(const query::Event& event);

// Reads the events a resume from `after` owes before a subscription whose live feed starts at
// `start`: those of `spec` with after.NextOf(tp) <= offset < start.NextOf(tp), at most
// `max_events`. A latest stream owes the newest event of each id, when it is in that span.
//
// Operation: the store's keys order an id's events (and an index value's postings) by time, not
// by offset, and an event stored late may sit anywhere in the window, so the whole window of the
// id (or of the value's postings) is read and only what is owed is kept; what is kept is bounded
// by `max_events`, not by what the id holds. For an index stream only the owed events are read
// (the postings give their keys). `filter` (may be null) keeps only the partitions it accepts.
//
// Errors: the store's or the query engine's (Busy when every query slot is taken).
Result<Replay> ReadReplay(store::EventStore* store, query::QueryEngine* engine,
                          const StreamSpec& spec, const StreamPosition& after,
                          const StreamPosition& start, const query::PartitionFilter* filter,
                          size_t max_events);

}  // namespace hotrow::live
