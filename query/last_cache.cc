#include "query/last_cache.h"

#include <algorithm>
#include <tuple>

#include "keying/row_value.h"

namespace hotrow::query {
namespace {

constexpr int64_t kNoFloor = std::numeric_limits<int64_t>::min();

// What malloc adds to each allocation (its header and rounding), roughly, on glibc.
constexpr size_t kAllocOverhead = 16;

// The heap a string holds beyond its own object: none while it fits its inline buffer.
size_t HeapBytes(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 + kAllocOverhead : 0;
}

// What the by-id index adds per entry: its node (next link, key view, pointer, cached hash), the
// node's allocation and a bucket pointer.
constexpr size_t kIndexBytes = 8 + sizeof(std::string_view) + 8 + 8 + kAllocOverhead + 8;

// Below this a shard would hold too few ids for least-recently-written to mean much.
constexpr size_t kMinShardBytes = size_t{256} << 10;
constexpr size_t kMaxShards = 64;

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
  if (shard_count_ == 1) {
    std::lock_guard lock(shards_[0].mu);
    for (const store::WrittenRow& row : rows) AddLocked(shards_[0], row, from_rebuild);
    return;
  }
  // Each shard's rows under one lock: a query sees all of a Write's rows of its id or none.
  std::vector<uint32_t> order(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return (rows[a].key.id_hash & (shard_count_ - 1)) < (rows[b].key.id_hash & (shard_count_ - 1));
  });
  size_t i = 0;
  while (i < order.size()) {
    Shard& shard = ShardOf(rows[order[i]].key.id_hash);
    std::lock_guard lock(shard.mu);
    for (; i < order.size() && &ShardOf(rows[order[i]].key.id_hash) == &shard; ++i) {
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
  auto found = shard.by_id.find(id);
  Entry* e = nullptr;
  if (found == shard.by_id.end()) {
    auto it = shard.entries.try_emplace(std::string(id)).first;
    e = &it->second;
    e->id = &it->first;
    e->floor_ms = shard.retired_ms;
    shard.by_id.emplace(it->first, e);
    from_rebuild ? LinkColdest(shard, e) : LinkWarmest(shard, e);
  } else {
    e = found->second;
    if (!from_rebuild) {
      Unlink(shard, e);
      LinkWarmest(shard, e);
    }
  }
  const store::WrittenRow& r = row;
  if (r.key.ts_ms > e->floor_ms) {
    const auto key = std::make_tuple(r.key.ts_ms, r.key.topic, r.key.partition, r.key.offset);
    auto pos = std::find_if(e->items.begin(), e->items.end(),
                            [&](const Item& item) { return OrderKey(item) <= key; });
    const bool duplicate = pos != e->items.end() && OrderKey(*pos) == key;
    if (!duplicate) {
      const size_t index = static_cast<size_t>(pos - e->items.begin());
      const size_t depth = static_cast<size_t>(options_.depth);
      if (e->items.size() >= depth && index >= e->items.size()) {
        // Older than every event kept: it stays out, and the floor says so.
        e->floor_ms = std::max(e->floor_ms, r.key.ts_ms);
        TrimToFloor(e);
      } else {
        std::string buffer;  // the payload buffer of the event that goes, reused
        if (e->items.size() >= depth) {
          e->floor_ms = std::max(e->floor_ms, e->items.back().ts_ms);
          buffer = std::move(e->items.back().payload);
          e->items.pop_back();
        }
        Item item;
        item.ts_ms = r.key.ts_ms;
        item.offset = r.key.offset;
        item.partition = r.key.partition;
        item.topic = r.key.topic;
        item.payload = std::move(buffer);
        item.payload.assign(payload);
        e->items.insert(e->items.begin() + static_cast<std::ptrdiff_t>(index), std::move(item));
        TrimToFloor(e);
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
    entry->items.pop_back();
  }
}

void LastCache::RetireLocked(Shard& shard, std::map<std::string, Entry, std::less<>>::iterator it) {
  Entry* e = &it->second;
  int64_t newest = e->floor_ms;
  if (!e->items.empty()) newest = std::max(newest, e->items.front().ts_ms);
  shard.retired_ms = std::max(shard.retired_ms, newest);
  Unlink(shard, e);
  shard.bytes -= e->bytes;
  shard.by_id.erase(std::string_view(it->first));
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
  // The map's node (its tree links, the key and the entry), the index's node and bucket
  // (unordered_map: a next link, the view, the pointer and the cached hash), the id's heap, the
  // items' array and each payload's heap.
  size_t bytes =
      sizeof(std::string) + sizeof(Entry) + 32 + kAllocOverhead + kIndexBytes + HeapBytes(*e->id);
  if (e->items.capacity() > 0) bytes += e->items.capacity() * sizeof(Item) + kAllocOverhead;
  for (const Item& item : e->items) bytes += HeapBytes(item.payload);
  shard.bytes = shard.bytes - e->bytes + bytes;
  e->bytes = bytes;
}

bool LastCache::Latest(std::string_view id, uint64_t id_hash, int n, int64_t window_start_ms,
                       const PartitionFilter* filter, std::vector<CachedEvent>* out,
                       const TopicOrder* topics) {
  out->clear();
  Shard& shard = ShardOf(id_hash);
  std::lock_guard lock(shard.mu);
  auto it = shard.by_id.find(id);
  if (it == shard.by_id.end()) {
    // Held by no entry: no row of it in the window, if nothing the shard forgot can be there.
    const int64_t known = known_from_ms_.load(std::memory_order_acquire);
    const int64_t floor = std::max(shard.retired_ms, known == kNoFloor ? kNoFloor : known - 1);
    const bool none = floor < window_start_ms;
    (none ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
    return none;
  }
  const Entry& e = *it->second;
  const int64_t floor = FloorOf(e);
  // Items are in number order; when ranks differ from numbers, the run of events tied with the
  // n-th is read whole and reordered before the cut (ties above the floor are all held).
  const bool by_rank = topics != nullptr && !topics->InNumberOrder();
  for (const Item& item : e.items) {
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
  (exact ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  if (!exact) out->clear();
  return exact;
}

bool LastCache::Complete(int64_t window_start_ms) const {
  const int64_t known = known_from_ms_.load(std::memory_order_acquire);
  if (known != kNoFloor && known - 1 >= window_start_ms) return false;
  for (size_t s = 0; s < shard_count_; ++s) {
    std::lock_guard lock(shards_[s].mu);
    if (shards_[s].retired_ms >= window_start_ms) return false;
  }
  return true;
}

std::vector<std::string> LastCache::IdsAfter(std::string_view prefix, std::string_view after,
                                             size_t max, int64_t window_start_ms,
                                             const PartitionFilter* filter) const {
  std::vector<std::string> ids;
  if (max == 0) return ids;
  const std::string_view start = std::max(prefix, after);
  for (size_t s = 0; s < shard_count_; ++s) {
    const Shard& shard = shards_[s];
    std::lock_guard lock(shard.mu);
    size_t taken = 0;
    for (auto it = shard.entries.lower_bound(start); it != shard.entries.end() && taken < max;
         ++it) {
      if (!it->first.starts_with(prefix)) break;
      if (!after.empty() && it->first == after) continue;
      const Entry& e = it->second;
      const int64_t floor = FloorOf(e);
      bool has = false;
      for (const Item& item : e.items) {
        if (item.ts_ms <= floor || item.ts_ms < window_start_ms) break;
        if (filter == nullptr || (*filter)(item.topic, item.partition)) {
          has = true;
          break;
        }
      }
      if (!has && floor < window_start_ms) continue;  // known to have no row in the window
      ids.push_back(it->first);
      ++taken;
    }
  }
  std::sort(ids.begin(), ids.end());
  if (ids.size() > max) ids.resize(max);
  return ids;
}

void LastCache::ForgetPartitions(const PartitionFilter& drop) {
  for (size_t s = 0; s < shard_count_; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mu);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      Entry* e = &it->second;
      bool changed = false;
      for (const Item& item : e->items) {
        if (drop(item.topic, item.partition)) {
          e->floor_ms = std::max(e->floor_ms, item.ts_ms);
          changed = true;
        }
      }
      if (!changed) {
        ++it;
        continue;
      }
      std::erase_if(e->items, [&](const Item& item) {
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
        e->items.pop_back();
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
