#include "store/event_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <tuple>

#include "keying/index_key.h"
#include "keying/row_key.h"
#include "store/index_postings.h"
#include "store/rocks_bucket.h"
#include "store/rocks_event_store.h"
#include "store/rocks_support.h"
#include "store/store_metadata.h"

namespace hotrow::store {
RocksEventStore::~RocksEventStore() {
  compactor_.reset();  // a compaction under way is stopped, not waited for
  // The locks in the order every writer takes them: drop_mu_, writers_mu_, then state_mu_.
  std::lock_guard drop_lock(drop_mu_);
  std::unique_lock writers_lock(writers_mu_);
  std::unique_lock lock(state_mu_);
  buckets_.clear();  // buckets still held by readers keep db_ alive until they let go
  if (db_ != nullptr && !options().read_only && ResumeAfterFailedWrite().ok()) {
    // Skipped while RocksDB is still in its error state: the WAL file that failed must not be
    // touched again (librocksdb asserts on it), and every write it acknowledged is in it already.
    rocksdb::Status s = db_->FlushWAL(/*sync=*/true);
    if (!s.ok()) spdlog::warn("store: syncing the WAL at close: {}", s.ToString());
  }
}

Result<uint16_t> RocksEventStore::TopicNumber(std::string_view topic) {
  {
    std::shared_lock lock(state_mu_);
    auto it = topic_numbers_.find(topic);
    if (it != topic_numbers_.end()) return it->second;
  }
  if (options().read_only) return Status::InvalidArgument("the store is open read-only");
  std::shared_lock writers_lock(writers_mu_);
  std::lock_guard topic_lock(topic_mu_);
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
  std::lock_guard bucket_lock(bucket_mu_);
  {
    // Another writer may have made it meanwhile.
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
  if (!options().index_fields.empty()) {
    // Recorded before the bucket exists, so a bucket never lacks it; one left by a crash before
    // the bucket was made is overwritten when it is, and ignored until then.
    rocksdb::WriteOptions wo;
    wo.sync = true;
    HOTROW_RETURN_IF_ERROR(NoteWrite(
        db_->Put(wo, meta_, IndexFieldsKey(start), EncodeIndexFields(options().index_fields)),
        "recording the index fields of bucket " + std::to_string(start)));
  }
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  HOTROW_RETURN_IF_ERROR(
      NoteWrite(db_->CreateColumnFamily(BucketOptions(), BucketName(start, end), &cf),
                "creating the bucket for " + std::to_string(start)));
  // Its id filter is sized for the ids of the bucket with the most so far: the next one is likely
  // much the same.
  uint64_t most_ids = 0;
  bool first = true;
  {
    std::shared_lock lock(state_mu_);
    for (const auto& [bucket_start, other] : buckets_) {
      first = false;
      most_ids = std::max(most_ids, other->EstimatedIds());
    }
  }
  const size_t slots =
      first ? IdSaltFilter::kFirstBucketSlots : IdSaltFilter::SlotsForIds(most_ids);
  auto bucket =
      std::make_shared<RocksBucket>(db_, cf, table_changes_, start, end, slots, SpreadSlots());
  bucket->SetIndexFields(options().index_fields);
  std::unique_lock lock(state_mu_);
  buckets_[start] = bucket;
  return bucket;
}

size_t RocksEventStore::SpreadSlots() const {
  if (salter().salt_by() != keying::SaltBy::kAdaptive) return 0;
  return SpreadIds::CapacityFor(salter().hot_rule().hot_share);
}

RocksEventStore::PartitionOffsets RocksEventStore::OffsetsOf(uint16_t topic, int32_t partition,
                                                             const WriteBatchInput& batch) const {
  PartitionOffsets out;
  out.topic = topic;
  out.partition = partition;
  const TopicPartition tp{topic_names_[topic], partition};
  if (auto it = offsets_.find(tp); it != offsets_.end()) out.stored = it->second;
  if (auto it = batch.next_offsets.find(tp); it != batch.next_offsets.end()) {
    out.batch_next = it->second;
  }
  return out;
}

Status RocksEventStore::PartitionClaim::Claim(const std::map<TopicPartition, int64_t>& partitions) {
  std::lock_guard lock(store_->claims_mu_);
  for (const auto& [tp, next] : partitions) {
    if (store_->claimed_.count(tp) != 0) {
      return Status::InvalidArgument("another write of " + tp.topic + "/" +
                                     std::to_string(tp.partition) +
                                     " is under way; writes of one partition must not overlap "
                                     "(nothing was written)");
    }
  }
  for (const auto& [tp, next] : partitions) {
    store_->claimed_.insert(tp);
    held_.push_back(tp);
  }
  return Status::Ok();
}

RocksEventStore::PartitionClaim::~PartitionClaim() {
  if (held_.empty()) return;
  std::lock_guard lock(store_->claims_mu_);
  for (const TopicPartition& tp : held_) store_->claimed_.erase(tp);
}

Status RocksEventStore::Write(const WriteBatchInput& batch, WriteOutcome* outcome) {
  *outcome = WriteOutcome();
  if (options().read_only) return Status::InvalidArgument("the store is open read-only");
  const bool adaptive = salter().salt_by() == keying::SaltBy::kAdaptive;
  // Under salt_by adaptive no other Write may carry these partitions meanwhile (see the header).
  PartitionClaim claim(this);
  if (adaptive) HOTROW_RETURN_IF_ERROR(claim.Claim(batch.next_offsets));
  if (options().write_hook) options().write_hook(batch);
  std::shared_lock writers_lock(writers_mu_);
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
  // The names of the batch's topics by number (a number never changes its name), for RecordSalt.
  std::vector<std::pair<uint16_t, std::string>> topics;
  int64_t max_ts = clock;
  {
    std::shared_lock lock(state_mu_);
    // The offsets of each partition of the batch, looked up once: rows come in runs of one
    // partition, so `run` rarely changes.
    std::vector<PartitionOffsets> partitions;
    size_t run = 0;
    // A record twice in one batch (a partition that went back while the batch was open) is
    // stored once. Offsets of a partition normally rise through a batch; only when one does not
    // are the records accepted so far looked up exactly.
    std::set<std::tuple<uint16_t, int32_t, int64_t>> exact;
    bool exact_built = false;
    for (const Row& row : batch.rows) {
      keying::RowKey key;
      if (!keying::DecodeRowKey(row.key, &key) || key.salt >= salts ||
          key.topic >= topic_names_.size()) {
        return Status::InvalidArgument(
            "a row key is not a key of this store (wrong length, salt "
            "or topic number); nothing was written");
      }
      if (run >= partitions.size() || partitions[run].topic != key.topic ||
          partitions[run].partition != key.partition) {
        run = 0;
        while (run < partitions.size() &&
               (partitions[run].topic != key.topic || partitions[run].partition != key.partition)) {
          ++run;
        }
        if (run == partitions.size())
          partitions.push_back(OffsetsOf(key.topic, key.partition, batch));
        if (adaptive && std::none_of(topics.begin(), topics.end(),
                                     [&](const auto& t) { return t.first == key.topic; })) {
          topics.emplace_back(key.topic, topic_names_[key.topic]);
        }
      }
      PartitionOffsets& offsets = partitions[run];
      const auto record = std::make_tuple(key.topic, key.partition, key.offset);
      if (key.offset <= offsets.accepted_max && !exact_built) {
        for (const Accepted& a : accepted) {
          exact.emplace(a.key.topic, a.key.partition, a.key.offset);
        }
        exact_built = true;
      }
      if (key.offset < offsets.stored ||
          (key.offset <= offsets.accepted_max && exact.count(record) != 0)) {
        ++outcome->duplicate;
      } else if (adaptive && key.offset >= offsets.batch_next) {
        // Stored without its offset, a replay could store the record again under another salt.
        return Status::InvalidArgument(
            "a row of " + topic_names_[key.topic] + "/" + std::to_string(key.partition) +
            " at offset " + std::to_string(key.offset) +
            " is not below the batch's next offset for its partition; nothing was written");
      } else if (key.ts_ms > future_limit) {
        ++outcome->future;
      } else {
        accepted.push_back({&row, key});
        max_ts = std::max(max_ts, key.ts_ms);
        offsets.accepted_max = std::max(offsets.accepted_max, key.offset);
        if (exact_built) exact.insert(record);
      }
    }
  }
  if (options().clock == ClockKind::kStream) {
    // The stream clock moves with the newest event of the batch; the window follows it.
    clock = max_ts;
    window_start = clock - options().ttl_ms;
  }

  // Each row's bucket, and under salt_by adaptive its salt, in the batch's order: a hot id's rows
  // are counted in the order its partition produced them.
  struct Placed {
    const Row* row;
    keying::RowKey key;
    RocksBucket* bucket;
    char encoded[keying::kRowKeySize];
  };
  // Bucket pointers stay valid: buckets are dropped only under writers_mu_ held exclusive.
  std::vector<Placed> placed;
  placed.reserve(accepted.size());
  for (const Accepted& a : accepted) {
    if (a.key.ts_ms < window_start || a.key.ts_ms < dropped_until_ms_) {
      ++outcome->expired;
      continue;
    }
    auto bucket = BucketFor(a.key.ts_ms);
    if (!bucket.ok()) return bucket.status();
    Placed& p = placed.emplace_back();
    p.row = a.row;
    p.key = a.key;
    p.bucket = bucket->get();
    if (adaptive) {
      // Before the row can be read: a query then seeks every salt of a spread id (SpreadIds).
      if (p.bucket->spread()->Place(p.key.id_hash, salter().hot_rule())) {
        const auto& topic = *std::find_if(topics.begin(), topics.end(),
                                          [&](const auto& t) { return t.first == p.key.topic; });
        p.key.salt = salter().RecordSalt(topic.second, p.key.partition, p.key.offset);
      } else {
        p.key.salt = salter().HomeSalt(p.key.id_hash);
      }
    }
    keying::EncodeRowKeyTo(p.key, p.encoded);
  }
  // In key order: each bucket's memtable (a skip list) then takes the batch's rows as one
  // ascending run, each insert starting where the previous one ended (RocksDB's splice, or the
  // per-batch insert hint when writers' batches are inserted concurrently), instead of a search
  // from the top for every row: the memtable insert was most of a write's time (BENCHMARKS.md).
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return std::memcmp(a.encoded, b.encoded, keying::kRowKeySize) < 0;
  });

  rocksdb::WriteBatch wb;
  // What this write adds to each bucket's counters: merge operands, so that writers never
  // read-modify-write a counter another writer changes too.
  std::map<int64_t, std::vector<SaltCounter>> touched;
  // The index postings (keying/index_key.h), put after the data rows in a key order of their
  // own (by bucket, then key): one per (field, value) and second of the batch, not one per event:
  // a write costs per memtable entry far more than per byte (docs/BENCHMARKS.md).
  PostingBuilder postings;
  for (const Placed& p : placed) {
    // Before the row can be read, so that no query skips its salt (IdSaltFilter).
    p.bucket->NoteId(p.key.salt, p.key.id_hash, p.key.ts_ms);
    HOTROW_RETURN_IF_ERROR(FromRocks(
        wb.Put(p.bucket->cf(), rocksdb::Slice(p.encoded, keying::kRowKeySize), p.row->value),
        "batching"));
    const uint64_t index_bytes = postings.Add(p.bucket, p.key, p.encoded, p.row->index);
    auto [it, inserted] = touched.try_emplace(p.bucket->start_ms());
    if (inserted) it->second.resize(salts);
    it->second[p.key.salt].events += 1;
    it->second[p.key.salt].bytes += keying::kRowKeySize + p.row->value.size() + index_bytes;
    ++outcome->stored;
  }
  for (const PostingBuilder::Posting& posting : postings.Finish()) {
    HOTROW_RETURN_IF_ERROR(
        FromRocks(wb.Put(posting.bucket->cf(), rocksdb::Slice(posting.key, keying::kIndexKeySize),
                         posting.value),
                  "batching"));
    // The key and the header: the events' keys in it are counted with each event above.
    touched[posting.bucket->start_ms()][posting.salt].bytes +=
        keying::kIndexKeySize + posting.header_bytes;
  }
  for (const auto& [start, per_salt] : touched) {
    for (size_t salt = 0; salt < salts; ++salt) {
      if (per_salt[salt].events == 0) continue;
      char value[16];
      keying::StoreBigEndian64(per_salt[salt].events, value);
      keying::StoreBigEndian64(per_salt[salt].bytes, value + 8);
      HOTROW_RETURN_IF_ERROR(FromRocks(
          wb.Merge(meta_, StatKey(start, static_cast<uint8_t>(salt)), rocksdb::Slice(value, 16)),
          "batching"));
    }
  }
  // Offsets are absolute: concurrent writers carry disjoint partitions (see the header).
  std::vector<std::pair<TopicPartition, int64_t>> advanced;
  {
    std::shared_lock lock(state_mu_);
    for (const auto& [tp, next] : batch.next_offsets) {
      auto stored = offsets_.find(tp);
      if (stored != offsets_.end() && next <= stored->second) continue;  // offsets never go back
      HOTROW_RETURN_IF_ERROR(
          FromRocks(wb.Put(meta_, OffsetKey(tp), Be64(static_cast<uint64_t>(next))), "batching"));
      advanced.emplace_back(tp, next);
    }
  }
  for (const auto& [tp, run] : batch.run_starts) {
    HOTROW_RETURN_IF_ERROR(FromRocks(wb.Put(meta_, RunKey(tp), EncodeRun(run)), "batching"));
  }
  if (options().clock == ClockKind::kStream && clock > stream_clock_ms_.load()) {
    HOTROW_RETURN_IF_ERROR(
        FromRocks(wb.Merge(meta_, kClockKey, Be64(static_cast<uint64_t>(clock))), "batching"));
  }
  if (wb.Count() == 0) return Status::Ok();

  // WAL on, no fsync: a process crash loses nothing; a machine crash may lose the last batches,
  // but rows and offsets always roll back together and Kafka replays the tail.
  rocksdb::WriteOptions wo;
  wo.sync = false;
  wo.memtable_insert_hint_per_batch = true;  // the rows are sorted: see above
  wo.disableWAL = !options().write_ahead_log;
  HOTROW_RETURN_IF_ERROR(NoteWrite(WriteToDb(db_.get(), wo, &wb), "writing a batch"));

  std::unique_lock lock(state_mu_);
  for (const auto& [start, per_salt] : touched) {
    last_write_ms_[start] = wall_now;
    std::vector<SaltCounter>& total = counters_[start];
    total.resize(salts);
    for (size_t salt = 0; salt < salts; ++salt) {
      total[salt].events += per_salt[salt].events;
      total[salt].bytes += per_salt[salt].bytes;
    }
  }
  for (const auto& [tp, next] : advanced) {
    int64_t& stored = offsets_[tp];
    stored = std::max(stored, next);
  }
  for (const auto& [tp, run] : batch.run_starts) runs_[tp] = run;
  if (options().clock == ClockKind::kStream) {
    int64_t seen = stream_clock_ms_.load();
    while (clock > seen && !stream_clock_ms_.compare_exchange_weak(seen, clock)) {
    }
  }
  lock.unlock();
  if (!observers_.empty() && !placed.empty()) {
    // Durable and readable now, and the Write has not returned: whoever is told may show the rows
    // no later than the store does, and never a row of a Write that failed.
    std::vector<WrittenRow> written;
    written.reserve(placed.size());
    for (const Placed& p : placed) written.push_back({p.key, p.row->value, p.row->index});
    for (WriteObserver* observer : observers_) observer->RowsWritten(written);
  }
  return Status::Ok();
}

void RocksEventStore::AddWriteObserver(WriteObserver* observer) {
  std::unique_lock writers_lock(writers_mu_);
  observers_.push_back(observer);
}

void RocksEventStore::RemoveWriteObserver(WriteObserver* observer) {
  std::unique_lock writers_lock(writers_mu_);
  std::erase(observers_, observer);
}

Status RocksEventStore::ResumeAfterFailedWrite() {
  if (!write_failed_.load()) return Status::Ok();
  std::lock_guard resume_lock(resume_mu_);
  if (!write_failed_.load()) return Status::Ok();  // another writer resumed it
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

std::map<TopicPartition, PartitionRun> RocksEventStore::PartitionRuns() const {
  std::shared_lock lock(state_mu_);
  return runs_;
}

std::vector<std::shared_ptr<const Bucket>> RocksEventStore::Buckets() const {
  std::shared_lock lock(state_mu_);
  std::vector<std::shared_ptr<const Bucket>> out;
  out.reserve(buckets_.size());
  for (const auto& [start, bucket] : buckets_) out.push_back(bucket);
  return out;
}

std::shared_ptr<const ReadPoint> RocksEventStore::ReadPointNow() const {
  return std::make_shared<RocksReadPoint>(db_);
}

void RocksEventStore::WaitForCompactions() {
  if (compactor_ != nullptr) compactor_->WaitIdle();
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
    b.sorted_runs = SortedRuns(db_.get(), bucket->cf());
    b.salt_events.assign(stats.salt_events.size(), 0);
    b.spread_ids = bucket->spread_ids();
    auto c = counters_.find(start);
    if (c != counters_.end()) {
      for (size_t salt = 0; salt < c->second.size(); ++salt) {
        b.events += c->second[salt].events;
        b.bytes += c->second[salt].bytes;
        b.salt_events[salt] = c->second[salt].events;
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

}  // namespace hotrow::store
