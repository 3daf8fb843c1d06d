#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "keying/index_key.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::query {

// A bucket the query's range covers whose index.fields did not hold the field asked for: its
// events cannot be found by the index (the bucket was made before the field was indexed).
struct UnindexedSpan {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  friend bool operator==(const UnindexedSpan&, const UnindexedSpan&) = default;
};

// InvalidArgument naming the problem when `field` is not in the store's index.fields or `value`
// is longer than an index row holds (keying::kMaxIndexValueSize).
Status CheckIndexedField(const store::EventStore& store, std::string_view field,
                         std::string_view value);

// Reads, through `it`, the event with data key `event` that an index posting listed: its id and
// payload, valid until `it` moves. Corruption when the store does not hold it. `work` (may be
// null) counts the seek and the row.
Status SeekIndexedEvent(store::RowIterator* it, const keying::RowKey& event, QueryWork* work,
                        std::string_view* id, std::string_view* payload);

struct IndexAnswer {
  std::vector<Event> events;
  // Oldest first for kAsc, newest first for kDesc (the order buckets were visited in). Only the
  // buckets the answer could have drawn from: a latest-N that was complete before reaching an
  // older bucket does not name it.
  std::vector<UnindexedSpan> unindexed;
};

// The events whose indexed `field` equals `value`, from the postings (keying/index_key.h) that
// ingest writes beside the events in the same WriteBatch.
//
// Same order, limits and window as the id queries (QueryEngine::Range): newest first for kDesc,
// ties in time by (topic, partition, offset) descending, the reverse for kAsc; ts in
// [max(from, window start), to). Buckets are visited in the answer's order and the next is opened
// only while the answer is incomplete; inside a bucket the value's postings are read in the
// answer's order until no unread posting can hold an event the answer still needs (a posting's
// events lie in one second, keying::kPostingSpanMs), their events ordered by (ts, topic,
// partition, offset), and only the events that make the answer are read.
//
// Consistency: in each bucket the postings and the events they list are read through one
// RocksDB iterator, so from one implicit snapshot; rows are never changed or deleted one by one
// (a bucket goes whole, and a bucket being read stays readable), so a posting always finds its
// events. A bucket whose index predates postings indexes no field (store/store_metadata.h).
//
// Errors: a field not in StoreOptions::index_fields (index.fields), a value over
// keying::kMaxIndexValueSize bytes, n / limit / from / to out of range: InvalidArgument naming
// the parameter. A posting whose event is missing: Corruption.
//
// Thread-safety: the functions may be called from many threads at once.
class IndexQuery {
 public:
  // `store` is not owned and must outlive this object; `work` (may be null) counts cursors,
  // seeks and rows read, as the engine's queries do.
  // `filter` (may be null: every row; not owned) keeps only the rows of the partitions it accepts,
  // before the limit, as the id queries' filter does (cluster mode).
  IndexQuery(store::EventStore* store, QueryWork* work, const PartitionFilter* filter = nullptr)
      : store_(store), work_(work), filter_(filter) {}

  // The n newest events with field = value. 1 <= n <= kMaxLatest.
  Result<IndexAnswer> Latest(std::string_view field, std::string_view value, int n) const;
  // Events with field = value and from_ms <= ts < to_ms, at most `limit` (1..kMaxRangeLimit).
  Result<IndexAnswer> Range(std::string_view field, std::string_view value, int64_t from_ms,
                            int64_t to_ms, int64_t limit, Order order) const;
  // Every event with field = value and from_ms <= ts < to_ms whose key `want` accepts, oldest
  // first, with no limit; `sink` stops the read by returning false. Only the events `want` keeps
  // are read (the postings list their keys), so a reader that keeps few of many (a stream's
  // replay, live/replay.h) reads few events. Errors as Range's.
  Status Each(std::string_view field, std::string_view value, int64_t from_ms, int64_t to_ms,
              const std::function<bool(const keying::RowKey&)>& want, const EventSink& sink) const;

 private:
  store::EventStore* const store_;
  QueryWork* const work_;
  const PartitionFilter* const filter_;
};

}  // namespace hotrow::query
