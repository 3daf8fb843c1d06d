#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/clock.h"

namespace hotrow {

void InitLogging(std::string_view level) {
  std::shared_ptr<spdlog::logger> logger = spdlog::get("hotrow");
  if (logger == nullptr) {
    logger = spdlog::stderr_color_mt("hotrow");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
  }
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
  spdlog::set_level(lvl);
  spdlog::flush_on(spdlog::level::warn);
}

bool RateLimiter::Allow(uint64_t* suppressed) {
  const int64_t now = WallClock::Default()->NowMs();
  int64_t start = window_start_ms_.load(std::memory_order_relaxed);
  if (now - start >= interval_ms_ &&
      window_start_ms_.compare_exchange_strong(start, now, std::memory_order_relaxed)) {
    in_window_.store(0, std::memory_order_relaxed);
  }
  if (in_window_.fetch_add(1, std::memory_order_relaxed) < per_interval_) {
    *suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
    return true;
  }
  suppressed_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace hotrow
