#include "http/worker_pool.h"

#include <pthread.h>

#include <utility>

namespace hotrow::http {

WorkerPool::WorkerPool(std::string name, int threads) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, thread_name = name + "-" + std::to_string(i)] {
      pthread_setname_np(pthread_self(), thread_name.substr(0, 15).c_str());
      Run();
    });
  }
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::Submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      const bool behind_busy = idle_ <= queue_.size();
      queue_.push_back(std::move(job));
      ready_.notify_one();
      return behind_busy;
    }
  }
  job();
  return false;
}

bool WorkerPool::TrySubmitNow(std::function<void()> job) {
  std::lock_guard lock(mu_);
  if (stopping_ || idle_ <= queue_.size()) return false;
  queue_.push_back(std::move(job));
  ready_.notify_one();
  return true;
}

void WorkerPool::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, and nothing left
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // what it holds goes before the next job starts
    lock.lock();
  }
}

}  // namespace hotrow::http
