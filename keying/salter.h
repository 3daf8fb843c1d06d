#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hotrow::keying {

// What the salt of a row is computed from. Fixed when a store is created.
enum class SaltBy {
  // (topic, partition, offset): one id's events spread over every salt, a chatty device never
  // piles onto one key range, and a per-id query reads every salt in parallel. The default.
  kRecord,
  // The event id: a per-id query reads one salt; full scans still fan out over every salt.
  kId,
};

std::string_view SaltByName(SaltBy by);                      // "record" or "id"
std::optional<SaltBy> ParseSaltBy(std::string_view name);    // nullopt for anything else

// Computes salts. Pure: the same record always gets the same salt, on any machine, in any version.
//
// - kRecord: (hash(topic, partition) + offset) mod salts. Consecutive offsets of a partition
//   rotate through the salts, so the distribution over salts is as even as it can be (within one
//   event per partition) no matter how skewed the ids are.
// - kId: XXH3(id, seed) mod salts, seeded apart from IdHash.
//
// Thread-safety: immutable after construction; share freely.
class Salter {
 public:
  // REQUIRES: 1 <= salts <= kMaxSalts.
  Salter(int salts, SaltBy by) : salts_(salts), by_(by) {}

  int salts() const { return salts_; }
  SaltBy salt_by() const { return by_; }

  // The salt of one record. `id` is used with kId, (topic, partition, offset) with kRecord.
  uint8_t SaltOf(std::string_view topic, int32_t partition, int64_t offset,
                 std::string_view id) const;

  // The salt every event of `id` has under kId. REQUIRES: salt_by() == kId.
  uint8_t SaltOfId(std::string_view id) const;

 private:
  int salts_;
  SaltBy by_;
};

}  // namespace hotrow::keying
