#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hotrow {

// Sizes in configuration: a non-negative integer and an optional binary unit, "B", "KiB", "MiB",
// "GiB" or "TiB" ("256MiB", "1GiB", "4096"). No spaces, no decimal units (MB is refused, so that
// nobody wonders whether it means 10^6 or 2^20). InvalidArgument, naming the units, for anything
// else or a size that does not fit in int64_t.
Result<int64_t> ParseByteSize(std::string_view text);

// The inverse: the largest unit that divides `bytes` exactly, 268435456 -> "256MiB".
std::string FormatByteSize(int64_t bytes);

}  // namespace hotrow
