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
      tag_(std::move(tag)),
      floor_(start_),
      live_next_(start_) {}

template <typename Out>
Subscription::State Subscription::TakeLocked(std::unique_lock<std::mutex>& lock,
                                             std::chrono::steady_clock::time_point deadline,
                                             Out&& out) {
  // A deadline already past takes what is ready without waiting (the HTTP transport's I/O
  // threads, which must never block); time_point::min() in a wait_until would not return.
  if (deadline > std::chrono::steady_clock::now()) {
    ready_.wait_until(lock, deadline, [&] {
      return !replay_.empty() || !close_after_replay_.empty() ||
             (!queue_.empty() && !catching_up_) || state_ != State::kOpen;
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
    queue_.clear();
    queued_events_ = 0;
    queued_changes_ = 0;
    waiting_.clear();
  } else if (!catching_up_) {
    // While a catch-up reads, what waits is above its `to` and goes after its events.
    for (StreamItem& item : queue_) {
      if (item.event != nullptr) {
        live_next_.Advance(item.event->tp, item.event->offset);
      } else {
        for (const auto& [tp, from] : item.change->added) live_next_.next[tp] = from;
        for (const auto& [tp, next] : item.change->removed) live_next_.next[tp] = next;
      }
      out(std::move(item));
    }
    queue_.clear();
    queued_events_ = 0;
    queued_changes_ = 0;
    waiting_.clear();
  }
  const State state = state_;
  if (CatchUpDueLocked()) {
    // The replay is taken: the next catch-up may read (its events are then all that waits).
    lock.unlock();
    AskCatchUp();
  }
  return state;
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
    close_after_replay_ = std::move(then_close);
    if (!close_after_replay_.empty()) {
      // Nothing above what the cut replay sends: a catch-up's events would move the client's
      // position past events it owes and was not sent.
      replay_ = std::move(events);
      queue_.clear();
      queued_events_ = 0;
      queued_changes_ = 0;
      waiting_.clear();
      behind_ = false;
    } else {
      // Before a catch-up that fell behind while the resume read the store: the resume's events
      // are below the start, the catch-up's at or above it.
      replay_.insert(replay_.begin(), std::make_move_iterator(events.begin()),
                     std::make_move_iterator(events.end()));
    }
  }
  ready_.notify_all();
  Wake();
}

bool Subscription::Push(const LiveEventPtr& event) {
  bool too_slow = false;
  bool ask = false;
  {
    std::lock_guard lock(mu_);
    // Below the floor: stored before the subscription (a resume sends it) or before the catch-up
    // under way (the catch-up sends it).
    if (event->offset < floor_.NextOf(event->tp)) return false;
    if (state_ != State::kOpen || !close_after_replay_.empty() || behind_) return false;
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
      if (catch_up_ != nullptr && queued_changes_ == 0) {
        // A burst: the store holds every event dropped here, and the catch-up reads them.
        ask = FallBehindLocked();
      } else {
        state_ = State::kTooSlow;
        too_slow = true;
        reason_ = "too slow: more than " + std::to_string(max_buffered_) +
                  " events waited to be sent; resume from the last id";
      }
    } else {
      queue_.push_back(StreamItem{event, nullptr});
      ++queued_events_;
      if (spec_.kind == StreamSpec::Kind::kLatest) {
        waiting_.emplace(event->id, std::prev(queue_.end()));
      }
    }
  }
  if (ask) AskCatchUp();
  ready_.notify_one();
  Wake();
  return too_slow;
}

bool Subscription::FallBehindLocked() {
  queue_.clear();
  queued_events_ = 0;
  waiting_.clear();
  behind_ = true;
  return CatchUpDueLocked();
}

bool Subscription::CatchUpDueLocked() {
  if (!behind_ || catching_up_ || !replay_.empty() || state_ != State::kOpen ||
      catch_up_ == nullptr) {
    return false;
  }
  catching_up_ = true;
  return true;
}

void Subscription::AskCatchUp() {
  std::shared_ptr<const std::function<void()>> catch_up;
  {
    std::lock_guard lock(mu_);
    catch_up = catch_up_;
  }
  if (catch_up != nullptr && *catch_up) (*catch_up)();
}

void Subscription::SetCatchUp(std::function<void()> catch_up) {
  std::lock_guard lock(mu_);
  catch_up_ = std::make_shared<const std::function<void()>>(std::move(catch_up));
}

bool Subscription::BeginCatchUp(const StreamPosition& to, StreamPosition* from) {
  std::lock_guard lock(mu_);
  if (state_ != State::kOpen || !behind_ || !catching_up_) return false;
  *from = live_next_;
  floor_ = to;
  behind_ = false;
  return true;
}

void Subscription::FinishCatchUp(std::vector<LiveEventPtr> events, bool truncated) {
  bool ask = false;
  {
    std::lock_guard lock(mu_);
    catching_up_ = false;
    if (state_ != State::kOpen || !close_after_replay_.empty()) return;
    for (LiveEventPtr& e : events) {
      live_next_.Advance(e->tp, e->offset);
      replay_.push_back(std::move(e));
    }
    // Cut at its limit: what it did not read is above live_next_, and so are the live events
    // taken since BeginCatchUp; the next catch-up reads them all once these are taken.
    if (truncated && !behind_) FallBehindLocked();
    ask = CatchUpDueLocked();
  }
  if (ask) AskCatchUp();
  ready_.notify_all();
  Wake();
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

bool Subscription::PushChange(const PartitionChangePtr& change) {
  bool too_slow = false;
  {
    std::lock_guard lock(mu_);
    if (state_ != State::kOpen || !close_after_replay_.empty()) return false;
    if (behind_ || catching_up_) {
      // Where the change falls among the events the catch-up reads again is not known here: the
      // client resumes from its last id instead (the store answers for each partition).
      state_ = State::kTooSlow;
      too_slow = true;
      reason_ =
          "too slow: the stream's partitions changed while it caught up from the store; "
          "resume from the last id";
    } else {
      queue_.push_back(StreamItem{nullptr, change});
      ++queued_changes_;
    }
  }
  ready_.notify_one();
  Wake();
  return too_slow;
}

}  // namespace hotrow::live
