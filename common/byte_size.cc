#include "common/byte_size.h"

#include <charconv>

namespace hotrow {

Result<int64_t> ParseByteSize(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("expected a size such as 64MiB or 1GiB (units B, KiB, MiB, "
                                   "GiB, TiB), got \"" + std::string(text.substr(0, 64)) + "\"");
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return bad();
  int64_t number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc() || ptr != text.data() + digits) return bad();
  const std::string_view unit = text.substr(digits);
  int shift = 0;
  if (unit == "KiB") {
    shift = 10;
  } else if (unit == "MiB") {
    shift = 20;
  } else if (unit == "GiB") {
    shift = 30;
  } else if (unit == "TiB") {
    shift = 40;
  } else if (!unit.empty() && unit != "B") {
    return bad();
  }
  if (number > (INT64_MAX >> shift)) return bad();
  return number << shift;
}

std::string FormatByteSize(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

}  // namespace hotrow
