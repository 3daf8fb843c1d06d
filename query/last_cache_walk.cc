// The reads of the last-N cache (query/last_cache.h): Latest, and the walk of every id in id order.

#include <algorithm>
#include <tuple>

#include "query/last_cache.h"
#include "query/salt_tasks.h"

namespace hotrow::query {
namespace {

constexpr int64_t kNoFloor = std::numeric_limits<int64_t>::min();

// The most threads one walk of every id reads the shards on.
constexpr size_t kMaxWalkGroups = 8;

}  // namespace

bool LastCache::Latest(std::string_view id, uint64_t id_hash, int n, int64_t window_start_ms,
                       const PartitionFilter* filter, std::vector<CachedEvent>* out,
                       const TopicOrder* topics) {
  out->clear();
  Shard& shard = ShardOf(id_hash);
  std::lock_guard lock(shard.mu);
  CatchUpLocked(shard, QueuedSeq());  // every Write that returned before this read
  const Entry* found =
      shard.by_id.Find(id_hash, [&](const Entry& entry) { return IdOf(shard, entry) == id; });
  if (found == nullptr) {
    // Held by no entry: no row of it in the window, if nothing the shard forgot can be there.
    const int64_t known = known_from_ms_.load(std::memory_order_acquire);
    const int64_t floor = std::max(shard.retired_ms, known == kNoFloor ? kNoFloor : known - 1);
    const bool none = floor < window_start_ms;
    (none ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
    return none;
  }
  const bool exact = CollectLocked(shard, *found, n, window_start_ms, filter, topics, out);
  (exact ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  return exact;
}

bool LastCache::CollectLocked(const Shard& shard, const Entry& e, int n, int64_t window_start_ms,
                              const PartitionFilter* filter, const TopicOrder* topics,
                              std::vector<CachedEvent>* out) const {
  out->clear();
  const int64_t floor = FloorOf(e);
  // Items are in number order; when ranks differ from numbers, the run of events tied with the
  // n-th is read whole and reordered before the cut (ties above the floor are all held).
  const bool by_rank = topics != nullptr && !topics->InNumberOrder();
  for (size_t i = 0; i < e.size; ++i) {
    const Item& item = e.item(i);
    if (item.ts_ms <= floor || item.ts_ms < window_start_ms) break;  // the rest is older
    if (by_rank && static_cast<int>(out->size()) >= n && item.ts_ms != out->back().ts_ms) break;
    if (filter != nullptr && !(*filter)(item.topic, item.partition)) continue;
    out->push_back({item.ts_ms, item.topic, item.partition, item.offset,
                    std::string(shard.arena.Read(item.payload))});
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

bool LastCache::Complete(int64_t window_start_ms) {
  for (size_t s = 0; s < shard_count_; ++s) {
    std::lock_guard lock(shards_[s]->mu);
    CatchUpLocked(*shards_[s], QueuedSeq());
    if (!WholeLocked(*shards_[s], window_start_ms)) return false;
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
      std::lock_guard lock(shards_[s]->mu);
      held += shards_[s]->ids();
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
    Shard& shard = *shards_[s];
    std::lock_guard lock(shard.mu);
    CatchUpLocked(shard, QueuedSeq());
    // Judged under the lock this shard is read under: an id evicted or forgotten since the walk
    // began has raised retired_ms, and leaving it out would skip it.
    if (!WholeLocked(shard, window_start_ms)) return false;
    size_t taken = 0;
    SortIdsLocked(shard);
    auto it = std::lower_bound(
        shard.sorted.begin(), shard.sorted.end(), start,
        [&](const Ordered& o, std::string_view s) { return IdOf(shard, *o.entry) < s; });
    for (; it != shard.sorted.end() && taken < max; ++it) {
      const std::string_view held = IdOf(shard, *it->entry);
      if (!held.starts_with(prefix)) break;
      if (bound && held > *bound) break;
      if (!after.empty() && held == after) continue;
      const bool exact =
          CollectLocked(shard, *it->entry, 1, window_start_ms, filter, topics, &newest);
      if (exact && newest.empty()) continue;  // known to have no row in the window
      IdNewest& id = ids.emplace_back();
      id.id = held;
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

void LastCache::SortIdsLocked(Shard& shard) {
  auto stale = [](const Ordered& o) {
    return o.entry->stamp == 0 || o.entry->generation != o.generation;
  };
  if (shard.retired_since_walk != 0) {
    std::erase_if(shard.sorted, stale);
    shard.retired_since_walk = 0;
  }
  if (shard.unsorted.empty()) return;
  std::erase_if(shard.unsorted, stale);
  auto by_id = [&](const Ordered& a, const Ordered& b) {
    return IdOf(shard, *a.entry) < IdOf(shard, *b.entry);
  };
  std::sort(shard.unsorted.begin(), shard.unsorted.end(), by_id);
  const size_t middle = shard.sorted.size();
  shard.sorted.insert(shard.sorted.end(), shard.unsorted.begin(), shard.unsorted.end());
  std::inplace_merge(shard.sorted.begin(), shard.sorted.begin() + static_cast<ptrdiff_t>(middle),
                     shard.sorted.end(), by_id);
  shard.unsorted.clear();
}

}  // namespace hotrow::query
