#include "query/last_cache.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>
#include <tuple>

#include "keying/row_value.h"

namespace hotrow::query {
namespace {

// What malloc adds to each allocation (its header and rounding), roughly, on glibc.
constexpr size_t kAllocOverhead = 16;

// What an entry holds beyond its ring and payloads, as counted against max_bytes: its header; the
// by-id index's slots (at most half full, grown by doubling: up to four of 16 bytes); the recency
// queue's records and the id order's (each compacted at twice the entries: up to two of 16 bytes).
constexpr size_t kEntryBytes = 64 + 4 * 16 + 2 * 16 + 2 * 16;

// Headers are allocated this many at a time; a retired entry's header is reused.
constexpr size_t kPageEntries = 256;

// Stale records a shard's recency queue or id order may hold beyond twice its entries.
constexpr size_t kStaleSlack = 1024;

// How many rows ahead Add fetches the index slot of a row, its entry (two thirds as far) and the
// places in the entry the row changes (a third as far): each fetched once the one before arrived.
constexpr uint32_t kPrefetchAhead = 12;

// Below this a shard would hold too few ids for least-recently-written to mean much.
constexpr size_t kMinShardBytes = size_t{256} << 10;
constexpr size_t kMaxShards = 64;

// The arena's chunks: about a 64th of a shard's bytes, 4-64 KiB, so that the open chunk (whose
// dead records are not counted) is a small part of the shard.
size_t ChunkBytesFor(size_t shard_bytes) {
  return std::clamp<size_t>(std::bit_floor(std::max<size_t>(shard_bytes / 64, 1)), 4 << 10,
                            64 << 10);
}

size_t RingBytes(size_t capacity) { return capacity == 0 ? 0 : capacity * 40 + kAllocOverhead; }

template <typename T>
auto OrderKey(const T& e) {
  return std::make_tuple(e.ts_ms, e.topic, e.partition, e.offset);
}

}  // namespace

LastCache::LastCache(const LastCacheOptions& options) : options_(options) {
  static_assert(sizeof(Item) == 40, "RingBytes counts 40 bytes an item");
  while (shard_count_ < kMaxShards && options_.max_bytes / (shard_count_ * 2) >= kMinShardBytes) {
    shard_count_ *= 2;
  }
  shard_bytes_ = options_.max_bytes / shard_count_;
  for (size_t s = 0; s < shard_count_; ++s) {
    shards_.push_back(std::make_unique<Shard>(s, ChunkBytesFor(shard_bytes_)));
  }
  if (options_.apply_thread) apply_thread_ = std::thread([this] { ApplyLoop(); });
}

LastCache::~LastCache() {
  if (apply_thread_.joinable()) {
    {
      std::lock_guard lock(queue_mu_);
      stop_ = true;
    }
    queue_cv_.notify_all();
    done_cv_.notify_all();
    apply_thread_.join();
  }
}

void LastCache::RowsWritten(std::span<const store::WrittenRow> rows) {
  if (options_.apply_thread) {
    Enqueue(rows);
  } else {
    Add(rows, false);
  }
}

void LastCache::RebuildRows(std::span<const store::WrittenRow> rows) { Add(rows, true); }

void LastCache::SetKnownFrom(int64_t from_ms) {
  int64_t seen = known_from_ms_.load();
  while (from_ms < seen && !known_from_ms_.compare_exchange_weak(seen, from_ms)) {
  }
}

int64_t LastCache::FloorOf(const Entry& entry) const {
  constexpr int64_t kNoFloor = std::numeric_limits<int64_t>::min();
  const int64_t known = known_from_ms_.load(std::memory_order_acquire);
  return std::max(entry.floor_ms, known == kNoFloor ? kNoFloor : known - 1);
}

void LastCache::Add(std::span<const store::WrittenRow> rows, bool from_rebuild) {
  if (rows.empty()) return;
  // Each shard's rows under one lock: a query sees all of a Write's rows of its id or none. The
  // rows are grouped by shard with a counting sort, which keeps their order within a shard.
  const uint64_t mask = shard_count_ - 1;
  std::vector<uint32_t> starts(shard_count_ + 1, 0);
  for (const store::WrittenRow& row : rows) ++starts[(row.key.id_hash & mask) + 1];
  for (size_t s = 0; s < shard_count_; ++s) starts[s + 1] += starts[s];
  std::vector<uint32_t> order(rows.size());
  std::vector<uint32_t> next(starts.begin(), starts.end() - 1);
  for (size_t i = 0; i < rows.size(); ++i) order[next[rows[i].key.id_hash & mask]++] = i;
  for (size_t s = 0; s < shard_count_; ++s) {
    if (starts[s] == starts[s + 1]) continue;
    Shard& shard = *shards_[s];
    std::lock_guard lock(shard.mu);
    // Written rows queued before these go first, as they would have inside their Writes.
    CatchUpLocked(shard, QueuedSeq());
    AddToShardLocked(shard, rows, order.data(), starts[s], starts[s + 1], from_rebuild);
  }
}

void LastCache::AddToShardLocked(Shard& shard, std::span<const store::WrittenRow> rows,
                                 const uint32_t* order, uint32_t begin, uint32_t end,
                                 bool from_rebuild) {
  auto row_at = [&](uint32_t i) -> const store::WrittenRow& {
    return rows[order != nullptr ? order[i] : i];
  };
  // An entry is far from the last in memory (ids come in no order): while one row is added,
  // the index slot of the row kPrefetchAhead places on is fetched, the entry of the row two
  // thirds as far (its slot has arrived) and the ring slots of the row a third as far (its
  // entry has arrived), so that the cache misses of a batch's rows overlap.
  constexpr uint32_t kEntryAhead = kPrefetchAhead * 2 / 3;
  constexpr uint32_t kRingAhead = kPrefetchAhead / 3;
  constexpr uint32_t kPayloadAhead = kPrefetchAhead / 6;
  // Each row's entry is looked up once, kEntryAhead rows before it is added (Peek: the first
  // entry of its hash, checked against the id when the row is added, since a row between may
  // have made the entry).
  std::array<Entry*, 16> peeked{};
  static_assert(kEntryAhead < 16);
  for (uint32_t i = begin; i < std::min(end, begin + kEntryAhead); ++i) {
    peeked[i & 15] = shard.by_id.Peek(row_at(i).key.id_hash);
  }
  for (uint32_t i = begin; i < end; ++i) {
    if (i + kPrefetchAhead < end) shard.by_id.PrefetchSlot(row_at(i + kPrefetchAhead).key.id_hash);
    if (i + kEntryAhead < end) {
      Entry* ahead = shard.by_id.Peek(row_at(i + kEntryAhead).key.id_hash);
      peeked[(i + kEntryAhead) & 15] = ahead;
      if (ahead != nullptr) __builtin_prefetch(ahead);
    }
    if (i + kRingAhead < end) {
      const Entry* ahead = peeked[(i + kRingAhead) & 15];
      if (ahead != nullptr && ahead->capacity != 0) {
        // The newest (compared with), the slot before it (written) and, in a full ring, the
        // one before that (its oldest once the row is in, which the floor's trim reads).
        const size_t cap = ahead->capacity;
        const size_t head = ahead->head;
        __builtin_prefetch(&ahead->ring[head]);
        __builtin_prefetch(&ahead->ring[head >= 1 ? head - 1 : head + cap - 1]);
        if (ahead->size == cap && cap >= 2) {
          __builtin_prefetch(&ahead->ring[head >= 2 ? head - 2 : head + cap - 2]);
        }
      }
    }
    if (i + kPayloadAhead < end) {
      const Entry* ahead = peeked[(i + kPayloadAhead) & 15];
      if (ahead != nullptr && ahead->size != 0 && ahead->size == ahead->capacity) {
        shard.arena.Prefetch(ahead->back().payload);  // where a full entry's new payload goes
      }
    }
    AddLocked(shard, row_at(i), from_rebuild, peeked[i & 15]);
  }
  TidyLocked(shard);
}

std::string_view LastCache::IdOf(const Shard& shard, const Entry& e) {
  if (e.id_length <= kInlineId) return std::string_view(e.id_inline, e.id_length);
  return shard.arena.Read(e.id_ref);
}

LastCache::Entry* LastCache::EntryOf(Shard& shard, uint32_t handle) {
  return &shard.pages[handle / kPageEntries][handle % kPageEntries];
}

ArenaRef* LastCache::LocateLocked(Shard& shard, uint32_t handle, ArenaRef ref) {
  Entry* e = EntryOf(shard, handle);
  if (e->stamp == 0) return nullptr;
  if (e->id_length > kInlineId && e->id_ref == ref) return &e->id_ref;
  for (size_t i = 0; i < e->size; ++i) {
    if (e->item(i).payload == ref) return &e->item(i).payload;
  }
  return nullptr;
}

void LastCache::AddLocked(Shard& shard, const store::WrittenRow& row, bool from_rebuild,
                          Entry* hint) {
  std::string_view id, payload;
  if (!keying::DecodeRowValue(row.value, &id, &payload)) {
    // A row the cache cannot hold (the store's own reads refuse it too): whatever entry its id
    // has would miss it, so the whole shard is forgotten and its floor raised past the row.
    ForEachEntryLocked(shard, [&](Entry* e) { RetireLocked(shard, e); });
    shard.retired_ms = std::max(shard.retired_ms, row.key.ts_ms);
    return;
  }
  const uint64_t id_hash = row.key.id_hash;
  auto is_id = [&](const Entry& entry) {
    return entry.id_length == id.size() && IdOf(shard, entry) == id;
  };
  Entry* e = hint != nullptr && hint->stamp != 0 && hint->id_hash == id_hash && is_id(*hint)
                 ? hint
                 : shard.by_id.Find(id_hash, is_id);
  if (e == nullptr) {
    e = NewEntryLocked(shard, id, id_hash, from_rebuild);
  } else if (!from_rebuild) {
    TouchLocked(shard, e);
  }
  const keying::RowKey& k = row.key;
  if (k.ts_ms <= e->floor_ms) return;
  size_t index = 0;
  // Mostly the newest of its id: before every item, with no compare of the other key fields.
  if (e->size != 0 && e->front().ts_ms >= k.ts_ms) {
    const auto key = std::make_tuple(k.ts_ms, k.topic, k.partition, k.offset);
    while (index < e->size && OrderKey(e->item(index)) > key) ++index;
    if (index < e->size && OrderKey(e->item(index)) == key) return;  // a duplicate
  }
  const size_t depth = static_cast<size_t>(options_.depth);
  if (e->size >= depth && index >= e->size) {
    // Older than every event kept: it stays out, and the floor says so.
    e->floor_ms = std::max(e->floor_ms, k.ts_ms);
    TrimToFloor(shard, e);
    return;
  }
  // When the entry is full the oldest goes, and the floor rises to its time (events tied with it
  // go too). Below the depth every item stays above the floor, which is unchanged.
  const bool full = e->size >= depth;
  if (full) e->floor_ms = std::max(e->floor_ms, e->back().ts_ms);
  InsertLocked(shard, e, index, k, payload);
  if (full) TrimToFloor(shard, e);
}

LastCache::Entry* LastCache::NewEntryLocked(Shard& shard, std::string_view id, uint64_t id_hash,
                                            bool from_rebuild) {
  if (shard.free_entries.empty()) {
    const uint32_t first = static_cast<uint32_t>(shard.pages.size() * kPageEntries);
    shard.pages.push_back(std::make_unique<Entry[]>(kPageEntries));
    Entry* page = shard.pages.back().get();
    for (size_t i = kPageEntries; i-- > 0;) {
      page[i].handle = first + static_cast<uint32_t>(i);
      shard.free_entries.push_back(&page[i]);
    }
  }
  Entry* e = shard.free_entries.back();
  shard.free_entries.pop_back();
  e->id_hash = id_hash;
  e->floor_ms = shard.retired_ms;
  ++e->generation;
  e->id_length = static_cast<uint32_t>(id.size());
  if (id.size() <= kInlineId) {
    std::memcpy(e->id_inline, id.data(), id.size());
  } else {
    e->id_ref = shard.arena.Append(e->handle, id);
  }
  e->head = e->size = e->capacity = 0;
  shard.by_id.Insert(id_hash, e);
  shard.fixed_bytes += kEntryBytes;
  if (from_rebuild) {
    e->stamp = --shard.cold_stamp;
    shard.cold.push_back({e->stamp, e});
  } else {
    e->stamp = 0;
    TouchLocked(shard, e);
  }
  shard.unsorted.push_back({e, e->generation});
  if (shard.sorted.size() + shard.unsorted.size() > 2 * shard.ids() + kStaleSlack) {
    // No walk came for a while: drop the retired ids, sorting nothing.
    auto stale = [](const Ordered& o) {
      return o.entry->stamp == 0 || o.entry->generation != o.generation;
    };
    std::erase_if(shard.sorted, stale);
    std::erase_if(shard.unsorted, stale);
    shard.retired_since_walk = 0;
  }
  return e;
}

void LastCache::TouchLocked(Shard& shard, Entry* e) {
  if (e->stamp == shard.warm_stamp) return;  // the warmest already
  e->stamp = ++shard.warm_stamp;
  shard.warm.push_back({e->stamp, e});
  if (shard.warm.size() + shard.cold.size() > 2 * shard.ids() + kStaleSlack) {
    CompactRecencyLocked(shard);
  }
}

void LastCache::CompactRecencyLocked(Shard& shard) {
  std::erase_if(shard.cold, Stale);
  std::vector<Stamp> kept;
  kept.reserve(2 * shard.ids() + kStaleSlack);
  for (size_t i = shard.warm_head; i < shard.warm.size(); ++i) {
    // The entries are read in no order: fetched a few records ahead, their misses overlap.
    if (i + 8 < shard.warm.size()) __builtin_prefetch(shard.warm[i + 8].entry);
    if (!Stale(shard.warm[i])) kept.push_back(shard.warm[i]);
  }
  shard.warm.swap(kept);
  shard.warm_head = 0;
}

LastCache::Entry* LastCache::TakeColdestLocked(Shard& shard) {
  // Every entry the rebuild made and no write touched since is colder than every written one.
  while (!shard.cold.empty() && Stale(shard.cold.back())) shard.cold.pop_back();
  if (!shard.cold.empty()) {
    Entry* e = shard.cold.back().entry;
    shard.cold.pop_back();
    return e;
  }
  while (Stale(shard.warm[shard.warm_head])) ++shard.warm_head;
  return shard.warm[shard.warm_head++].entry;
}

void LastCache::InsertLocked(Shard& shard, Entry* e, size_t index, const keying::RowKey& key,
                             std::string_view payload) {
  const size_t depth = static_cast<size_t>(options_.depth);
  if (e->size == e->capacity && e->size < depth) {
    // Grows by doubling up to the depth; the items move in order, the newest to slot 0.
    const size_t capacity = std::min(depth, e->capacity == 0 ? size_t{1} : 2u * e->capacity);
    auto bigger = std::make_unique<Item[]>(capacity);
    for (size_t i = 0; i < e->size; ++i) bigger[i] = e->item(i);
    shard.fixed_bytes += RingBytes(capacity) - RingBytes(e->capacity);
    e->ring = std::move(bigger);
    e->capacity = static_cast<uint16_t>(capacity);
    e->head = 0;
  }
  const size_t capacity = e->capacity;
  Item* slot;
  // Full: the oldest goes. Its payload's record takes the new payload when it fits the same room
  // (events of one id are mostly of one size), else it is freed and the new one appended.
  std::optional<ArenaRef> reused;
  if (e->size == capacity) {
    const Item& oldest = e->back();
    if (shard.arena.Rewrite(oldest.payload, oldest.payload_length, payload)) {
      reused = oldest.payload;
    } else {
      shard.arena.Free(oldest.payload, oldest.payload_length);
    }
  }
  if (index == 0) {
    // The slot before the newest: free while there is room, the oldest's when full.
    e->head = static_cast<uint16_t>(e->head == 0 ? capacity - 1 : e->head - 1u);
    slot = &e->ring[e->head];
    if (e->size < capacity) ++e->size;
  } else {
    const size_t last = e->size < capacity ? e->size++ : e->size - 1u;
    for (size_t i = last; i > index; --i) e->item(i) = e->item(i - 1);
    slot = &e->item(index);
  }
  slot->ts_ms = key.ts_ms;
  slot->offset = key.offset;
  slot->partition = key.partition;
  slot->topic = key.topic;
  slot->payload_length = static_cast<uint32_t>(payload.size());
  slot->payload = reused ? *reused : shard.arena.Append(e->handle, payload);
}

void LastCache::PopBackLocked(Shard& shard, Entry* e) {
  const Item& oldest = e->back();
  shard.arena.Free(oldest.payload, oldest.payload_length);
  --e->size;
}

template <typename Drop>
void LastCache::EraseIfLocked(Shard& shard, Entry* e, Drop drop) {
  size_t kept = 0;
  for (size_t i = 0; i < e->size; ++i) {
    const Item item = e->item(i);
    if (drop(item)) {
      shard.arena.Free(item.payload, item.payload_length);
    } else {
      if (kept != i) e->item(kept) = item;
      ++kept;
    }
  }
  e->size = static_cast<uint16_t>(kept);
}

void LastCache::TrimToFloor(Shard& shard, Entry* entry) {
  while (entry->size != 0 && entry->back().ts_ms <= entry->floor_ms) PopBackLocked(shard, entry);
}

template <typename Visit>
void LastCache::ForEachEntryLocked(Shard& shard, Visit visit) {
  for (const std::unique_ptr<Entry[]>& page : shard.pages) {
    for (size_t i = 0; i < kPageEntries; ++i) {
      if (page[i].stamp != 0) visit(&page[i]);
    }
  }
}

void LastCache::RetireLocked(Shard& shard, Entry* e) {
  int64_t newest = e->floor_ms;
  if (e->size != 0) newest = std::max(newest, e->front().ts_ms);
  shard.retired_ms = std::max(shard.retired_ms, newest);
  for (size_t i = 0; i < e->size; ++i) {
    shard.arena.Free(e->item(i).payload, e->item(i).payload_length);
  }
  if (e->id_length > kInlineId) shard.arena.Free(e->id_ref, e->id_length);
  shard.fixed_bytes -= kEntryBytes + RingBytes(e->capacity);
  e->ring.reset();
  e->head = e->size = e->capacity = 0;
  e->stamp = 0;  // its records in the recency queue and the id order are stale from now
  shard.by_id.Erase(e->id_hash, e);
  shard.free_entries.push_back(e);
  ++shard.retired_since_walk;
}

void LastCache::TidyLocked(Shard& shard) {
  auto locate = [&](uint32_t handle, ArenaRef ref) { return LocateLocked(shard, handle, ref); };
  shard.arena.Evacuate(locate);
  while (shard.bytes() > shard_bytes_ && shard.ids() != 0) {
    // The least recently written: the queue's first record that is still its entry's stamp
    // (every live entry has one).
    RetireLocked(shard, TakeColdestLocked(shard));
    evicted_.fetch_add(1, std::memory_order_relaxed);
    shard.arena.Evacuate(locate);
  }
}

void LastCache::ForgetPartitions(const PartitionFilter& drop) {
  const uint64_t queued = QueuedSeq();  // rows queued before the call are forgotten too
  for (size_t s = 0; s < shard_count_; ++s) {
    Shard& shard = *shards_[s];
    std::lock_guard lock(shard.mu);
    CatchUpLocked(shard, queued);
    ForEachEntryLocked(shard, [&](Entry* e) {
      bool changed = false;
      for (size_t i = 0; i < e->size; ++i) {
        const Item& item = e->item(i);
        if (drop(item.topic, item.partition)) {
          e->floor_ms = std::max(e->floor_ms, item.ts_ms);
          changed = true;
        }
      }
      if (!changed) return;
      EraseIfLocked(shard, e, [&](const Item& item) {
        return item.ts_ms <= e->floor_ms || drop(item.topic, item.partition);
      });
      if (e->size == 0) RetireLocked(shard, e);
    });
    TidyLocked(shard);
  }
}

void LastCache::BucketsDropped(int64_t until_ms) {
  const uint64_t queued = QueuedSeq();  // rows queued before the drop go with it
  for (size_t s = 0; s < shard_count_; ++s) {
    Shard& shard = *shards_[s];
    std::lock_guard lock(shard.mu);
    CatchUpLocked(shard, queued);
    ForEachEntryLocked(shard, [&](Entry* e) {
      while (e->size != 0 && e->back().ts_ms < until_ms) PopBackLocked(shard, e);
      // Every row it had is gone with the buckets: the id has none left.
      if (e->size == 0 && e->floor_ms < until_ms) RetireLocked(shard, e);
    });
    TidyLocked(shard);
  }
}

LastCacheStats LastCache::Stats() {
  LastCacheStats stats;
  stats.max_bytes = options_.max_bytes;
  const uint64_t queued = QueuedSeq();
  for (size_t s = 0; s < shard_count_; ++s) {
    Shard& shard = *shards_[s];
    std::lock_guard lock(shard.mu);
    CatchUpLocked(shard, queued);
    stats.ids += shard.ids();
    stats.bytes += shard.bytes();
    stats.arena_chunk_bytes += shard.arena.chunk_memory();
    stats.arena_evacuated += shard.arena.evacuated();
  }
  stats.evicted = evicted_.load(std::memory_order_relaxed);
  stats.hits = hits_.load(std::memory_order_relaxed);
  stats.misses = misses_.load(std::memory_order_relaxed);
  stats.known_from_ms = known_from_ms_.load();
  stats.applied_by_thread = applied_by_thread_.load(std::memory_order_relaxed);
  stats.applied_by_readers = applied_by_readers_.load(std::memory_order_relaxed);
  stats.apply_ns = apply_ns_.load(std::memory_order_relaxed);
  stats.apply_page_faults = apply_page_faults_.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(queue_mu_);
    stats.queued_rows = queued_rows_;
  }
  return stats;
}

}  // namespace hotrow::query
