#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "query/last_cache.h"
#include "query/thread_pool.h"
#include "store/event_store.h"

namespace hotrow::query {

// Where a rebuild is.
struct RebuildProgress {
  bool running = false;
  // The rebuild read every bucket of the window (the cache is then complete); false while it
  // runs, and when it stopped early (the cache filled up, a read failed, or it was stopped).
  bool whole = false;
  uint64_t buckets_done = 0;
  uint64_t buckets_total = 0;  // the buckets of the window when it started
  uint64_t rows = 0;           // rows offered to the cache
  double seconds = 0;          // since it started (until it ended, once it has)
};

// Fills a LastCache with the rows a store held before the cache was attached to it, so that the
// cache is warm after a restart (CONTRACT.md "Device state and series": rebuilt from the store at
// start).
//
// Operation: one thread (hotrow-lcache), started by the constructor, reads the buckets of the
// window newest first and offers each row in the window to the cache (LastCache::RebuildRows);
// a bucket's salts are read in parallel, on up to `max_workers` threads of the query pool beside
// it. After each bucket it tells the cache that every row from that bucket's start on was offered
// (LastCache::SetKnownFrom), which is what lets the cache answer: newest first, the cache answers
// latest-N for busy ids after the first bucket. An id's rows in a salt of a bucket past the
// first depth + 1 are stepped over (they are older than depth of its rows: none can be among its
// newest). It stops at the first eviction (the cache is full: what older buckets hold would only
// push out what newer ones gave), at a failed read (logged), or when stopped. Rows written
// meanwhile reach the cache through the store's WriteObserver; a row met both ways is kept once.
//
// REQUIRES: the cache was added to the store's write observers before construction, so that
// every row is either in the buckets listed at the start or told to the cache when written.
//
// Threads: the one above, joined by the destructor (which stops it, and the pool tasks it runs,
// at their next row batch).
// Thread-safety: progress() and Wait() may be called from any thread.
class LastCacheRebuild {
 public:
  // `store`, `cache` and `pool` are not owned and must outlive this object. `pool` null: every
  // salt is read on the rebuild's own thread.
  LastCacheRebuild(store::EventStore* store, LastCache* cache, ThreadPool* pool = nullptr,
                   int max_workers = 0);
  ~LastCacheRebuild();
  LastCacheRebuild(const LastCacheRebuild&) = delete;
  LastCacheRebuild& operator=(const LastCacheRebuild&) = delete;

  RebuildProgress progress() const;
  // Returns once the rebuild has ended.
  void Wait();

 private:
  void Run();
  // Offers one bucket's rows in the window; false when stopped, full or failed.
  bool ReadBucket(const store::Bucket& bucket, int64_t window_start_ms);
  // Offers one salt of a bucket; Cancelled when stopped.
  Status ReadSalt(const store::Bucket& bucket, uint8_t salt, int64_t window_start_ms);

  store::EventStore* const store_;
  LastCache* const cache_;
  ThreadPool* const pool_;
  const int max_workers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> buckets_done_{0};
  std::atomic<uint64_t> buckets_total_{0};
  std::atomic<uint64_t> rows_{0};
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  bool running_ = true;                        // guarded by mu_
  bool whole_ = false;                         // guarded by mu_
  std::chrono::steady_clock::time_point end_;  // guarded by mu_
  std::thread thread_;                         // last: started once everything above is ready
};

}  // namespace hotrow::query
