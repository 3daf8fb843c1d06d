#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "query/query_engine.h"
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
  struct Local {
    std::mutex mu;  // held by the owning thread for a whole query; by a pruner briefly
    std::vector<Entry> entries;
  };

  // This thread's cursors. `live` is the store's current bucket list: when it differs from the last
  // one seen, every thread's cursors are dropped first.
  Local* ForThisThread(const std::vector<std::shared_ptr<const store::Bucket>>& live);

 private:
  std::mutex mu_;
  std::unordered_map<std::thread::id, std::unique_ptr<Local>> locals_;  // guarded by mu_
  std::vector<const store::Bucket*> last_live_;                         // guarded by mu_
};

// Answers a per-id range with a small limit on the calling thread: per bucket (in `order`), one
// cached cursor is aimed at each salt's (salt, id) prefix in turn, and a salt's rows are read only
// while they can still be in the answer (each salt yields in the answer's order, so the first row
// worse than the current limit-th best ends that salt). Payloads are copied once out of RocksDB and
// moved into the Event given to `sink`.
//
// `buckets` are in the order of the answer (newest first for kDesc).
Status SmallRange(CursorCache* cache, store::EventStore* store,
                  const std::vector<std::shared_ptr<const store::Bucket>>& buckets,
                  const std::vector<uint8_t>& salts, std::string_view id, int64_t from_ms,
                  int64_t to_ms, int64_t limit, Order order, QueryWork* work,
                  const EventSink& sink);

}  // namespace hotrow::query
