#pragma once

// What the row and the index key codecs share (row_key.cc, index_key.cc): both keys end with the
// same tail (keying/row_key.h, KeyTail), which starts with the reversed time.

#include <cstdint>
#include <string>

namespace hotrow::keying {

// The smallest key that starts with `prefix` (everything before the tail) and whose reversed time
// is `rev`: the tail's other bytes zero.
std::string AtReversedTime(const std::string& prefix, uint64_t rev);

}  // namespace hotrow::keying
