#pragma once

#include <string>
#include <string_view>

namespace hotrow::keying {

// The stored value of one event:
//
//   +-------------+-----------------+-------------------------------+
//   | id_len u16  |   id (id_len)   |  payload (the record's JSON)  |
//   +-------------+-----------------+-------------------------------+
//
// The full id sits beside the payload so that a read can compare it with the id asked for: the
// key holds only a 64-bit hash of it.
inline constexpr size_t kMaxIdSize = 256;

// REQUIRES: id.size() <= kMaxIdSize.
std::string EncodeRowValue(std::string_view id, std::string_view payload);
void EncodeRowValueTo(std::string_view id, std::string_view payload, std::string* out);

// Splits a stored value. Returns false when `value` is too short for the length it announces or
// the id is longer than kMaxIdSize. The views point into `value`.
bool DecodeRowValue(std::string_view value, std::string_view* id, std::string_view* payload);

}  // namespace hotrow::keying
