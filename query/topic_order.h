#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/event_store.h"

namespace hotrow::query {

// The contract's tie order (CONTRACT.md, "HTTP API": ties in ts by (topic, partition, offset), in
// the direction of ts) compares topics by NAME, so that every instance of a group, whatever
// numbers its store gave the topics, and the cluster's merge order ties alike. Row keys carry the
// store's topic numbers, given in the order topics were first seen; TopicOrder ranks numbers by
// name. When the ranks equal the numbers (one topic, or topics first seen in name order) the keys'
// own order is the contract's and the queries run as they always did; otherwise they reorder
// each run of events tied in time.
//
// Thread-safety: immutable after construction.
class TopicOrder {
 public:
  // The names the store knows now. Numbers it gives later rank after them, by number.
  explicit TopicOrder(const store::EventStore& store);

  uint32_t Rank(uint16_t number) const {
    return number < ranks_.size() ? ranks_[number] : static_cast<uint32_t>(number) + 65536;
  }
  // Whether Rank(n) orders numbers as n does: ties then need no reordering.
  bool InNumberOrder() const { return in_number_order_; }

 private:
  std::vector<uint32_t> ranks_;  // by number
  bool in_number_order_ = true;
};

}  // namespace hotrow::query
