#include "http/query_slots.h"

namespace hotrow::http {

QuerySlots::QuerySlots(int client_slots, int peer_slots, std::chrono::milliseconds queue_wait)
    : client_slots_(client_slots), peer_slots_(peer_slots), queue_wait_(queue_wait) {}

SlotOutcome QuerySlots::Acquire(QueryLane lane) {
  std::unique_lock<std::mutex> lock(mu_);
  if (lane == QueryLane::kPeer) {
    if (peer_held_ >= peer_slots_) return SlotOutcome::kShed;
    ++peer_held_;
    return SlotOutcome::kImmediate;
  }
  // A query never takes a slot past queries already waiting: a freed slot is handed to a waiter
  // (Release), so the waiter it wakes always finds one instead of going back to sleep.
  if (waiting_ == 0 && client_held_ < client_slots_) {
    ++client_held_;
    return SlotOutcome::kImmediate;
  }
  if (closed_ || queue_wait_.count() <= 0) return SlotOutcome::kShed;
  ++waiting_;
  const bool got = freed_.wait_for(lock, queue_wait_, [&] { return closed_ || handed_ > 0; });
  --waiting_;
  if (closed_ && handed_ > 0) {  // a slot handed over as the server stops: given back
    --handed_;
    --client_held_;
  }
  if (!got || closed_) return SlotOutcome::kShed;
  --handed_;  // the slot stays counted in client_held_: it passed from its holder to this query
  return SlotOutcome::kQueued;
}

void QuerySlots::Release(QueryLane lane) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lane == QueryLane::kPeer) {
      --peer_held_;
      return;
    }
    if (waiting_ <= handed_) {
      --client_held_;
      return;
    }
    ++handed_;
  }
  freed_.notify_one();
}

void QuerySlots::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  freed_.notify_all();
}

int QuerySlots::held(QueryLane lane) const {
  std::lock_guard<std::mutex> lock(mu_);
  return lane == QueryLane::kPeer ? peer_held_ : client_held_;
}

}  // namespace hotrow::http

namespace hotrow::http {

int QuerySlots::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

}  // namespace hotrow::http
