#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "keying/row_key.h"
#include "live/position.h"
#include "live/subscription.h"
#include "query/partition_filter.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "store/write_observer.h"

namespace hotrow::live {

struct StreamHubOptions {
  // Streams open at once (http.max_streams); one more is refused (Busy). Default: 1000.
  size_t max_streams = 1000;
  // Events waiting to be sent per stream before its client is too slow (http.stream_buffer);
  // a latest stream counts ids. Default: 1000.
  size_t max_buffered = 1000;
  // Stored events matched to streams and not yet handed to them by the delivery thread; beyond
  // it, the streams of a further batch's events are closed as too slow (the server fell behind).
  size_t max_undelivered = 100000;
};

// How a subscription begins (StreamHub::Subscribe).
struct StreamStart {
  std::shared_ptr<Subscription> subscription;
  // Resumed from a position older than the window: events between it and the window are gone.
  bool gap = false;
  // The replay reached kMaxRangeLimit events: what is after them (before the live feed) was left
  // out. A client resumes from the last id it got.
  bool replay_truncated = false;
};

struct StreamHubStats {
  uint64_t open = 0;       // subscriptions open now
  uint64_t opened = 0;     // since start
  uint64_t refused = 0;    // refused at max_streams
  uint64_t too_slow = 0;   // closed because their client was too slow
  uint64_t events_sent = 0;  // counted by the writers of the connections (CountSent)
};

// The fan-out of stored events to live streams (CONTRACT.md "Live"; DESIGN.md "Streams after the
// commit"). It is a store::WriteObserver, fed from the point that feeds the last-N cache: after a
// batch and its Kafka offsets are durable in the store, before the Write returns. So no event is
// ever sent before its commit, and a record Kafka redelivers after a crash is never seen again
// (the store counts it a duplicate and does not tell its observers).
//
// Operation: RowsWritten, on the writer's thread, looks each stored row's id (and index entries)
// up among the subscriptions under the hub's lock shared, copies the matched rows with the
// subscriptions they go to, and queues them for the hub's delivery thread: one queue lock per
// Write, never a wait on a client. The delivery thread encodes each event once and pushes it into
// each match's bounded buffer (Subscription::Push), waking its stream. So what delivering costs
// (encoding, the wake-ups of stream threads) is not the writer's. With no subscription RowsWritten
// returns at once.
// Subscribe registers under the hub's lock exclusive, which orders it against every RowsWritten:
// the store's offsets read then are the stream's start; every later stored row is pushed, every
// earlier one is below them. A resume then replays from the store the events between the client's
// position and that start, so the join has neither a gap nor a duplicate.
//
// Thread-safety: every method may be called from any thread. Must outlive its subscriptions'
// users; the store must outlive it, and it must be removed from the store's observers (or the
// store closed) before it is destroyed.
class StreamHub final : public store::WriteObserver {
 public:
  StreamHub(store::EventStore* store, query::QueryEngine* engine, StreamHubOptions options);
  ~StreamHub() override;
  StreamHub(const StreamHub&) = delete;
  StreamHub& operator=(const StreamHub&) = delete;

  // Opens a stream of `spec`, from now, or after `after` when given (a resume). `filter` (may be
  // null; not owned, used only during the call) limits the replay to the partitions it accepts.
  // Busy at max_streams; InvalidArgument for an index field that is not indexed; a store error as
  // it is.
  Result<StreamStart> Subscribe(const StreamSpec& spec, const StreamPosition* after,
                                const query::PartitionFilter* filter = nullptr);
  // Ends a subscription made by Subscribe. Idempotent.
  void Unsubscribe(const std::shared_ptr<Subscription>& subscription);

  // Closes every subscription (the server stops): their Take returns at once.
  void CloseAll(const std::string& reason);

  // A position of now (the store's clock) that a writer of messages advances.
  int64_t NowMs() const { return store_->NowMs(); }

  void CountSent(uint64_t n) { sent_.fetch_add(n, std::memory_order_relaxed); }
  // Returns once every row a RowsWritten that returned before the call matched has been pushed
  // into its subscriptions' buffers.
  void WaitDelivered();
  StreamHubStats Stats() const;

  const StreamHubOptions& options() const { return options_; }

  // store::WriteObserver
  void RowsWritten(std::span<const store::WrittenRow> rows) override;
  void BucketsDropped(int64_t until_ms) override;

 private:
  Result<std::vector<LiveEventPtr>> Replay(const StreamSpec& spec, const StreamPosition& after,
                                           const StreamPosition& start,
                                           const query::PartitionFilter* filter, bool* truncated);
  // A stored row that subscriptions asked for, as the delivery thread gets it.
  struct Matched {
    keying::RowKey key;
    std::string id;
    std::string payload;
    std::vector<std::shared_ptr<Subscription>> to;
  };
  void Push(Subscription& subscription, const LiveEventPtr& event) {
    if (subscription.Push(event)) too_slow_.fetch_add(1, std::memory_order_relaxed);
  }
  LiveEventPtr MakeEvent(const keying::RowKey& key, std::string_view id,
                         std::string_view payload) const;
  static std::string IndexKey(std::string_view field, std::string_view value);
  void DeliverLoop();  // the delivery thread

  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using SubscriptionMap = std::unordered_multimap<std::string, std::shared_ptr<Subscription>,
                                                  KeyHash, std::equal_to<>>;

  store::EventStore* const store_;
  query::QueryEngine* const engine_;
  const StreamHubOptions options_;

  std::atomic<size_t> open_{0};  // subscriptions registered; RowsWritten skips all at 0
  std::atomic<uint64_t> opened_{0}, refused_{0}, too_slow_{0}, sent_{0};

  mutable std::shared_mutex mu_;
  // Guarded by mu_.
  SubscriptionMap by_id_;
  SubscriptionMap by_index_;
  std::vector<std::shared_ptr<Subscription>> latest_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;     // the delivery thread waits for a batch or the stop
  std::condition_variable delivered_cv_;  // WaitDelivered waits for the queue to empty
  // Guarded by queue_mu_: each Write's matched rows, in the order the Writes told the hub.
  std::deque<std::vector<Matched>> queue_;
  size_t undelivered_ = 0;   // rows in queue_ and in the batch being delivered
  bool stopping_ = false;
  std::thread deliverer_;  // last: started once the rest is built
};

}  // namespace hotrow::live
