#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "keying/row_key.h"
#include "query/cache_arena.h"
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
  // Whether written rows are added by the cache's own thread (`hotrow-cache`) rather than on the
  // writing thread: RowsWritten then copies the rows to a queue and returns, and every read first
  // adds to its shard what that shard lacks of the Writes queued before the read (LastCache,
  // "Applied off the writer's thread"), so answers are the same. Default: true.
  bool apply_thread = true;
  // Rows queued for that thread at most; a Write that would pass it waits for the thread.
  // Default: 65536 (about 13 batches of 5000).
  size_t max_queued_rows = 65536;
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
  uint64_t ids = 0;                // ids held
  uint64_t bytes = 0;              // memory held, as counted against max_bytes
  uint64_t max_bytes = 0;          // the cap
  uint64_t evicted = 0;            // ids evicted for the cap since the start
  uint64_t hits = 0;               // latest-N answered from the cache
  uint64_t misses = 0;             // latest-N that had to read the store
  uint64_t arena_chunk_bytes = 0;  // the payload arenas' chunks (part of `bytes`, dead included)
  uint64_t arena_evacuated = 0;    // arena chunks evacuated since the start
  // Rows with ts >= this were all offered to the cache (by writes or the rebuild): the window's
  // start at the rebuild's start once it has read the whole window, the start of the oldest
  // bucket read while it runs (or where it stopped), INT64_MAX before it has read a bucket.
  int64_t known_from_ms = std::numeric_limits<int64_t>::max();
  // Applied off the writer's thread (LastCacheOptions::apply_thread): rows added by the cache's
  // thread, rows a read added to its shard before the thread reached them, the thread's CPU time
  // adding rows (ns), and the rows queued now.
  uint64_t applied_by_thread = 0;
  uint64_t applied_by_readers = 0;
  uint64_t apply_ns = 0;
  uint64_t queued_rows = 0;
  uint64_t apply_page_faults = 0;  // the cache's thread's (getrusage, minor and major)
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
// Bounded. Entries are kept per shard (by id hash); past max_bytes / shards the least recently
// written ids of the shard are evicted. A dropped bucket's rows are removed (BucketsDropped);
// ForgetPartitions removes the rows of partitions this instance no longer owns.
//
// Layout (per shard; docs/ARCHITECTURE.md "The last-N cache"). A row's write touches few places
// that no recent write touched (the index's slot, the entry's one 64-byte line, its ring's slots,
// the payload record it overwrites, each fetched a few rows ahead) and allocates nothing once its
// entry is at the depth; the recency stamp goes to the end of a queue.
// - Entries: 64-byte headers in pages that never move (no allocation per id; a retired entry's
//   header is reused), found by id hash through `query/hash_slots.h`. A header holds the id (up to
//   12 bytes inline, longer ones in the arena), the floor, the recency stamp and the items' ring.
// - Items: a ring of 40-byte items (key fields, payload length and place) per entry, grown by
//   doubling up to the depth; the newest event of a full entry takes the oldest's slot.
// - Payloads: appended to the shard's CacheArena (query/cache_arena.h), which evacuates a chunk
//   once half of it is dead, so its memory stays within about twice what is live. A full entry's
//   newest payload is written in its oldest's record when it takes the same room.
// - Recency: every write stamps its entry with a rising number and appends (stamp, entry) to the
//   shard's queue; a record whose stamp is no longer its entry's is stale. The least recently
//   written entry is the first record of the queue that is not stale, so eviction is exact with
//   no list links to update per row (the queue is compacted when stale records are half of it).
//   The rebuild's ids sit on a stack before the queue, with falling stamps.
// - Id order, for the walk of every id: the ids a shard had when it was last walked, sorted, and
//   the ids it gained since, unsorted; a walk sorts the new ones and merges them in (under the
//   shard's lock), instead of a tree insert per new id. An entry retired since is recognised by
//   its header's generation.
//
// Applied off the writer's thread (LastCacheOptions::apply_thread, the default). RowsWritten copies
// the Write's rows, grouped by shard, to a queue under a rising number (its sequence) and returns;
// the `hotrow-cache` thread adds each queued Write's rows shard by shard, in sequence order, each
// shard's under its lock, and records per shard the last sequence the shard holds. Every read of
// a shard (Latest, the walk, Stats, and BucketsDropped / ForgetPartitions before they change it)
// first takes the sequence of the last Write queued, and under the shard's lock adds to the shard
// the queued Writes' rows it lacks up to that sequence (CatchUpLocked) before it reads. So a read
// sees every Write that returned before the read began, as when the rows were added inside
// Write: a Write queues its rows before it returns, and a queued Write leaves the queue only once
// every shard holds it. An answer's head, built from partition positions recorded after the
// Writes returned, so never reports a commit whose rows the read lacks; a Write's rows of a shard
// are still added under one lock (all or none of them seen); and a bucket drop or a forgotten
// partition applies to every row queued before it, as the writes before it did. The thread only
// saves the readers work: when it is behind, a read does its shard's part itself (counted in
// Stats().applied_by_readers). Rows queued at most max_queued_rows; a Write past it waits.
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
  bool Complete(int64_t window_start_ms);

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

  LastCacheStats Stats();
  // The evictions since the start (the rebuild stops at the first one: the cache is full), the
  // queued Writes' included.
  uint64_t evicted();

  // Waits until the cache's thread has added every Write queued before the call (at once with no
  // thread). For benchmarks and tests: reads never need it.
  void WaitForApplied();
  // For tests: stops (true) or restarts the cache's thread between two queued Writes, as a thread
  // descheduled for long would; reads must still see every queued Write. Writes past
  // max_queued_rows wait while it is stopped.
  void PauseApplyForTest(bool paused);

 private:
  // Ids up to this long are held in their entry; longer ones in the shard's arena.
  static constexpr size_t kInlineId = 12;
  // One event of an entry: the key fields and where its payload lies in the shard's arena.
  struct Item {
    int64_t ts_ms = 0;
    int64_t offset = 0;
    int32_t partition = 0;
    uint32_t payload_length = 0;
    ArenaRef payload;  // 8 bytes: chunk, offset
    uint16_t topic = 0;
  };
  // An id's entry: one cache line. Free (in its shard's free list) when `stamp` is 0.
  struct alignas(64) Entry {
    uint64_t id_hash = 0;  // keying::IdHash of the id
    int64_t floor_ms = std::numeric_limits<int64_t>::min();
    uint64_t stamp = 0;            // the recency stamp; 0: free
    std::unique_ptr<Item[]> ring;  // `capacity` slots, newest at `head`
    uint32_t id_length = 0;
    uint32_t generation = 0;  // counts the header's uses (the id order's check)
    uint16_t head = 0;
    uint16_t size = 0;
    uint16_t capacity = 0;
    uint32_t handle = 0;  // this header's number in its shard
    union {
      char id_inline[kInlineId];  // an id of at most kInlineId bytes
      ArenaRef id_ref;            // a longer one: its place in the arena
    };
    Entry() : id_ref{} {}

    size_t Slot(size_t i) const {
      const size_t slot = head + i;
      return slot >= capacity ? slot - capacity : slot;
    }
    const Item& item(size_t i) const { return ring[Slot(i)]; }
    Item& item(size_t i) { return ring[Slot(i)]; }
    const Item& front() const { return item(0); }
    const Item& back() const { return item(size - 1u); }
  };
  static_assert(sizeof(Entry) == 64);
  // One record of a shard's recency queue (above).
  struct Stamp {
    uint64_t stamp = 0;
    Entry* entry = nullptr;
  };
  // One id of a shard's id order (above).
  struct Ordered {
    Entry* entry = nullptr;
    uint32_t generation = 0;
  };
  struct Shard {
    Shard(size_t shard_index, size_t chunk_bytes) : index(shard_index), arena(chunk_bytes) {}
    const size_t index;  // its place in shards_
    mutable std::mutex mu;
    // Everything below is guarded by mu.
    // Every queued Write with a sequence up to the larger of this and done_seq_ is in the shard.
    uint64_t applied_seq = 0;
    HashSlots<Entry> by_id;                       // the live entries by id hash
    std::vector<std::unique_ptr<Entry[]>> pages;  // every header; they never move
    std::vector<Entry*> free_entries;
    CacheArena arena;
    // The recency queue, least recently written first, stale records among them: the entries the
    // rebuild made (a stack, the coldest last), then the written ones from `warm_head` on.
    std::vector<Stamp> cold;
    std::vector<Stamp> warm;
    size_t warm_head = 0;
    uint64_t warm_stamp = kFirstWarmStamp;  // the last write's stamp
    uint64_t cold_stamp = kFirstWarmStamp;  // the last rebuild-made entry's stamp
    std::vector<Ordered> sorted;            // in id order, stale records among them
    std::vector<Ordered> unsorted;          // ids added since the last walk
    size_t retired_since_walk = 0;          // entries retired since `sorted` was cleaned
    size_t fixed_bytes = 0;                 // headers, rings and the index, queue and order records
    // Every row of an id this shard holds no entry of, and every row below an entry's floor,
    // has ts <= retired_ms (rows the shard evicted or dropped).
    int64_t retired_ms = std::numeric_limits<int64_t>::min();

    size_t bytes() const { return fixed_bytes + arena.bytes(); }
    size_t ids() const { return by_id.size(); }
  };

  static constexpr uint64_t kFirstWarmStamp = uint64_t{1} << 62;

  // One Write's rows as queued for the cache's thread: copied, grouped by shard. Reused once
  // the thread is done with it (its memory, fresh for every Write, took a page fault a page).
  struct QueuedWrite {
    uint64_t seq = 0;
    size_t row_count = 0;
    std::vector<store::WrittenRow> rows;  // shard s's: [starts[s], starts[s + 1]); values below
    std::vector<uint32_t> starts;
    std::unique_ptr<char[]> values;
    size_t values_capacity = 0;
    // A read took it to catch a shard up: never reused, freed with its last holder. Guarded by
    // queue_mu_.
    mutable bool lent = false;
  };

  Shard& ShardOf(uint64_t id_hash) { return *shards_[id_hash & (shard_count_ - 1)]; }
  // Adds rows (grouped by shard, each shard's under one lock).
  void Add(std::span<const store::WrittenRow> rows, bool from_rebuild);
  // Adds rows[order[i]] for i in [begin, end) to `shard` (order null: rows[i]), then evicts past
  // the shard's bytes. REQUIRES: shard.mu held; the rows all of the shard.
  void AddToShardLocked(Shard& shard, std::span<const store::WrittenRow> rows,
                        const uint32_t* order, uint32_t begin, uint32_t end, bool from_rebuild);
  // Copies a Write's rows to the queue (waiting while it is full).
  void Enqueue(std::span<const store::WrittenRow> rows);
  // The cache's thread: adds the queued Writes in order until stop_.
  void ApplyLoop();
  // Adds to `shard` the rows of every queued Write up to sequence `upto` it does not hold.
  // REQUIRES: shard.mu held.
  void CatchUpLocked(Shard& shard, uint64_t upto);
  // The sequence of the last Write queued (every read catches up to it).
  uint64_t QueuedSeq() const { return queued_seq_.load(std::memory_order_acquire); }
  // Catches every shard up to the Writes queued now.
  void CatchUpAll();
  // Adds one row to `shard`; `hint` (may be null or another id's) is the entry Add peeked for it.
  // REQUIRES: shard.mu held.
  void AddLocked(Shard& shard, const store::WrittenRow& row, bool from_rebuild, Entry* hint);
  // Puts an event at position `index` of `e` (<= size); when e is at the depth, the oldest goes
  // (REQUIRES: index < size then). REQUIRES: shard.mu held.
  void InsertLocked(Shard& shard, Entry* e, size_t index, const keying::RowKey& key,
                    std::string_view payload);
  // Removes the oldest item of `e`, freeing its payload. REQUIRES: shard.mu held.
  static void PopBackLocked(Shard& shard, Entry* e);
  // Removes the items `drop` is true of, keeping the others' order. REQUIRES: shard.mu held.
  template <typename Drop>
  static void EraseIfLocked(Shard& shard, Entry* e, Drop drop);
  // Makes an entry for `id`. REQUIRES: shard.mu held; no entry of the id.
  Entry* NewEntryLocked(Shard& shard, std::string_view id, uint64_t id_hash, bool from_rebuild);
  // Forgets an entry, raising the shard's retired_ms to the newest row it knew of.
  // REQUIRES: shard.mu held.
  void RetireLocked(Shard& shard, Entry* e);
  // Evicts the least recently written entries while the shard is over its bytes, and evacuates
  // the arena's half-dead chunks. REQUIRES: shard.mu held.
  void TidyLocked(Shard& shard);
  // Stamps `e` as the most recently written. REQUIRES: shard.mu held.
  static void TouchLocked(Shard& shard, Entry* e);
  // Drops the stale records of the recency queue. REQUIRES: shard.mu held.
  static bool Stale(const Stamp& s) { return s.entry->stamp != s.stamp; }
  // The least recently written entry, taken off the queue. REQUIRES: shard.mu held; ids() > 0.
  static Entry* TakeColdestLocked(Shard& shard);
  static void CompactRecencyLocked(Shard& shard);
  // Sorts the ids gained since the last walk into `sorted` and drops the retired ones.
  // REQUIRES: shard.mu held.
  static void SortIdsLocked(Shard& shard);
  // Every live entry of `shard`, for `visit(Entry*)` (which may retire it). REQUIRES: shard.mu.
  template <typename Visit>
  static void ForEachEntryLocked(Shard& shard, Visit visit);
  // The id of `e`. REQUIRES: its shard's mu held.
  static std::string_view IdOf(const Shard& shard, const Entry& e);
  // Where `shard` keeps the record at `ref` owned by entry `handle`, or null (CacheArena).
  static ArenaRef* LocateLocked(Shard& shard, uint32_t handle, ArenaRef ref);
  static Entry* EntryOf(Shard& shard, uint32_t handle);
  // Removes the items with ts <= floor_ms from the end of `entry`. REQUIRES: shard.mu held.
  static void TrimToFloor(Shard& shard, Entry* entry);
  // The n newest events of `entry` as Latest tells them, into `out`; false (and `out` empty) when
  // the store must be read. REQUIRES: its shard's mu held.
  bool CollectLocked(const Shard& shard, const Entry& entry, int n, int64_t window_start_ms,
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
  std::vector<std::unique_ptr<Shard>> shards_;
  size_t shard_bytes_ = 0;  // max_bytes / shard_count_
  std::atomic<int64_t> known_from_ms_{std::numeric_limits<int64_t>::max()};
  std::atomic<uint64_t> evicted_{0};
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};

  // The queue of Writes for the cache's thread (apply_thread). Lock order: a shard's mu, then
  // queue_mu_.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;  // a Write queued, a pause lifted, or stop_
  std::condition_variable done_cv_;   // a Write left the queue, or stop_
  std::deque<std::shared_ptr<const QueuedWrite>> queue_;  // guarded by queue_mu_
  std::vector<std::shared_ptr<QueuedWrite>> spare_;       // guarded by queue_mu_; for reuse
  size_t queued_rows_ = 0;                                 // guarded by queue_mu_
  bool stop_ = false;                                      // guarded by queue_mu_
  bool paused_ = false;                                    // guarded by queue_mu_
  // The last sequence queued; every Write up to done_seq_ is in every shard (both written under
  // queue_mu_, read without it).
  std::atomic<uint64_t> queued_seq_{0};
  std::atomic<uint64_t> done_seq_{0};
  std::atomic<uint64_t> applied_by_thread_{0};
  std::atomic<uint64_t> applied_by_readers_{0};
  std::atomic<uint64_t> apply_ns_{0};
  std::atomic<uint64_t> apply_page_faults_{0};
  std::thread apply_thread_;  // last: started once everything above is built, joined first
};

}  // namespace hotrow::query
