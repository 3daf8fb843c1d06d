#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace hotrow::http {

// Who a query is for: a client of the API, or a peer of the group answering its part of a fan-out
// (`?local=true`, CONTRACT.md "Group answers").
enum class QueryLane { kClient, kPeer };

// How a query got (or did not get) its slot: at once, after waiting in the queue, or not at all.
enum class SlotOutcome { kImmediate, kQueued, kShed };

// The slots that bound the queries an HttpServer works on at once, in two lanes that never wait
// for each other:
// - client queries: `client_slots` at once; one more waits up to `queue_wait` for a slot to free
//   (woken as soon as one does; a freed slot passes to a waiting query, never to one that arrives
//   later), then is refused. A burst is queued, not refused at the first busy slot, and the wait
//   is bounded so that a client never hangs.
// - peer queries: `peer_slots` at once, of their own; one more is refused at once. A fan-out
//   holds a client slot while it waits for its peers, and the peers' `?local=true` requests must
//   never wait behind client queries, or a group under load starves itself (DESIGN.md, "A fan-out
//   never waits on what its peers need"). Refusing a peer at once makes that fan-out's answer
//   incomplete (it says so) instead of slow.
//
// Thread-safety: every method may be called from any thread.
class QuerySlots {
 public:
  QuerySlots(int client_slots, int peer_slots, std::chrono::milliseconds queue_wait);
  QuerySlots(const QuerySlots&) = delete;
  QuerySlots& operator=(const QuerySlots&) = delete;

  // Takes a slot of `lane`, waiting as the lane's rule says; kShed when none was taken.
  SlotOutcome Acquire(QueryLane lane);
  // Gives back a slot Acquire took (not kShed).
  void Release(QueryLane lane);
  // Wakes every waiter, which then gives up; from then on client queries no longer wait. For a
  // server that is stopping.
  void Close();

  // Slots of `lane` held now, and client queries waiting for one.
  int held(QueryLane lane) const;
  int waiting() const;

 private:
  const int client_slots_;
  const int peer_slots_;
  const std::chrono::milliseconds queue_wait_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  int client_held_ = 0;  // guarded by mu_
  int peer_held_ = 0;    // guarded by mu_
  int waiting_ = 0;      // guarded by mu_
  int handed_ = 0;       // slots released to waiters not yet woken; guarded by mu_
  bool closed_ = false;  // guarded by mu_
};

}  // namespace hotrow::http
