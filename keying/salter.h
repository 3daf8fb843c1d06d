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
  // Per bucket: an id's rows go to its home salt (HomeSalt of its hash) while the id is cold in
  // the bucket, and to the record's salt (as kRecord) once it is hot there (HotRule), for the rest
  // of that bucket. The store decides, row by row, when it writes (EventStore::Write).
  kAdaptive,
};

std::string_view SaltByName(SaltBy by);                    // "record", "id" or "adaptive"
std::optional<SaltBy> ParseSaltBy(std::string_view name);  // nullopt for anything else

// keying.hot_share's default, chosen in adaptive_salting_bench (docs/BENCHMARKS.md, "Adaptive
// salting"): on 10000 ids drawn with Zipf s = 1.1 it keeps a bucket's largest salt within 1.08x
// of the mean (worst bucket 1.12; modelled over 50 other id sets, 1.13 at the 90th percentile),
// with 58 ids spread per bucket. 0.005 and 0.01 also stay under 1.3x on that id set, but not
// surely on others (90th percentiles 1.24 and 1.34); 0.001 buys 1.05x for twice the spread ids,
// each paying record salting's seeks when asked.
inline constexpr double kDefaultHotShare = 0.002;
// An id is never hot in a bucket before it has this many events there: early in a bucket, when it
// holds a few hundred events, a share says little, and an id with fewer events than there are
// salts gains nothing from being spread.
inline constexpr uint64_t kDefaultHotMinEvents = 32;

// When an id is hot in a bucket under SaltBy::kAdaptive. Pure; copy freely.
struct HotRule {
  // Share of the bucket's events (0 < hot_share <= 1) at or above which an id is hot.
  // Default: kDefaultHotShare (keying.hot_share).
  double hot_share = kDefaultHotShare;
  // Events of the id in the bucket below which it is never hot. Default: kDefaultHotMinEvents.
  uint64_t min_events = kDefaultHotMinEvents;

  // `id_events` of the bucket's `bucket_events` (both counting the event being placed).
  bool IsHot(uint64_t id_events, uint64_t bucket_events) const {
    return id_events >= min_events &&
           static_cast<double>(id_events) >= hot_share * static_cast<double>(bucket_events);
  }
};

// Computes salts. Pure: the same inputs always give the same salt, on any machine, in any version.
//
// - kRecord: RecordSalt, (hash(topic, partition) + offset) mod salts. Consecutive offsets of a
//   partition rotate through the salts, so the distribution over salts is as even as it can be
//   (within one event per partition) no matter how skewed the ids are.
// - kId: XXH3(id, seed) mod salts, seeded apart from IdHash.
// - kAdaptive: HomeSalt(IdHash(id)) for a cold id, RecordSalt for the rows of an id while it is
//   hot in their bucket. The home salt is a function of the 64-bit id hash alone, so that a
//   stored key tells by itself whether its row was spread (its salt is not its hash's home).
//
// Thread-safety: immutable after construction; share freely.
class Salter {
 public:
  // REQUIRES: 1 <= salts <= kMaxSalts; 0 < hot.hot_share <= 1 (used with kAdaptive only).
  Salter(int salts, SaltBy by, HotRule hot = HotRule()) : salts_(salts), by_(by), hot_(hot) {}

  int salts() const { return salts_; }
  SaltBy salt_by() const { return by_; }
  const HotRule& hot_rule() const { return hot_; }

  // The salt of one record as the writer encodes it. `id` is used with kId and kAdaptive,
  // (topic, partition, offset) with kRecord. With kAdaptive this is the home salt: the store moves
  // the rows of a hot id to RecordSalt when it writes them.
  uint8_t SaltOf(std::string_view topic, int32_t partition, int64_t offset,
                 std::string_view id) const;

  // The salt every event of `id` has under kId. REQUIRES: salt_by() == kId.
  uint8_t SaltOfId(std::string_view id) const;

  // The kRecord salt of (topic, partition, offset), whatever salt_by() is.
  uint8_t RecordSalt(std::string_view topic, int32_t partition, int64_t offset) const;

  // Under kAdaptive, the salt of the rows of an id while it is cold in their bucket: the top 32
  // bits of the id hash scaled to the salt count (the id filter and the prefix bloom index by the
  // low bits). Defined for any salt_by().
  uint8_t HomeSalt(uint64_t id_hash) const {
    return static_cast<uint8_t>(((id_hash >> 32) * static_cast<uint64_t>(salts_)) >> 32);
  }

 private:
  int salts_;
  SaltBy by_;
  HotRule hot_;
};

}  // namespace hotrow::keying
