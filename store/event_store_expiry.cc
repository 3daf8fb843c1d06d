// RocksEventStore's expiry: expired buckets dropped whole, quiet ones flushed and queued for
// compaction on the way (store/rocks_event_store.h).
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>

#include "store/bucket_compactor.h"
#include "store/rocks_bucket.h"
#include "store/rocks_event_store.h"
#include "store/rocks_support.h"
#include "store/store_metadata.h"

namespace hotrow::store {
namespace {

// A bucket not written for this long (by the wall clock) has stopped receiving writes: its
// memtable is flushed, so that it does not pin WAL files until max_total_wal_size forces it.
constexpr int64_t kIdleFlushMs = 30 * 1000;

}  // namespace

void RocksEventStore::FlushIdleBuckets() {
  const int64_t now = options().wall_clock->NowMs();
  // A bucket about to be dropped is neither flushed nor compacted: RocksDB leaves the table file
  // of a flush or compaction that a drop overtook on disk until its next full scan for obsolete
  // files (hours), and the work would be thrown away anyway.
  const int64_t window_start = NowMs() - options().ttl_ms;
  std::vector<std::shared_ptr<RocksBucket>> idle;
  {
    std::unique_lock lock(state_mu_);
    for (auto it = last_write_ms_.begin(); it != last_write_ms_.end();) {
      if (now - it->second < kIdleFlushMs) {
        ++it;
        continue;
      }
      if (auto b = buckets_.find(it->first);
          b != buckets_.end() && b->second->end_ms() > window_start) {
        idle.push_back(b->second);
      }
      it = last_write_ms_.erase(it);  // a later write puts it back
    }
  }
  if (idle.empty()) return;
  rocksdb::FlushOptions fo;
  fo.wait = false;
  fo.allow_write_stall = true;
  const int64_t store_now = NowMs();
  for (const auto& bucket : idle) {
    rocksdb::Status s = db_->Flush(fo, bucket->cf());
    if (!s.ok())
      spdlog::warn("store: flushing idle bucket {}: {}", bucket->start_ms(), s.ToString());
    if (bucket->end_ms() <= store_now) compactor_->Enqueue(bucket);
  }
  // The metadata is written with every batch: flushed too, or it would pin the same WAL files.
  rocksdb::Status s = db_->Flush(fo, meta_);
  if (!s.ok()) spdlog::warn("store: flushing the metadata: {}", s.ToString());
}

Result<size_t> RocksEventStore::DropExpiredBuckets() {
  if (options().read_only) return size_t{0};
  std::lock_guard drop_lock(drop_mu_);
  {
    std::shared_lock writers_lock(writers_mu_);
    if (!write_failed_.load()) FlushIdleBuckets();
  }
  // Writers are held out only while the expired buckets leave the map and the window's floor
  // moves past them: every Write under way has finished by then, and every later one refuses
  // rows below the floor, so none reaches a bucket dropped below. The drop itself (a MANIFEST
  // write, tens of ms at 100M events) and the observers then run beside new writes.
  std::vector<std::shared_ptr<RocksBucket>> expired;
  int64_t until_ms = 0;
  {
    std::unique_lock writers_lock(writers_mu_);
    const int64_t window_start = NowMs() - options().ttl_ms;
    std::unique_lock lock(state_mu_);
    for (const auto& [start, bucket] : buckets_) {
      if (bucket->end_ms() > window_start) break;
      expired.push_back(bucket);
    }
    for (const auto& bucket : expired) {
      buckets_.erase(bucket->start_ms());
      last_write_ms_.erase(bucket->start_ms());
      dropped_until_ms_ = std::max(dropped_until_ms_, bucket->end_ms());
    }
    until_ms = dropped_until_ms_;
  }
  if (options().drop_hook) options().drop_hook();
  size_t dropped = 0;
  for (const auto& bucket : expired) {
    // The bucket goes first, then its counters: a crash in between leaves counters of a missing
    // bucket, which LoadMetadata ignores.
    // No flush of the bucket may be under way when it is dropped: RocksDB leaves the table file of
    // a flush that a drop overtook on disk until its next full scan for obsolete files, hours
    // later. A quiet bucket has nothing in memory and is dropped at once (a Flush would still
    // hold RocksDB's write queue for a moment); one written to until the clock passed it (tests,
    // a stream clock's jump) is flushed here, waited for, beside new writes.
    uint64_t active = 0, immutable = 0;
    if (!db_->GetIntProperty(bucket->cf(), "rocksdb.num-entries-active-mem-table", &active) ||
        !db_->GetIntProperty(bucket->cf(), "rocksdb.num-immutable-mem-table", &immutable) ||
        active + immutable > 0) {
      rocksdb::FlushOptions settle;
      settle.allow_write_stall = true;
      rocksdb::Status flushed = db_->Flush(settle, bucket->cf());
      if (!flushed.ok())
        spdlog::warn("store: flushing bucket {} before its drop: {}", bucket->start_ms(),
                     flushed.ToString());
    }
    rocksdb::Status s = db_->DropColumnFamily(bucket->cf());
    if (!s.ok()) {
      // Back in the map, so that the next call tries again; no write reaches it (the floor).
      std::unique_lock lock(state_mu_);
      for (const auto& left : std::span(expired).subspan(dropped)) {
        buckets_.emplace(left->start_ms(), left);
      }
      return NoteWrite(s, "dropping bucket " + std::to_string(bucket->start_ms()));
    }
    bucket->MarkDropped();
    rocksdb::WriteBatch wb;
    const std::string from = StatKey(bucket->start_ms(), 0);
    const std::string to = kStatPrefix + Be64(static_cast<uint64_t>(bucket->start_ms()) + 1);
    s = wb.DeleteRange(meta_, from, to);
    if (s.ok()) s = wb.Delete(meta_, IndexFieldsKey(bucket->start_ms()));
    // A bucket is dropped even while RocksDB refuses writes: expiry is what frees a full disk.
    // Its counters are then left behind, which LoadMetadata ignores.
    if (s.ok() && ResumeAfterFailedWrite().ok()) {
      s = WriteToDb(db_.get(), rocksdb::WriteOptions(), &wb);
      if (!s.ok()) write_failed_ = true;
    }
    if (!s.ok())
      spdlog::warn("store: clearing counters of bucket {}: {}", bucket->start_ms(), s.ToString());
    {
      std::unique_lock lock(state_mu_);
      counters_.erase(bucket->start_ms());
    }
    ++dropped;
  }
  if (dropped > 0) {
    size_t live = 0;
    {
      std::shared_lock lock(state_mu_);
      live = buckets_.size();
    }
    spdlog::info("store: dropped {} expired bucket(s); {} live", dropped, live);
    // observers_ changes only under writers_mu_ exclusive; shared, this waits for no Write.
    std::shared_lock writers_lock(writers_mu_);
    for (WriteObserver* observer : observers_) observer->BucketsDropped(until_ms);
  }
  return dropped;
}

}  // namespace hotrow::store
