#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hotrow::query {

// Pointers to T by a 64-bit hash of their key, in one array of (hash, pointer) slots with linear
// probing, at most half full. The last-N cache's index of its entries by id (query/last_cache.h):
// where a node-based map took three dependent cache misses to find an entry (its bucket, the
// node before, the key's node), a lookup here reads one slot and then the entry, and a writer
// can prefetch the entry of a row it will add a few rows later (Peek).
//
// The caller decides what matches: the hash is compared first, the key only when it is equal.
// Not thread-safe.
template <typename T>
class HashSlots {
 public:
  size_t size() const { return size_; }

  // The entry whose hash is `hash` and of which `match` is true, or null.
  template <typename Match>
  T* Find(uint64_t hash, Match match) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(hash);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.value == nullptr) return nullptr;
      if (slot.hash == hash && match(*slot.value)) return slot.value;
    }
  }

  // The first entry with `hash`, without checking its key: for a prefetch only.
  T* Peek(uint64_t hash) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(hash);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.value == nullptr || slot.hash == hash) return slot.value;
    }
  }

  // Asks the CPU to fetch the slot where a lookup of `hash` starts: for a prefetch only.
  void PrefetchSlot(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Home(hash)]);
  }

  // Adds `value` under `hash`. REQUIRES: no entry of this key is held; value != nullptr.
  void Insert(uint64_t hash, T* value) {
    if (2 * (size_ + 1) > slots_.size()) Rehash(slots_.empty() ? 16 : 2 * slots_.size());
    Place(hash, value);
    ++size_;
  }

  // Removes `value` (held under `hash`). REQUIRES: it is held.
  void Erase(uint64_t hash, const T* value) {
    size_t i = Home(hash);
    while (slots_[i].value != value) i = (i + 1) & mask_;
    // Backward shift: each later slot of the run moves into the hole unless its home lies
    // after the hole (cyclically), so that every entry stays reachable from its home without
    // tombstones.
    for (size_t j = (i + 1) & mask_; slots_[j].value != nullptr; j = (j + 1) & mask_) {
      const size_t home = Home(slots_[j].hash);
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot{};
    --size_;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    T* value = nullptr;
  };

  // Fibonacci hashing: the top bits of the product, so that hashes that share their low bits
  // (the cache's shards split ids by them) still spread over the slots.
  size_t Home(uint64_t hash) const {
    return static_cast<size_t>((hash * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  void Place(uint64_t hash, T* value) {
    size_t i = Home(hash);
    while (slots_[i].value != nullptr) i = (i + 1) & mask_;
    slots_[i] = Slot{hash, value};
  }

  void Rehash(size_t count) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(count, Slot{});
    mask_ = count - 1;
    int bits = 0;
    while ((size_t{1} << bits) < count) ++bits;
    shift_ = 64 - bits;
    for (const Slot& slot : old) {
      if (slot.value != nullptr) Place(slot.hash, slot.value);
    }
  }

  std::vector<Slot> slots_;  // a power of two of them, or none
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace hotrow::query
