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

// A change of the partitions a stream carries (CONTRACT.md "Live streams", cluster mode): a
// partition this instance began or stopped serving as its owner. HTTP announces it as `event:
// partitions`.
struct PartitionChange {
  // Carried from now on, each from this offset: the stream sends the partition's events at and
  // above it, and none below (those were stored before: a resume asks for them).
  std::map<store::TopicPartition, int64_t> added;
  // No longer carried: the stream was sent its events below this offset, and none at or above
  // (a client resumes the partition on its new owner from there, or from the last it saw).
  std::map<store::TopicPartition, int64_t> removed;

  // {"added":{"TOPIC":{"PARTITION":OFFSET,...},...},"removed":{...}}
  std::string ToJson() const;
};
using PartitionChangePtr = std::shared_ptr<const PartitionChange>;

// One thing a stream sends, in order: an event, or (event null) a change of its partitions.
struct StreamItem {
  LiveEventPtr event;
  PartitionChangePtr change;
};

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
//   other streams keep every event.
// - More than `max_buffered` waiting (a burst faster than the client's socket takes it: one
//   batch of 1,500 events of an id is pushed at once) makes the subscription fall behind: what
//   waited is dropped, nothing more is taken, and it asks its catch-up (SetCatchUp; the hub's
//   catch-up thread) to read from the store what it owes from where it stands, as a resume would
//   (live/replay.h): BeginCatchUp, under the hub's lock, sets the offsets from which live events
//   are taken again, and FinishCatchUp hands it the stored events below them, which Take sends
//   before any live event taken since. A catch-up cut at its limit falls behind again once its
//   events are taken, and the next continues. So a reading client loses nothing, gets nothing
//   twice and keeps each partition's order; one that reads nothing is closed by its writer's
//   write timeout, not here. Without a catch-up, or with a change of partitions waiting (the
//   store cannot say where a change falls among the events it re-reads), falling behind makes
//   the subscription too slow instead: what waited is still sent, then the client is told and
//   closed.
//
// Thread-safety: every method may be called from any thread.
class Subscription {
 public:
  enum class State { kOpen, kTooSlow, kClosed };

  // `tag` is the opener's label, for CloseWhere (e.g. which credential opened it; never a
  // secret itself).
  Subscription(StreamSpec spec, size_t max_buffered, StreamPosition start, std::string tag = {});
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  const StreamSpec& spec() const { return spec_; }
  // The store's offsets when the subscription was made (the stream's first position).
  const StreamPosition& start() const { return start_; }
  const std::string& tag() const { return tag_; }

  // Moves what is ready into *out, oldest first: the replay first, then live events. Waits until
  // something is ready, the subscription stops being open, or `deadline` (one already past: does
  // not wait). Returns the state; once not open, *out still gets what waited (the last messages
  // of a too slow client).
  State Take(std::chrono::steady_clock::time_point deadline, std::vector<LiveEventPtr>* out);
  // The same with the changes of its partitions (PartitionChange) in their place among the
  // events: a change comes after every event of its partitions that was pushed before it. The
  // overload above leaves changes out.
  State Take(std::chrono::steady_clock::time_point deadline, std::vector<StreamItem>* out);

  // Ends the subscription (the server stops, the client is gone); wakes Take.
  void Close(std::string reason);
  // Ends it as too slow (events meant for it were not kept); wakes Take. True when it was open.
  bool TooSlow(std::string reason);
  // Why it is not open; empty while open.
  std::string reason() const;

  // Called once, before the first Take: the events of a resume, in the order to send. With
  // `then_close` set, the subscription ends with that reason once they are taken, and no live
  // event is sent: a replay cut at its limit owes more than it sent, and live events would move
  // the client's position past what it was not sent (it resumes from its last id instead).
  void SetReplay(std::vector<LiveEventPtr> events, std::string then_close = {});

  // Called by the hub for each stored event that matches the spec. Never waits on the client.
  // True when this event made the subscription too slow (it was not taken).
  bool Push(const LiveEventPtr& event);
  // Called by the hub when the partitions it carries change, after every event of them it pushed
  // before. Changes are rare and small: they never make a queue overflow; one that reaches a
  // subscription catching up makes it too slow (true), as the class comment says.
  bool PushChange(const PartitionChangePtr& change);

  // `catch_up` is called (outside the lock, at most once per fall) when the subscription fell
  // behind and wants the hub to read what it owes from the store (BeginCatchUp, FinishCatchUp).
  // Set once, before it is registered; without it, falling behind is too slow.
  void SetCatchUp(std::function<void()> catch_up);
  // The catch-up's first step, with the hub's lock held exclusive (no row is being matched):
  // live events at or above `to` (the store's offsets now) are taken again from here on, and
  // *from gets where the stream stands (every event below it was taken or is waiting in the
  // replay). False when the subscription is no longer open or not behind.
  bool BeginCatchUp(const StreamPosition& to, StreamPosition* from);
  // The catch-up's events: those owed between `from` and `to`, per partition in offset order,
  // sent before the live events taken since BeginCatchUp. `truncated`: more were owed (the
  // subscription falls behind again once these are taken, and the next catch-up continues).
  void FinishCatchUp(std::vector<LiveEventPtr> events, bool truncated);

  // `wake` is called (outside the lock, from whichever thread made it so) whenever Take may
  // have something new: an event, the replay, or the end. For a writer that waits without a
  // thread (http/stream_handlers.cc) and takes with a deadline already past.
  void SetWaker(std::function<void()> wake);

 private:
  const StreamSpec spec_;
  const size_t max_buffered_;
  const StreamPosition start_;
  const std::string tag_;

  mutable std::mutex mu_;
  std::condition_variable ready_;
  State state_ = State::kOpen;        // guarded by mu_
  std::string reason_;                // guarded by mu_
  std::vector<LiveEventPtr> replay_;  // guarded by mu_
  std::string close_after_replay_;    // guarded by mu_; SetReplay's then_close
  std::list<StreamItem> queue_;       // guarded by mu_
  size_t queued_events_ = 0;          // guarded by mu_: the events in queue_
  size_t queued_changes_ = 0;         // guarded by mu_: the changes in queue_
  // Guarded by mu_. Live events below `floor_` are not taken (start_, then each catch-up's
  // `to`); `live_next_` is where the stream stands past the replay: the floor advanced over
  // every live event taken and every catch-up event handed over.
  StreamPosition floor_;
  StreamPosition live_next_;
  bool behind_ = false;       // guarded by mu_: fell behind; live events are not taken
  bool catching_up_ = false;  // guarded by mu_: a catch-up was asked and has not finished
  std::shared_ptr<const std::function<void()>> catch_up_;  // guarded by mu_
  // kLatest: where each id's waiting event is in queue_.
  std::unordered_map<std::string, std::list<StreamItem>::iterator> waiting_;  // guarded by mu_
  std::shared_ptr<const std::function<void()>> waker_;                        // guarded by mu_

  // Take's common part: waits, then hands the replay and the queue to `out`. REQUIRES: lock holds
  // mu_.
  template <typename Out>
  State TakeLocked(std::unique_lock<std::mutex>& lock,
                   std::chrono::steady_clock::time_point deadline, Out&& out);
  void Wake();
  // Drops what waits and stops taking live events. REQUIRES: mu_ held; catch_up_ set; no change
  // waiting. True when a catch-up is to be asked now (none under way, the replay taken).
  bool FallBehindLocked();
  // Whether a catch-up is to be asked now, and marks it asked. REQUIRES: mu_ held.
  bool CatchUpDueLocked();
  void AskCatchUp();
};

}  // namespace hotrow::live
