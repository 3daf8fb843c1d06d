// Internal to store/: under salt_by: adaptive, which ids a bucket spreads over every salt, and the
// counts the writer decides that from.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "keying/salter.h"

namespace hotrow::store {

// The ids of one bucket whose rows may lie outside their home salt (keying::Salter::HomeSalt),
// and a count of the bucket's rows per id hash.
//
// Operation. The writer calls Place for every row it stores, before the row is written: it counts
// the row and answers whether the row goes to the record's salt. It does when the id is in the set
// already, or when the rule says it is hot now, in which case the id joins the set first. An id
// never leaves the set: spread for the rest of the bucket. The open calls NoteStored for every row
// it reads, which counts it and puts its id in the set when the row's salt is not its home: the
// set then holds every id that has a row outside its home salt, whatever the writer had decided
// before the restart (docs/ARCHITECTURE.md, "Adaptive salting").
//
// Counts are a count-min sketch: two tables of counters, each indexed by its own bits of the id
// hash (neither the low bits the id filter and the set index by), an id's count the lower of its
// two. Ids that share both counters look busier than they are, never quieter: a cold id is taken
// for hot only when it shares both counters with hot ids, about (hot ids / counters)^2 of them.
//
// What queries rely on (Contains): a row of an id outside its home salt exists only if Contains
// says true for the id, from before the row can be read. An id may be in the set with every row
// at home (spread rows that happened to land there, or a write that failed): that costs a query
// seeks, never an answer.
//
// Limits. The set holds at most capacity() ids (a fixed table, sized from hot_share: far more
// than the 1 / hot_share ids that can be hot at once). Past that, an id the rule calls hot is
// spread row by row without joining the set, and Contains says true for every id: queries then
// seek every salt the id filter allows, as with salt_by: record.
//
// Thread-safety: Place, NoteStored, Contains and the accessors may be called from any thread at
// once. An id that Place or NoteStored put in the set is seen by every Contains that starts
// after the call returned.
class SpreadIds {
 public:
  // The set's table for `hot_share`: a power of two near 8 / hot_share, 1024 to 65536 slots, at
  // most three quarters of them used.
  static size_t CapacityFor(double hot_share);

  // REQUIRES: count_slots (counters per table, at most 2^20) and table_slots powers of two.
  SpreadIds(size_t count_slots, size_t table_slots);

  // Counts one row of the id and returns true when it goes to the record's salt.
  bool Place(uint64_t id_hash, const keying::HotRule& rule);

  // Counts one stored row of the id found at open; `off_home` when its salt is not the id's home.
  void NoteStored(uint64_t id_hash, bool off_home);

  // False only when every row of the id in the bucket is in its home salt.
  bool Contains(uint64_t id_hash) const {
    return overflowed_.load(std::memory_order_acquire) || InSet(id_hash);
  }

  // Ids in the set, and their hashes, sorted.
  size_t size() const { return size_.load(std::memory_order_relaxed); }
  std::vector<uint64_t> Hashes() const;
  // The set filled up: Contains is true for every id.
  bool overflowed() const { return overflowed_.load(std::memory_order_relaxed); }
  size_t capacity() const { return (mask_ + 1) / 4 * 3; }
  size_t bytes() const {
    return 2 * (count_mask_ + 1) * sizeof(uint32_t) + (mask_ + 1) * sizeof(uint64_t);
  }

 private:
  // Counts one row of the id in both tables; returns its estimate, the lower count.
  uint64_t Count(uint64_t id_hash);
  bool InSet(uint64_t id_hash) const;
  // Adds the id; false when the set is full (then marks it overflowed).
  bool Insert(uint64_t id_hash);

  const uint64_t count_mask_;
  // Rows per counter: the first table indexed by bits 20.., the second by bits 40.. of the hash.
  const std::unique_ptr<std::atomic<uint32_t>[]> counts_;
  std::atomic<uint64_t> rows_{0};  // rows of the bucket
  const uint64_t mask_;
  // Open addressing, linear probing, insert only. 0 marks an empty slot: the id hash 0 is kept in
  // has_zero_ instead.
  const std::unique_ptr<std::atomic<uint64_t>[]> slots_;
  std::atomic<bool> has_zero_{false};
  std::atomic<size_t> size_{0};
  std::atomic<bool> overflowed_{false};
};

}  // namespace hotrow::store
