#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace hotrow::query {

// Series of a numeric payload field for charts (CONTRACT.md "Device state and series"): the
// events of one id (or of one indexed value) in [from, to), cut into steps of step_ms counted
// from `from`, each step's events aggregated.

inline constexpr int64_t kMaxSeriesPoints = 10000;

// from < to, 1 <= step, and at most kMaxSeriesPoints steps; else InvalidArgument naming the
// parameter.
Status CheckSeriesArgs(int64_t from_ms, int64_t to_ms, int64_t step_ms);
// The smallest step that cuts [from, to) into at most `max_points` steps: ceil((to - from) /
// max_points). REQUIRES: from < to, max_points >= 1.
int64_t StepForMaxPoints(int64_t from_ms, int64_t to_ms, int64_t max_points);

// One step with at least one number.
struct SeriesPoint {
  int64_t t_ms = 0;    // the step's start: from + i * step
  uint64_t count = 0;  // events whose field is a number
  double sum = 0;
  double min = 0;
  double max = 0;
  double last = 0;  // of the newest of them (ts, then topic name, partition, offset)
  // Where `last` was found: what a merge of several answers orders them by.
  int64_t last_ts_ms = 0;
  uint16_t last_topic = 0;  // the store's number
  int32_t last_partition = 0;
  int64_t last_offset = 0;
  double avg() const { return sum / static_cast<double>(count); }
  friend bool operator==(const SeriesPoint&, const SeriesPoint&) = default;
};

struct SeriesAnswer {
  int64_t step_ms = 0;
  std::vector<SeriesPoint> points;  // the steps with a number, oldest first
  // Events of the range counted in no point: the field is absent, or not a number
  // (query/payload_field.h).
  uint64_t absent = 0;
  uint64_t not_number = 0;
};

}  // namespace hotrow::query
