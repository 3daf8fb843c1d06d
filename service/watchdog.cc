#include "service/watchdog.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "common/time_format.h"
#include "service/notifier.h"

namespace hotrow::service {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace {

// The poller and writer rules of JudgeHealth for one consumer; `poller` and `write` name its parts
// in the message.
Status JudgeIngest(const ingest::IngestLiveness& live, int64_t now_ms, int64_t watching_since_ms,
                   int64_t stuck_after_ms, const std::string& poller, const std::string& write) {
  if (live.poll_began_ms == 0) {
    if (now_ms - watching_since_ms < stuck_after_ms) return Status::Ok();  // not yet due
    return Status::Busy(poller + " has not begun");
  }
  const int64_t since_poll = now_ms - live.poll_began_ms;
  if (since_poll >= stuck_after_ms) {
    return Status::Busy(poller + " has not iterated for " + FormatDurationMs(since_poll));
  }
  if (live.oldest_write_began_ms != 0) {
    const int64_t writing = now_ms - live.oldest_write_began_ms;
    if (writing >= stuck_after_ms) {
      return Status::Busy(write + " has been under way for " + FormatDurationMs(writing));
    }
  }
  return Status::Ok();
}

}  // namespace

Status JudgeHealth(const HealthInputs& in, int64_t stuck_after_ms) {
  HOTROW_RETURN_IF_ERROR(JudgeIngest(in.ingest, in.now_ms, in.watching_since_ms, stuck_after_ms,
                                     "the ingest poller", "a store write"));
  if (in.standby) {
    HOTROW_RETURN_IF_ERROR(JudgeIngest(*in.standby, in.now_ms, in.watching_since_ms, stuck_after_ms,
                                       "the standby consumer's poller",
                                       "a store write of the standby consumer"));
  }
  if (!in.http.ok()) return Status::Busy("the HTTP API does not answer: " + in.http.message());
  return Status::Ok();
}

Watchdog::Watchdog(Probes probes, int64_t interval_us)
    : probes_(std::move(probes)), interval_ms_(std::max<int64_t>(interval_us / 1000, 4)) {
  if (interval_us <= 0) return;
  spdlog::info("watchdog: WATCHDOG=1 every {} while healthy (stuck means {} without progress)",
               FormatDurationMs(interval_ms_ / 4), FormatDurationMs(interval_ms_ / 2));
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-watchdog");
    Run();
  });
}

Watchdog::~Watchdog() { Stop(); }

void Watchdog::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::Run() {
  const int64_t period_ms = interval_ms_ / 4;
  const int64_t stuck_after_ms = interval_ms_ / 2;
  bool healthy = true;
  const int64_t watching_since_ms = SteadyMs();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    HealthInputs in;
    in.watching_since_ms = watching_since_ms;
    in.ingest = probes_.ingest();
    if (probes_.standby) in.standby = probes_.standby();
    in.http = probes_.http(static_cast<int>(std::max<int64_t>(period_ms, 1)));
    in.now_ms = SteadyMs();
    const Status health = JudgeHealth(in, stuck_after_ms);
    if (health.ok()) {
      NotifyManager("WATCHDOG=1");
      if (!healthy) {
        spdlog::info("watchdog: healthy again; WATCHDOG=1 resumes");
        NotifyManager("STATUS=healthy");
      }
    } else if (healthy) {
      spdlog::warn("watchdog: not healthy, WATCHDOG=1 withheld: {}", health.message());
      NotifyManager("STATUS=not healthy: " + health.message());
    }
    healthy = health.ok();
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(period_ms), [this] { return stopping_; });
  }
}

}  // namespace hotrow::service
