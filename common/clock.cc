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

int64_t SteadyClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const SteadyClock* SteadyClock::Default() {
  static const SteadyClock* clock = new SteadyClock();
  return clock;
}

}  // namespace hotrow
