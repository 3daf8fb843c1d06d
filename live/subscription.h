#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "live/position.h"
#include "store/event_store.h"

namespace hotrow::live {

// One stored event as streams send it: its JSON (wire/event_json.h), made once and shared by every
// subscription that sends it.
struct LiveEvent {
  std::string id;
  store::TopicPartition tp;
  int64_t offset = 0;
  int64_t ts_ms = 0;
  std::string json;
};
using LiveEventPtr = std::shared_ptr<const LiveEvent>;

// What a stream follows (CONTRACT.md, "Live").
struct StreamSpec {
  enum class Kind { kId, kLatest, kIndex };
  Kind kind = Kind::kId;
  std::string id;      // kId: the event id
  std::string prefix;  // kLatest: only ids that start with it ("" for every id)
  std::string field;   // kIndex: an index.fields path and the value it must have
  std::string value;
};

// One client's stream: its bounded buffer of events to send, filled by the hub (StreamHub, on the
// store's writing threads, after each batch is durable) and drained by the thread that writes the
// client's connection.
//
// Operation:
// - The hub pushes events as they are stored. Events of a partition below the offset that the
//   store had reached when the subscription was made (`start()`) are left out: they were stored
//   before it, and a resume sends them from the store instead (`SetReplay`).
// - A latest stream keeps one event per id waiting: the newest by (ts, topic, partition, offset);
//   a newer event of an id replaces the one waiting and goes to the back, so that each partition's
//   events stay in offset order. Events of one id in different partitions may still arrive older
//   after newer (each partition is sent in offset order): a client keeps the newest by ts. The
//   other streams keep every event. More than `max_buffered` waiting makes the subscription too slow: nothing more is taken,
//   what waits is still sent, then the client is told and closed.
//
// Thread-safety: every method may be called from any thread.
class Subscription {
 public:
  enum class State { kOpen, kTooSlow, kClosed };

  Subscription(StreamSpec spec, size_t max_buffered, StreamPosition start);
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  const StreamSpec& spec() const { return spec_; }
  // The store's offsets when the subscription was made (the stream's first position).
  const StreamPosition& start() const { return start_; }

  // Moves what is ready into *out, oldest first: the replay first, then live events. Waits until
  // something is ready, the subscription stops being open, or `deadline`. Returns the state; once
  // not open, *out still gets what waited (the last messages of a too slow client).
  State Take(std::chrono::steady_clock::time_point deadline, std::vector<LiveEventPtr>* out);

  // Ends the subscription (the server stops, the client is gone); wakes Take.
  void Close(std::string reason);
  // Ends it as too slow (events meant for it were not kept); wakes Take. True when it was open.
  bool TooSlow(std::string reason);
  // Why it is not open; empty while open.
  std::string reason() const;

  // Called once, before the first Take: the events of a resume, in the order to send.
  void SetReplay(std::vector<LiveEventPtr> events);

  // Called by the hub for each stored event that matches the spec. Never waits on the client.
  // True when this event made the subscription too slow (it was not taken).
  bool Push(const LiveEventPtr& event);

  // `wake` is called (outside the lock, from whichever thread made it so) whenever Take may
  // have something new: an event, the replay, or the end. For a writer that waits without a
  // thread (http/stream_handlers.cc) and takes with a deadline already past.
  void SetWaker(std::function<void()> wake);

 private:
  const StreamSpec spec_;
  const size_t max_buffered_;
  const StreamPosition start_;

  mutable std::mutex mu_;
  std::condition_variable ready_;
  State state_ = State::kOpen;                 // guarded by mu_
  std::string reason_;                         // guarded by mu_
  std::vector<LiveEventPtr> replay_;           // guarded by mu_
  std::list<LiveEventPtr> queue_;              // guarded by mu_
  // kLatest: where each id's waiting event is in queue_.
  std::unordered_map<std::string, std::list<LiveEventPtr>::iterator> waiting_;  // guarded by mu_
  std::shared_ptr<const std::function<void()>> waker_;                          // guarded by mu_

  void Wake();
};

}  // namespace hotrow::live
