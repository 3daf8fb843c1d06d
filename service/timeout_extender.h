#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace hotrow::service {

// Keeps the service manager's start timeout (systemd's TimeoutStartSec=, 90 s by default) from
// killing a start that is slow but moving: the store's open, which for a cold, large store reads
// every bucket's table files and replays its write-ahead log. While it lives, it sends
// `EXTEND_TIMEOUT_USEC=<3 periods>` and `STATUS=<what> (for <elapsed>)` at once and then every
// `period_ms` (service/notifier.h), so the manager waits at least three more periods after each.
// It extends for as long as the step takes: a step that hangs for good is not ended by the start
// timeout (an open that hangs would hang again at a restart; `systemctl stop` still ends it).
// Without $NOTIFY_SOCKET, or in a build without libsystemd, it starts no thread.
//
// Thread-safety: constructed and destroyed by one thread; runs its own (`hotrow-extend`).
class TimeoutExtender {
 public:
  static constexpr int64_t kDefaultPeriodMs = 10'000;  // 30 s granted every 10 s

  // `what` names the step for STATUS= ("opening the store at /var/lib/hotrow").
  explicit TimeoutExtender(std::string what, int64_t period_ms = kDefaultPeriodMs);
  ~TimeoutExtender();  // ends the thread; sends nothing more
  TimeoutExtender(const TimeoutExtender&) = delete;
  TimeoutExtender& operator=(const TimeoutExtender&) = delete;

 private:
  void Run();

  const std::string what_;
  const int64_t period_ms_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
};

}  // namespace hotrow::service
