// Internal to store/: the small pieces every RocksDB-facing file of the store shares.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/listener.h>
#include <rocksdb/status.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace hotrow::store {

// A RocksDB status as a hotrow Status, with `context` in front of RocksDB's message.
Status FromRocks(const rocksdb::Status& s, const std::string& context);

// The bytes of every regular file under `path` (0 when it cannot be read).
uint64_t DirectoryBytes(const std::string& path);

// RocksDB's own log (warnings and errors), sent to spdlog instead of a LOG file in the store.
std::shared_ptr<rocksdb::Logger> NewSpdlogRocksLogger();

// Counts the changes of the store's table files (flushes and compactions finished). A bucket
// cursor kept between queries is refreshed when the data moved (its sequence number) and also
// when the tables changed: otherwise a cursor made during ingestion keeps probing the many L0
// files and memtables of that moment long after a compaction merged them.
class TableChanges final : public rocksdb::EventListener {
 public:
  uint64_t count() const { return count_.load(std::memory_order_acquire); }

  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo&) override { Bump(); }
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override { Bump(); }

 private:
  void Bump() { count_.fetch_add(1, std::memory_order_acq_rel); }

  std::atomic<uint64_t> count_{0};
};

// Puts RocksDB's flush and compaction threads under SCHED_BATCH (common/thread_priority.h) the
// first time each runs a job: RocksDB has no hook at a pool thread's start, but these run on it.
class BackgroundAsBatch final : public rocksdb::EventListener {
 public:
  void OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo&) override;
  void OnCompactionBegin(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override;
};

// Calls `hook` with the path of every table file RocksDB deleted, on the thread that deleted it.
class TableFileDeletions final : public rocksdb::EventListener {
 public:
  explicit TableFileDeletions(std::function<void(const std::string&)> hook)
      : hook_(std::move(hook)) {}
  void OnTableFileDeleted(const rocksdb::TableFileDeletionInfo& info) override {
    hook_(info.file_path);
  }

 private:
  const std::function<void(const std::string&)> hook_;
};

// db->Write(options, batch). In ThreadSanitizer builds TSan ignores the memory accesses made inside
// it (its locks are still seen): Debian's RocksDB is not built for TSan, and the leader of a write
// group copies the batches its followers built on their own threads, ordered by atomics TSan cannot
// see, so it took that copy for a race (with several store writers, not in every run). Only
// RocksDB's code runs inside; hotrow's accesses before and after the call are still checked.
rocksdb::Status WriteToDb(rocksdb::DB* db, const rocksdb::WriteOptions& options,
                          rocksdb::WriteBatch* batch);

// The default Env, except that it does not tell RocksDB how much disk is free. Stateless; shared.
rocksdb::Env* NoFreeSpaceEnv();

}  // namespace hotrow::store
