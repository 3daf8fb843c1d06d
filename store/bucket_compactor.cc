#include "store/bucket_compactor.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace hotrow::store {

int SortedRuns(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
  rocksdb::ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(cf, &meta);
  int runs = 0;
  for (const rocksdb::LevelMetaData& level : meta.levels) {
    if (level.files.empty()) continue;
    runs += level.level == 0 ? static_cast<int>(level.files.size()) : 1;
  }
  return runs;
}

BucketCompactor::BucketCompactor(std::shared_ptr<rocksdb::DB> db)
    : db_(std::move(db)), thread_([this] { Run(); }) {}

BucketCompactor::~BucketCompactor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  db_->DisableManualCompaction();  // the compaction under way returns at once
  thread_.join();
}

void BucketCompactor::Enqueue(std::shared_ptr<RocksBucket> bucket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(bucket));
    ++queued_;
  }
  cv_.notify_all();
}

void BucketCompactor::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = queued_;
  cv_.wait(lock, [&] { return handled_ >= target || stopping_; });
}

uint64_t BucketCompactor::compactions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compactions_;
}

void BucketCompactor::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::shared_ptr<RocksBucket> bucket = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Compact(*bucket);
    bucket.reset();  // a dropped bucket's files go with its last holder
    lock.lock();
    ++handled_;
    cv_.notify_all();
  }
}

void BucketCompactor::Compact(const RocksBucket& bucket) {
  if (bucket.dropped()) return;
  rocksdb::FlushOptions flush;
  flush.allow_write_stall = true;
  rocksdb::Status s = db_->Flush(flush, bucket.cf());
  const int runs = s.ok() ? SortedRuns(db_.get(), bucket.cf()) : 0;
  if (runs <= 1) return;
  const auto start = std::chrono::steady_clock::now();
  rocksdb::CompactRangeOptions options;
  options.exclusive_manual_compaction = false;  // automatic compactions of other buckets go on
  options.allow_write_stall = true;
  s = db_->CompactRange(options, bucket.cf(), nullptr, nullptr);
  if (!s.ok()) {
    // Dropped meanwhile, the store closing, or a failing disk: the bucket stays as it was,
    // readable; RocksDB reports a disk error to the next write as well.
    if (!bucket.dropped() && !s.IsIncomplete()) {
      spdlog::warn("store: compacting quiet bucket {}: {}", bucket.start_ms(), s.ToString());
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++compactions_;
  }
  spdlog::debug("store: compacted quiet bucket {} from {} sorted runs to {} in {:.1f} s",
                bucket.start_ms(), runs, SortedRuns(db_.get(), bucket.cf()),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace hotrow::store
