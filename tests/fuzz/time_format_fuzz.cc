// Fuzz target: time and duration parsing (common/time_format.h), used for event times, the HTTP
// from/to parameters and every duration of the config.
//
// Input: text, read as a time, an RFC 3339 time and a duration; its first 8 bytes are also read as
// a number of milliseconds to format.
//
// Properties:
// - an accepted time is >= 0, and ParseTimeMs agrees with ParseRfc3339Ms on RFC 3339 text;
// - format then parse gives the same milliseconds back, for times and durations;
// - an accepted "YYYY-MM-DDThh:mm:ss" UTC time (no leap second) formats back to the same fields:
//   the day arithmetic is checked against the text itself, not only against its own inverse;
// - an accepted duration is >= 0.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/time_format.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using hotrow::Result;

// The last millisecond FormatRfc3339Ms writes with a four-digit year (9999-12-31T23:59:59.999Z).
constexpr int64_t kMaxFourDigitYearMs = 253'402'300'799'999;

void CheckFormatRoundTrip(int64_t ms) {
  if (ms < 0 || ms > kMaxFourDigitYearMs) return;
  Result<int64_t> parsed = hotrow::ParseRfc3339Ms(hotrow::FormatRfc3339Ms(ms));
  FUZZ_CHECK(parsed.ok() && *parsed == ms);
  Result<int64_t> digits = hotrow::ParseTimeMs(std::to_string(ms));
  FUZZ_CHECK(digits.ok() && *digits == ms);
}

void CheckDurationRoundTrip(int64_t ms) {
  if (ms < 0) return;
  Result<int64_t> parsed = hotrow::ParseDurationMs(hotrow::FormatDurationMs(ms));
  FUZZ_CHECK(parsed.ok() && *parsed == ms);
}

// "YYYY-MM-DDThh:mm:ss" followed by a fraction or Z: the formatted time must repeat those fields.
void CheckFieldsKept(std::string_view text, int64_t ms) {
  if (text.size() < 20 || text.substr(17, 2) == "60") return;
  const char after = text[19];
  const bool utc = after == '.' ? text.back() == 'Z' || text.back() == 'z'
                                : after == 'Z' || after == 'z';
  if (!utc) return;
  std::string fields(text.substr(0, 19));
  fields[10] = 'T';
  FUZZ_CHECK(hotrow::FormatRfc3339Ms(ms).compare(0, 19, fields) == 0);
}

void CheckTime(std::string_view text) {
  Result<int64_t> any = hotrow::ParseTimeMs(text);
  Result<int64_t> rfc = hotrow::ParseRfc3339Ms(text);
  if (any.ok()) FUZZ_CHECK(*any >= 0);
  if (rfc.ok()) {
    FUZZ_CHECK(*rfc >= 0);
    FUZZ_CHECK(any.ok() && *any == *rfc);
    CheckFieldsKept(text, *rfc);
  } else {
    FUZZ_CHECK(!rfc.status().message().empty());
  }
  if (any.ok()) CheckFormatRoundTrip(*any);
}

void CheckDuration(std::string_view text) {
  Result<int64_t> ms = hotrow::ParseDurationMs(text);
  if (!ms.ok()) return;
  FUZZ_CHECK(*ms >= 0);
  CheckDurationRoundTrip(*ms);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckTime(text);
  CheckDuration(text);
  int64_t raw = 0;
  if (size > 0) std::memcpy(&raw, data, std::min(size, sizeof(raw)));
  CheckFormatRoundTrip(raw & INT64_MAX);
  CheckFormatRoundTrip((raw & INT64_MAX) % (kMaxFourDigitYearMs + 1));
  CheckDurationRoundTrip(raw & INT64_MAX);
  return 0;
}
