#include "query/series_answer.h"

#include <string>

namespace hotrow::query {

Status CheckSeriesArgs(int64_t from_ms, int64_t to_ms, int64_t step_ms) {
  if (from_ms < 0) return Status::InvalidArgument("from must not be negative");
  if (from_ms >= to_ms) {
    return Status::InvalidArgument("from must be before to (from=" + std::to_string(from_ms) +
                                   ", to=" + std::to_string(to_ms) + ")");
  }
  if (step_ms < 1) return Status::InvalidArgument("step must be at least 1 ms");
  const int64_t span = to_ms - from_ms;
  const int64_t steps = span / step_ms + (span % step_ms != 0 ? 1 : 0);
  if (steps > kMaxSeriesPoints) {
    return Status::InvalidArgument("step of " + std::to_string(step_ms) +
                                   " ms cuts the range into " + std::to_string(steps) +
                                   " steps; at most " + std::to_string(kMaxSeriesPoints) +
                                   " (use a larger step, or max_points)");
  }
  return Status::Ok();
}

int64_t StepForMaxPoints(int64_t from_ms, int64_t to_ms, int64_t max_points) {
  const int64_t span = to_ms - from_ms;
  return span / max_points + (span % max_points != 0 ? 1 : 0);
}

}  // namespace hotrow::query
