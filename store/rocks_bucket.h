// Internal to store/: a bucket as a RocksDB column family, and its cursor.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "store/event_store.h"
#include "store/id_salt_filter.h"
#include "store/rocks_support.h"
#include "store/spread_ids.h"

namespace hotrow::store {

// A ReadPoint as a RocksDB snapshot, released when the last holder lets go. Holds the database
// open until then.
class RocksReadPoint final : public ReadPoint {
 public:
  explicit RocksReadPoint(std::shared_ptr<rocksdb::DB> db)
      : db_(std::move(db)), snapshot_(db_->GetSnapshot()) {}
  ~RocksReadPoint() override { db_->ReleaseSnapshot(snapshot_); }
  RocksReadPoint(const RocksReadPoint&) = delete;
  RocksReadPoint& operator=(const RocksReadPoint&) = delete;
  const rocksdb::Snapshot* snapshot() const { return snapshot_; }

 private:
  const std::shared_ptr<rocksdb::DB> db_;
  const rocksdb::Snapshot* const snapshot_;
};

// Holds the database open for as long as any bucket (or the store) holds it; each bucket destroys
// its column family handle when the last reader lets go, which is when a dropped bucket's files go.
class RocksBucket final : public Bucket {
 public:
  RocksBucket(std::shared_ptr<rocksdb::DB> db, rocksdb::ColumnFamilyHandle* cf,
              std::shared_ptr<const TableChanges> table_changes, int64_t start_ms, int64_t end_ms,
              size_t id_filter_slots, size_t spread_slots)
      : Bucket(start_ms, end_ms),
        db_(std::move(db)),
        cf_(cf),
        table_changes_(std::move(table_changes)),
        spread_slots_(spread_slots) {
    ResetIdFilter(id_filter_slots);
  }
  ~RocksBucket() override;

  // Marks the bucket dropped: its files are deleted when the last holder lets go.
  void MarkDropped() { dropped_ = true; }
  bool dropped() const { return dropped_.load(); }
  // Records the bucket's index.fields. REQUIRES: before the bucket is shared with readers.
  void SetIndexFields(std::vector<std::string> fields) { set_index_fields(std::move(fields)); }

  std::unique_ptr<RowIterator> NewIterator(const keying::KeyRange& range, bool within_id_prefix,
                                           const ReadPoint* at = nullptr) const override;

  int64_t NewestIdTsBound(uint8_t salt, uint64_t id_hash) const override {
    return ids_->NewestTsBound(salt, id_hash);
  }
  // Records that a row of the id at ts_ms is (about to be) in the salt: before its write, or at
  // open.
  void NoteId(uint8_t salt, uint64_t id_hash, int64_t ts_ms) { ids_->Note(salt, id_hash, ts_ms); }
  // Replaces the id filter (and the spread ids, under salt_by: adaptive) with empty ones of
  // `slots`. REQUIRES: the bucket is not shared yet (the open, before it rebuilds the filter).
  void ResetIdFilter(size_t slots) {
    ids_ = std::make_unique<IdSaltFilter>(start_ms(), end_ms(), slots);
    // Two tables of half the filter's slots each (two counters or more per id), at most 2^18.
    if (spread_slots_ > 0) {
      spread_ = std::make_unique<SpreadIds>(std::min(slots / 2, kMaxSpreadCounts), spread_slots_);
    }
  }
  // Shrinks the id filter to the slots its ids need (IdSaltFilter::FoldedTo), keeping what it
  // noted. REQUIRES: the bucket is not shared yet (the open, once it has noted every row).
  void FitIdFilterToIds() {
    const size_t slots = IdSaltFilter::SlotsForIds(ids_->EstimatedIds());
    if (slots < ids_->slots()) ids_ = ids_->FoldedTo(slots);
  }
  // About how many distinct ids the bucket holds (IdSaltFilter::EstimatedIds).
  uint64_t EstimatedIds() const { return ids_->EstimatedIds(); }
  size_t id_filter_slots() const { return ids_->slots(); }
  size_t id_filter_bytes() const { return ids_->bytes() + (spread_ ? spread_->bytes() : 0); }

  // Under salt_by: adaptive (else null): the ids this bucket spreads over every salt.
  SpreadIds* spread() { return spread_.get(); }
  bool SpreadsId(uint64_t id_hash) const override {
    return spread_ == nullptr || spread_->Contains(id_hash);
  }
  size_t spread_ids() const override { return spread_ ? spread_->size() : 0; }
  std::vector<uint64_t> SpreadIdHashes() const override {
    return spread_ ? spread_->Hashes() : std::vector<uint64_t>();
  }

  rocksdb::ColumnFamilyHandle* cf() const { return cf_; }

 private:
  static constexpr size_t kMaxSpreadCounts = size_t{1} << 18;

  std::shared_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  const std::shared_ptr<const TableChanges> table_changes_;
  std::atomic<bool> dropped_{false};
  const size_t spread_slots_;          // 0 unless salt_by: adaptive
  std::unique_ptr<IdSaltFilter> ids_;  // replaced only before the bucket is shared
  std::unique_ptr<SpreadIds> spread_;  // likewise; null unless salt_by: adaptive
};

}  // namespace hotrow::store
