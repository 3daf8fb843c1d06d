#include "query/salt_tasks.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace hotrow::query {
namespace {

// What the caller shares with the pool threads it asked for. Held by shared_ptr: a pool thread
// that starts after the caller returned finds no task left and touches only this.
struct Run {
  std::atomic<size_t> next{0};
  size_t count = 0;
  std::atomic<bool> failed{false};
  // Valid while some task may start: only dereferenced after claiming an index below `count`.
  const std::function<Status(size_t)>* task = nullptr;
  std::mutex mu;
  std::condition_variable done_cv;
  size_t finished = 0;  // guarded by mu: tasks claimed and finished (or skipped)
  Status first_error;   // guarded by mu
};

// Claims and runs tasks until none is left.
void Drain(Run* run) {
  while (true) {
    const size_t i = run->next.fetch_add(1, std::memory_order_relaxed);
    if (i >= run->count) return;
    Status st;
    if (!run->failed.load(std::memory_order_relaxed)) st = (*run->task)(i);
    std::lock_guard lock(run->mu);
    if (!st.ok() && run->first_error.ok()) {
      run->first_error = st;
      run->failed.store(true, std::memory_order_relaxed);
    }
    if (++run->finished == run->count) run->done_cv.notify_all();
  }
}

}  // namespace

Status RunSaltTasks(ThreadPool* pool, int max_workers, size_t count,
                    const std::function<Status(size_t index)>& task) {
  if (count == 0) return Status::Ok();
  auto run = std::make_shared<Run>();
  run->count = count;
  run->task = &task;
  const size_t helpers = std::min<size_t>(static_cast<size_t>(std::max(0, max_workers)), count - 1);
  for (size_t i = 0; i < helpers; ++i) pool->Submit([run] { Drain(run.get()); });
  Drain(run.get());
  std::unique_lock lock(run->mu);
  run->done_cv.wait(lock, [&] { return run->finished == run->count; });
  return run->first_error;
}

}  // namespace hotrow::query
