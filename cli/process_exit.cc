#include "cli/process_exit.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "cli/commands.h"

namespace hotrow::cli {

int ExitCodeForStartFailure(const Status& st) {
  switch (st.code()) {
    // A store.path that is not a hotrow store, or one made with other salts, is a configuration
    // error; a damaged store (kCorruption) is a runtime failure.
    case Status::Code::kIncompatible:
    case Status::Code::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

int StopWithin(std::chrono::milliseconds budget, const std::function<Status()>& stop,
               const std::function<bool()>& ingestion_stopped) {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread watchdog([&] {
    pthread_setname_np(pthread_self(), "stop-watchdog");
    std::unique_lock<std::mutex> lock(mu);
    if (done_cv.wait_for(lock, budget, [&] { return done; })) return;
    const bool safe = ingestion_stopped();
    spdlog::error("stop: not done after {} ms; exiting now ({})", budget.count(),
                  safe ? "ingestion had stopped: nothing consumed is lost"
                       : "ingestion had not stopped: the tail will be consumed again at restart");
    spdlog::default_logger()->flush();
    std::_Exit(safe ? kExitOk : kExitFailure);
  });
  Status st = stop();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  done_cv.notify_all();
  watchdog.join();
  if (!st.ok()) {
    spdlog::error("stop: {}", st.ToString());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace hotrow::cli
