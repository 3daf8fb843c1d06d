#include "query/last_cache.h"

#include <algorithm>
#include <tuple>

#include "keying/row_value.h"
#include "query/salt_tasks.h"

namespace hotrow::query {
namespace {

constexpr int64_t kNoFloor = std::numeric_limits<int64_t>::min();

// What malloc adds to each allocation (its header and rounding), roughly, on glibc.
constexpr size_t kAllocOverhead = 16;

// The heap a string holds beyond its own object: none while it fits its inline buffer.
size_t HeapBytes(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 + kAllocOverhead : 0;
}

// What the by-id index adds per entry: it is at most half full and grows by doubling, so up to
// four of its 16-byte slots.
constexpr size_t kIndexBytes = 4 * 16;

// How many rows ahead Add fetches an entry (and half as far, the places in it the row changes).
constexpr uint32_t kPrefetchAhead = 8;

// Below this a shard would hold too few ids for least-recently-written to mean much.
constexpr size_t kMinShardBytes = size_t{256} << 10;
constexpr size_t kMaxShards = 64;

// The most threads one walk of every id reads the shards on.
constexpr size_t kMaxWalkGroups = 8;

template <typename T>
auto OrderKey(const T& e) {
  return std::make_tuple(e.ts_ms, e.topic, e.partition, e.offset);
}

}  // namespace

LastCache::LastCache(const LastCacheOptions& options) : options_(options) {
  while (shard_count_ < kMaxShards && options_.max_bytes / (shard_count_ * 2) >= kMinShardBytes) {
    shard_count_ *= 2;
  }
  shards_ = std::make_unique<Shard[]>(shard_count_);
  shard_bytes_ = options_.max_bytes / shard_count_;
}

LastCache::~LastCache() = default;

void LastCache::RowsWritten(std::span<const store::WrittenRow> rows) { Add(rows, false); }

void LastCache::RebuildRows(std::span<const store::WrittenRow> rows) { Add(rows, true); }

void LastCache::SetKnownFrom(int64_t from_ms) {
  int64_t seen = known_from_ms_.load();
  while (from_ms < seen && !known_from_ms_.compare_exchange_weak(seen, from_ms)) {
  }
}

int64_t LastCache::FloorOf(const Entry& entry) const {
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
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mu);
    // An entry is far from the last in memory (ids come in no order): the entries of the rows
    // kPrefetchAhead places on are fetched while this one is added, and the places a row
    // changes in its entry (the newest item, the neighbours in the written list) half as far
    // on, once that row's entry has arrived, so that their cache misses overlap instead of
    // following one another.
    const uint32_t end = starts[s + 1];
    for (uint32_t i = starts[s]; i < end; ++i) {
      if (i + kPrefetchAhead < end) {
        const Entry* ahead = shard.by_id.Peek(rows[order[i + kPrefetchAhead]].key.id_hash);
        if (ahead != nullptr) __builtin_prefetch(ahead);
      }
      if (i + kPrefetchAhead / 2 < end) {
        const Entry* ahead = shard.by_id.Peek(rows[order[i + kPrefetchAhead / 2]].key.id_hash);
        if (ahead != nullptr) {
          ahead->items.Prefetch();
          if (ahead->colder != nullptr) __builtin_prefetch(ahead->colder);
          if (ahead->warmer != nullptr) __builtin_prefetch(ahead->warmer);
        }
      }
      AddLocked(shard, rows[order[i]], from_rebuild);
    }
  }
}

void LastCache::AddLocked(Shard& shard, const store::WrittenRow& row, bool from_rebuild) {
  std::string_view id, payload;
  if (!keying::DecodeRowValue(row.value, &id, &payload)) {
    // A row the cache cannot hold (the store's own reads refuse it too): whatever entry its id
    // has would miss it, so the whole shard is forgotten and its floor raised past the row.
    while (!shard.entries.empty()) RetireLocked(shard, shard.entries.begin());
    shard.retired_ms = std::max(shard.retired_ms, row.key.ts_ms);
    return;
  }
  const uint64_t id_hash = row.key.id_hash;
  Entry* e = shard.by_id.Find(id_hash, [id](const Entry& entry) { return *entry.id == id; });
  if (e == nullptr) {
    auto it = shard.entries.try_emplace(std::string(id)).first;
    e = &it->second;
    e->id = &it->first;
    e->id_hash = id_hash;
    e->floor_ms = shard.retired_ms;
    shard.by_id.Insert(id_hash, e);
    from_rebuild ? LinkColdest(shard, e) : LinkWarmest(shard, e);
  } else {
    if (!from_rebuild && e != shard.warmest) {
      Unlink(shard, e);
      LinkWarmest(shard, e);
    }
  }
  const keying::RowKey& k = row.key;
  if (k.ts_ms > e->floor_ms) {
    const auto key = std::make_tuple(k.ts_ms, k.topic, k.partition, k.offset);
    size_t index = 0;
    while (index < e->items.size() && OrderKey(e->items[index]) > key) ++index;
    const bool duplicate = index < e->items.size() && OrderKey(e->items[index]) == key;
    if (!duplicate) {
      const size_t depth = static_cast<size_t>(options_.depth);
      if (e->items.size() >= depth && index >= e->items.size()) {
        // Older than every event kept: it stays out, and the floor says so.
        e->floor_ms = std::max(e->floor_ms, k.ts_ms);
        TrimToFloor(e);
      } else {
        // When the entry is full the oldest goes, and the floor rises to its time (events tied
        // with it go too). Below the depth every item stays above the floor, which is unchanged.
        const bool full = e->items.size() >= depth;
        if (full) e->floor_ms = std::max(e->floor_ms, e->items.back().ts_ms);
        e->items.Insert(index, k, payload, depth);
        if (full) TrimToFloor(e);
      }
    }
  }
  Recount(shard, e);
  while (shard.bytes > shard_bytes_ && shard.coldest != nullptr) {
    RetireLocked(shard, shard.entries.find(*shard.coldest->id));
    evicted_.fetch_add(1, std::memory_order_relaxed);
  }
}

void LastCache::TrimToFloor(Entry* entry) {
  while (!entry->items.empty() && entry->items.back().ts_ms <= entry->floor_ms) {
    entry->items.PopBack();
  }
}

void LastCache::RetireLocked(Shard& shard, std::map<std::string, Entry, std::less<>>::iterator it) {
  Entry* e = &it->second;
  int64_t newest = e->floor_ms;
  if (!e->items.empty()) newest = std::max(newest, e->items.front().ts_ms);
  shard.retired_ms = std::max(shard.retired_ms, newest);
  Unlink(shard, e);
  shard.bytes -= e->bytes;
  shard.by_id.Erase(e->id_hash, e);
  shard.entries.erase(it);
}

void LastCache::Unlink(Shard& shard, Entry* e) {
  (e->colder != nullptr ? e->colder->warmer : shard.coldest) = e->warmer;
  (e->warmer != nullptr ? e->warmer->colder : shard.warmest) = e->colder;
  e->colder = e->warmer = nullptr;
}

void LastCache::LinkWarmest(Shard& shard, Entry* e) {
  e->colder = shard.warmest;
  e->warmer = nullptr;
  (shard.warmest != nullptr ? shard.warmest->warmer : shard.coldest) = e;
  shard.warmest = e;
}

void LastCache::LinkColdest(Shard& shard, Entry* e) {
  e->warmer = shard.coldest;
  e->colder = nullptr;
  (shard.coldest != nullptr ? shard.coldest->colder : shard.warmest) = e;
  shard.coldest = e;
}

void LastCache::Recount(Shard& shard, Entry* e) {
  // The map's node (its tree links, the key and the entry), the index's node and bucket, the
  // id's heap, the items' ring and each payload's heap.
  const size_t bytes = sizeof(std::string) + sizeof(Entry) + 32 + kAllocOverhead + kIndexBytes +
                       HeapBytes(*e->id) + e->items.heap_bytes();
  shard.bytes = shard.bytes - e->bytes + bytes;
  e->bytes = bytes;
}

size_t LastCache::Items::heap_bytes() const {
  if (slots_.empty()) return payload_bytes_;
  return slots_.size() * sizeof(Item) + kAllocOverhead + payload_bytes_;
}

void LastCache::Items::Insert(size_t index, const keying::RowKey& key, std::string_view payload,
                              size_t depth) {
  if (size_ == slots_.size() && size_ < depth) Grow(std::min(depth, size_ == 0 ? 1 : 2 * size_));
  const size_t capacity = slots_.size();
  size_t slot;
  if (index == 0) {
    // The slot before the newest: free while there is room, the oldest's when full.
    head_ = head_ == 0 ? capacity - 1 : head_ - 1;
    slot = head_;
    if (size_ < capacity) ++size_;
  } else if (size_ < capacity) {
    for (size_t i = size_; i > index; --i) slots_[Slot(i)] = std::move(slots_[Slot(i - 1)]);
    slot = Slot(index);
    ++size_;
  } else {
    Item oldest = std::move(slots_[Slot(size_ - 1)]);
    for (size_t i = size_ - 1; i > index; --i) slots_[Slot(i)] = std::move(slots_[Slot(i - 1)]);
    slot = Slot(index);
    slots_[slot] = std::move(oldest);
  }
  Item& item = slots_[slot];
  const size_t before = HeapBytes(item.payload);
  item.ts_ms = key.ts_ms;
  item.offset = key.offset;
  item.partition = key.partition;
  item.topic = key.topic;
  item.payload.assign(payload.data(), payload.size());
  payload_bytes_ = payload_bytes_ - before + HeapBytes(item.payload);
}

void LastCache::Items::Grow(size_t capacity) {
  std::vector<Item> bigger(capacity);
  for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(slots_[Slot(i)]);
  slots_ = std::move(bigger);
  head_ = 0;
}

void LastCache::Items::Free(Item* item) {
  payload_bytes_ -= HeapBytes(item->payload);
  std::string().swap(item->payload);
}

void LastCache::Items::PopBack() {
  Free(&slots_[Slot(size_ - 1)]);
  --size_;
}

template <typename Drop>
void LastCache::Items::EraseIf(Drop drop) {
  size_t kept = 0;
  for (size_t i = 0; i < size_; ++i) {
    Item& item = slots_[Slot(i)];
    if (drop(item)) {
      Free(&item);
    } else {
      if (kept != i) slots_[Slot(kept)] = std::move(item);
      ++kept;
    }
  }
  size_ = kept;
}

bool LastCache::Latest(std::string_view id, uint64_t id_hash, int n, int64_t window_start_ms,
                       const PartitionFilter* filter, std::vector<CachedEvent>* out,
                       const TopicOrder* topics) {
  out->clear();
  Shard& shard = ShardOf(id_hash);
  std::lock_guard lock(shard.mu);
  const Entry* found =
      shard.by_id.Find(id_hash, [id](const Entry& entry) { return *entry.id == id; });
  if (found == nullptr) {
    // Held by no entry: no row of it in the window, if nothing the shard forgot can be there.
    const int64_t known = known_from_ms_.load(std::memory_order_acquire);
    const int64_t floor = std::max(shard.retired_ms, known == kNoFloor ? kNoFloor : known - 1);
    const bool none = floor < window_start_ms;
    (none ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
    return none;
  }
  const bool exact = CollectLocked(*found, n, window_start_ms, filter, topics, out);
  (exact ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  return exact;
}

bool LastCache::CollectLocked(const Entry& e, int n, int64_t window_start_ms,
                              const PartitionFilter* filter, const TopicOrder* topics,
                              std::vector<CachedEvent>* out) const {
  out->clear();
  const int64_t floor = FloorOf(e);
  // Items are in number order; when ranks differ from numbers, the run of events tied with the
  // n-th is read whole and reordered before the cut (ties above the floor are all held).
  const bool by_rank = topics != nullptr && !topics->InNumberOrder();
  for (size_t i = 0; i < e.items.size(); ++i) {
    const Item& item = e.items[i];
    if (item.ts_ms <= floor || item.ts_ms < window_start_ms) break;  // the rest is older
    if (by_rank && static_cast<int>(out->size()) >= n && item.ts_ms != out->back().ts_ms) break;
    if (filter != nullptr && !(*filter)(item.topic, item.partition)) continue;
    out->push_back({item.ts_ms, item.topic, item.partition, item.offset, item.payload});
    if (!by_rank && static_cast<int>(out->size()) == n) break;
  }
  if (by_rank) {
    auto key = [topics](const CachedEvent& c) {
      return std::make_tuple(c.ts_ms, topics->Rank(c.topic), c.partition, c.offset);
    };
    std::stable_sort(out->begin(), out->end(),
                     [&](const CachedEvent& a, const CachedEvent& b) { return key(b) < key(a); });
    if (static_cast<int>(out->size()) > n) out->resize(static_cast<size_t>(n));
  }
  // n events above the floor are the store's n newest; fewer are all there is when the floor is
  // below the window.
  const bool exact = static_cast<int>(out->size()) == n || floor < window_start_ms;
  if (!exact) out->clear();
  return exact;
}

bool LastCache::WholeLocked(const Shard& shard, int64_t window_start_ms) const {
  const int64_t known = known_from_ms_.load(std::memory_order_acquire);
  if (known != kNoFloor && known - 1 >= window_start_ms) return false;
  return shard.retired_ms < window_start_ms;
}

bool LastCache::Complete(int64_t window_start_ms) const {
  for (size_t s = 0; s < shard_count_; ++s) {
    std::lock_guard lock(shards_[s].mu);
    if (!WholeLocked(shards_[s], window_start_ms)) return false;
  }
  return true;
}

std::optional<std::vector<LastCache::IdNewest>> LastCache::NewestAfter(
    std::string_view prefix, std::string_view after, size_t max, int64_t window_start_ms,
    const PartitionFilter* filter, const TopicOrder* topics, ThreadPool* pool, int max_workers,
    const WalkHook* hook) {
  if (max == 0) return std::vector<IdNewest>();
  // One run per thread, each over a contiguous range of shards (both counts powers of two or
  // one), merged here.
  size_t groups = 1;
  while (groups < shard_count_ && groups < kMaxWalkGroups &&
         groups < static_cast<size_t>(std::max(0, max_workers)) + 1) {
    groups *= 2;
  }
  const size_t per_group = shard_count_ / groups;
  // Each run is sized here, on the caller's thread, for the ids its shards hold (at most `max`):
  // grown by doubling on a pool thread and freed here, a run of 50k ids took fresh pages from
  // the kernel on every early walk, a page fault each (docs/BENCHMARKS.md, "the walk's page
  // faults").
  std::vector<std::vector<IdNewest>> runs(groups);
  for (size_t g = 0; g < groups; ++g) {
    size_t held = 0;
    for (size_t s = g * per_group; s < (g + 1) * per_group; ++s) {
      std::lock_guard lock(shards_[s].mu);
      held += shards_[s].entries.size();
    }
    runs[g].reserve(std::min(held, max));
  }
  const Status walked = RunSaltTasks(pool, max_workers, groups, [&](size_t g) {
    if (NewestInShards(g * per_group, (g + 1) * per_group, prefix, after, max, window_start_ms,
                       filter, topics, hook, &runs[g])) {
      return Status::Ok();
    }
    return Status::Cancelled("a shard of the cache may lack an id of the window");
  });
  if (!walked.ok()) return std::nullopt;  // the caller reads the store
  std::vector<IdNewest> ids;
  if (groups == 1) {
    ids = std::move(runs.front());
  } else {
    size_t held = 0;
    for (const std::vector<IdNewest>& run : runs) held += run.size();
    ids.reserve(std::min(held, max));
    std::vector<size_t> at(groups, 0);
    while (ids.size() < max) {
      size_t least = groups;
      for (size_t g = 0; g < groups; ++g) {
        if (at[g] == runs[g].size()) continue;
        if (least == groups || runs[g][at[g]].id < runs[least][at[least]].id) least = g;
      }
      if (least == groups) break;
      ids.push_back(std::move(runs[least][at[least]++]));
    }
  }
  for (const IdNewest& id : ids) {
    (id.newest ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  }
  return ids;
}

bool LastCache::NewestInShards(size_t first_shard, size_t end_shard, std::string_view prefix,
                               std::string_view after, size_t max, int64_t window_start_ms,
                               const PartitionFilter* filter, const TopicOrder* topics,
                               const WalkHook* hook, std::vector<IdNewest>* run) {
  std::vector<IdNewest>& ids = *run;
  auto by_id = [](const IdNewest& a, const IdNewest& b) { return a.id < b.id; };
  const std::string_view start = std::max(prefix, after);
  std::vector<CachedEvent> newest;
  // Once `max` ids are held, the page ends at the largest of them: the shards read after that
  // stop there, so a small page copies a few pages' events rather than one per shard.
  std::optional<std::string> bound;
  for (size_t s = first_shard; s < end_shard; ++s) {
    if (hook != nullptr && *hook) (*hook)(s);
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mu);
    // Judged under the lock this shard is read under: an id evicted or forgotten since the walk
    // began has raised retired_ms, and leaving it out would skip it.
    if (!WholeLocked(shard, window_start_ms)) return false;
    size_t taken = 0;
    for (auto it = shard.entries.lower_bound(start); it != shard.entries.end() && taken < max;
         ++it) {
      if (!it->first.starts_with(prefix)) break;
      if (bound && it->first > *bound) break;
      if (!after.empty() && it->first == after) continue;
      const bool exact = CollectLocked(it->second, 1, window_start_ms, filter, topics, &newest);
      if (exact && newest.empty()) continue;  // known to have no row in the window
      IdNewest& id = ids.emplace_back();
      id.id = it->first;
      if (exact) id.newest = std::move(newest.front());
      ++taken;
    }
    if (ids.size() > max) {
      std::nth_element(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(max - 1), ids.end(),
                       by_id);
      ids.resize(max);
    }
    if (ids.size() == max) {
      bound = std::max_element(ids.begin(), ids.end(), by_id)->id;
    }
  }
  std::sort(ids.begin(), ids.end(), by_id);
  return true;
}

void LastCache::ForgetPartitions(const PartitionFilter& drop) {
  for (size_t s = 0; s < shard_count_; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mu);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      Entry* e = &it->second;
      bool changed = false;
      for (size_t i = 0; i < e->items.size(); ++i) {
        const Item& item = e->items[i];
        if (drop(item.topic, item.partition)) {
          e->floor_ms = std::max(e->floor_ms, item.ts_ms);
          changed = true;
        }
      }
      if (!changed) {
        ++it;
        continue;
      }
      e->items.EraseIf([&](const Item& item) {
        return item.ts_ms <= e->floor_ms || drop(item.topic, item.partition);
      });
      if (e->items.empty()) {
        RetireLocked(shard, it++);
      } else {
        Recount(shard, e);
        ++it;
      }
    }
  }
}

void LastCache::BucketsDropped(int64_t until_ms) {
  for (size_t s = 0; s < shard_count_; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mu);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      Entry* e = &it->second;
      bool changed = false;
      while (!e->items.empty() && e->items.back().ts_ms < until_ms) {
        e->items.PopBack();
        changed = true;
      }
      if (e->items.empty() && e->floor_ms < until_ms) {
        // Every row it had is gone with the buckets: the id has none left.
        RetireLocked(shard, it++);
        continue;
      }
      if (changed) Recount(shard, e);
      ++it;
    }
  }
}

LastCacheStats LastCache::Stats() const {
  LastCacheStats stats;
  stats.max_bytes = options_.max_bytes;
  for (size_t s = 0; s < shard_count_; ++s) {
    std::lock_guard lock(shards_[s].mu);
    stats.ids += shards_[s].entries.size();
    stats.bytes += shards_[s].bytes;
  }
  stats.evicted = evicted_.load(std::memory_order_relaxed);
  stats.hits = hits_.load(std::memory_order_relaxed);
  stats.misses = misses_.load(std::memory_order_relaxed);
  stats.known_from_ms = known_from_ms_.load();
  return stats;
}

}  // namespace hotrow::query
