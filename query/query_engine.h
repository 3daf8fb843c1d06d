#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "query/last_cache.h"
#include "query/last_cache_rebuild.h"
#include "query/partition_filter.h"
#include "query/series_answer.h"
#include "query/topic_order.h"
#include "store/event_store.h"

namespace hotrow::query {

class ThreadPool;
class CursorCache;
struct IndexSeriesAnswer;  // query/index_series.h
struct SeriesRun;          // query/series.h

// One event as queries return it.
struct Event {
  std::string id;
  int64_t ts_ms = 0;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string payload;  // the record's JSON, as received
  friend bool operator==(const Event&, const Event&) = default;
};

enum class Order { kDesc, kAsc };

inline constexpr int kMaxLatest = 10000;
inline constexpr int64_t kMaxRangeLimit = 100000;
// The ids of one latest-of-many query, and the page size of the latest of every id
// (CONTRACT.md "Device state and series").
inline constexpr size_t kMaxLatestIds = 1000;
inline constexpr int64_t kMaxLatestAllLimit = 100000;

// The arguments of a range (per id or per index value): 0 <= from_ms < to_ms and
// 1 <= limit <= kMaxRangeLimit; else InvalidArgument naming the parameter.
Status CheckRangeArgs(int64_t from_ms, int64_t to_ms, int64_t limit);
inline constexpr int64_t kNoLimit = INT64_MAX;

// For tests: runs once a per-id store read has decided which salts of the bucket starting at
// `bucket_start_ms` it reads (query/id_salts.h), before it reads them.
using SaltsDecidedHook = std::function<void(int64_t bucket_start_ms)>;

struct QueryOptions {
  // Threads of the per-salt pool. 0 means the number of cores. Default: 0.
  int threads = 0;
  // Queries running at once; one more is refused with Status::Busy (HTTP 503). Default: 64.
  int max_concurrent_queries = 64;
  // Most events a per-salt task reads before handing them over. Bounds a query's memory to about
  // 2 chunks per open stream. Merges start with a salt's share of the answer and double up to
  // this; scans use it from the start. Default: 1024.
  size_t chunk_events = 1024;
  // For tests: runs on a pool thread before it reads a chunk of a scan, or a bucket of a large
  // range, over [min_ts, max_ts) (the query's bounds clipped to the window); may block to hold
  // that thread. Default: none.
  std::function<void(int64_t min_ts, int64_t max_ts)> pool_fill_hook;
  // Events kept per id by the last-N cache (query/last_cache.h), which answers latest-N with
  // n <= this, the latest of many ids and the latest of every id without reading the store
  // when it can do so exactly; 0 turns it off. query.last_cache. Default: 16.
  int last_cache = 16;
  // The memory that cache may hold; past it the least recently written ids are evicted.
  // query.last_cache_bytes. Default: 64 MiB.
  size_t last_cache_bytes = size_t{64} << 20;
  // For tests: runs before the walk of every id (LatestAll from that cache) reads a shard of it
  // (query/last_cache.h, WalkHook). Default: none.
  WalkHook cache_walk_hook;
  // For tests: runs on the reading thread after a per-id read of the store (latest, range,
  // series) has decided a bucket's salts, before it reads them; may write to the store, as a
  // write turning the id hot at that moment would. Default: none.
  SaltsDecidedHook salts_decided_hook;
};

// One page of the newest event of every id (QueryEngine::LatestAll).
struct LatestAllPage {
  std::vector<Event> events;  // one per id, ids in byte order
  // The last id of this page, to pass as `after` for the next one; none when no id follows.
  std::optional<std::string> next;
  bool from_cache = false;  // answered by the last-N cache, not by a read of the store
};

// The last-N cache's state (QueryEngine::Cache).
struct LastCacheStatus {
  bool enabled = false;
  int depth = 0;
  LastCacheStats cache;
  RebuildProgress rebuild;
};

// What queries cost in store work, counted since the engine started (exported in /metrics).
struct QueryWork {
  std::atomic<uint64_t> iterators_created{0};  // store cursors made
  std::atomic<uint64_t> seeks{0};              // cursor positionings
  std::atomic<uint64_t> rows_read{0};          // rows a cursor stepped onto, kept or not
};
struct QueryWorkStats {
  uint64_t iterators_created = 0;
  uint64_t seeks = 0;
  uint64_t rows_read = 0;
};

// Per-id ranges with a limit up to this run on the calling thread with cached cursors
// (query/small_query.h); larger ones go to the per-salt pool.
inline constexpr int64_t kSmallQueryLimit = 256;

// Receives events one at a time; returns false to stop the query early (the client went away).
using EventSink = std::function<bool(const Event&)>;

// Appends the wire form of one event to `out`. Called on the pool threads, several at once.
using EventEncoder = std::function<void(const Event&, std::string* out)>;
// Receives the wire form of `events` events, one after the other; returns false to stop.
using TextSink = std::function<bool(std::string_view text, int64_t events)>;

// Answers latest / range / scan over an EventStore with a fixed pool of threads that run per-salt
// work, merged by a streaming k-way merge (query/salt_merge.h): on the caller's thread, or for a
// large range on the thread that reads each bucket (query/bucket_range.h).
//
// Scans and large ranges use at most (threads - 1) pool threads each, plus the caller's own
// thread, which reads too: one of them never holds every pool thread, so a second one always
// finds a thread free. Latest-N and small ranges run on the caller's thread alone.
//
// Errors: bad arguments are InvalidArgument naming the argument; a failing salt fails the query at
// once with its Status; too many queries at once is Busy.
//
// Partitions. A query given a `filter` returns only the rows of the partitions it accepts (cluster
// mode: those this instance served when the query took its one snapshot of its ownership,
// cluster::QueryView; rows of partitions it owned before stay in its store and are skipped), and
// applies that one filter to every read it makes, the last-N cache's included. Null: every row.
//
// Thread-safety: every method may be called from many threads at once.
class QueryEngine {
 public:
  // `store` is not owned and must outlive the engine.
  QueryEngine(store::EventStore* store, const QueryOptions& options);
  ~QueryEngine();
  QueryEngine(const QueryEngine&) = delete;
  QueryEngine& operator=(const QueryEngine&) = delete;

  // The n newest events of `id`, newest first; ties in time by (topic name, partition, offset)
  // descending (query/topic_order.h). Walks buckets newest to oldest and opens no bucket once n are
  // found. REQUIRES nothing: n outside 1..10000 is InvalidArgument.
  Result<std::vector<Event>> Latest(std::string_view id, int n,
                                    const PartitionFilter* filter = nullptr);
  // Latest as the last-N cache alone answers it, exactly (the same events Latest returns), without
  // reading the store or waiting: true with *out set when the cache can, false when Latest must
  // read the store (the cache is off, rebuilding, holds too few of `id`'s events, or n is past its
  // depth). For the HTTP server's I/O threads, which must not block.
  bool LatestCached(std::string_view id, int n, std::vector<Event>* out);

  // Events of `id` with from_ms <= ts < to_ms in `order`, at most `limit` (1..100000).
  Result<std::vector<Event>> Range(std::string_view id, int64_t from_ms, int64_t to_ms,
                                   int64_t limit, Order order,
                                   const PartitionFilter* filter = nullptr);
  // The same, streamed to `sink`.
  Status RangeTo(std::string_view id, int64_t from_ms, int64_t to_ms, int64_t limit, Order order,
                 const EventSink& sink);
  // The same, each event encoded by `encode` on the thread that read it (the pool's, mostly, for a
  // range past kSmallQueryLimit) and handed to `sink` as ready text, in order, one or more events
  // per call: the caller's serial part is writing the text out.
  Status RangeEncoded(std::string_view id, int64_t from_ms, int64_t to_ms, int64_t limit,
                      Order order, const EventEncoder& encode, const TextSink& sink);

  // Every event of `id` with from_ms <= ts < to_ms, oldest first, with no limit: `sink` stops the
  // read by returning false. For a reader that keeps few of what it reads (a stream's replay,
  // live/replay.h): memory stays that of a range's read-ahead, whatever the id holds.
  Status RangeEach(std::string_view id, int64_t from_ms, int64_t to_ms, const EventSink& sink,
                   const PartitionFilter* filter = nullptr);
  // Every event of every id with from_ms <= ts < to_ms, at most `limit` (>= 1; kNoLimit for none),
  // streamed to `sink` bucket by bucket, oldest bucket first, salts in parallel. In no particular
  // order within a bucket. Memory stays bounded whatever the store holds.
  Status Scan(int64_t from_ms, int64_t to_ms, int64_t limit, const EventSink& sink,
              const PartitionFilter* filter = nullptr);
  // The same scan, each event encoded by `encode` on the thread that read it (the pool's, mostly),
  // handed to `sink` as ready text a chunk at a time: the caller's serial part is writing it out.
  Status ScanEncoded(int64_t from_ms, int64_t to_ms, int64_t limit, const EventEncoder& encode,
                     const TextSink& sink);

  // The n newest events of each of `ids` (at most kMaxLatestIds), each as Latest answers it, in
  // the order of `ids`. InvalidArgument for too many ids or a bad n.
  Result<std::vector<std::vector<Event>>> LatestMany(const std::vector<std::string>& ids, int n,
                                                     const PartitionFilter* filter = nullptr);

  // One page of the newest event (as Latest(id, 1) answers it) of every id with an event in the
  // window: the first `limit` (1..kMaxLatestAllLimit) ids after `after` that start with `prefix`,
  // in byte order. Walks the last-N cache when it holds every id of the window, else reads the
  // store (query/latest_all.h).
  Result<LatestAllPage> LatestAll(std::string_view prefix, std::string_view after, int64_t limit,
                                  const PartitionFilter* filter = nullptr);

  // The series of the numeric payload field `field` over the events of `id` with
  // from_ms <= ts < to_ms, in steps of step_ms (query/series.h). InvalidArgument for arguments
  // CheckSeriesArgs refuses or an empty field.
  Result<SeriesAnswer> Series(std::string_view id, std::string_view field, int64_t from_ms,
                              int64_t to_ms, int64_t step_ms,
                              const PartitionFilter* filter = nullptr);

  // The same over the events whose indexed `index_field` equals `value` (query/index_series.h),
  // with the buckets made before the field was indexed.
  Result<IndexSeriesAnswer> IndexSeries(std::string_view index_field, std::string_view value,
                                        std::string_view field, int64_t from_ms, int64_t to_ms,
                                        int64_t step_ms, const PartitionFilter* filter = nullptr);

  int threads() const;

  QueryWorkStats Work() const;

  // The last-N cache: on or off, what it holds and hits, and its rebuild's progress.
  LastCacheStatus Cache() const;
  // Returns once the cache's rebuild from the store has ended (at once when the cache is off).
  void WaitForCacheRebuild();
  // Drops from the cache the rows of the partitions `drop` accepts: this instance no longer owns
  // them (cluster mode). Answers stay exact without it (the partition filter applies to cached
  // rows too); it frees their memory.
  void ForgetPartitions(const PartitionFilter& drop);

 private:
  // The checks every series shares, then `series` on a SeriesRun of this engine.
  template <typename Answer>
  Result<Answer> WithSeriesRun(std::string_view field, int64_t from_ms, int64_t to_ms,
                               int64_t step_ms, const PartitionFilter* filter,
                               const std::function<Result<Answer>(const SeriesRun&)>& series);

  store::EventStore* const store_;
  const QueryOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::atomic<int> running_{0};
  std::unique_ptr<CursorCache> cursors_;
  std::unique_ptr<LastCache> cache_;           // null when off
  std::unique_ptr<LastCacheRebuild> rebuild_;  // null when off
  Status ScanImpl(int64_t from_ms, int64_t to_ms, int64_t limit, const EventSink* sink,
                  const EventEncoder* encode, const TextSink* text_sink,
                  const PartitionFilter* filter);
  int MaxWorkersPerQuery() const;
  // Where a range's events go: into `events`, to `sink`, or encoded by `encode` to `text`; set one.
  struct RangeOut {
    std::vector<Event>* events = nullptr;
    const EventSink* sink = nullptr;
    const EventEncoder* encode = nullptr;
    const TextSink* text = nullptr;
    bool latest = false;                      // Latest N: no bucket is read past the answer
    const PartitionFilter* filter = nullptr;  // the query's (null: every row)
  };
  // Range, RangeTo and RangeEncoded.
  Status RangeImpl(std::string_view id, int64_t from_ms, int64_t to_ms, int64_t limit, Order order,
                   const RangeOut& out);
  // RangeImpl without taking a query slot (the caller holds one).
  Status RangeAdmitted(std::string_view id, int64_t from_ms, int64_t to_ms, int64_t limit,
                       Order order, const RangeOut& out);
  // A cached event as the engine answers it, with its topic's name.
  Event FromCached(std::string id, CachedEvent&& cached) const;
  // Latest without taking a query slot: from the cache when it can answer, else the store.
  // `topics` (null: made here) orders ties in time; a caller asking many ids makes it once.
  Status LatestAdmitted(std::string_view id, int n, const PartitionFilter* filter,
                        std::vector<Event>* out, const TopicOrder* topics = nullptr);
  mutable QueryWork work_;
};

}  // namespace hotrow::query
