#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hotrow {

// Times in hotrow are int64 milliseconds since the Unix epoch, never negative.
inline constexpr int64_t kMaxTimeMs = INT64_MAX;

// Parses a time given by a user or found in an event: either integer milliseconds since the epoch
// ("1700000000000") or an RFC 3339 timestamp ("2023-11-14T22:13:20Z", "2023-11-14T23:13:20.5+01:00").
// Fractions finer than a millisecond are truncated. On error returns InvalidArgument saying what
// was expected; never throws. Times before the epoch are errors.
Result<int64_t> ParseTimeMs(std::string_view text);

// Parses only the RFC 3339 form. Same errors as ParseTimeMs.
Result<int64_t> ParseRfc3339Ms(std::string_view text);

// Formats ms since the epoch as RFC 3339 in UTC with milliseconds: "2023-11-14T22:13:20.000Z".
std::string FormatRfc3339Ms(int64_t ms);

// Parses a duration: an integer followed by a unit, one of ms, s, m, h ("500ms", "20s", "10m", "1h").
// On error returns InvalidArgument. The result is at least 0 and fits in int64 milliseconds.
Result<int64_t> ParseDurationMs(std::string_view text);

// Parses a step or interval as a dashboard writes it: integer milliseconds ("30000", Grafana's
// `${__interval_ms}`) or an integer and one of Grafana's interval units ms, s, m, h, d, w, y
// ("500ms", "30s", "1m", "2d"; `${__interval}`), where d is 24 h, w 7 d and y 365 d as Grafana
// counts them. No sign, fraction, space or compound form ("1m30s"). On error returns
// InvalidArgument naming the forms expected. The result fits in int64 milliseconds.
Result<int64_t> ParseIntervalMs(std::string_view text);

// Formats a duration with the largest unit that divides it exactly: 600000 -> "10m", 1500 -> "1500ms".
std::string FormatDurationMs(int64_t ms);

}  // namespace hotrow
