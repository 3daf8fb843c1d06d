#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "common/status.h"
#include "ingest/ingestor.h"

namespace hotrow::service {

// The definition of healthy that WATCHDOG=1 vouches for (CONTRACT.md "Running as a service"), for
// a watchdog interval W (systemd's WatchdogSec=, $WATCHDOG_USEC):
// - the ingest poller began an iteration of its loop less than W/2 ago (it begins one at least
//   every 100 ms unless it is held);
// - no store writer has been inside one write for W/2 or longer (the poller alone keeps looping
//   while the writers are wedged, its partitions paused: its pings would prove nothing);
// - the HTTP listener accepts and answers: GET /healthz over loopback returned 200 within W/4;
// - with cluster.standby_replicas, the same of the standby consumer (it has its own poller and
//   writers): a standby poller wedged keeps the partitions it follows from being fresh, which
//   the owner's poller looping would never show.
// A full disk is not unhealthy: writes fail at once, ingestion is paused and resumes by itself
// (`/readyz` says so); restarting would not bring space back.
struct HealthInputs {
  int64_t now_ms = 0;  // steady clock, as IngestLiveness
  // When the watchdog began to watch (same clock): a poller that has not begun its first iteration
  // is stuck only once the bound has passed since then (the standby consumer's starts last, and
  // may not have begun by the first round).
  int64_t watching_since_ms = 0;
  ingest::IngestLiveness ingest;
  Status http;  // the result of http::ProbeHealthz
  // The standby consumer's, when the process runs one (cluster.standby_replicas > 0).
  std::optional<ingest::IngestLiveness> standby;
};

// Ok when `in` is healthy for the bound `stuck_after_ms` (W/2); else Busy naming the first part
// found stuck and for how long ("store write under way for 3.2 s"). Pure.
Status JudgeHealth(const HealthInputs& in, int64_t stuck_after_ms);

// A thread that checks health every W/4 and sends WATCHDOG=1 (service/notifier.h) each time it
// holds, so the manager hears from a healthy process at least every W/2 and restarts one that has
// been stuck for W. A change between healthy and not is logged (a warning naming what is stuck,
// then an info line when it recovers) and sent as STATUS=.
//
// Thread-safety: constructed and destroyed by one thread; runs its own.
class Watchdog {
 public:
  // What the watchdog reads each round: the steady-clock time is taken by the watchdog.
  struct Probes {
    std::function<ingest::IngestLiveness()> ingest;
    std::function<Status(int timeout_ms)> http;
    // The standby consumer's liveness, nullopt while there is none; may be left empty.
    std::function<std::optional<ingest::IngestLiveness>()> standby;
  };
  // Starts the thread (`hotrow-watchdog`) when `interval_us` > 0; else does nothing.
  Watchdog(Probes probes, int64_t interval_us);
  ~Watchdog();  // Stop()s
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Ends the thread after its current round (at most the HTTP probe's timeout). Idempotent.
  void Stop();

 private:
  void Run();

  const Probes probes_;
  const int64_t interval_ms_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
};

}  // namespace hotrow::service
