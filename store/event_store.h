#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/salter.h"
#include "store/write_observer.h"

namespace hotrow::store {

struct WriteBatchInput;

// How the store tells the time that decides its hot window.
enum class ClockKind {
  kWall,    // the wall clock (StoreOptions::wall_clock)
  kStream,  // the highest event time ever written to this store
};

struct StoreOptions {
  // Directory of the RocksDB database. Created when missing (see create_if_missing).
  std::string path;
  // The hot window: events older than now - ttl_ms are never returned and their buckets dropped.
  // Default: 10 minutes.
  int64_t ttl_ms = 10 * 60 * 1000;
  // Width of a time bucket, the unit of expiry. REQUIRES: 0 < bucket_ms <= ttl_ms. Default: 1
  // minute.
  int64_t bucket_ms = 60 * 1000;
  // Default: kWall.
  ClockKind clock = ClockKind::kWall;
  // Events more than this far ahead of the wall clock are refused as `future`. Judged against the
  // wall clock for both clock kinds: a wrong future time is wrong whatever decides the window, and
  // a stream clock must not be dragged forward by it. Default: 1 minute.
  int64_t max_future_ms = 60 * 1000;
  // Salt count (1..256) and what salts are computed from. Recorded when the store is created;
  // opening it with other values fails with Status::Incompatible. Default: 16, by record.
  int salts = 16;
  keying::SaltBy salt_by = keying::SaltBy::kRecord;
  // With salt_by kAdaptive, when an id is hot in a bucket (keying.hot_share and its floor of
  // events). Not recorded in the store: a change applies to the rows written after it, and a query
  // never depends on it. REQUIRES: 0 < hot.hot_share <= 1. Default: keying::HotRule's.
  keying::HotRule hot;
  // The wall clock. Not owned; must outlive the store. Default: the system clock.
  const Clock* wall_clock = WallClock::Default();
  // One block cache for every bucket: data blocks read by queries, and the index and filter blocks
  // of every table (pinned for L0). Memtables are not charged to it. Default: 256 MiB
  // (store.block_cache).
  size_t block_cache_bytes = size_t{256} << 20;
  // One memtable budget shared by every bucket, so memory stays bounded whatever the bucket count;
  // separate from the block cache. Default: 64 MiB (store.write_buffer).
  size_t write_buffer_bytes = size_t{64} << 20;
  // Table files written from now on keep their index and filter in partitions of about 4 KiB
  // (RocksDB kTwoLevelIndexSearch, partition_filters) under a small top level pinned in the block
  // cache: a seek loads the partitions it needs instead of a bucket's whole index and filter
  // (tens of MB for a bucket of 10M events), so they cannot crowd data blocks out of the cache.
  // Files already written keep their layout; a store holding both kinds reads both. Default: true
  // (store.partitioned_index).
  bool partitioned_index = true;
  // The first LSM level whose table files are LZ4-compressed (when RocksDB has LZ4); the levels
  // above it are written uncompressed. A bucket spends its first minutes in L0 and L1, where
  // compression would cost every flush and early compaction CPU; a large bucket (a window of tens
  // of millions of events) is compacted into deeper levels. A value past the last level (7 or
  // more, kNeverCompressed) compresses nothing. Files already written keep what they were written
  // with. Default: 2 (store.compression: lz4; none is kNeverCompressed).
  static constexpr int kNeverCompressed = 7;
  int compressed_from_level = 2;
  // Table files are read through memory maps instead of read calls (RocksDB allow_mmap_reads):
  // an uncompressed data block is then parsed where the page cache holds it, neither copied nor
  // put in the block cache; a compressed one is still decompressed into the block cache.
  // Checksums are verified either way. Default: false (store.mmap_reads).
  bool mmap_reads = false;
  // For bulk loads (benchmarks building large stores), never for a service: false writes batches
  // without the write-ahead log, so a crash loses every row not yet flushed to a table file, with
  // its offsets. Closing the store flushes every memtable, so a clean close loses nothing.
  // Default: true.
  bool write_ahead_log = true;
  // Create the database when `path` holds none. Default: true.
  bool create_if_missing = true;
  // Open without taking the write lock and refuse writes (hotrow keys analyze). Default: false.
  bool read_only = false;
  // The dotted paths indexed (index.fields), recorded with each bucket when it is made: a bucket
  // keeps the fields it was made with, whatever later opens say. Default: none.
  std::vector<std::string> index_fields;
  // For tests: runs at the start of every Write, after its partitions are claimed (salt_by
  // adaptive) and before anything is read or written; may block to hold the Write there.
  // Default: none.
  std::function<void(const WriteBatchInput&)> write_hook;
  // For tests: runs on the thread that deleted a table file (a dropped bucket's, a compaction's
  // inputs), after the deletion, with the file's path. Default: none.
  std::function<void(const std::string&)> table_file_deleted_hook;
  // For tests: runs in DropExpiredBuckets once the expired buckets are out of the map and before
  // they are dropped in RocksDB; may block to hold the drop there. Default: none.
  std::function<void()> drop_hook;
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  friend auto operator<=>(const TopicPartition&, const TopicPartition&) = default;
};

// One event ready to be written: its encoded key and value (keying/row_key.h, keying/row_value.h),
// and the indexed fields found in it. Each entry whose field the event's bucket indexes becomes an
// index row (keying/index_key.h) in the same WriteBatch as the event.
struct Row {
  std::string key;
  std::string value;
  std::vector<keying::IndexEntry> index = {};  // "= {}": `Row{key, value}` stays warning-free
};

// Which records of one partition the store holds (CONTRACT.md, "Cluster mode in production
// settings": a partition counts toward a complete answer only with its window complete). A run
// begins where a start does not continue the store's offset (a partition new to the store, a jump
// over cold records, auto.offset.reset=latest) and lasts until the next such start.
struct PartitionRun {
  // The offset of the run's first record.
  int64_t first_offset = -1;
  // Every record of the partition with a time at or after this is held (up to the stored offset):
  // kHoldsAll when the run began at the partition's first record; the window's start when it
  // began at the first record of the window; the time of the jump when records before it were
  // skipped while perhaps still in the window (auto.offset.reset=latest). In the store's clock.
  int64_t holds_from_ms = kHoldsAll;
  static constexpr int64_t kHoldsAll = INT64_MIN;
  friend bool operator==(const PartitionRun&, const PartitionRun&) = default;
};

// What one Write call is asked to make durable, all or nothing.
struct WriteBatchInput {
  std::vector<Row> rows;
  // Per partition, the offset of the next record to consume: everything before it in that
  // partition has been handled (stored or rejected). Written in the same atomic write as `rows`.
  std::map<TopicPartition, int64_t> next_offsets;
  // Per partition whose run begins in this batch (see PartitionRun): recorded in the same atomic
  // write, so that a run is never known without its records or records without their run.
  std::map<TopicPartition, PartitionRun> run_starts = {};
};

// How the rows of one Write call were disposed of. Every row is in exactly one count.
struct WriteOutcome {
  size_t stored = 0;
  size_t expired = 0;    // older than the window, or in a bucket already dropped
  size_t future = 0;     // more than max_future_ms ahead of the wall clock
  size_t duplicate = 0;  // offset below the partition's stored next offset: written before
};

struct BucketStats {
  int64_t start_ms = 0;
  uint64_t events = 0;
  uint64_t bytes = 0;                 // key + value bytes written
  std::vector<uint64_t> salt_events;  // events per salt, one entry per salt
  // With salt_by adaptive: the ids spread over every salt in this bucket (Bucket::SpreadIdHashes);
  // 0 otherwise.
  uint64_t spread_ids = 0;
  // Sorted runs of its table files (each L0 file, each non-empty level below): what a seek
  // probes besides the memtables. One once a quiet bucket has been compacted.
  int sorted_runs = 0;
};

struct StoreStats {
  std::vector<BucketStats> buckets;   // oldest first
  std::vector<uint64_t> salt_events;  // events per salt, over the live buckets
  uint64_t events = 0;
  uint64_t disk_bytes = 0;  // every file under StoreOptions::path
  int64_t now_ms = 0;
  int64_t window_start_ms = 0;
};

// A moment of the store that several cursors read at (EventStore::ReadPointNow): a cursor made at
// it, whenever it is made and in whichever bucket, sees the rows of every write that was readable
// when the read point was taken, and none written after. So a query that takes one, then decides
// what to read from what the writer marks before it writes (a bucket's id filter, its spread ids),
// then makes its cursors at it, reads exactly what that decision covers. Rows are never
// overwritten, so holding one keeps little alive; still, let go when the query is done.
//
// Thread-safety: immutable; may be shared by the threads of one query.
class ReadPoint {
 public:
  virtual ~ReadPoint() = default;

 protected:
  ReadPoint() = default;
};

// A forward/backward cursor over the rows of one bucket, within fixed bounds. Wraps a RocksDB
// iterator so that no other module includes RocksDB.
//
// Thread-safety: not safe for concurrent use; may be used by one thread after another.
class RowIterator {
 public:
  virtual ~RowIterator() = default;
  virtual void SeekToFirst() = 0;  // the first row within the bounds
  virtual void SeekToLast() = 0;   // the last row within the bounds
  virtual void Next() = 0;
  virtual void Prev() = 0;
  virtual bool Valid() const = 0;
  virtual std::string_view key() const = 0;    // REQUIRES: Valid()
  virtual std::string_view value() const = 0;  // REQUIRES: Valid()
  // After !Valid(): ok when the bounds were simply exhausted.
  virtual Status status() const = 0;
  // Re-aims the cursor at another range of the same bucket, with the same within_id_prefix, so that
  // one cursor serves many (salt, id) prefixes; follow with a Seek*. The bounds are copied.
  virtual void SetRange(const keying::KeyRange& range) = 0;
  // Makes rows written since the cursor was created (or last refreshed) visible, and reads the
  // bucket's table files as they are now, when either changed (a flush or compaction merged
  // them); cheaper than a new cursor. Invalidates the position: follow with a Seek*. A cursor
  // made at a ReadPoint stays at it: this does nothing.
  virtual Status RefreshIfStale() = 0;
};

// One time bucket: every event with start_ms <= ts < end_ms. A Bucket stays readable for as long as
// someone holds it, even after the store has dropped it; its disk space returns when the last
// holder lets go.
class Bucket {
 public:
  virtual ~Bucket() = default;
  int64_t start_ms() const { return start_ms_; }
  int64_t end_ms() const { return end_ms_; }
  // The index.fields recorded for this bucket when it was made; empty for none.
  const std::vector<std::string>& index_fields() const { return index_fields_; }
  bool Indexes(std::string_view field) const;
  // What a read says of a row here that does not decode as a hotrow row: Corruption.
  Status NotARow() const;
  // A cursor over the keys in `range`. `within_id_prefix` says that the range lies inside one
  // (salt, id) prefix, so the prefix bloom filter may skip the bucket's files without that id.
  // It reads at `at` (taken from this bucket's store; not owned, held by the caller until the
  // cursor is gone), or at null the store as it is now.
  virtual std::unique_ptr<RowIterator> NewIterator(const keying::KeyRange& range,
                                                   bool within_id_prefix,
                                                   const ReadPoint* at = nullptr) const = 0;
  // An upper bound on the times of the rows of an id with hash `id_hash` in salt `salt` of this
  // bucket: each is below it. start_ms() when the salt holds no row of the id, so that a per-id
  // query skips it without a seek; end_ms() when unsure.
  virtual int64_t NewestIdTsBound(uint8_t salt, uint64_t id_hash) const {
    (void)salt;
    (void)id_hash;
    return end_ms();
  }
  // False only when salt `salt` holds no row of the id.
  bool MayHoldId(uint8_t salt, uint64_t id_hash) const {
    return NewestIdTsBound(salt, id_hash) > start_ms();
  }
  // With salt_by adaptive: false only when every row of the id in this bucket is in its home salt
  // (keying::Salter::HomeSalt), so that a per-id query seeks that salt alone; true when the id was
  // hot here (or unsure). Exact from the moment a spread row of the id can be read, and after a
  // reopen. Meaningless for the other salt_by.
  virtual bool SpreadsId(uint64_t id_hash) const {
    (void)id_hash;
    return true;
  }
  // With salt_by adaptive: how many ids were spread in this bucket, and their hashes, sorted.
  virtual size_t spread_ids() const { return 0; }
  virtual std::vector<uint64_t> SpreadIdHashes() const { return {}; }

 protected:
  Bucket(int64_t start_ms, int64_t end_ms) : start_ms_(start_ms), end_ms_(end_ms) {}
  // Set once, before the bucket is shared.
  void set_index_fields(std::vector<std::string> fields) { index_fields_ = std::move(fields); }

 private:
  const int64_t start_ms_;
  const int64_t end_ms_;
  std::vector<std::string> index_fields_;
};

// The bucketed event store on RocksDB.
//
// Layout: one column family per time bucket ("b" + 13-digit start ms), holding rows keyed by
// keying/row_key.h; the default column family holds metadata: the store's format (salts,
// salt_by, bucket width), the next offset per partition, topic numbers, per-bucket per-salt
// counters and the stream clock. Rows, offsets and counters of one Write go in one WriteBatch.
//
// Expiry: a bucket whose whole span is older than the window is dropped as a column family: O(1),
// no tombstones. Reads filter ts >= window start in between.
//
// Thread-safety: every method may be called from any thread. Writes run in parallel: several
// threads may call Write at once, provided no two concurrent calls carry rows or offsets of the
// same partition (the Ingestor's writers own disjoint partitions); counters are merge operands
// that add, so parallel writes never read-modify-write them. DropExpiredBuckets waits for the
// Writes under way and holds new ones back only while it takes the expired buckets out of the
// window; RocksDB's drop and the observers run beside new Writes. Buckets() and the read methods never
// wait for a Write.
class EventStore {
 public:
  // Opens or creates the store at options.path. Fails with Incompatible when the store was created
  // with other salts or salt_by or the directory holds something that is not a hotrow store, with
  // Corruption when the store is damaged, with IOError when the disk refuses.
  static Result<std::unique_ptr<EventStore>> Open(const StoreOptions& options);

  virtual ~EventStore() = default;

  const StoreOptions& options() const { return options_; }
  const keying::Salter& salter() const { return salter_; }

  // The number of `topic` in keys, assigned (and made durable) the first time a topic is seen.
  virtual Result<uint16_t> TopicNumber(std::string_view topic) = 0;
  // The topic name of a number; nullopt when unknown.
  virtual std::optional<std::string> TopicName(uint16_t number) const = 0;

  // Writes rows and offsets in one atomic write. Rows are sorted into buckets by the time in their
  // key; expired, future and duplicate rows are counted in `outcome` and left out. After a crash
  // at any point, either every stored row of the call and its offsets are there, or none is.
  // REQUIRES: every key was encoded with this store's salts and topic numbers; no Write running
  // at the same time carries a row or an offset of the same partition.
  //
  // With salt_by adaptive the store chooses each row's salt (the key's first byte is replaced):
  // its id's home salt, or the record's salt while the id is hot in the row's bucket. There a
  // record written twice could land under two salts, so the offset check is all that keeps it
  // once: a call whose rows are not all below their partition's next offset in `next_offsets`,
  // or that carries a partition another Write is writing at the same time, fails with
  // InvalidArgument and writes nothing (docs/ARCHITECTURE.md, "Adaptive salting").
  virtual Status Write(const WriteBatchInput& batch, WriteOutcome* outcome) = 0;

  // The next offset to consume per partition, as last written. Empty for a new store.
  virtual std::map<TopicPartition, int64_t> StoredOffsets() const = 0;

  // The run each partition's records belong to, as last written (WriteBatchInput::run_starts).
  // A partition without one (a store written before runs were recorded) is absent.
  // The store holds a partition's whole window when its run holds from at or before
  // WindowStartMs().
  virtual std::map<TopicPartition, PartitionRun> PartitionRuns() const { return {}; }

  // Drops every bucket whose whole span is older than the window. Returns how many went. Also
  // starts a flush of every bucket that has stopped receiving writes (none for 30 s by the wall
  // clock), so that it does not pin WAL files, and queues those that are closed for compaction
  // (WaitForCompactions). Meant to be called every few seconds.
  virtual Result<size_t> DropExpiredBuckets() = 0;

  // "now" by the store's clock, and the window's start (now - ttl). Events with ts < the window
  // start are never returned.
  virtual int64_t NowMs() const = 0;
  int64_t WindowStartMs() const { return NowMs() - options_.ttl_ms; }

  // The live buckets, oldest first. The snapshot holds them readable while it is kept.
  virtual std::vector<std::shared_ptr<const Bucket>> Buckets() const = 0;

  // The store as it is now, for several cursors to read at (ReadPoint). Null when this store has
  // none to give (a test's stand-in): each cursor then reads the store as it is when made.
  virtual std::shared_ptr<const ReadPoint> ReadPointNow() const { return nullptr; }

  virtual StoreStats Stats() const = 0;

  // Adds `observer` to those told of every row stored and every bucket dropped from now on
  // (store/write_observer.h): it is told of every Write that commits after this call returns and
  // of none that committed before (it waits for the Writes under way). `observer` is not owned and must stay
  // until RemoveWriteObserver returns. A read-only store never calls it.
  virtual void AddWriteObserver(WriteObserver* observer) { (void)observer; }
  // Stops telling `observer`; when it returns, no call to it is under way or will start.
  virtual void RemoveWriteObserver(WriteObserver* observer) { (void)observer; }

  // Returns once the compactions of quiet buckets queued so far are done (a bucket no longer
  // written, by the store's clock closed and by the wall clock idle for 30 s, is compacted once
  // into one sorted run in the background; so is every closed bucket found at open). Benchmarks
  // and tests call it to measure the state a running service reaches within a minute.
  virtual void WaitForCompactions() {}

 protected:
  explicit EventStore(const StoreOptions& options)
      : options_(options), salter_(options.salts, options.salt_by, options.hot) {}

 private:
  const StoreOptions options_;
  const keying::Salter salter_;
};

}  // namespace hotrow::store
