#include "common/thread_priority.h"

#include <sched.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace hotrow {

bool RunAsBatchThread() {
  thread_local const bool batch = [] {
    sched_param param{};
    param.sched_priority = 0;
    // A tid of 0 is the calling thread alone: Linux keeps a policy per thread.
    if (sched_setscheduler(0, SCHED_BATCH, &param) == 0) return true;
    static std::atomic<bool> told{false};
    if (!told.exchange(true)) {
      spdlog::warn("writer threads keep the default scheduling policy: SCHED_BATCH refused ({})",
                   std::strerror(errno));
    }
    return false;
  }();
  return batch;
}

bool IsBatchThread(int tid) { return sched_getscheduler(tid) == SCHED_BATCH; }

}  // namespace hotrow
