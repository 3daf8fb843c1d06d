// The opening of a store: RocksDB options, Init, and the checks it runs on what it finds.
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "keying/index_key.h"
#include "keying/row_key.h"
#include "store/rocks_bucket.h"
#include "store/rocks_event_store.h"
#include "store/rocks_support.h"
#include "store/store_metadata.h"

namespace hotrow::store {

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
  if (options().partitioned_index) {
    table.index_type = rocksdb::BlockBasedTableOptions::IndexType::kTwoLevelIndexSearch;
    table.partition_filters = true;
  }
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // No compression on the first levels (StoreOptions::compressed_from_level, two by default),
  // where a bucket's data spends most of its few minutes: flushes and the first compactions cost
  // no CPU for it. Deeper levels (a long window) compress.
  cf.compression_per_level.assign(static_cast<size_t>(cf.num_levels), rocksdb::kNoCompression);
  for (int level = std::max(0, options().compressed_from_level); level < cf.num_levels; ++level) {
    cf.compression_per_level[static_cast<size_t>(level)] = compression_;
  }
  cf.compression = cf.compression_per_level.back();
  cf.write_buffer_size = 32 << 20;
  // One table file per level, whatever the bucket's size: a bucket of 1.1M events compacted into
  // 64 MiB files (RocksDB's default) made latest-10's salt seeks cross from file to file, each
  // crossing a new table iterator and an index block looked up in the cache (RocksDB's perf
  // context at 10M events in scaling_bench: 4.5 index lookups per latest-10, 0.6 with one file).
  cf.target_file_size_base = uint64_t{1} << 30;
  // A bucket lives for one window: compacting it much buys little. Let L0 grow before merging.
  // Measured against RocksDB's default of 4: 4 cost store writes 20-35 % (write_bench, hotrow /
  // raw WriteBatch 0.75-0.81 against 1.16-1.32; Redis ingest ratio 1.67 against 2.0-2.3) and gave
  // latest-10 at 10M events no reproducible gain (scaling_bench 10M / 1M: 1.71 and 2.17 at 4,
  // 2.20 at 8), although every L0 file holding an id is one more probe in each salt's seek.
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
  if (!(opt.hot.hot_share > 0 && opt.hot.hot_share <= 1)) {
    return Status::InvalidArgument("keying.hot_share must be above 0 and at most 1, got " +
                                   std::to_string(opt.hot.hot_share));
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
      return Status::Incompatible(opt.path +
                                  " is not empty and holds no hotrow store; "
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
  db_opt.info_log = NewSpdlogRocksLogger();
  db_opt.env = NoFreeSpaceEnv();
  db_opt.max_file_opening_threads = 2;
  db_opt.allow_mmap_reads = opt.mmap_reads;
  // Obsolete files (a dropped bucket's table files, a gigabyte at 100M events) are deleted by a
  // background job, not by the thread that lets go of the bucket or of an iterator.
  db_opt.avoid_unnecessary_blocking_io = true;
  // Rows written without the WAL (StoreOptions::write_ahead_log) are flushed when the database
  // closes: RocksDB does so while avoid_flush_during_shutdown is false (its default).
  db_opt.avoid_flush_during_shutdown = false;
  // Several writers (the Ingestor's): one group's WAL write overlaps the previous group's
  // memtable inserts, and a group's inserts run in parallel (allow_concurrent_memtable_write,
  // on by default).
  db_opt.enable_pipelined_write = true;
  table_changes_ = std::make_shared<TableChanges>();
  db_opt.listeners.push_back(table_changes_);
  db_opt.listeners.push_back(std::make_shared<BackgroundAsBatch>());
  if (opt.table_file_deleted_hook) {
    db_opt.listeners.push_back(std::make_shared<TableFileDeletions>(opt.table_file_deleted_hook));
  }

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
      rocksdb::ColumnFamilyOptions meta;
      meta.merge_operator = NewMetadataMergeOperator();
      descriptors.emplace_back(name, meta);
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
  rocksdb::Status s =
      opt.read_only ? rocksdb::DB::OpenForReadOnly(db_opt, opt.path, descriptors, &handles, &raw)
                    : rocksdb::DB::Open(db_opt, opt.path, descriptors, &handles, &raw);
  if (!s.ok()) return FromRocks(s, "opening the store at " + opt.path);
  // Handles must be destroyed before the database is closed. Buckets destroy their own; the
  // default one goes in the deleter, which runs when the store and every bucket have let go.
  rocksdb::ColumnFamilyHandle* default_handle = nullptr;
  for (size_t i = 0; i < handles.size(); ++i) {
    if (spans[i].first < 0) default_handle = handles[i];
  }
  db_ = std::shared_ptr<rocksdb::DB>(raw, [default_handle](rocksdb::DB* db) {
    if (default_handle != nullptr)
      db->DestroyColumnFamilyHandle(default_handle).PermitUncheckedError();
    delete db;
  });
  for (size_t i = 0; i < handles.size(); ++i) {
    if (spans[i].first < 0) {
      meta_ = handles[i];
      continue;
    }
    // The id filter is sized and rebuilt once the counters are read (CheckRowsMatchCounters).
    buckets_[spans[i].first] =
        std::make_shared<RocksBucket>(db_, handles[i], table_changes_, spans[i].first,
                                      spans[i].second, IdSaltFilter::kMinSlots, SpreadSlots());
  }
  HOTROW_RETURN_IF_ERROR(CheckFormat(!exists));
  HOTROW_RETURN_IF_ERROR(LoadMetadata());
  if (!opt.read_only) {
    // Buckets closed while the store was down (or still in several runs when it stopped) are
    // compacted now; FlushIdleBuckets queues the others as they go quiet.
    compactor_ = std::make_unique<BucketCompactor>(db_);
    const int64_t now = NowMs();
    for (const auto& [start, bucket] : buckets_) {
      if (bucket->end_ms() <= now) compactor_->Enqueue(bucket);
    }
  }
  return Status::Ok();
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
    return Status::Incompatible(
        "the store at " + opt.path + " was created with \"" + have +
        "\" but the configuration asks for \"" + want +
        "\"; salts and salt_by are fixed when a store is created: use a new "
        "store.path or the original keying settings");
  }
  return Status::Ok();
}

Status RocksEventStore::LoadMetadata() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
  const size_t salts = static_cast<size_t>(options().salts);
  std::map<int64_t, std::vector<std::string>> index_fields;  // by bucket start
  int legacy_index_buckets = 0;
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
    } else if (key.rfind(kRunPrefix, 0) == 0) {
      const size_t nul = key.find('\0', sizeof(kRunPrefix) - 1);
      PartitionRun run;
      if (nul == std::string::npos || key.size() != nul + 5 ||
          !DecodeRun(std::string_view(value.data(), value.size()), &run)) {
        return corrupt();
      }
      TopicPartition tp{key.substr(sizeof(kRunPrefix) - 1, nul - (sizeof(kRunPrefix) - 1)),
                        static_cast<int32_t>(keying::LoadBigEndian32(key.data() + nul + 1))};
      runs_[tp] = run;
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
    } else if (key.rfind(kIndexFieldsPrefix, 0) == 0) {
      if (key.size() != sizeof(kIndexFieldsPrefix) - 1 + 8) return corrupt();
      const int64_t start = static_cast<int64_t>(
          keying::LoadBigEndian64(key.data() + sizeof(kIndexFieldsPrefix) - 1));
      bool legacy = false;
      index_fields[start] =
          DecodeIndexFields(std::string_view(value.data(), value.size()), &legacy);
      if (legacy && value.size() > 0) ++legacy_index_buckets;
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
  if (legacy_index_buckets > 0) {
    spdlog::warn(
        "store: {} bucket(s) hold the index rows of an older hotrow (one row per event, not "
        "postings): index queries name them unindexed until they leave the window",
        legacy_index_buckets);
  }
  for (auto& [start, fields] : index_fields) {
    auto b = buckets_.find(start);
    if (b != buckets_.end()) b->second->SetIndexFields(std::move(fields));
  }
  return CheckRowsMatchCounters();
}

Status RocksEventStore::CheckRowsMatchCounters() const {
  // Buckets are walked in parallel, one thread per core at most, each bucket whole on one thread:
  // the walk is the open's cost (a 10M-event store: 6.3 s to open against 4.6 s for a bare walk
  // on one thread, scale_bench), and a bucket's id filter and spread ids are its own.
  std::vector<std::pair<int64_t, RocksBucket*>> buckets;
  for (const auto& [start, bucket] : buckets_) buckets.emplace_back(start, bucket.get());
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;  // guarded by mu
  auto walk = [&] {
    for (size_t i = next.fetch_add(1); i < buckets.size(); i = next.fetch_add(1)) {
      Status st = CheckBucketRows(buckets[i].first, buckets[i].second);
      if (!st.ok()) {
        std::lock_guard lock(mu);
        if (first_error.ok()) first_error = std::move(st);
      }
    }
  };
  const size_t threads = std::min<size_t>(
      buckets.size(), std::max<size_t>(1, std::thread::hardware_concurrency()));
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(walk);
  walk();
  for (std::thread& t : helpers) t.join();
  return first_error;
}

Status RocksEventStore::CheckBucketRows(int64_t start, RocksBucket* bucket) const {
  uint64_t expected = 0;
  if (auto c = counters_.find(start); c != counters_.end()) {
    for (const SaltCounter& salt : c->second) expected += salt.events;
  }
  // Sized for as many ids as events (no bucket holds more) while the rows are walked, then folded
  // to the ids they held.
  bucket->ResetIdFilter(IdSaltFilter::SlotsForIds(expected));
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.total_order_seek = true;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, bucket->cf()));
  SpreadIds* spread = bucket->spread();
  uint64_t rows = 0;  // events only: index rows are not counted as events
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice key = it->key();
    if (keying::IsIndexKey(key.ToStringView())) continue;
    ++rows;
    // Every row passes here once at open: the bucket's id filter is rebuilt on the way, and
    // under salt_by adaptive its spread ids, from the salts the rows are in.
    keying::RowKey row;
    if (keying::DecodeRowKey(key.ToStringView(), &row)) {
      bucket->NoteId(row.salt, row.id_hash, row.ts_ms);
      if (spread != nullptr) {
        spread->NoteStored(row.id_hash, row.salt != salter().HomeSalt(row.id_hash));
      }
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "reading bucket " + std::to_string(start));
  bucket->FitIdFilterToIds();
  if (rows != expected) {
    return Status::Corruption("the store at " + options().path + " is damaged: bucket " +
                              std::to_string(start) + " holds " + std::to_string(rows) +
                              " events where its counters say " + std::to_string(expected) +
                              " (a table file or the MANIFEST was lost or cut short)");
  }
  return Status::Ok();
}

Result<std::unique_ptr<EventStore>> EventStore::Open(const StoreOptions& options) {
  auto store = std::make_unique<RocksEventStore>(options);
  Status s = store->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<EventStore>(std::move(store));
}

}  // namespace hotrow::store
