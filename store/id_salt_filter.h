// Internal to store/: which salts of one bucket may hold rows of an id, and how new they can be,
// kept in memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
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
// A table of slots indexed by the id hash, sized when the bucket is made from the ids of the
// bucket with the most ids so far (SlotsForIds: 4 to 8 slots per id, 4096 to 2^23 slots, 64 KiB to
// 128 MiB per bucket; 64 to 128 MiB per million ids of a bucket), and at open from the ids its
// rows hold (FoldedTo). A slot holds 16 levels of 8 bits, one per salt % 16, in two words.
// Level 0: no row; level L in 1..255: the newest row noted has a time in the L-th 255th of the
// bucket's span (235 ms of a 1-minute bucket). The bound must be finer than the time an id's
// newest n rows span: with 10000 ids at 130k events/s, latest-10 reaches back about 0.8 s, and
// with fifteenths (4 s) nearly every salt looked new enough to be sought (13.5 seeks per query,
// simulated; 8.4 with 255ths). Levels only rise (a compare-and-swap that keeps the
// maximum), set before any row is written (RocksEventStore::Write) and for every row found at open
// (the open already reads every row: CheckRowsMatchCounters). Ids that share a slot, and salts
// that share a level (more than 16 salts), only make a bound looser; with far more ids per bucket
// than slots every bound becomes the bucket's end and every salt is sought, as without a filter.
// That is why the table is sized from ids, not events, and why it has no small cap: with at most
// 2^19 slots a 100M-event window's buckets (1M ids each) sought 17.6 salts per latest-10 against
// 9.9 at 1M events.
//
// How many ids a bucket holds is counted as rows are noted, in a HyperLogLog of 2^11 byte
// registers (2 KiB, about 2% error; EstimatedIds): the writer does not know whether an id is new
// to a bucket, and the table's own occupancy saturates when it is too small, which is the case to
// be seen.
//
// Thread-safety: Note and NewestTsBound may be called from any thread at once. A row noted before
// its write is visible is never skipped by a query that starts after the write returned.
class IdSaltFilter {
 public:
  static constexpr size_t kMinSlots = size_t{1} << 12;
  static constexpr size_t kMaxSlots = size_t{1} << 23;
  // Ids that share a slot loosen each other's bounds: at least this many slots per id (an id
  // then shares its slot with another about one time in five or fewer).
  static constexpr size_t kSlotsPerId = 4;
  // A store's first bucket has no bucket to be sized from; it often takes a backlog, and a filter
  // of kMinSlots shared by 10000 ids loosened the bounds (14 seeks per latest-10 instead of 8.4 in
  // http_load_bench). 1 MiB, once.
  static constexpr size_t kFirstBucketSlots = size_t{1} << 16;
  static constexpr int kLevels = 255;
  static constexpr int kRegisterBits = 11;  // the id count's 2^11 registers

  // The slots for a bucket of about `ids` distinct ids: the smallest power of two with at least
  // kSlotsPerId per id, within [kMinSlots, kMaxSlots].
  static size_t SlotsForIds(uint64_t ids) {
    size_t slots = kMinSlots;
    while (slots < kMaxSlots && slots < ids * kSlotsPerId) slots *= 2;
    return slots;
  }

  // REQUIRES: start_ms < end_ms; slots a power of two.
  IdSaltFilter(int64_t start_ms, int64_t end_ms, size_t slots)
      : start_ms_(start_ms),
        width_(end_ms - start_ms),
        mask_(slots - 1),
        words_(std::make_unique<std::atomic<uint64_t>[]>(2 * slots)),
        registers_(std::make_unique<std::atomic<uint8_t>[]>(size_t{1} << kRegisterBits)) {}

  size_t slots() const { return mask_ + 1; }
  size_t bytes() const { return 2 * (mask_ + 1) * sizeof(uint64_t) + (size_t{1} << kRegisterBits); }

  // The same filter in `slots` slots (fewer than it has), as if every row it noted had been noted
  // in a filter of that size: a slot of the smaller table is the maximum, level by level, of the
  // slots whose index it is modulo its size. REQUIRES: nothing notes meanwhile; slots a power of
  // two no larger than slots().
  std::unique_ptr<IdSaltFilter> FoldedTo(size_t slots) const {
    auto folded = std::make_unique<IdSaltFilter>(start_ms_, start_ms_ + width_, slots);
    for (size_t i = 0; i < 2 * (mask_ + 1); ++i) {
      std::atomic<uint64_t>& into = folded->words_[((i / 2) & (slots - 1)) * 2 + i % 2];
      into.store(MaxPerByte(into.load(std::memory_order_relaxed),
                            words_[i].load(std::memory_order_relaxed)),
                 std::memory_order_relaxed);
    }
    for (size_t r = 0; r < (size_t{1} << kRegisterBits); ++r) {
      folded->registers_[r].store(registers_[r].load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
    }
    return folded;
  }

  // About how many distinct ids were noted (HyperLogLog, with linear counting while few registers
  // are set).
  uint64_t EstimatedIds() const {
    constexpr size_t m = size_t{1} << kRegisterBits;
    double sum = 0;
    size_t zeros = 0;
    for (size_t r = 0; r < m; ++r) {
      const uint8_t rank = registers_[r].load(std::memory_order_relaxed);
      sum += std::ldexp(1.0, -rank);
      zeros += rank == 0;
    }
    const double alpha = 0.7213 / (1.0 + 1.079 / m);
    double estimate = alpha * m * m / sum;
    if (estimate <= 2.5 * m && zeros > 0) estimate = m * std::log(static_cast<double>(m) / zeros);
    return static_cast<uint64_t>(estimate + 0.5);
  }

  void Note(uint8_t salt, uint64_t id_hash, int64_t ts_ms) {
    std::atomic<uint64_t>& word = Word(salt, id_hash);
    const int shift = Shift(salt);
    const uint64_t level = static_cast<uint64_t>(LevelOf(ts_ms));
    CountId(id_hash);
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
  static uint64_t MaxPerByte(uint64_t a, uint64_t b) {
    uint64_t out = 0;
    for (int shift = 0; shift < 64; shift += 8) {
      out |= std::max((a >> shift) & 0xFF, (b >> shift) & 0xFF) << shift;
    }
    return out;
  }
  // The register is chosen by the hash's top bits, the rank by the run of zeros after them (the
  // slot index uses the low bits, which are independent of these in a 64-bit hash).
  void CountId(uint64_t id_hash) {
    std::atomic<uint8_t>& reg = registers_[id_hash >> (64 - kRegisterBits)];
    const uint8_t rank = static_cast<uint8_t>(
        std::countl_zero((id_hash << kRegisterBits) | (uint64_t{1} << (kRegisterBits - 1))) + 1);
    uint8_t old = reg.load(std::memory_order_relaxed);
    while (old < rank && !reg.compare_exchange_weak(old, rank, std::memory_order_relaxed)) {
    }
  }
  int LevelOf(int64_t ts_ms) const {
    // Rows are in the bucket of their time; the clamp only keeps a level in 1..255.
    const int64_t offset = std::clamp<int64_t>(ts_ms - start_ms_, 0, width_ - 1);
    return 1 + static_cast<int>(offset * kLevels / width_);
  }

  const int64_t start_ms_;
  const int64_t width_;
  const uint64_t mask_;
  const std::unique_ptr<std::atomic<uint64_t>[]> words_;     // value-initialised: all level 0
  const std::unique_ptr<std::atomic<uint8_t>[]> registers_;  // the id count; all 0 at first
};

}  // namespace hotrow::store
