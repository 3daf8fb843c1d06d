#include "common/time_format.h"

#include <charconv>
#include <cstdio>

namespace hotrow {
namespace {

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `n` decimal digits at text[*pos]; false if any is missing.
bool ReadDigits(std::string_view text, size_t* pos, int n, unsigned* out) {
  if (*pos + n > text.size()) return false;
  unsigned v = 0;
  for (int i = 0; i < n; ++i) {
    char c = text[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Expect(std::string_view text, size_t* pos, char c1, char c2 = 0) {
  if (*pos >= text.size()) return false;
  char c = text[*pos];
  if (c == c1 || (c2 != 0 && c == c2)) {
    ++*pos;
    return true;
  }
  return false;
}

Status BadTime(std::string_view text) {
  std::string shown(text.substr(0, 64));
  return Status::InvalidArgument("expected milliseconds since the epoch or an RFC 3339 time such as "
                                 "2024-01-02T03:04:05Z, got \"" + shown + "\"");
}

}  // namespace

Result<int64_t> ParseRfc3339Ms(std::string_view text) {
  size_t pos = 0;
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, &pos, 4, &year) || !Expect(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &month) || !Expect(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &day) || !Expect(text, &pos, 'T', 't') ||
      !ReadDigits(text, &pos, 2, &hour) || !Expect(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &minute) || !Expect(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &second)) {
    return BadTime(text);
  }
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) || hour > 23 ||
      minute > 59 || second > 60) {  // 60: a leap second, counted as the next second's start
    return BadTime(text);
  }
  int64_t millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return BadTime(text);
    for (int i = digits; i < 3; ++i) millis *= 10;
  }
  int64_t offset_minutes = 0;
  if (Expect(text, &pos, 'Z', 'z')) {
    // UTC
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const bool negative = text[pos] == '-';
    ++pos;
    unsigned oh = 0, om = 0;
    if (!ReadDigits(text, &pos, 2, &oh) || !Expect(text, &pos, ':') ||
        !ReadDigits(text, &pos, 2, &om) || oh > 23 || om > 59) {
      return BadTime(text);
    }
    offset_minutes = (negative ? -1 : 1) * static_cast<int64_t>(oh * 60 + om);
  } else {
    return BadTime(text);
  }
  if (pos != text.size()) return BadTime(text);

  const int64_t days = DaysFromCivil(year, month, day);
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
  if (seconds < 0) return Status::InvalidArgument("time before 1970-01-01 is not allowed: \"" +
                                                  std::string(text.substr(0, 64)) + "\"");
  return seconds * 1000 + millis;
}

Result<int64_t> ParseTimeMs(std::string_view text) {
  if (text.empty()) return BadTime(text);
  if (text.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t ms = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return Status::InvalidArgument("time in milliseconds is out of range: \"" +
                                     std::string(text.substr(0, 64)) + "\"");
    }
    return ms;
  }
  return ParseRfc3339Ms(text);
}

std::string FormatRfc3339Ms(int64_t ms) {
  if (ms < 0) return "invalid-time(" + std::to_string(ms) + ")";
  const int64_t seconds = ms / 1000;
  const int64_t days = seconds / 86400;
  const int64_t rem = seconds % 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ",
                static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60),
                static_cast<long long>(ms % 1000));
  return buf;
}

Result<int64_t> ParseDurationMs(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("expected a duration such as 500ms, 20s, 10m or 1h, got \"" +
                                   std::string(text.substr(0, 64)) + "\"");
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return bad();
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || ptr != text.data() + digits) return bad();
  std::string_view unit = text.substr(digits);
  int64_t scale;
  if (unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else return bad();
  if (value > INT64_MAX / scale) return bad();
  return value * scale;
}

Result<int64_t> ParseIntervalMs(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "expected milliseconds or an interval such as 500ms, 30s, 1m, 1h, 1d, 1w or 1y, got \"" +
        std::string(text.substr(0, 64)) + "\"");
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return bad();
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || ptr != text.data() + digits) return bad();
  const std::string_view unit = text.substr(digits);
  int64_t scale;
  if (unit.empty() || unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else if (unit == "d") scale = 86'400'000;
  else if (unit == "w") scale = 7 * 86'400'000LL;
  else if (unit == "y") scale = 365 * 86'400'000LL;
  else return bad();
  if (value > INT64_MAX / scale) return bad();
  return value * scale;
}

std::string FormatDurationMs(int64_t ms) {
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace hotrow
