#include "service/timeout_extender.h"

#include <pthread.h>

#include <chrono>
#include <utility>

#include "common/time_format.h"
#include "service/notifier.h"

namespace hotrow::service {

TimeoutExtender::TimeoutExtender(std::string what, int64_t period_ms)
    : what_(std::move(what)), period_ms_(period_ms > 0 ? period_ms : kDefaultPeriodMs) {
  if (!ManagerListening()) return;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-extend");
    Run();
  });
}

TimeoutExtender::~TimeoutExtender() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TimeoutExtender::Run() {
  const auto began = std::chrono::steady_clock::now();
  // Three periods: one late message (a stalled scheduler, a busy manager) does not let the
  // timeout pass.
  const std::string extend = "EXTEND_TIMEOUT_USEC=" + std::to_string(3 * period_ms_ * 1000);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const int64_t elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - began)
                                   .count();
    NotifyManager(extend + "\nSTATUS=" + what_ +
                  (elapsed_ms > 0 ? " (for " + FormatDurationMs(elapsed_ms) + ")" : ""));
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(period_ms_), [this] { return stopping_; });
  }
}

}  // namespace hotrow::service
