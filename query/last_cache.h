#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "keying/row_key.h"
#include "query/hash_slots.h"
#include "query/partition_filter.h"
#include "query/thread_pool.h"
#include "query/topic_order.h"
#include "store/write_observer.h"

namespace hotrow::query {

struct LastCacheOptions {
  // Events kept per id (query.last_cache). REQUIRES: >= 1. Default: 16.
  int depth = 16;
  // The memory the cache may hold, in bytes, counted as the heap it uses (entries, ids, payloads
  // and their allocator overhead, estimated per allocation); past it the least recently written
  // ids are evicted (query.last_cache_bytes). Default: 64 MiB.
  size_t max_bytes = size_t{64} << 20;
};

// For tests: runs before the walk of every id (LastCache::NewestAfter) reads shard `shard`, on
// the thread that reads it, with no lock held; may write to the store or forget partitions, as an
// eviction or a rebalance landing mid-walk would.
using WalkHook = std::function<void(size_t shard)>;

// One event as the cache keeps it: the key fields (the topic as the store's number) and the
// payload.
struct CachedEvent {
  int64_t ts_ms = 0;
  uint16_t topic = 0;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string payload;
};

struct LastCacheStats {
  uint64_t ids = 0;        // ids held
  uint64_t bytes = 0;      // memory held, as counted against max_bytes
  uint64_t max_bytes = 0;  // the cap
  uint64_t evicted = 0;    // ids evicted for the cap since the start
  uint64_t hits = 0;       // latest-N answered from the cache
  uint64_t misses = 0;     // latest-N that had to read the store
  // Rows with ts >= this were all offered to the cache (by writes or the rebuild): the window's
  // start at the rebuild's start once it has read the whole window, the start of the oldest
  // bucket read while it runs (or where it stopped), INT64_MAX before it has read a bucket.
  int64_t known_from_ms = std::numeric_limits<int64_t>::max();
};

// The newest events of each id, kept in memory beside the store (CONTRACT.md "Device state and
// series": query.last_cache), so that latest-N, the latest of many ids and the latest of every id
// need not read the store.
//
// Exact. The answer of Latest, when it is a hit, is the store's answer to the same query: the
// same events in the same order (ts, then topic name, partition, offset, descending), within
// the same window and partition filter. A query that starts after an EventStore::Write returned
// sees that Write's rows here as it does in the store, because the cache is told of them
// (store::WriteObserver) after they are durable and before the Write returns; a Write that failed
// is never told. A query running during a Write sees all of that Write's rows of its id or none:
// one id lives in one shard, and a Write's rows of a shard are added under one lock.
//
// How it stays exact. Each id's entry holds its newest events, at most `depth`, and a floor: every
// row of the id in the store with ts > floor is among them. A row offered with ts <= floor is
// ignored; when the entry is full, the oldest goes and the floor rises to its time (rows tied with
// it go too, so the rule never depends on the order within a millisecond). An entry made for an id
// the cache does not hold starts with its shard's floor: the highest time of any row of an id the
// shard evicted or dropped, above which none of those rows lie. A rebuild that has read the store
// down to bucket start B (known_from) adds one more floor, B - 1, for every entry. So the n newest
// rows of an entry that pass the window and the filter and lie above its floor are the store's n
// newest such rows; and when the floor is below the window's start, the entry holds every row of
// the id in the window, so fewer than n is the whole answer. Anything else is a miss (the caller
// reads the store): an id with too few rows above its floor, an evicted id, n above the depth
// (the caller's rule), and every id while the rebuild has not passed the window.
//
// Bounded. Entries are kept per shard (by id hash) in id order, with a list from least to most
// recently written; past max_bytes / shards the least recently written ids of the shard are
// evicted. A dropped bucket's rows are removed (BucketsDropped); ForgetPartitions removes the
// rows of partitions this instance no longer owns.
//
// Thread-safety: every method may be called from any thread; RowsWritten from several writers at
// once.
class LastCache final : public store::WriteObserver {
 public:
  explicit LastCache(const LastCacheOptions& options);
  ~LastCache() override;
  LastCache(const LastCache&) = delete;
  LastCache& operator=(const LastCache&) = delete;

  int depth() const { return options_.depth; }

  // store::WriteObserver: rows a Write stored, and the end of what a drop removed.
  void RowsWritten(std::span<const store::WrittenRow> rows) override;
  void BucketsDropped(int64_t until_ms) override;

  // Rows read from the store by the rebuild (query/last_cache_rebuild.h): added like written rows,
  // but an id they bring is placed with the least recently written (the rebuild reads the newest
  // bucket first, so the ids it meets later are the colder ones).
  void RebuildRows(std::span<const store::WrittenRow> rows);
  // The rebuild has offered every row with ts >= `from_ms`. Only ever lowered.
  void SetKnownFrom(int64_t from_ms);

  // The n newest events of `id` (whose keying::IdHash is `id_hash`) with ts >= window_start_ms
  // and of partitions `filter` accepts (null: all), newest first, into `out`: true when the cache
  // can tell them exactly (possibly none), false when the store must be read. Events tied in
  // time are ordered by `topics`' ranks (the topics' names, query/topic_order.h; null: the
  // store's numbers), as the store's answer is.
  bool Latest(std::string_view id, uint64_t id_hash, int n, int64_t window_start_ms,
              const PartitionFilter* filter, std::vector<CachedEvent>* out,
              const TopicOrder* topics = nullptr);

  // Whether every id with a row in the window is held (so that the latest of every id can be
  // answered from here): the rebuild has read the window and nothing evicted or dropped from
  // the cache can still be in it.
  bool Complete(int64_t window_start_ms) const;

  // One id of the walk in id order (NewestAfter), with what Latest(id, 1) answers for it: its
  // newest event, or none when the cache cannot tell it exactly (the store must be read).
  struct IdNewest {
    std::string id;
    std::optional<CachedEvent> newest;
  };
  // The ids after `after` (in byte order) that start with `prefix`, in byte order, at most `max`,
  // that may have a row in the window the filter accepts (those the cache knows to have none are
  // left out), each with its newest event as Latest(id, 1) tells it: a page of the latest of
  // every id, read in one pass under each shard's lock, where a Latest per id looked each id up
  // again. The shards are read in contiguous groups on up to `max_workers` threads of `pool`
  // besides the caller (0: on the caller alone), and the groups' runs merged here. `hook` (null:
  // none) runs before each shard is read.
  //
  // nullopt when the cache cannot list every id: a shard, as it is read, may have lost an id with
  // a row in the window (Complete's test, made again under each shard's own lock). Complete()
  // before the walk is not enough: the shards are read one after the other, and an eviction or a
  // ForgetPartitions in a shard not read yet would drop an id from the page unseen, and the page's
  // `next` would move past it. Checked per shard, an id is listed unless its shard tells, under
  // the lock the walk reads it under, that it may have gone; then the caller reads the store.
  std::optional<std::vector<IdNewest>> NewestAfter(std::string_view prefix, std::string_view after,
                                                   size_t max, int64_t window_start_ms,
                                                   const PartitionFilter* filter,
                                                   const TopicOrder* topics,
                                                   ThreadPool* pool = nullptr, int max_workers = 0,
                                                   const WalkHook* hook = nullptr);

  // Removes the rows of the partitions `drop` accepts (topic number, partition): this instance
  // no longer owns them. Their ids' floors rise accordingly.
  void ForgetPartitions(const PartitionFilter& drop);

  LastCacheStats Stats() const;
  // The evictions since the start (the rebuild stops at the first one: the cache is full).
  uint64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }

 private:
  struct Item {
    int64_t ts_ms = 0;
    int64_t offset = 0;
    int32_t partition = 0;
    uint16_t topic = 0;
    std::string payload;
  };
  // An entry's items, newest first, in a ring that grows like a vector up to the depth: the
  // newest event of a full entry takes the oldest's slot and its payload buffer, where a vector
  // moved every item one place down. The heap it holds is counted as it changes.
  class Items {
   public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const Item& operator[](size_t i) const { return slots_[Slot(i)]; }
    const Item& front() const { return (*this)[0]; }
    const Item& back() const { return (*this)[size_ - 1]; }
    // The slots' array and every payload's heap, as counted against max_bytes.
    size_t heap_bytes() const;
    // Asks the CPU to fetch the newest item and the slot before it (where a newer one goes).
    void Prefetch() const {
      if (slots_.empty()) return;
      __builtin_prefetch(&slots_[head_]);
      __builtin_prefetch(&slots_[head_ == 0 ? slots_.size() - 1 : head_ - 1]);
    }
    // Puts an event at position `index` (<= size()); when size() == depth, the oldest goes
    // (REQUIRES: index < size() then).
    void Insert(size_t index, const keying::RowKey& key, std::string_view payload, size_t depth);
    void PopBack();
    // Removes the items `drop` is true of, keeping the others' order.
    template <typename Drop>
    void EraseIf(Drop drop);

   private:
    size_t Slot(size_t i) const {
      const size_t slot = head_ + i;
      return slot >= slots_.size() ? slot - slots_.size() : slot;
    }
    void Grow(size_t capacity);
    // Frees `item`'s payload, counting it out.
    void Free(Item* item);

    std::vector<Item> slots_;  // the ring; every slot not in use holds no payload buffer
    size_t head_ = 0;          // the slot of the newest item
    size_t size_ = 0;
    size_t payload_bytes_ = 0;  // the payloads' heap, over every slot
  };
  struct Entry {
    int64_t floor_ms = std::numeric_limits<int64_t>::min();
    Items items;                      // each with ts > floor_ms
    size_t bytes = 0;                 // as counted in the shard's bytes
    const std::string* id = nullptr;  // the map's key
    uint64_t id_hash = 0;             // keying::IdHash(*id)
    Entry* colder = nullptr;          // the least-recently-written list
    Entry* warmer = nullptr;
  };
  struct Shard {
    mutable std::mutex mu;
    std::map<std::string, Entry, std::less<>> entries;  // guarded by mu
    // The same entries by keying::IdHash of their id, which every row's key and every query
    // bring, for the lookups of writes, the rebuild and Latest (a lookup in `entries` misses the
    // CPU cache at every level of its tree). Guarded by mu.
    HashSlots<Entry> by_id;
    // The coldest and the warmest entry of the list; guarded by mu.
    Entry* coldest = nullptr;
    Entry* warmest = nullptr;
    size_t bytes = 0;  // guarded by mu
    // Every row of an id this shard holds no entry of, and every row below an entry's floor,
    // has ts <= retired_ms (rows the shard evicted or dropped). Guarded by mu.
    int64_t retired_ms = std::numeric_limits<int64_t>::min();
  };

  Shard& ShardOf(uint64_t id_hash) { return shards_[id_hash & (shard_count_ - 1)]; }
  const Shard& ShardOf(uint64_t id_hash) const { return shards_[id_hash & (shard_count_ - 1)]; }
  // Adds rows (grouped by shard, each shard's under one lock).
  void Add(std::span<const store::WrittenRow> rows, bool from_rebuild);
  // Adds one row to `shard`. REQUIRES: shard.mu held.
  void AddLocked(Shard& shard, const store::WrittenRow& row, bool from_rebuild);
  // Forgets an entry, raising the shard's retired_ms to the newest row it knew of.
  // REQUIRES: shard.mu held.
  void RetireLocked(Shard& shard, std::map<std::string, Entry, std::less<>>::iterator it);
  // Removes the items with ts <= floor_ms from the end of `entry`. REQUIRES: shard.mu held.
  static void TrimToFloor(Entry* entry);
  void Unlink(Shard& shard, Entry* entry);
  void LinkWarmest(Shard& shard, Entry* entry);
  void LinkColdest(Shard& shard, Entry* entry);
  void Recount(Shard& shard, Entry* entry);
  // The n newest events of `entry` as Latest tells them, into `out`; false (and `out` empty) when
  // the store must be read. REQUIRES: its shard's mu held.
  bool CollectLocked(const Entry& entry, int n, int64_t window_start_ms,
                     const PartitionFilter* filter, const TopicOrder* topics,
                     std::vector<CachedEvent>* out) const;
  // NewestAfter over the shards [first_shard, end_shard) alone, in id order, into `run` (empty);
  // false (and `run` of no use) when one of them, as it was read, may lack an id of the window.
  bool NewestInShards(size_t first_shard, size_t end_shard, std::string_view prefix,
                      std::string_view after, size_t max, int64_t window_start_ms,
                      const PartitionFilter* filter, const TopicOrder* topics, const WalkHook* hook,
                      std::vector<IdNewest>* run);
  // The floor every lookup applies to `entry`: its own, and the rebuild's.
  int64_t FloorOf(const Entry& entry) const;
  // Whether `shard` holds an entry for every id of it with a row at or after window_start_ms: the
  // rebuild has read the window and nothing the shard retired can be in it. REQUIRES: shard.mu.
  bool WholeLocked(const Shard& shard, int64_t window_start_ms) const;

  const LastCacheOptions options_;
  // Constant after construction.
  size_t shard_count_ = 1;  // a power of two
  std::unique_ptr<Shard[]> shards_;
  size_t shard_bytes_ = 0;  // max_bytes / shard_count_
  std::atomic<int64_t> known_from_ms_{std::numeric_limits<int64_t>::max()};
  std::atomic<uint64_t> evicted_{0};
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace hotrow::query
