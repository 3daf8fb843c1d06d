#include "live/subscription.h"

#include <tuple>
#include <utility>

#include "wire/event_json.h"

namespace hotrow::live {
namespace {

void AppendPartitions(const std::map<store::TopicPartition, int64_t>& partitions,
                      std::string* out) {
  out->push_back('{');
  const std::string* topic = nullptr;
  for (const auto& [tp, offset] : partitions) {
    if (topic == nullptr || *topic != tp.topic) {
      if (topic != nullptr) out->append("},");
      wire::AppendJsonString(tp.topic, out);
      out->append(":{");
      topic = &tp.topic;
    } else {
      out->push_back(',');
    }
    out->push_back('"');
    out->append(std::to_string(tp.partition));
    out->append("\":");
    out->append(std::to_string(offset));
  }
  if (topic != nullptr) out->push_back('}');
  out->push_back('}');
}

}  // namespace

std::string PartitionChange::ToJson() const {
  std::string out = "{\"added\":";
  AppendPartitions(added, &out);
  out += ",\"removed\":";
  AppendPartitions(removed, &out);
  out += '}';
  return out;
}

Subscription::Subscription(StreamSpec spec, size_t max_buffered, StreamPosition start,
                           std::string tag)
    : spec_(std::move(spec)),
      max_buffered_(max_buffered),
      start_(std::move(start)),
      tag_(std::move(tag)) {}

template <typename Out>
Subscription::State Subscription::TakeLocked(std::unique_lock<std::mutex>& lock,
                                             std::chrono::steady_clock::time_point deadline,
                                             Out&& out) {
  // A deadline already past takes what is ready without waiting (the HTTP transport's I/O
  // threads, which must never block); time_point::min() in a wait_until would not return.
  if (deadline > std::chrono::steady_clock::now()) {
    ready_.wait_until(lock, deadline, [&] {
      return !replay_.empty() || !close_after_replay_.empty() || !queue_.empty() ||
             state_ != State::kOpen;
    });
  }
  for (LiveEventPtr& e : replay_) out(StreamItem{std::move(e), nullptr});
  replay_.clear();
  if (!close_after_replay_.empty()) {
    // A cut replay: nothing live follows it (SetReplay).
    if (state_ == State::kOpen) {
      state_ = State::kClosed;
      reason_ = std::move(close_after_replay_);
    }
    close_after_replay_.clear();
  } else {
    for (StreamItem& item : queue_) out(std::move(item));
  }
  queue_.clear();
  queued_events_ = 0;
  waiting_.clear();
  return state_;
}

Subscription::State Subscription::Take(std::chrono::steady_clock::time_point deadline,
                                       std::vector<LiveEventPtr>* out) {
  std::unique_lock lock(mu_);
  return TakeLocked(lock, deadline, [out](StreamItem&& item) {
    if (item.event != nullptr) out->push_back(std::move(item.event));
  });
}

Subscription::State Subscription::Take(std::chrono::steady_clock::time_point deadline,
                                       std::vector<StreamItem>* out) {
  std::unique_lock lock(mu_);
  return TakeLocked(lock, deadline, [out](StreamItem&& item) { out->push_back(std::move(item)); });
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

void Subscription::SetReplay(std::vector<LiveEventPtr> events, std::string then_close) {
  {
    std::lock_guard lock(mu_);
    replay_ = std::move(events);
    close_after_replay_ = std::move(then_close);
    if (!close_after_replay_.empty()) {
      queue_.clear();
      queued_events_ = 0;
      waiting_.clear();
    }
  }
  ready_.notify_all();
  Wake();
}

bool Subscription::Push(const LiveEventPtr& event) {
  if (event->offset < start_.NextOf(event->tp)) return false;  // stored before the subscription
  bool too_slow = false;
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kOpen || !close_after_replay_.empty()) return false;
    if (spec_.kind == StreamSpec::Kind::kLatest) {
      auto it = waiting_.find(event->id);
      if (it != waiting_.end()) {
        const LiveEvent& waiting = *it->second->event;
        // The newest in the contract's order (ts, then topic, partition, offset) stays.
        if (std::tie(waiting.ts_ms, waiting.tp, waiting.offset) >
            std::tie(event->ts_ms, event->tp, event->offset)) {
          return false;
        }
        queue_.erase(it->second);
        queue_.push_back(StreamItem{event, nullptr});
        it->second = std::prev(queue_.end());
        return false;  // replaced: the queue did not grow
      }
    }
    if (queued_events_ >= max_buffered_) {
      state_ = State::kTooSlow;
      too_slow = true;
      reason_ = "too slow: more than " + std::to_string(max_buffered_) +
                " events waited to be sent; resume from the last id";
    } else {
      queue_.push_back(StreamItem{event, nullptr});
      ++queued_events_;
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

void Subscription::PushChange(const PartitionChangePtr& change) {
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kOpen || !close_after_replay_.empty()) return;
    queue_.push_back(StreamItem{nullptr, change});
  }
  ready_.notify_one();
  Wake();
}

}  // namespace hotrow::live
