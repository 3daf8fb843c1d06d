// Internal to store/: which salts of one bucket may hold rows of an id, and how new they can be,
// kept in memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace hotrow::store {

// A filter over (salt, id) pairs of one bucket [start, end), with a bound on time: for each salt
// an upper bound on the event times of an id's rows there (NewestTsBound), start when it holds
// none. With `salt_by: record` an id's events spread over every salt, but an id with a few events
// in a bucket sits in a few of them; latest-N skips the salts that hold none, and in a bucket it
// visits only to complete an answer it skips the salts whose newest row cannot beat what it has
// (docs/BENCHMARKS.md). RocksDB's prefix bloom answers the first question per table file, but only
// once a seek is under way, and not the second.
//
// A table of slots indexed by the id hash, sized when the bucket is made (or opened) from the
// events of the biggest bucket (SlotsFor: about one slot per two events, 4096 to 2^19 slots, 64
// KiB to 8 MiB per bucket); a slot holds 16 levels of 8 bits, one per salt % 16, in two words.
// Level 0: no row; level L in 1..255: the newest row noted has a time in the L-th 255th of the
// bucket's span (235 ms of a 1-minute bucket). The bound must be finer than the time an id's
// newest n rows span: with 10000 ids at 130k events/s, latest-10 reaches back about 0.8 s, and
// with fifteenths (4 s) nearly every salt looked new enough to be sought (13.5 seeks per query,
// simulated; 8.4 with 255ths). Levels only rise (a compare-and-swap that keeps the
// maximum), set before any row is written (RocksEventStore::Write) and for every row found at open
// (the open already reads every row: CheckRowsMatchCounters). Ids that share a slot, and salts
// that share a level (more than 16 salts), only make a bound looser; with far more ids per bucket
// than slots every bound becomes the bucket's end and every salt is sought, as without a filter.
//
// Thread-safety: Note and NewestTsBound may be called from any thread at once. A row noted before
// its write is visible is never skipped by a query that starts after the write returned.
class IdSaltFilter {
 public:
  static constexpr size_t kMinSlots = size_t{1} << 12;
  static constexpr size_t kMaxSlots = size_t{1} << 19;
  // A store's first bucket has no bucket to be sized from; it often takes a backlog, and a filter
  // of kMinSlots shared by 10000 ids loosened the bounds (14 seeks per latest-10 instead of 8.4 in
  // http_load_bench). 1 MiB, once.
  static constexpr size_t kFirstBucketSlots = size_t{1} << 16;
  static constexpr int kLevels = 255;

  // The slots for a bucket of about `events` events: a power of two near events / 2, so that ids
  // seldom share one (an id has at least one event), within [kMinSlots, kMaxSlots].
  static size_t SlotsFor(uint64_t events) {
    size_t slots = kMinSlots;
    while (slots < kMaxSlots && slots < events / 2) slots *= 2;
    return slots;
  }

  // REQUIRES: start_ms < end_ms; slots a power of two.
  IdSaltFilter(int64_t start_ms, int64_t end_ms, size_t slots)
      : start_ms_(start_ms),
        width_(end_ms - start_ms),
        mask_(slots - 1),
        words_(std::make_unique<std::atomic<uint64_t>[]>(2 * slots)) {}

  size_t bytes() const { return 2 * (mask_ + 1) * sizeof(uint64_t); }

  void Note(uint8_t salt, uint64_t id_hash, int64_t ts_ms) {
    std::atomic<uint64_t>& word = Word(salt, id_hash);
    const int shift = Shift(salt);
    const uint64_t level = static_cast<uint64_t>(LevelOf(ts_ms));
    uint64_t old = word.load(std::memory_order_relaxed);
    // Most writes find the level already there: no write to a shared cache line then.
    while (((old >> shift) & 0xFF) < level) {
      const uint64_t raised = (old & ~(uint64_t{0xFF} << shift)) | (level << shift);
      if (word.compare_exchange_weak(old, raised, std::memory_order_relaxed)) break;
    }
  }

  // Every row of the id in the salt has a time below the returned bound; start_ms when there is
  // no row of the id there.
  int64_t NewestTsBound(uint8_t salt, uint64_t id_hash) const {
    const uint64_t level =
        (Word(salt, id_hash).load(std::memory_order_relaxed) >> Shift(salt)) & 0xFF;
    // LevelOf(ts) = L means (ts - start) * 255 < L * width: ts < start + ceil(L * width / 255).
    return start_ms_ + (static_cast<int64_t>(level) * width_ + kLevels - 1) / kLevels;
  }

 private:
  // Salts 0-7 of a slot in its first word, 8-15 in its second, a byte each.
  std::atomic<uint64_t>& Word(uint8_t salt, uint64_t id_hash) const {
    return words_[2 * (id_hash & mask_) + (salt % 16) / 8];
  }
  static int Shift(uint8_t salt) { return 8 * (salt % 8); }
  int LevelOf(int64_t ts_ms) const {
    // Rows are in the bucket of their time; the clamp only keeps a level in 1..255.
    const int64_t offset = std::clamp<int64_t>(ts_ms - start_ms_, 0, width_ - 1);
    return 1 + static_cast<int>(offset * kLevels / width_);
  }

  const int64_t start_ms_;
  const int64_t width_;
  const uint64_t mask_;
  const std::unique_ptr<std::atomic<uint64_t>[]> words_;  // value-initialised: all level 0
};

}  // namespace hotrow::store
