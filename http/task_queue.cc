#include "http/task_queue.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <string>
#include <utility>

namespace hotrow::http {

BoundedTaskQueue::BoundedTaskQueue(int threads, size_t capacity) : capacity_(capacity) {
  for (int i = 0; i < threads; ++i) {
    workers_.emplace_back([this, i] {
      const std::string name = "http-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      Work();
    });
  }
}

BoundedTaskQueue::~BoundedTaskQueue() { shutdown(); }

void BoundedTaskQueue::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  space_.wait(lock, [&] { return tasks_.size() < capacity_ || shutdown_; });
  tasks_.push_back(std::move(fn));
  ready_.notify_one();
}

void BoundedTaskQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  ready_.notify_all();
  space_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
}

void BoundedTaskQueue::Work() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return !tasks_.empty() || shutdown_; });
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
