// What the keying tests share: how a RowKey prints in a failure, and the byte-order range test
// every key range is checked against.
#pragma once

#include <ostream>
#include <string>

#include "keying/row_key.h"

namespace hotrow::keying {

// gtest finds this by argument-dependent lookup, so failures show the fields, not raw bytes.
inline void PrintTo(const RowKey& k, std::ostream* os) {
  *os << "{salt=" << int{k.salt} << " id_hash=0x" << std::hex << k.id_hash << std::dec
      << " ts=" << k.ts_ms << " topic=" << k.topic << " partition=" << k.partition
      << " offset=" << k.offset << "}";
}

// Whether `key` lies in the half-open range, by plain byte comparison (what RocksDB's bytewise
// comparator does); an empty limit is +infinity.
inline bool InRange(const std::string& key, const KeyRange& range) {
  return key >= range.start && (range.limit.empty() || key < range.limit);
}

}  // namespace hotrow::keying
