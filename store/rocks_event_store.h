// Internal to store/: the RocksDB event store behind EventStore::Open. Its opening (Init and the
// checks it runs) is in event_store_open.cc; writes, expiry and reads in event_store.cc.
#pragma once

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_buffer_manager.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "store/bucket_compactor.h"
#include "store/event_store.h"
#include "store/rocks_bucket.h"

namespace hotrow::store {

struct SaltCounter {
  uint64_t events = 0;
  uint64_t bytes = 0;  // of events and their index rows
};

class RocksEventStore final : public EventStore {
 public:
  explicit RocksEventStore(const StoreOptions& options) : EventStore(options) {}
  ~RocksEventStore() override;

  Status Init();

  Result<uint16_t> TopicNumber(std::string_view topic) override;
  std::optional<std::string> TopicName(uint16_t number) const override;
  Status Write(const WriteBatchInput& batch, WriteOutcome* outcome) override;
  std::map<TopicPartition, int64_t> StoredOffsets() const override;
  std::map<TopicPartition, PartitionRun> PartitionRuns() const override;
  Result<size_t> DropExpiredBuckets() override;
  int64_t NowMs() const override;
  std::vector<std::shared_ptr<const Bucket>> Buckets() const override;
  std::shared_ptr<const ReadPoint> ReadPointNow() const override;
  StoreStats Stats() const override;
  void WaitForCompactions() override;
  void AddWriteObserver(WriteObserver* observer) override;
  void RemoveWriteObserver(WriteObserver* observer) override;

 private:
  rocksdb::ColumnFamilyOptions BucketOptions() const;
  Status CheckFormat(bool is_new);
  Status LoadMetadata();
  // Rows go in the same WriteBatch as their bucket's counters and are never deleted one by one, so
  // every bucket holds exactly as many rows as its counters say. A lost table file or a MANIFEST
  // cut short (which RocksDB reads as an older, shorter one without complaint) breaks that:
  // Corruption, rather than answers from part of the store. Reads every row once, at open, and
  // rebuilds each bucket's IdSaltFilter on the way, the buckets on parallel threads.
  Status CheckRowsMatchCounters() const;
  // The same for one bucket, whose rows start at `start`.
  Status CheckBucketRows(int64_t start, RocksBucket* bucket) const;
  // The bucket that holds `ts`, created (under bucket_mu_) when missing. REQUIRES: writers_mu_
  // held, shared or exclusive.
  Result<std::shared_ptr<RocksBucket>> BucketFor(int64_t ts);
  // The slots of each bucket's SpreadIds under salt_by adaptive; 0 otherwise.
  size_t SpreadSlots() const;
  // A failed write (a full disk, most often) leaves RocksDB in a background-error state in which
  // it refuses every write until DB::Resume() succeeds. RocksDB's own recovery from a full disk
  // waits for a free memtable's worth of space (64 MiB), which a small disk may never have, so
  // the store resumes before its next write instead: while the disk is still full Resume fails
  // at once with the same error; once space is back it clears the state. Takes resume_mu_.
  Status ResumeAfterFailedWrite();
  // Records the outcome of a RocksDB write.
  Status NoteWrite(const rocksdb::Status& s, const std::string& context);
  // One partition's offsets as a Write sees them: the stored next offset (rows below it are
  // duplicates), the batch's next offset (under salt_by adaptive every row must be below it) and
  // the highest offset of the batch taken so far.
  struct PartitionOffsets {
    uint16_t topic = 0;
    int32_t partition = 0;
    int64_t stored = INT64_MIN;        // none stored
    int64_t batch_next = INT64_MIN;    // none in the batch
    int64_t accepted_max = INT64_MIN;  // the highest offset of the batch accepted so far
  };
  // REQUIRES: state_mu_ held, shared or exclusive; topic < topic_names_.size().
  PartitionOffsets OffsetsOf(uint16_t topic, int32_t partition, const WriteBatchInput& batch) const;
  // The partitions a Write carries, held for its duration, so that a second Write of one of them
  // at the same time is refused instead of storing a record twice (salt_by adaptive only).
  class PartitionClaim {
   public:
    explicit PartitionClaim(RocksEventStore* store) : store_(store) {}
    ~PartitionClaim();
    PartitionClaim(const PartitionClaim&) = delete;
    PartitionClaim& operator=(const PartitionClaim&) = delete;
    // Claims every partition of `partitions`, or none and InvalidArgument when one is claimed.
    Status Claim(const std::map<TopicPartition, int64_t>& partitions);

   private:
    RocksEventStore* const store_;
    std::vector<TopicPartition> held_;
  };
  // Starts a flush (not waited for) of every bucket written to but not for kIdleFlushMs, and of
  // the metadata with them; queues the closed ones for compaction. REQUIRES: writers_mu_ held
  // shared.
  void FlushIdleBuckets();

  // Constant after Init().
  std::shared_ptr<rocksdb::Cache> block_cache_;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers_;
  std::shared_ptr<TableChanges> table_changes_;  // read by the buckets' cursors
  std::shared_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;  // the default column family; owned by db_
  rocksdb::CompressionType compression_ = rocksdb::kNoCompression;
  std::unique_ptr<BucketCompactor> compactor_;  // none when read-only

  // Writes run in parallel: Write and TopicNumber hold writers_mu_ shared; DropExpiredBuckets
  // holds it exclusive only while expired buckets leave buckets_ and dropped_until_ms_ moves (no
  // Write is under way then, and none after reaches them), the destructor for good. Lock order:
  // drop_mu_, writers_mu_, then topic_mu_ / bucket_mu_ / resume_mu_, then state_mu_.
  std::mutex drop_mu_;  // one DropExpiredBuckets at a time
  std::shared_mutex writers_mu_;
  std::mutex topic_mu_;                    // serialises numbering new topics
  std::mutex bucket_mu_;                   // serialises creating buckets
  std::mutex resume_mu_;                   // serialises DB::Resume
  std::atomic<bool> write_failed_{false};  // see ResumeAfterFailedWrite
  std::mutex claims_mu_;                   // taken alone, never with another lock
  std::set<TopicPartition> claimed_;       // guarded by claims_mu_: see PartitionClaim
  // Told of every stored row and dropped bucket. Changed only under writers_mu_ exclusive, so a
  // Write (which holds it shared) reads it unlocked.
  std::vector<WriteObserver*> observers_;

  // Readers take snapshots of these under state_mu_ (shared); writers change them under
  // state_mu_ (exclusive), after the durable write.
  mutable std::shared_mutex state_mu_;
  std::map<int64_t, std::shared_ptr<RocksBucket>> buckets_;  // by start
  std::map<TopicPartition, int64_t> offsets_;
  std::map<TopicPartition, PartitionRun> runs_;
  std::map<std::string, uint16_t, std::less<>> topic_numbers_;
  std::vector<std::string> topic_names_;
  std::map<int64_t, std::vector<SaltCounter>> counters_;  // by bucket start, one per salt
  // Every time before this is in a dropped bucket. Changed only under writers_mu_ exclusive.
  int64_t dropped_until_ms_ = 0;
  // Wall ms of the last write to each bucket with unflushed writes (FlushIdleBuckets).
  std::map<int64_t, int64_t> last_write_ms_;

  std::atomic<int64_t> stream_clock_ms_{0};
};

}  // namespace hotrow::store
