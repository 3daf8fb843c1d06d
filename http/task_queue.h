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

// Connection threads for httplib: named workers (http-N), at most `threads`, and a bounded queue.
// httplib's own ThreadPool queues without bound, so a flood of connections would pile up in
// memory; here the acceptor waits instead, and the kernel's backlog absorbs (then refuses) the
// rest.
//
// cpp-httplib serves a keep-alive connection on one thread until it closes, so a connection
// queued here waits for another to close, not for a request to end. A worker is started whenever
// a connection is queued and no idle worker is left to take it (up to `threads`), and is kept
// once started: an open connection is never queued behind others while the limit allows, which
// is what keeps a peer's `?local=true` connection from waiting behind client connections whose
// queries wait on that very peer (DESIGN.md, "A fan-out never waits on what its peers need").
//
// Thread-safety: enqueue() is called by httplib's acceptor; shutdown() by httplib once the
// acceptor has stopped, and again by the destructor.
class BoundedTaskQueue final : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(int threads, size_t capacity);
  ~BoundedTaskQueue() override;

  // Waits for room, then queues `fn`, starting a worker for it when none is idle. Even during
  // shutdown the task must run: it is what closes the accepted socket.
  void enqueue(std::function<void()> fn) override;

  // Runs what is queued, then joins the workers. A second call finds nothing to join.
  void shutdown() override;

  // Workers started so far.
  size_t workers() const;

  // The calling worker writes a live stream from now on (http/stream_handlers.cc): it no longer
  // counts toward `threads`, and a connection waiting for a thread gets a new one. StreamEnds
  // returns it to the pool (kept idle; the pool may then hold more than `threads`, at most
  // `threads` + the streams open at once).
  void StreamBegins();
  void StreamEnds();

 private:
  void StartWorkerLocked();  // REQUIRES: mu_ held
  void Work();

  const size_t max_threads_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable space_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  size_t idle_ = 0;                          // workers waiting for a task; guarded by mu_
  size_t streaming_ = 0;                     // workers writing a live stream; guarded by mu_
  bool shutdown_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;         // guarded by mu_
};

}  // namespace hotrow::http
