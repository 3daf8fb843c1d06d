#include "http/task_queue.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

namespace hotrow::http {

BoundedTaskQueue::BoundedTaskQueue(int threads, size_t capacity)
    : max_threads_(static_cast<size_t>(std::max(1, threads))), capacity_(capacity) {}

BoundedTaskQueue::~BoundedTaskQueue() { shutdown(); }

void BoundedTaskQueue::StartWorkerLocked() {
  const size_t i = workers_.size();
  workers_.emplace_back([this, i] {
    const std::string name = "http-" + std::to_string(i);
    pthread_setname_np(pthread_self(), name.c_str());
    Work();
  });
}

void BoundedTaskQueue::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  space_.wait(lock, [&] { return tasks_.size() < capacity_ || shutdown_; });
  tasks_.push_back(std::move(fn));
  if (tasks_.size() > idle_ && workers_.size() - streaming_ < max_threads_) {
    StartWorkerLocked();
  } else {
    ready_.notify_one();
  }
}

void BoundedTaskQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  ready_.notify_all();
  space_.notify_all();
  while (true) {
    std::thread worker;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (workers_.empty()) return;
      worker = std::move(workers_.back());
      workers_.pop_back();
    }
    if (worker.joinable()) worker.join();
  }
}

size_t BoundedTaskQueue::workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return workers_.size();
}

void BoundedTaskQueue::StreamBegins() {
  std::lock_guard<std::mutex> lock(mu_);
  ++streaming_;
  if (!shutdown_ && tasks_.size() > idle_ && workers_.size() - streaming_ < max_threads_) {
    StartWorkerLocked();
  }
}

void BoundedTaskQueue::StreamEnds() {
  std::lock_guard<std::mutex> lock(mu_);
  if (streaming_ > 0) --streaming_;
}

void BoundedTaskQueue::Work() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      ready_.wait(lock, [&] { return !tasks_.empty() || shutdown_; });
      --idle_;
      if (tasks_.empty()) return;  // shut down and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      space_.notify_one();
    }
    try {
      task();
    } catch (const std::exception& e) {
      spdlog::error("http: connection task failed: {}", e.what());
    } catch (...) {
      spdlog::error("http: connection task failed with an unknown exception");
    }
  }
}

}  // namespace hotrow::http
