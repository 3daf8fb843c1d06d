#pragma once

#include <cstdint>
#include <string_view>

// Base-128 varints as Protobuf's wire format, Avro's int and long, and Confluent's message-index
// list write them (least significant group first, high bit set on every byte but the last), and
// zigzag's mapping of signed to unsigned. Pure.
namespace hotrow::ingest {

// Reads one varint of at most 10 bytes from the front of `*in` and consumes it. False when it is
// truncated or longer (then `*in` is left anywhere in it).
inline bool ReadVarint(std::string_view* in, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in->empty()) return false;
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

inline int64_t Unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace hotrow::ingest
