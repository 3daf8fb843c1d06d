// Internal to store/: compacts buckets that stopped receiving writes into one sorted run each.
#pragma once

#include <rocksdb/db.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "store/rocks_bucket.h"

namespace hotrow::store {

// A bucket is written for about its own span, then only read until it expires. While written it
// collects L0 files (and L1 once they are merged), and every salt seek of a per-id query probes
// each of those sorted runs that may hold the id. Once the bucket goes quiet it is compacted once,
// as time-window compaction does, into one run: a seek then probes one file. Measured with
// scaling_bench at 10M events: latest-10 p50 183 -> 108 µs (docs/BENCHMARKS.md).
//
// One background thread, so that a compaction (seconds for a large bucket) never holds a write,
// a drop or the caller. A bucket dropped meanwhile is skipped or its compaction fails harmlessly.
class BucketCompactor {
 public:
  explicit BucketCompactor(std::shared_ptr<rocksdb::DB> db);
  // Stops the compaction under way (RocksDB's manual compactions are disabled for the rest of
  // the database's life) and joins the thread: closing a store never waits for one.
  ~BucketCompactor();

  BucketCompactor(const BucketCompactor&) = delete;
  BucketCompactor& operator=(const BucketCompactor&) = delete;

  // Queues `bucket`: flushed, then compacted when it holds more than one sorted run.
  void Enqueue(std::shared_ptr<RocksBucket> bucket);
  // Returns once every bucket queued before the call has been handled.
  void WaitIdle();

  uint64_t compactions() const;  // buckets compacted so far

 private:
  void Run();
  void Compact(const RocksBucket& bucket);

  const std::shared_ptr<rocksdb::DB> db_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<RocksBucket>> queue_;
  uint64_t queued_ = 0;   // buckets ever queued
  uint64_t handled_ = 0;  // of those, handled
  uint64_t compactions_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is ready
};

// The sorted runs of a column family's table files: each L0 file is one, each non-empty level
// below is one.
int SortedRuns(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf);

}  // namespace hotrow::store
