#pragma once

#include <atomic>
#include <cstdint>

namespace hotrow {

// A source of "now" in milliseconds since the Unix epoch. The store and ingest ask it rather than
// the system so that tests can move time by hand (expiry, stalls) without sleeping.
//
// Thread-safety: implementations are safe to call from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMs() const = 0;
};

// The system's real-time clock.
class WallClock final : public Clock {
 public:
  int64_t NowMs() const override;
  // A process-wide instance; never destroyed.
  static const WallClock* Default();
};

// Milliseconds since an arbitrary start that never moves back (std::chrono::steady_clock): for
// ages and deadlines, which a wall clock set back or forward (NTP, an operator) would stretch or
// cut. Its values mean nothing across processes.
class MonotonicClock final : public Clock {
 public:
  int64_t NowMs() const override;
  // A process-wide instance; never destroyed.
  static const MonotonicClock* Default();
};

// A clock that moves only when told to. For tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t now_ms) : now_ms_(now_ms) {}
  int64_t NowMs() const override { return now_ms_.load(std::memory_order_acquire); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms, std::memory_order_release); }
  void Advance(int64_t delta_ms) { now_ms_.fetch_add(delta_ms, std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace hotrow
