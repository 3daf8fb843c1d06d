// Internal to store/: which salts of one bucket may hold rows of an id, kept in memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace hotrow::store {

// A filter over (salt, id) pairs of one bucket: MayHold is false only when the bucket holds no row
// of an id with that hash in that salt. With `salt_by: record` an id's events spread over every
// salt, but an id with a few events in a bucket sits in a few of them; latest-N asks the filter
// before it seeks a salt, and the seeks it saves are most of what it did beyond the bare floor
// (docs/BENCHMARKS.md). RocksDB's prefix bloom answers the same question per table file, but only
// after a seek has been set up, and not for the memtables in auto prefix mode.
//
// A fixed table of 2^17 16-bit masks (256 KiB per bucket) indexed by the id hash; bit (salt % 16)
// of an id's slot is set before any row of the id in that salt is written (RocksEventStore::Write)
// and for every row found at open (the open already reads every row: CheckRowsMatchCounters).
// Bits are never cleared: a bucket only grows until it is dropped as a whole. Ids that share a
// slot, and salts that share a bit (more than 16 salts), only cost seeks that find nothing; with
// far more ids per bucket than slots the filter fills up and every salt is sought, as before.
//
// Thread-safety: Note and MayHold may be called from any thread at once. A row noted before its
// write is visible is never skipped by a query that starts after the write returned.
class IdSaltFilter {
 public:
  static constexpr size_t kSlots = size_t{1} << 17;

  IdSaltFilter() : slots_(std::make_unique<std::atomic<uint16_t>[]>(kSlots)) {}

  void Note(uint8_t salt, uint64_t id_hash) {
    std::atomic<uint16_t>& slot = slots_[id_hash & (kSlots - 1)];
    const uint16_t bit = Bit(salt);
    // Most writes find the bit set: read first, so that they do not dirty a shared cache line.
    if ((slot.load(std::memory_order_relaxed) & bit) == 0) {
      slot.fetch_or(bit, std::memory_order_relaxed);
    }
  }

  bool MayHold(uint8_t salt, uint64_t id_hash) const {
    return (slots_[id_hash & (kSlots - 1)].load(std::memory_order_relaxed) & Bit(salt)) != 0;
  }

 private:
  static uint16_t Bit(uint8_t salt) { return static_cast<uint16_t>(1u << (salt % 16)); }

  const std::unique_ptr<std::atomic<uint16_t>[]> slots_;  // value-initialised: all clear
};

}  // namespace hotrow::store
