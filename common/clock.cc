#include "common/clock.h"

#include <chrono>

namespace hotrow {

int64_t WallClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const WallClock* WallClock::Default() {
  static const WallClock* clock = new WallClock();
  return clock;
}

int64_t MonotonicClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const MonotonicClock* MonotonicClock::Default() {
  static const MonotonicClock* clock = new MonotonicClock();
  return clock;
}

}  // namespace hotrow
