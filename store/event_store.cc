#include "store/event_store.h"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <shared_mutex>

#include "keying/row_key.h"

namespace hotrow::store {
namespace {

// ---- Metadata layout (default column family) ----
//   "format"                                 -> "hotrow-store v1 salts=<n> salt_by=<record|id>"
//   "offset/" topic '\0' partition(BE32)     -> next offset to consume (BE64)
//   "topic/" name                            -> topic number (BE16)
//   "stat/" bucket_start(BE64) salt(u8)      -> events(BE64) bytes(BE64)
//   "clock"                                  -> the stream clock: highest event time written (BE64)
constexpr char kFormatKey[] = "format";
constexpr char kOffsetPrefix[] = "offset/";
constexpr char kTopicPrefix[] = "topic/";
constexpr char kStatPrefix[] = "stat/";
constexpr char kClockKey[] = "clock";
constexpr char kFormatVersion[] = "hotrow-store v1";
constexpr size_t kMaxTopics = 65536;

Status FromRocks(const rocksdb::Status& s, const std::string& context) {
  if (s.ok()) return Status::Ok();
  std::string msg = context + ": " + s.ToString();
  if (s.IsNoSpace()) return Status::NoSpace(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument() || s.IsNotSupported()) return Status::InvalidArgument(msg);
  return Status::IOError(msg);
}

std::string FormatValue(int salts, keying::SaltBy by) {
  return std::string(kFormatVersion) + " salts=" + std::to_string(salts) +
         " salt_by=" + std::string(keying::SaltByName(by));
}

std::string Be64(uint64_t v) {
  std::string out(8, '\0');
  keying::StoreBigEndian64(v, out.data());
  return out;
}

std::string OffsetKey(const TopicPartition& tp) {
  std::string key = kOffsetPrefix + tp.topic;
  key.push_back('\0');
  char p[4];
  keying::StoreBigEndian32(static_cast<uint32_t>(tp.partition), p);
  key.append(p, 4);
  return key;
}

std::string StatKey(int64_t bucket_start, uint8_t salt) {
  std::string key = kStatPrefix + Be64(static_cast<uint64_t>(bucket_start));
  key.push_back(static_cast<char>(salt));
  return key;
}

// Column family names: "b<start>_<end>", both 13+ digit ms, so that listing them restores buckets
// whatever bucket width was configured when each was made.
std::string BucketName(int64_t start_ms, int64_t end_ms) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "b%013" PRId64 "_%013" PRId64, start_ms, end_ms);
  return buf;
}

bool ParseBucketName(const std::string& name, int64_t* start_ms, int64_t* end_ms) {
  if (name.size() < 4 || name[0] != 'b') return false;
  const auto sep = name.find('_');
  if (sep == std::string::npos) return false;
  const char* begin = name.data() + 1;
  auto [p1, e1] = std::from_chars(begin, name.data() + sep, *start_ms);
  auto [p2, e2] = std::from_chars(name.data() + sep + 1, name.data() + name.size(), *end_ms);
  return e1 == std::errc() && p1 == name.data() + sep && e2 == std::errc() &&
         p2 == name.data() + name.size() && *start_ms >= 0 && *end_ms > *start_ms;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

uint64_t DirectoryBytes(const std::string& path) {
  std::error_code ec;
  uint64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

// RocksDB's own log, sent to spdlog instead of a LOG file in the store directory. On a full disk
// the LOG file is the first write to fail, and the librocksdb Debian ships keeps its assertions:
// the next line logged after a failed append aborts the process. A full disk must only pause
// ingestion, so RocksDB writes no file of its own besides the database. Warnings and errors
// (background errors, recovery) still reach the service log.
class SpdlogRocksLogger final : public rocksdb::Logger {
 public:
  SpdlogRocksLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    char line[1024];
    std::vsnprintf(line, sizeof(line), format, ap);
    spdlog::log(level >= rocksdb::InfoLogLevel::ERROR_LEVEL ? spdlog::level::err : spdlog::level::warn,
                "rocksdb: {}", line);
  }
};

// The default Env, except that it does not tell RocksDB how much disk is free. RocksDB's own
// recovery from a full disk waits until a whole memtable's worth (the largest write_buffer_size,
// 32-64 MiB) is free, which a small disk may never have, and while it waits DB::Resume() is
// refused. Without a free-space figure RocksDB leaves the recovery to the store
// (ResumeAfterFailedWrite), which retries as soon as the next write comes.
class NoFreeSpaceEnv final : public rocksdb::EnvWrapper {
 public:
  NoFreeSpaceEnv() : rocksdb::EnvWrapper(rocksdb::Env::Default()) {}
  static const char* kClassName() { return "HotrowNoFreeSpaceEnv"; }
  const char* Name() const override { return kClassName(); }
  rocksdb::Status GetFreeSpace(const std::string&, uint64_t*) override {
    return rocksdb::Status::NotSupported("hotrow recovers from a full disk itself");
  }
};

// ---- Iterator ----

#ifdef __SANITIZE_THREAD__
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

// The bytes of a row, as hotrow reads them. Debian's RocksDB is not built for ThreadSanitizer: its
// memtable publishes entries with atomics TSan cannot see, so TSan took a query's read of a fresh
// memtable entry for a race with the write that filled it. TSan builds copy the bytes here, at the
// one place RocksDB's memory enters hotrow, with TSan looking away for the copy alone; other builds
// return RocksDB's view as is.
std::string_view RowBytes(rocksdb::Slice bytes, std::string* copy) {
#ifdef __SANITIZE_THREAD__
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  copy->assign(bytes.data(), bytes.size());
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  return *copy;
#else
  (void)copy;
  return {bytes.data(), bytes.size()};
#endif
}

class RocksRowIterator final : public RowIterator {
 public:
  RocksRowIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const keying::KeyRange& range,
                   bool within_id_prefix)
      : start_(range.start), limit_(range.limit), within_prefix_(within_id_prefix) {
    lower_ = rocksdb::Slice(start_);
    upper_ = rocksdb::Slice(limit_);
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower_;
    if (!limit_.empty()) ro.iterate_upper_bound = &upper_;
    // Inside one (salt, id) prefix the prefix bloom filter may skip files; anything wider must
    // see the whole key order.
    ro.total_order_seek = !within_id_prefix;
    ro.prefix_same_as_start = within_id_prefix;
    // A full scan must not push the hot per-id blocks out of the cache.
    ro.fill_cache = within_id_prefix;
    seq_ = db->GetLatestSequenceNumber();  // at most what the iterator sees: never misses a write
    iter_.reset(db->NewIterator(ro, cf));
    db_ = db;
  }

  void SetRange(const keying::KeyRange& range) override {
    // ReadOptions holds pointers to lower_ and upper_: rewrite the slices, never the pointers.
    // An iterator created without an upper bound keeps none (its ReadOptions has no pointer).
    start_.assign(range.start);
    limit_.assign(range.limit);
    lower_ = rocksdb::Slice(start_);
    upper_ = rocksdb::Slice(limit_);
  }

  Status RefreshIfStale() override {
    const rocksdb::SequenceNumber seq = db_->GetLatestSequenceNumber();
    if (seq == seq_) return Status::Ok();
    seq_ = seq;
    return FromRocks(iter_->Refresh(), "refreshing a bucket cursor");
  }

  void SeekToFirst() override { iter_->Seek(lower_); }

  void SeekToLast() override {
    // The seek target must stay inside the id prefix so that the prefix bloom check is made on
    // the right prefix: aim at the largest possible key of the range.
    if (within_prefix_ && start_.size() >= keying::kRowKeyPrefixSize &&
        (limit_.empty() ||
         limit_.compare(0, keying::kRowKeyPrefixSize, start_, 0, keying::kRowKeyPrefixSize) != 0)) {
      std::string last = start_.substr(0, keying::kRowKeyPrefixSize);
      last.append(keying::kRowKeySize - keying::kRowKeyPrefixSize, '\xff');
      iter_->SeekForPrev(last);
    } else if (limit_.empty()) {
      iter_->SeekToLast();
    } else {
      iter_->SeekForPrev(upper_);
      if (iter_->Valid() && iter_->key().compare(upper_) >= 0) iter_->Prev();
    }
  }

  void Next() override { iter_->Next(); }
  void Prev() override { iter_->Prev(); }
  bool Valid() const override { return iter_->Valid(); }
  std::string_view key() const override { return RowBytes(iter_->key(), &key_copy_); }
  std::string_view value() const override { return RowBytes(iter_->value(), &value_copy_); }
  Status status() const override { return FromRocks(iter_->status(), "reading a bucket"); }

 private:
  // Declared before iter_: the iterator points at these bounds and must go first.
  std::string start_;
  std::string limit_;
  rocksdb::Slice lower_;
  rocksdb::Slice upper_;
  const bool within_prefix_;
  rocksdb::DB* db_ = nullptr;
  rocksdb::SequenceNumber seq_ = 0;
  std::unique_ptr<rocksdb::Iterator> iter_;
  mutable std::string key_copy_, value_copy_;  // used by RowBytes in TSan builds only
};

// ---- Buckets ----

// Holds the database open for as long as any bucket (or the store) holds it; each bucket destroys
// its column family handle when the last reader lets go, which is when a dropped bucket's files go.
class RocksBucket final : public Bucket {
 public:
  RocksBucket(std::shared_ptr<rocksdb::DB> db, rocksdb::ColumnFamilyHandle* cf, int64_t start_ms,
              int64_t end_ms)
      : Bucket(start_ms, end_ms), db_(std::move(db)), cf_(cf) {}
  ~RocksBucket() override {
    rocksdb::Status s = db_->DestroyColumnFamilyHandle(cf_);
    if (!s.ok()) spdlog::warn("store: closing bucket {}: {}", start_ms(), s.ToString());
    if (dropped_) {
      // The files of a dropped column family become obsolete here, but RocksDB deletes obsolete
      // files only after some later flush or compaction, which a quiet store may never run.
      // Re-enabling file deletions makes it look for obsolete files now.
      s = db_->DisableFileDeletions();
      if (s.ok()) s = db_->EnableFileDeletions(/*force=*/false);
      if (!s.ok()) spdlog::warn("store: deleting files of bucket {}: {}", start_ms(), s.ToString());
    }
  }

  // Marks the bucket dropped: its files are deleted when the last holder lets go.
  void MarkDropped() { dropped_ = true; }

  std::unique_ptr<RowIterator> NewIterator(const keying::KeyRange& range,
                                           bool within_id_prefix) const override {
    return std::make_unique<RocksRowIterator>(db_.get(), cf_, range, within_id_prefix);
  }

  rocksdb::ColumnFamilyHandle* cf() const { return cf_; }

 private:
  std::shared_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  std::atomic<bool> dropped_{false};
};

struct SaltCounter {
  uint64_t events = 0;
  uint64_t bytes = 0;
};

// ---- The store ----

class RocksEventStore final : public EventStore {
 public:
  explicit RocksEventStore(const StoreOptions& options) : EventStore(options) {}
  ~RocksEventStore() override;

  Status Init();

  Result<uint16_t> TopicNumber(std::string_view topic) override;
  std::optional<std::string> TopicName(uint16_t number) const override;
  Status Write(const WriteBatchInput& batch, WriteOutcome* outcome) override;
  std::map<TopicPartition, int64_t> StoredOffsets() const override;
  Result<size_t> DropExpiredBuckets() override;
  int64_t NowMs() const override;
  std::vector<std::shared_ptr<const Bucket>> Buckets() const override;
  StoreStats Stats() const override;

 private:
  rocksdb::ColumnFamilyOptions BucketOptions() const;
  Status CheckFormat(bool is_new);
  Status LoadMetadata();
  // Rows go in the same WriteBatch as their bucket's counters and are never deleted one by one, so
  // every bucket holds exactly as many rows as its counters say. A lost table file or a MANIFEST
  // cut short (which RocksDB reads as an older, shorter one without complaint) breaks that:
  // Corruption, rather than answers from part of the store. Reads every row once, at open.
  Status CheckRowsMatchCounters() const;
  // The bucket that holds `ts`, created when missing. REQUIRES: write_mu_ held.
  Result<std::shared_ptr<RocksBucket>> BucketFor(int64_t ts);
  // A failed write (a full disk, most often) leaves RocksDB in a background-error state in which
  // it refuses every write until DB::Resume() succeeds. RocksDB's own recovery from a full disk
  // waits for a free memtable's worth of space (64 MiB), which a small disk may never have, so
  // the store resumes before its next write instead: while the disk is still full Resume fails
  // at once with the same error; once space is back it clears the state. REQUIRES: write_mu_.
  Status ResumeAfterFailedWrite();
  // Records the outcome of a RocksDB write. REQUIRES: write_mu_ held.
  Status NoteWrite(const rocksdb::Status& s, const std::string& context);

  // Constant after Init().
  std::shared_ptr<rocksdb::Cache> block_cache_;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers_;
  std::shared_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;  // the default column family; owned by db_
  rocksdb::CompressionType compression_ = rocksdb::kNoCompression;

  // Serialises writers: Write, TopicNumber, DropExpiredBuckets.
  std::mutex write_mu_;
  bool write_failed_ = false;  // GUARDED_BY(write_mu_): see ResumeAfterFailedWrite

  // Readers take snapshots of these under state_mu_ (shared); writers change them holding both
  // write_mu_ and state_mu_ (exclusive), after the durable write.
  mutable std::shared_mutex state_mu_;
  std::map<int64_t, std::shared_ptr<RocksBucket>> buckets_;  // by start
  std::map<TopicPartition, int64_t> offsets_;
  std::map<std::string, uint16_t, std::less<>> topic_numbers_;
  std::vector<std::string> topic_names_;
  std::map<int64_t, std::vector<SaltCounter>> counters_;  // by bucket start, one per salt
  int64_t dropped_until_ms_ = 0;  // every time before this is in a dropped bucket

  std::atomic<int64_t> stream_clock_ms_{0};
};

RocksEventStore::~RocksEventStore() {
  // The locks in the order every writer takes them: write_mu_, then state_mu_.
  std::lock_guard write_lock(write_mu_);
  std::unique_lock lock(state_mu_);
  buckets_.clear();  // buckets still held by readers keep db_ alive until they let go
  if (db_ != nullptr && !options().read_only && ResumeAfterFailedWrite().ok()) {
    // Skipped while RocksDB is still in its error state: the WAL file that failed must not be
    // touched again (librocksdb asserts on it), and every write it acknowledged is in it already.
    rocksdb::Status s = db_->FlushWAL(/*sync=*/true);
    if (!s.ok()) spdlog::warn("store: syncing the WAL at close: {}", s.ToString());
  }
}

rocksdb::ColumnFamilyOptions RocksEventStore::BucketOptions() const {
  rocksdb::ColumnFamilyOptions cf;
  cf.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(keying::kRowKeyPrefixSize));
  cf.memtable_prefix_bloom_size_ratio = 0.05;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = block_cache_;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = false;  // lookups are by (salt, id) prefix, never by whole key
  // Index and filter blocks are in the cache, so that their memory is bounded by it, and pinned
  // there for L0 files and the top level of partitioned indexes: a per-id seek in a hot bucket
  // never waits for its filter to be read back after a scan went by.
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.pin_top_level_index_and_filter = true;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  cf.compression = compression_;
  cf.write_buffer_size = 32 << 20;
  // A bucket lives for one window: compacting it much buys little. Let L0 grow before merging.
  cf.level0_file_num_compaction_trigger = 8;
  return cf;
}

Status RocksEventStore::Init() {
  const StoreOptions& opt = options();
  if (opt.salts < 1 || opt.salts > keying::kMaxSalts) {
    return Status::InvalidArgument("keying.salts must be 1..256, got " + std::to_string(opt.salts));
  }
  if (opt.bucket_ms <= 0 || opt.ttl_ms <= 0 || opt.bucket_ms > opt.ttl_ms) {
    return Status::InvalidArgument("store.bucket must be > 0 and <= store.ttl");
  }
  for (auto c : rocksdb::GetSupportedCompressions()) {
    if (c == rocksdb::kLZ4Compression) compression_ = c;
  }

  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(fs::path(opt.path) / "CURRENT", ec);
  if (!exists) {
    if (!opt.create_if_missing || opt.read_only) {
      return Status::NotFound("no hotrow store at " + opt.path);
    }
    if (fs::exists(opt.path, ec) && !fs::is_empty(opt.path, ec)) {
      return Status::Incompatible(opt.path + " is not empty and holds no hotrow store; "
                                "point store.path at an empty or new directory");
    }
    fs::create_directories(opt.path, ec);
    if (ec) return Status::IOError("cannot create " + opt.path + ": " + ec.message());
  }

  block_cache_ = rocksdb::NewLRUCache(opt.block_cache_bytes);
  // Memtables are budgeted on their own, not charged to the block cache: charged, a busy ingest
  // filled the cache with dummy entries and evicted the data blocks latest-N reads, which is what
  // made latest-10 at 10M events many times slower than at 1M.
  write_buffers_ = std::make_shared<rocksdb::WriteBufferManager>(opt.write_buffer_bytes);

  rocksdb::DBOptions db_opt;
  db_opt.create_if_missing = true;
  db_opt.write_buffer_manager = write_buffers_;
  db_opt.max_total_wal_size = 256 << 20;  // forces flushes of old buckets so old WAL files can go
  db_opt.max_background_jobs = 2;
  db_opt.info_log = std::make_shared<SpdlogRocksLogger>();
  static NoFreeSpaceEnv no_free_space_env;  // stateless; shared by every store
  db_opt.env = &no_free_space_env;
  db_opt.max_file_opening_threads = 2;

  std::vector<std::string> names;
  if (exists) {
    rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_opt, opt.path, &names);
    if (!s.ok()) return FromRocks(s, "opening the store at " + opt.path);
  } else {
    names.push_back(rocksdb::kDefaultColumnFamilyName);
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const auto& name : names) {
    if (name == rocksdb::kDefaultColumnFamilyName) {
      descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
      spans.emplace_back(-1, -1);
      continue;
    }
    int64_t start, end;
    if (!ParseBucketName(name, &start, &end)) {
      return Status::Incompatible("the store at " + opt.path + " has a column family \"" + name +
                                "\" that hotrow did not make: not a hotrow store");
    }
    descriptors.emplace_back(name, BucketOptions());
    spans.emplace_back(start, end);
  }

  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = opt.read_only
                          ? rocksdb::DB::OpenForReadOnly(db_opt, opt.path, descriptors, &handles, &raw)
                          : rocksdb::DB::Open(db_opt, opt.path, descriptors, &handles, &raw);
  if (!s.ok()) return FromRocks(s, "opening the store at " + opt.path);
  // Handles must be destroyed before the database is closed. Buckets destroy their own; the
  // default one goes in the deleter, which runs when the store and every bucket have let go.
  rocksdb::ColumnFamilyHandle* default_handle = nullptr;
  for (size_t i = 0; i < handles.size(); ++i) {
    if (spans[i].first < 0) default_handle = handles[i];
  }
  db_ = std::shared_ptr<rocksdb::DB>(raw, [default_handle](rocksdb::DB* db) {
    if (default_handle != nullptr) db->DestroyColumnFamilyHandle(default_handle).PermitUncheckedError();
    delete db;
  });
  for (size_t i = 0; i < handles.size(); ++i) {
    if (spans[i].first < 0) {
      meta_ = handles[i];
      continue;
    }
    buckets_[spans[i].first] =
        std::make_shared<RocksBucket>(db_, handles[i], spans[i].first, spans[i].second);
  }
  HOTROW_RETURN_IF_ERROR(CheckFormat(!exists));
  return LoadMetadata();
}

Status RocksEventStore::CheckFormat(bool is_new) {
  const StoreOptions& opt = options();
  const std::string want = FormatValue(opt.salts, opt.salt_by);
  std::string have;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_, kFormatKey, &have);
  if (s.IsNotFound()) {
    // A store is made by writing its format first; a database without it that holds buckets or
    // metadata is not ours.
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
    it->SeekToFirst();
    if (!is_new && (it->Valid() || !buckets_.empty())) {
      return Status::Incompatible("the database at " + opt.path + " is not a hotrow store");
    }
    if (opt.read_only) return Status::NotFound("no hotrow store at " + opt.path);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return FromRocks(db_->Put(wo, meta_, kFormatKey, want), "creating the store at " + opt.path);
  }
  if (!s.ok()) return FromRocks(s, "reading the store's format");
  if (have.rfind(kFormatVersion, 0) != 0) {
    return Status::Corruption("the store at " + opt.path + " has an unknown format \"" +
                              have.substr(0, 80) + "\"");
  }
  if (have != want) {
    return Status::Incompatible("the store at " + opt.path + " was created with \"" + have +
                                "\" but the configuration asks for \"" + want +
                                "\"; salts and salt_by are fixed when a store is created: use a new "
                                "store.path or the original keying settings");
  }
  return Status::Ok();
}

Status RocksEventStore::LoadMetadata() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
  const size_t salts = static_cast<size_t>(options().salts);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string key = it->key().ToString();
    const rocksdb::Slice value = it->value();
    auto corrupt = [&] {
      return Status::Corruption("the store's metadata entry \"" + key.substr(0, 40) +
                                "\" is damaged");
    };
    if (key.rfind(kOffsetPrefix, 0) == 0) {
      const size_t nul = key.find('\0', sizeof(kOffsetPrefix) - 1);
      if (nul == std::string::npos || key.size() != nul + 5 || value.size() != 8) return corrupt();
      TopicPartition tp{key.substr(sizeof(kOffsetPrefix) - 1, nul - (sizeof(kOffsetPrefix) - 1)),
                        static_cast<int32_t>(keying::LoadBigEndian32(key.data() + nul + 1))};
      offsets_[tp] = static_cast<int64_t>(keying::LoadBigEndian64(value.data()));
    } else if (key.rfind(kTopicPrefix, 0) == 0) {
      if (value.size() != 2) return corrupt();
      const uint16_t number = keying::LoadBigEndian16(value.data());
      std::string name = key.substr(sizeof(kTopicPrefix) - 1);
      if (topic_names_.size() <= number) topic_names_.resize(number + 1);
      topic_names_[number] = name;
      topic_numbers_[name] = number;
    } else if (key.rfind(kStatPrefix, 0) == 0) {
      if (key.size() != sizeof(kStatPrefix) - 1 + 9 || value.size() != 16) return corrupt();
      const int64_t start =
          static_cast<int64_t>(keying::LoadBigEndian64(key.data() + sizeof(kStatPrefix) - 1));
      const uint8_t salt = static_cast<uint8_t>(key.back());
      if (salt >= salts) return corrupt();
      auto& per_salt = counters_[start];
      per_salt.resize(salts);
      per_salt[salt].events = keying::LoadBigEndian64(value.data());
      per_salt[salt].bytes = keying::LoadBigEndian64(value.data() + 8);
    } else if (key == kClockKey) {
      if (value.size() != 8) return corrupt();
      stream_clock_ms_ = static_cast<int64_t>(keying::LoadBigEndian64(value.data()));
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "reading the store's metadata");
  // Counters of buckets that were dropped but whose counters survived a crash are not live.
  for (auto c = counters_.begin(); c != counters_.end();) {
    c = buckets_.count(c->first) != 0 ? std::next(c) : counters_.erase(c);
  }
  return CheckRowsMatchCounters();
}

Status RocksEventStore::CheckRowsMatchCounters() const {
  for (const auto& [start, bucket] : buckets_) {
    uint64_t expected = 0;
    if (auto c = counters_.find(start); c != counters_.end()) {
      for (const SaltCounter& salt : c->second) expected += salt.events;
    }
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    ro.total_order_seek = true;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, bucket->cf()));
    uint64_t rows = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++rows;
    if (!it->status().ok()) return FromRocks(it->status(), "reading bucket " + std::to_string(start));
    if (rows != expected) {
      return Status::Corruption("the store at " + options().path + " is damaged: bucket " +
                                std::to_string(start) + " holds " + std::to_string(rows) +
                                " events where its counters say " + std::to_string(expected) +
                                " (a table file or the MANIFEST was lost or cut short)");
    }
  }
  return Status::Ok();
}

Result<uint16_t> RocksEventStore::TopicNumber(std::string_view topic) {
  {
    std::shared_lock lock(state_mu_);
    auto it = topic_numbers_.find(topic);
    if (it != topic_numbers_.end()) return it->second;
  }
  if (options().read_only) return Status::InvalidArgument("the store is open read-only");
  std::lock_guard write_lock(write_mu_);
  {
    std::shared_lock lock(state_mu_);
    auto it = topic_numbers_.find(topic);
    if (it != topic_numbers_.end()) return it->second;
    if (topic_names_.size() >= kMaxTopics) {
      return Status::InvalidArgument("the store already holds 65536 topics");
    }
  }
  const uint16_t number = static_cast<uint16_t>(topic_names_.size());
  char value[2];
  keying::StoreBigEndian16(number, value);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  HOTROW_RETURN_IF_ERROR(ResumeAfterFailedWrite());
  HOTROW_RETURN_IF_ERROR(
      NoteWrite(db_->Put(wo, meta_, kTopicPrefix + std::string(topic), rocksdb::Slice(value, 2)),
                "recording topic " + std::string(topic)));
  std::unique_lock lock(state_mu_);
  topic_names_.emplace_back(topic);
  topic_numbers_.emplace(std::string(topic), number);
  return number;
}

std::optional<std::string> RocksEventStore::TopicName(uint16_t number) const {
  std::shared_lock lock(state_mu_);
  if (number >= topic_names_.size()) return std::nullopt;
  return topic_names_[number];
}

int64_t RocksEventStore::NowMs() const {
  return options().clock == ClockKind::kStream ? stream_clock_ms_.load()
                                               : options().wall_clock->NowMs();
}

Result<std::shared_ptr<RocksBucket>> RocksEventStore::BucketFor(int64_t ts) {
  {
    std::shared_lock lock(state_mu_);
    auto it = buckets_.upper_bound(ts);
    if (it != buckets_.begin()) {
      auto& candidate = std::prev(it)->second;
      if (ts < candidate->end_ms()) return candidate;
    }
  }
  // A new bucket on the configured grid, clipped so it never overlaps a bucket made earlier with
  // another width.
  const int64_t width = options().bucket_ms;
  int64_t start = FloorDiv(ts, width) * width;
  int64_t end = start + width;
  {
    std::shared_lock lock(state_mu_);
    auto next = buckets_.upper_bound(ts);
    if (next != buckets_.end()) end = std::min(end, next->first);
    if (next != buckets_.begin()) start = std::max(start, std::prev(next)->second->end_ms());
  }
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  HOTROW_RETURN_IF_ERROR(NoteWrite(db_->CreateColumnFamily(BucketOptions(), BucketName(start, end), &cf),
                                   "creating the bucket for " + std::to_string(start)));
  auto bucket = std::make_shared<RocksBucket>(db_, cf, start, end);
  std::unique_lock lock(state_mu_);
  buckets_[start] = bucket;
  return bucket;
}

Status RocksEventStore::Write(const WriteBatchInput& batch, WriteOutcome* outcome) {
  *outcome = WriteOutcome();
  if (options().read_only) return Status::InvalidArgument("the store is open read-only");
  std::lock_guard write_lock(write_mu_);
  HOTROW_RETURN_IF_ERROR(ResumeAfterFailedWrite());

  const int64_t wall_now = options().wall_clock->NowMs();
  const int64_t future_limit = wall_now + options().max_future_ms;
  int64_t clock = NowMs();
  int64_t window_start = clock - options().ttl_ms;
  const size_t salts = static_cast<size_t>(options().salts);

  // Classify every row before writing anything.
  struct Accepted {
    const Row* row;
    keying::RowKey key;
  };
  std::vector<Accepted> accepted;
  accepted.reserve(batch.rows.size());
  int64_t max_ts = clock;
  {
    std::shared_lock lock(state_mu_);
    for (const Row& row : batch.rows) {
      keying::RowKey key;
      if (!keying::DecodeRowKey(row.key, &key) || key.salt >= salts ||
          key.topic >= topic_names_.size()) {
        return Status::InvalidArgument("a row key is not a key of this store (wrong length, salt "
                                       "or topic number); nothing was written");
      }
      auto stored = offsets_.find(TopicPartition{topic_names_[key.topic], key.partition});
      if (stored != offsets_.end() && key.offset < stored->second) {
        ++outcome->duplicate;
      } else if (key.ts_ms > future_limit) {
        ++outcome->future;
      } else {
        accepted.push_back({&row, key});
        max_ts = std::max(max_ts, key.ts_ms);
      }
    }
  }
  if (options().clock == ClockKind::kStream) {
    // The stream clock moves with the newest event of the batch; the window follows it.
    clock = max_ts;
    window_start = clock - options().ttl_ms;
  }

  rocksdb::WriteBatch wb;
  std::map<int64_t, std::vector<SaltCounter>> touched;  // new absolute counter values
  for (const Accepted& a : accepted) {
    if (a.key.ts_ms < window_start || a.key.ts_ms < dropped_until_ms_) {
      ++outcome->expired;
      continue;
    }
    auto bucket = BucketFor(a.key.ts_ms);
    if (!bucket.ok()) return bucket.status();
    HOTROW_RETURN_IF_ERROR(FromRocks(wb.Put((*bucket)->cf(), a.row->key, a.row->value), "batching"));
    auto [it, inserted] = touched.try_emplace((*bucket)->start_ms());
    if (inserted) {
      std::shared_lock lock(state_mu_);
      auto existing = counters_.find((*bucket)->start_ms());
      it->second = existing != counters_.end() ? existing->second : std::vector<SaltCounter>(salts);
    }
    it->second[a.key.salt].events += 1;
    it->second[a.key.salt].bytes += a.row->key.size() + a.row->value.size();
    ++outcome->stored;
  }
  for (const auto& [start, per_salt] : touched) {
    for (size_t salt = 0; salt < salts; ++salt) {
      char value[16];
      keying::StoreBigEndian64(per_salt[salt].events, value);
      keying::StoreBigEndian64(per_salt[salt].bytes, value + 8);
      HOTROW_RETURN_IF_ERROR(FromRocks(
          wb.Put(meta_, StatKey(start, static_cast<uint8_t>(salt)), rocksdb::Slice(value, 16)),
          "batching"));
    }
  }
  std::vector<std::pair<TopicPartition, int64_t>> advanced;
  {
    std::shared_lock lock(state_mu_);
    for (const auto& [tp, next] : batch.next_offsets) {
      auto stored = offsets_.find(tp);
      if (stored != offsets_.end() && next <= stored->second) continue;  // offsets never go back
      HOTROW_RETURN_IF_ERROR(FromRocks(
          wb.Put(meta_, OffsetKey(tp), Be64(static_cast<uint64_t>(next))), "batching"));
      advanced.emplace_back(tp, next);
    }
  }
  if (options().clock == ClockKind::kStream && clock > stream_clock_ms_.load()) {
    HOTROW_RETURN_IF_ERROR(
        FromRocks(wb.Put(meta_, kClockKey, Be64(static_cast<uint64_t>(clock))), "batching"));
  }
  if (wb.Count() == 0) return Status::Ok();

  // WAL on, no fsync: a process crash loses nothing; a machine crash may lose the last batches,
  // but rows and offsets always roll back together and Kafka replays the tail.
  rocksdb::WriteOptions wo;
  wo.sync = false;
  HOTROW_RETURN_IF_ERROR(NoteWrite(db_->Write(wo, &wb), "writing a batch"));

  std::unique_lock lock(state_mu_);
  for (auto& [start, per_salt] : touched) counters_[start] = std::move(per_salt);
  for (auto& [tp, next] : advanced) offsets_[tp] = next;
  if (options().clock == ClockKind::kStream && clock > stream_clock_ms_.load()) {
    stream_clock_ms_.store(clock);
  }
  return Status::Ok();
}

Status RocksEventStore::ResumeAfterFailedWrite() {
  if (!write_failed_) return Status::Ok();
  rocksdb::Status s = db_->Resume();
  if (!s.ok()) return FromRocks(s, "the store refuses writes since one failed");
  write_failed_ = false;
  spdlog::info("store: writes resumed after a failed write");
  return Status::Ok();
}

Status RocksEventStore::NoteWrite(const rocksdb::Status& s, const std::string& context) {
  if (!s.ok()) write_failed_ = true;
  return FromRocks(s, context);
}

std::map<TopicPartition, int64_t> RocksEventStore::StoredOffsets() const {
  std::shared_lock lock(state_mu_);
  return offsets_;
}

Result<size_t> RocksEventStore::DropExpiredBuckets() {
  if (options().read_only) return size_t{0};
  std::lock_guard write_lock(write_mu_);
  const int64_t window_start = NowMs() - options().ttl_ms;
  std::vector<std::shared_ptr<RocksBucket>> expired;
  {
    std::shared_lock lock(state_mu_);
    for (const auto& [start, bucket] : buckets_) {
      if (bucket->end_ms() > window_start) break;
      expired.push_back(bucket);
    }
  }
  size_t dropped = 0;
  for (const auto& bucket : expired) {
    // The bucket goes first, then its counters: a crash in between leaves counters of a missing
    // bucket, which LoadMetadata ignores.
    rocksdb::Status s = db_->DropColumnFamily(bucket->cf());
    if (!s.ok()) return NoteWrite(s, "dropping bucket " + std::to_string(bucket->start_ms()));
    bucket->MarkDropped();
    rocksdb::WriteBatch wb;
    const std::string from = StatKey(bucket->start_ms(), 0);
    const std::string to = kStatPrefix + Be64(static_cast<uint64_t>(bucket->start_ms()) + 1);
    s = wb.DeleteRange(meta_, from, to);
    // A bucket is dropped even while RocksDB refuses writes: expiry is what frees a full disk.
    // Its counters are then left behind, which LoadMetadata ignores.
    if (s.ok() && ResumeAfterFailedWrite().ok()) {
      s = db_->Write(rocksdb::WriteOptions(), &wb);
      if (!s.ok()) write_failed_ = true;
    }
    if (!s.ok()) spdlog::warn("store: clearing counters of bucket {}: {}", bucket->start_ms(), s.ToString());
    std::unique_lock lock(state_mu_);
    buckets_.erase(bucket->start_ms());
    counters_.erase(bucket->start_ms());
    dropped_until_ms_ = std::max(dropped_until_ms_, bucket->end_ms());
    ++dropped;
  }
  if (dropped > 0) {
    spdlog::info("store: dropped {} expired bucket(s); {} live", dropped, buckets_.size());
  }
  return dropped;
}

std::vector<std::shared_ptr<const Bucket>> RocksEventStore::Buckets() const {
  std::shared_lock lock(state_mu_);
  std::vector<std::shared_ptr<const Bucket>> out;
  out.reserve(buckets_.size());
  for (const auto& [start, bucket] : buckets_) out.push_back(bucket);
  return out;
}

StoreStats RocksEventStore::Stats() const {
  StoreStats stats;
  stats.now_ms = NowMs();
  stats.window_start_ms = stats.now_ms - options().ttl_ms;
  stats.salt_events.assign(static_cast<size_t>(options().salts), 0);
  std::shared_lock lock(state_mu_);
  for (const auto& [start, bucket] : buckets_) {
    BucketStats b;
    b.start_ms = start;
    auto c = counters_.find(start);
    if (c != counters_.end()) {
      for (size_t salt = 0; salt < c->second.size(); ++salt) {
        b.events += c->second[salt].events;
        b.bytes += c->second[salt].bytes;
        stats.salt_events[salt] += c->second[salt].events;
      }
    }
    stats.events += b.events;
    stats.buckets.push_back(b);
  }
  lock.unlock();
  stats.disk_bytes = DirectoryBytes(options().path);
  return stats;
}

}  // namespace

Result<std::unique_ptr<EventStore>> EventStore::Open(const StoreOptions& options) {
  auto store = std::make_unique<RocksEventStore>(options);
  Status s = store->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<EventStore>(std::move(store));
}

}  // namespace hotrow::store
