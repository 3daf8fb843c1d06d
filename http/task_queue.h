#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hotrow::http {

// Connection threads for httplib: a fixed number of named workers (http-N) and a bounded queue.
// httplib's own ThreadPool queues without bound, so a flood of connections would pile up in
// memory; here the acceptor waits instead, and the kernel's backlog absorbs (then refuses) the
// rest.
//
// Thread-safety: enqueue() is called by httplib's acceptor; shutdown() by httplib once the
// acceptor has stopped, and again by the destructor.
class BoundedTaskQueue final : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(int threads, size_t capacity);
  ~BoundedTaskQueue() override;

  // Waits for room, then queues `fn`. Even during shutdown the task must run: it is what closes
  // the accepted socket.
  void enqueue(std::function<void()> fn) override;

  // Runs what is queued, then joins the workers. A second call finds nothing to join.
  void shutdown() override;

 private:
  void Work();

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable space_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool shutdown_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace hotrow::http
