#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "keying/salter.h"
#include "store/event_store.h"

namespace hotrow::query {

// The salts a per-id query seeks in each bucket, by the store's salt_by:
// - id: the id's salt (keying::Salter::SaltOfId), in every bucket;
// - record: every salt;
// - adaptive: the id's home salt (keying::Salter::HomeSalt) in a bucket that did not spread it,
//   every salt in one that did (store::Bucket::SpreadsId).
// Callers still skip the salts the bucket's id filter rules out (store::Bucket::NewestIdTsBound).
//
// When to decide: after the read point of every cursor that reads the salts decided (a cursor
// made or refreshed, or a store::ReadPoint taken), never before. The writer marks an id spread
// before its row is readable and never unmarks it within the bucket, so a decision made after the
// read point covers every row read there: if the id is not spread then, no row of it outside its
// home salt is visible. Decided before, a write that turns the id hot in between is read half
// (its rows in the home salt, not those in the others). The id filter's bounds are the same.
//
// Thread-safety: not safe for concurrent use; one per query.
class IdSalts {
 public:
  IdSalts(const keying::Salter& salter, std::string_view id);

  // In ascending order; never empty.
  const std::vector<uint8_t>& In(const store::Bucket& bucket) const {
    if (adaptive_ && bucket.SpreadsId(id_hash_)) return all_;
    return narrow_.empty() ? all_ : narrow_;
  }
  uint64_t id_hash() const { return id_hash_; }

 private:
  const uint64_t id_hash_;
  const bool adaptive_;
  std::vector<uint8_t> all_;     // every salt
  std::vector<uint8_t> narrow_;  // the id's one salt (id, adaptive); empty under record
};

}  // namespace hotrow::query
