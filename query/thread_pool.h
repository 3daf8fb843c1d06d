#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotrow::query {

// A fixed set of named threads running submitted tasks in FIFO order. Queries submit per-salt work
// here and never start threads of their own.
//
// Stop: the destructor lets queued tasks run, then joins every thread.
// Thread-safety: Submit may be called from any thread, including from a task.
class ThreadPool {
 public:
  // REQUIRES: threads >= 1. Threads are named "<name>-<i>".
  ThreadPool(int threads, const std::string& name);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task);
  // True when submitted tasks wait for a thread.
  bool HasWaitingTasks();
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace hotrow::query
