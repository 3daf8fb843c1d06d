#include "query/thread_pool.h"

#include <pthread.h>

namespace hotrow::query {

ThreadPool::ThreadPool(int threads, const std::string& name) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Run(); });
    std::string thread_name = (name + "-" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), thread_name.c_str());
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

bool ThreadPool::HasWaitingTasks() {
  std::lock_guard lock(mu_);
  return !tasks_.empty();
}

void ThreadPool::Run() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace hotrow::query
