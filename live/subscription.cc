#include "live/subscription.h"

#include <tuple>
#include <utility>

namespace hotrow::live {

Subscription::Subscription(StreamSpec spec, size_t max_buffered, StreamPosition start)
    : spec_(std::move(spec)), max_buffered_(max_buffered), start_(std::move(start)) {}

Subscription::State Subscription::Take(std::chrono::steady_clock::time_point deadline,
                                       std::vector<LiveEventPtr>* out) {
  std::unique_lock lock(mu_);
  ready_.wait_until(lock, deadline, [&] {
    return !replay_.empty() || !queue_.empty() || state_ != State::kOpen;
  });
  if (!replay_.empty()) {
    for (LiveEventPtr& e : replay_) out->push_back(std::move(e));
    replay_.clear();
  }
  for (LiveEventPtr& e : queue_) out->push_back(std::move(e));
  queue_.clear();
  waiting_.clear();
  return state_;
}

void Subscription::Close(std::string reason) {
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kOpen) return;
    state_ = State::kClosed;
    reason_ = std::move(reason);
  }
  ready_.notify_all();
  Wake();
}

bool Subscription::TooSlow(std::string reason) {
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kOpen) return false;
    state_ = State::kTooSlow;
    reason_ = std::move(reason);
  }
  ready_.notify_all();
  Wake();
  return true;
}

std::string Subscription::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

void Subscription::SetReplay(std::vector<LiveEventPtr> events) {
  {
    std::lock_guard lock(mu_);
    replay_ = std::move(events);
  }
  ready_.notify_all();
  Wake();
}

bool Subscription::Push(const LiveEventPtr& event) {
  if (event->offset < start_.NextOf(event->tp)) return false;  // stored before the subscription
  bool too_slow = false;
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kOpen) return false;
    if (spec_.kind == StreamSpec::Kind::kLatest) {
      auto it = waiting_.find(event->id);
      if (it != waiting_.end()) {
        const LiveEvent& waiting = **it->second;
        // The newest in the contract's order (ts, then topic, partition, offset) stays.
        if (std::tie(waiting.ts_ms, waiting.tp, waiting.offset) >
            std::tie(event->ts_ms, event->tp, event->offset)) {
          return false;
        }
        queue_.erase(it->second);
        queue_.push_back(event);
        it->second = std::prev(queue_.end());
        return false;  // replaced: the queue did not grow
      }
    }
    if (queue_.size() >= max_buffered_) {
      state_ = State::kTooSlow;
      too_slow = true;
      reason_ = "too slow: more than " + std::to_string(max_buffered_) +
                " events waited to be sent; resume from the last id";
    } else {
      queue_.push_back(event);
      if (spec_.kind == StreamSpec::Kind::kLatest) {
        waiting_.emplace(event->id, std::prev(queue_.end()));
      }
    }
  }
  ready_.notify_one();
  Wake();
  return too_slow;
}

void Subscription::SetWaker(std::function<void()> wake) {
  {
    std::lock_guard lock(mu_);
    waker_ = std::make_shared<const std::function<void()>>(std::move(wake));
  }
  Wake();  // what is ready already
}

void Subscription::Wake() {
  std::shared_ptr<const std::function<void()>> waker;
  {
    std::lock_guard lock(mu_);
    waker = waker_;
  }
  if (waker != nullptr && *waker) (*waker)();
}

}  // namespace hotrow::live
