#include "store/spread_ids.h"

namespace hotrow::store {

size_t SpreadIds::CapacityFor(double hot_share) {
  constexpr size_t kMin = size_t{1} << 10, kMax = size_t{1} << 16;
  if (!(hot_share > 0)) return kMax;
  const double want = 8.0 / hot_share;
  size_t slots = kMin;
  while (slots < kMax && static_cast<double>(slots) < want) slots *= 2;
  return slots;
}

SpreadIds::SpreadIds(size_t count_slots, size_t table_slots)
    : count_mask_(count_slots - 1),
      counts_(std::make_unique<std::atomic<uint32_t>[]>(2 * count_slots)),
      mask_(table_slots - 1),
      slots_(std::make_unique<std::atomic<uint64_t>[]>(table_slots)) {}

bool SpreadIds::InSet(uint64_t id_hash) const {
  if (id_hash == 0) return has_zero_.load(std::memory_order_acquire);
  for (uint64_t i = id_hash & mask_;; i = (i + 1) & mask_) {
    const uint64_t at = slots_[i].load(std::memory_order_acquire);
    if (at == id_hash) return true;
    if (at == 0) return false;  // the table is never full: a probe always meets an empty slot
  }
}

bool SpreadIds::Insert(uint64_t id_hash) {
  if (id_hash == 0) {
    if (!has_zero_.exchange(true, std::memory_order_acq_rel)) {
      size_.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  }
  // Claim a place below capacity first, so that the table always keeps empty slots.
  size_t size = size_.load(std::memory_order_relaxed);
  do {
    if (size >= capacity()) {
      overflowed_.store(true, std::memory_order_release);
      return false;
    }
  } while (!size_.compare_exchange_weak(size, size + 1, std::memory_order_relaxed));
  for (uint64_t i = id_hash & mask_;; i = (i + 1) & mask_) {
    uint64_t at = slots_[i].load(std::memory_order_acquire);
    if (at == 0 && slots_[i].compare_exchange_strong(at, id_hash, std::memory_order_acq_rel)) {
      return true;
    }
    if (at == id_hash) {  // another writer put it there meanwhile: give the place back
      size_.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
  }
}

uint64_t SpreadIds::Count(uint64_t id_hash) {
  const uint32_t first =
      counts_[(id_hash >> 20) & count_mask_].fetch_add(1, std::memory_order_relaxed) + 1;
  const uint32_t second = counts_[count_mask_ + 1 + ((id_hash >> 40) & count_mask_)].fetch_add(
                              1, std::memory_order_relaxed) +
                          1;
  return std::min(first, second);
}

bool SpreadIds::Place(uint64_t id_hash, const keying::HotRule& rule) {
  const uint64_t rows = rows_.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t count = Count(id_hash);
  if (InSet(id_hash)) return true;
  if (!rule.IsHot(count, rows)) return false;
  Insert(id_hash);  // when the set is full the row is spread all the same: Contains is true now
  return true;
}

void SpreadIds::NoteStored(uint64_t id_hash, bool off_home) {
  rows_.fetch_add(1, std::memory_order_relaxed);
  Count(id_hash);
  if (off_home && !InSet(id_hash)) Insert(id_hash);
}

std::vector<uint64_t> SpreadIds::Hashes() const {
  std::vector<uint64_t> out;
  if (has_zero_.load(std::memory_order_acquire)) out.push_back(0);
  for (uint64_t i = 0; i <= mask_; ++i) {
    const uint64_t at = slots_[i].load(std::memory_order_acquire);
    if (at != 0) out.push_back(at);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hotrow::store
