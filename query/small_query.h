#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "keying/row_key.h"
#include "query/id_salts.h"
#include "query/query_engine.h"
#include "query/topic_order.h"
#include "store/event_store.h"

namespace hotrow::query {

// Bucket cursors kept per calling thread, so that a small query seeks every salt on one cursor per
// bucket instead of creating a RocksDB iterator per salt per bucket (DESIGN.md "Queries": a query
// small enough to answer in tens of microseconds runs on the calling thread).
//
// A cached cursor pins the bucket and the RocksDB version it last saw (memtables, files). To
// bound that, whenever the store's bucket list changes every thread's cursors are dropped, so an
// idle thread pins at most one bucket width's worth of old versions.
//
// Thread-safety: every method may be called from many threads at once; a thread only ever uses
// its own cursors.
class CursorCache {
 public:
  CursorCache() = default;
  CursorCache(const CursorCache&) = delete;
  CursorCache& operator=(const CursorCache&) = delete;

  struct Entry {
    std::shared_ptr<const store::Bucket> bucket;
    std::unique_ptr<store::RowIterator> cursor;
  };
  // A row that may be in the answer: its key and its payload, copied once out of RocksDB.
  struct Candidate {
    keying::RowKey key;
    std::string payload;
  };
  struct Local {
    std::mutex mu;  // held by the owning thread for a whole query; by a pruner briefly
    std::vector<Entry> entries;
    // The owning thread's scratch, kept between its queries so that a query reuses the vectors
    // and payload buffers of the one before instead of allocating its own. Not pruned: it pins
    // nothing of the store.
    std::vector<Candidate> top;    // the best rows so far, a heap
    std::vector<Candidate> spare;  // rows evicted from `top`, their buffers reused
    // The salts a bucket is sought in, with the bound on their rows' times (a bucket's id filter).
    std::vector<std::pair<int64_t, uint8_t>> seek_order;
    // Topic names by number: a number never changes its name (EventStore::TopicNumber).
    std::vector<std::pair<uint16_t, std::string>> topics;
  };

  // This thread's cursors. `live` is the store's current bucket list: when it differs from the last
  // one seen, every thread's cursors are dropped first.
  Local* ForThisThread(const std::vector<std::shared_ptr<const store::Bucket>>& live);

 private:
  std::mutex mu_;
  std::unordered_map<std::thread::id, std::unique_ptr<Local>> locals_;  // guarded by mu_
  std::vector<const store::Bucket*> last_live_;                         // guarded by mu_
};

// Receives the events of a small range one at a time and may move from them (Latest moves each
// payload into its answer: copied once out of RocksDB, never again); returns false to stop.
using EventTaker = std::function<bool(Event& event)>;

// Answers a per-id range with a small limit on the calling thread: per bucket (in `order`), one
// cached cursor is aimed at each salt's (salt, id) prefix in turn, and a salt's rows are read only
// while they can still be in the answer (each salt yields in the answer's order, so the first row
// worse than the current limit-th best ends that salt). Payloads are copied once out of RocksDB and
// moved into the Event given to `take`.
//
// `live` is the store's bucket list as EventStore::Buckets() returns it (oldest first); they are
// visited in the answer's order (newest first for kDesc). In each, the salts `salts` names for it
// are sought (query/id_salts.h). Rows of partitions `filter` refuses (null: none) are skipped.
// Ties in time order topics by `topics`' ranks (their names; null: the store's numbers); when
// those are not the numbers' order a salt is read on through the rows tied with its worst kept
// one. A bucket's salts are decided after its cursor is made or refreshed, so that the decision
// covers every row the cursor sees (query/id_salts.h); `decided_hook` (QueryOptions::
// salts_decided_hook; null: none) runs right after.
Status SmallRange(CursorCache* cache, store::EventStore* store,
                  const std::vector<std::shared_ptr<const store::Bucket>>& live,
                  const IdSalts& salts, std::string_view id, int64_t from_ms, int64_t to_ms,
                  int64_t limit, Order order, QueryWork* work, const EventTaker& take,
                  const PartitionFilter* filter = nullptr, const TopicOrder* topics = nullptr,
                  const SaltsDecidedHook* decided_hook = nullptr);

}  // namespace hotrow::query
