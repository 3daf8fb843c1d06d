#include "store/rocks_bucket.h"

#include <rocksdb/db.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "common/sanitizers.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "store/rocks_support.h"

namespace hotrow::store {
namespace {

#ifdef HOTROW_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

// The bytes of a row, as hotrow reads them. Debian's RocksDB is not built for ThreadSanitizer: its
// memtable publishes entries with atomics TSan cannot see, so TSan took a query's read of a fresh
// memtable entry for a race with the write that filled it. TSan builds copy the bytes here, at the
// one place RocksDB's memory enters hotrow, with TSan looking away for the copy alone; other builds
// return RocksDB's view as is.
std::string_view RowBytes(rocksdb::Slice bytes, std::string* copy) {
#ifdef HOTROW_TSAN
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
  // Reads at `snapshot` when not null (it outlives the cursor: RowIterator's caller holds its
  // ReadPoint), else at the newest data.
  RocksRowIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                   const TableChanges* table_changes, const keying::KeyRange& range,
                   bool within_id_prefix, const rocksdb::Snapshot* snapshot)
      : start_(range.start),
        limit_(range.limit),
        within_prefix_(within_id_prefix),
        at_read_point_(snapshot != nullptr),
        table_changes_(table_changes) {
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
    // Buckets never hold range deletions (only the metadata column family has them): every seek
    // skips looking for tombstones.
    ro.ignore_range_deletions = true;
    ro.snapshot = snapshot;
    // Both read before the iterator is made: at most what it sees, so a change is never missed.
    seq_ = db->GetLatestSequenceNumber();
    tables_ = table_changes_->count();
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
    if (at_read_point_) return Status::Ok();  // Refresh would move it to the newest data
    const rocksdb::SequenceNumber seq = db_->GetLatestSequenceNumber();
    const uint64_t tables = table_changes_->count();
    if (seq == seq_ && tables == tables_) return Status::Ok();
    seq_ = seq;
    tables_ = tables;
    const rocksdb::Status s = iter_->Refresh();
    if (s.ok()) return Status::Ok();
    return FromRocks(s, "refreshing a bucket cursor");
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
  Status status() const override {
    // Asked at the end of every salt a query reads: the ok case builds no context string.
    const rocksdb::Status s = iter_->status();
    if (s.ok()) return Status::Ok();
    return FromRocks(s, "reading a bucket");
  }

 private:
  // Declared before iter_: the iterator points at these bounds and must go first.
  std::string start_;
  std::string limit_;
  rocksdb::Slice lower_;
  rocksdb::Slice upper_;
  const bool within_prefix_;
  const bool at_read_point_;
  rocksdb::DB* db_ = nullptr;
  const TableChanges* const table_changes_;  // outlives the cursor: its bucket holds it
  rocksdb::SequenceNumber seq_ = 0;
  uint64_t tables_ = 0;
  std::unique_ptr<rocksdb::Iterator> iter_;
  mutable std::string key_copy_, value_copy_;  // used by RowBytes in TSan builds only
};

}  // namespace

RocksBucket::~RocksBucket() {
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

Status Bucket::NotARow() const {
  return Status::Corruption("bucket " + std::to_string(start_ms()) +
                            " holds a row that is not a hotrow row");
}

bool Bucket::Indexes(std::string_view field) const {
  return std::find(index_fields_.begin(), index_fields_.end(), field) != index_fields_.end();
}

std::unique_ptr<RowIterator> RocksBucket::NewIterator(const keying::KeyRange& range,
                                                      bool within_id_prefix,
                                                      const ReadPoint* at) const {
  // Every ReadPoint of this store is a RocksReadPoint (RocksEventStore::ReadPointNow).
  const rocksdb::Snapshot* snapshot =
      at != nullptr ? static_cast<const RocksReadPoint*>(at)->snapshot() : nullptr;
  return std::make_unique<RocksRowIterator>(db_.get(), cf_, table_changes_.get(), range,
                                            within_id_prefix, snapshot);
}

}  // namespace hotrow::store
