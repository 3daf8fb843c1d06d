#include "ingest/protobuf_well_known.h"

#include <cstdio>
#include <cstdlib>

namespace hotrow::ingest {
namespace {

constexpr int64_t kMinTimestampSeconds = -62135596800;  // 0001-01-01T00:00:00Z
constexpr int64_t kMaxTimestampSeconds = 253402300799;  // 9999-12-31T23:59:59Z
constexpr int64_t kMaxDurationSeconds = 315576000000;   // 10,000 years

// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
// civil_from_days).
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

// Appends ".ddd", ".dddddd" or ".ddddddddd", the fewest that hold `nanos` (nothing for 0).
void AppendFraction(int32_t nanos, std::string* out) {
  if (nanos == 0) return;
  char buf[16];
  if (nanos % 1000000 == 0) {
    std::snprintf(buf, sizeof buf, ".%03d", nanos / 1000000);
  } else if (nanos % 1000 == 0) {
    std::snprintf(buf, sizeof buf, ".%06d", nanos / 1000);
  } else {
    std::snprintf(buf, sizeof buf, ".%09d", nanos);
  }
  out->append(buf);
}

}  // namespace

bool AppendJsonTimestamp(int64_t seconds, int32_t nanos, std::string* out) {
  if (seconds < kMinTimestampSeconds || seconds > kMaxTimestampSeconds || nanos < 0 ||
      nanos > 999999999) {
    return false;
  }
  // Floor division: a time before 1970 is a negative day and a positive second of that day.
  int64_t days = seconds / 86400;
  int64_t rem = seconds % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"%04lld-%02u-%02uT%02lld:%02lld:%02lld",
                static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  out->append(buf);
  AppendFraction(nanos, out);
  out->append("Z\"");
  return true;
}

bool AppendJsonDuration(int64_t seconds, int32_t nanos, std::string* out) {
  if (seconds < -kMaxDurationSeconds || seconds > kMaxDurationSeconds || nanos <= -1000000000 ||
      nanos >= 1000000000 || (seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0)) {
    return false;
  }
  out->push_back('"');
  if (seconds < 0 || nanos < 0) out->push_back('-');
  out->append(std::to_string(std::llabs(seconds)));
  AppendFraction(std::abs(nanos), out);
  out->append("s\"");
  return true;
}

void AppendFieldMaskPath(std::string_view path, std::string* out) {
  bool upper = false;
  for (char c : path) {
    if (c == '_') {
      upper = true;
      continue;
    }
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    upper = false;
    out->push_back(c);
  }
}

}  // namespace hotrow::ingest
