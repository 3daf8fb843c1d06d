#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "query/id_salts.h"
#include "query/partition_filter.h"
#include "query/query_engine.h"
#include "query/salt_merge.h"
#include "query/thread_pool.h"
#include "query/topic_order.h"
#include "store/event_store.h"

namespace hotrow::query {

// What a large per-id range reads and how (QueryEngine::Range past kSmallQueryLimit).
struct BucketRangeSpec {
  store::EventStore* store = nullptr;
  ThreadPool* pool = nullptr;
  // Pool threads the range may hold at once, beside the calling thread.
  int max_workers = 0;
  // True: past the first bucket, the buckets after the one being emitted are read ahead, up to one
  // per worker, each merged whole on the thread that reads it, as a range over many buckets wants.
  // False: one bucket at a time, its salts read by the workers, so that no bucket is opened once
  // the answer is complete (latest N).
  bool ahead = true;
  const QueryRun::FillHook* hook = nullptr;  // QueryOptions::pool_fill_hook; not owned
  // QueryOptions::salts_decided_hook, run once each bucket's salts are decided; not owned.
  const SaltsDecidedHook* decided_hook = nullptr;
  const IdSalts* salts = nullptr;
  std::string_view id;
  int64_t from_ms = 0;  // clipped to the window
  int64_t to_ms = 0;
  Order order = Order::kDesc;
  const TopicOrder* topics = nullptr;
  const PartitionFilter* filter = nullptr;  // null: every row
  QueryWork* work = nullptr;
  size_t chunk_events = 1024;  // QueryOptions::chunk_events
  // With `encode`, events go to `text` as their wire form (encoded where they were read), one or
  // more per call; else as events to `sink`. Not owned.
  const EventSink* sink = nullptr;
  const EventEncoder* encode = nullptr;
  const TextSink* text = nullptr;
  // When set (with a `sink` appending to it), the events of a bucket read ahead are moved into it
  // rather than copied through `sink`. Not owned.
  std::vector<Event>* events = nullptr;
  // Where every cursor of the range reads: set by RangeOverBuckets, whatever the caller gave.
  const store::ReadPoint* at = nullptr;
};

// Emits the events of spec.id in [from_ms, to_ms) from `buckets` (the answer's order, each
// overlapping the range), at most `limit`, in the answer's order. Buckets hold disjoint time
// spans: each is merged over its salts on its own (query/salt_merge.h) and emitted whole, in turn.
//
// With spec.ahead and pool workers, the first bucket's salts are read by up to spec.max_workers
// pool workers and the calling thread, and merged on the calling thread straight to the sinks (a
// range the first bucket fills, a busy id, is read at the speed of one bucket on every thread);
// so are the last bucket's, which no pool worker claims (a range mostly in its last bucket would
// otherwise wait for one worker to read it alone); every bucket between is merged whole on one
// thread. Pool workers start on the later buckets as
// soon as the first bucket's salts are read out and hold fewer events than `limit` (usually before
// its merge), so that a busy id's range reads no other bucket and the pool does not sit idle while
// the first bucket is merged. While one bucket is emitted later ones are read
// ahead, and the calling thread takes any bucket no pool thread has started rather than wait. A
// bucket read ahead may read up to what was still missing when it started; it stops once the
// buckets before it hold the rest of the answer. Memory: the events of the buckets read ahead, at
// most `limit` each. Without spec.ahead (latest N) or without workers, one bucket at a time, its
// salts read by the workers, straight to the sinks.
//
// Every cursor reads at one ReadPoint of the store, taken before any bucket's salts are decided
// (which salts may hold the id: the id filter, and under salt_by adaptive whether the bucket
// spread it): the writer marks both before a row is readable and never unmarks them, so the
// decision covers every row the cursors see, and a write landing while the range runs is read
// whole or not at all, however many salts and threads read the bucket.
//
// Returns once nothing it started runs. The first failure fails the range.
Status RangeOverBuckets(const BucketRangeSpec& spec,
                        const std::vector<std::shared_ptr<const store::Bucket>>& buckets,
                        int64_t limit);

}  // namespace hotrow::query
