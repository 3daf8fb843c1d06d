#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotrow::http {

// A fixed set of named threads (`name`-N) running what the transport defers to one lane
// (exchange.h, WorkLane), in order of arrival. A job that is submitted waits in the queue without
// a thread; the caller decides how long it may wait (http/transport.cc).
//
// Thread-safety: every method may be called from any thread; Stop once, by the owner.
class WorkerPool {
 public:
  WorkerPool(std::string name, int threads);
  ~WorkerPool();  // Stop()s
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `job`. After Stop, runs it on the calling thread (so that whatever waits on it ends).
  // True when no worker was idle for it: it waits behind busy workers.
  bool Submit(std::function<void()> job);
  // Queues `job` only when a worker is idle now (and none of the queued jobs is waiting for it);
  // else false and `job` is dropped.
  bool TrySubmitNow(std::function<void()> job);
  // Runs what is queued, then joins the workers.
  void Stop();

  size_t threads() const { return threads_.size(); }

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  size_t idle_ = 0;                          // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace hotrow::http
