#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
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
  // Events waiting to be sent per stream before it falls behind and catches up from the store
  // (http.stream_buffer); a latest stream counts ids. Default: 1000.
  size_t max_buffered = 1000;
  // Stored events matched to streams and not yet handed to them by the delivery thread; beyond
  // it, the streams of a further batch's events are closed as too slow (the server fell behind).
  size_t max_undelivered = 100000;
  // Events a resume's replay sends at most; a resume owed more is sent the lowest of them by
  // (topic, partition, offset) and ended, and the next resume continues (live/replay.h).
  // Default: query::kMaxRangeLimit (100,000).
  size_t max_replay = static_cast<size_t>(query::kMaxRangeLimit);
};

// How a subscription begins (StreamHub::Subscribe).
struct StreamStart {
  std::shared_ptr<Subscription> subscription;
  // Resumed from a position some of whose events are gone: it is older than the window, or an
  // event of a partition it names, stored after it was made at or above its offset there, was
  // dropped with its bucket (a late event, stored in a bucket about to expire), or it was made
  // before this process started and a bucket of that time was dropped since (unknown what it
  // held).
  bool gap = false;
  // The replay reached StreamHubOptions::max_replay events: the stream sends them and ends (its
  // reason says so), and a resume from its last id continues.
  bool replay_truncated = false;
};

struct StreamHubStats {
  uint64_t open = 0;       // subscriptions open now
  uint64_t opened = 0;     // since start
  uint64_t refused = 0;    // refused at max_streams
  uint64_t too_slow = 0;   // closed as too slow (the server fell behind, or a catch-up failed)
  uint64_t catch_ups = 0;  // reads from the store of a subscription that fell behind
  uint64_t catch_ups_delayed = 0;  // times a catch-up found every query slot taken and waited
  uint64_t events_sent = 0;        // counted by the writers of the connections (CountSent)
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
// only notes the Write's late rows (for Gap: one comparison per row) and returns. The matched rows
// are queued before the lock shared is let go, so that a change of the partitions carried
// (SetOwnedPartitions, under the lock exclusive) is queued after every row stored before it.
// Subscribe registers under the hub's lock exclusive, which orders it against every RowsWritten:
// the store's offsets read then are the stream's start; every later stored row is pushed, every
// earlier one is below them. A resume then replays from the store the events between the client's
// position and that start (live/replay.h), so the join has neither a gap nor a duplicate.
//
// A subscription whose bounded buffer overflows (a burst faster than its client's socket) falls
// behind (live/subscription.h) and is caught up by the hub's catch-up thread (`hotrow-catchup`):
// under the lock exclusive, as Subscribe, the store's offsets become the offsets from which it
// takes live events again, then the events it owes below them are read from the store
// (live/replay.h, from where the stream stands) and sent before the live ones. A change of
// partitions still being delivered at that moment makes the subscription too slow instead (the
// client resumes from its last id): where the change falls among the re-read events is unknown.
// A read refused because every query slot is taken (a saturated server) waits and asks again:
// saturation delays a catch-up, it does not end the stream.
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
  // `tag` labels the subscription for CloseWhere. Busy at max_streams; InvalidArgument for an
  // index field that is not indexed; a store error as it is.
  Result<StreamStart> Subscribe(const StreamSpec& spec, const StreamPosition* after,
                                const query::PartitionFilter* filter = nullptr,
                                std::string tag = {});
  // Ends a subscription made by Subscribe. Idempotent.
  void Unsubscribe(const std::shared_ptr<Subscription>& subscription);

  // Closes every subscription (the server stops): their Take returns at once.
  void CloseAll(const std::string& reason);
  // Closes the open subscriptions `which` accepts (e.g. those opened with a token a reload
  // removed, by their tag), with `reason`; returns how many. `which` runs under the hub's lock:
  // it must not call the hub.
  size_t CloseWhere(const std::function<bool(const Subscription&)>& which,
                    const std::string& reason);

  // The partitions this instance serves as their owner (cluster mode: owned, and caught up with
  // what the broker held when it was assigned; never a standby's followed partitions). From the
  // first call on, a stream carries only these: rows of other partitions are not pushed, a new
  // subscription's start names only these, and each change reaches every open subscription as a
  // PartitionChange in order with its events: a partition added is carried from the store's
  // offset at this call (what was stored before, a new owner's catch-up included, is not pushed
  // as live), one removed was pushed up to the store's offset at this call. A topic the store
  // has not numbered yet is left out until a call after its first row. Before any call every
  // partition is carried (one instance alone).
  void SetOwnedPartitions(const std::vector<store::TopicPartition>& owned);
  // Outside cluster mode: the partitions this instance consumes (its Kafka assignment, in any
  // state). Rows of every partition are still pushed, and nothing is announced; only a new
  // subscription's start names these alone (each from where the store stands, 0 for one it holds
  // nothing of), not every partition the store holds: a store keeps what it no longer consumes (an
  // earlier assignment, a topic dropped from kafka.topics) until it expires, and a position naming
  // all of it would outgrow a request header (live/position.h). A partition a stream then sends
  // an event of is named from that event on. Before any call, and while the last named none (the
  // assignment not known yet), every partition stored is named.
  // Ignored once SetOwnedPartitions was called.
  void SetServedPartitions(const std::vector<store::TopicPartition>& served);

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
  // A stored row that subscriptions asked for, as the delivery thread gets it; or, with
  // `change` set, a change of the partitions carried, for every subscription in `to`.
  struct Matched {
    keying::RowKey key;
    std::string id;
    std::string payload;
    std::vector<std::shared_ptr<Subscription>> to;
    PartitionChangePtr change;
  };
  // What is known of the late rows (stored after their bucket's span had passed) of one
  // partition: the latest store time one was stored at and the highest offset.
  struct LateRows {
    int64_t stored_ms = INT64_MIN;
    int64_t offset = -1;
    void Merge(const LateRows& o) {
      stored_ms = std::max(stored_ms, o.stored_ms);
      offset = std::max(offset, o.offset);
    }
  };
  static uint64_t PartitionKey(uint16_t topic, int32_t partition) {
    return (uint64_t{topic} << 32) | static_cast<uint32_t>(partition);
  }
  // Whether events `after` is owed may have been dropped (StreamStart::gap).
  bool Gap(const StreamPosition& after) const;
  // Notes the late rows of a Write (RowsWritten).
  void NoteLateRows(std::span<const store::WrittenRow> rows);
  // Every open subscription. REQUIRES: mu_ held.
  std::vector<std::shared_ptr<Subscription>> AllLocked() const;
  void Push(Subscription& subscription, const LiveEventPtr& event) {
    if (subscription.Push(event)) too_slow_.fetch_add(1, std::memory_order_relaxed);
  }
  // Queues `subscription` for the catch-up thread (Subscription::SetCatchUp).
  void AskCatchUp(std::weak_ptr<Subscription> subscription);
  // Reads what a subscription that fell behind owes, as the class comment says.
  void CatchUp(const std::shared_ptr<Subscription>& subscription);
  void CatchUpLoop();  // the catch-up thread
  LiveEventPtr MakeEvent(const keying::RowKey& key, std::string_view id,
                         std::string_view payload) const;
  static std::string IndexKey(std::string_view field, std::string_view value);
  void DeliverLoop();  // the delivery thread

  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using SubscriptionMap =
      std::unordered_multimap<std::string, std::shared_ptr<Subscription>, KeyHash, std::equal_to<>>;

  store::EventStore* const store_;
  query::QueryEngine* const engine_;
  const StreamHubOptions options_;
  // The store's time when the hub was made, and the end of the oldest bucket then (INT64_MAX for
  // none): rows stored before are in buckets that old, and the hub never saw them.
  const int64_t started_ms_;
  const int64_t first_bucket_end_ms_;

  std::atomic<size_t> open_{0};  // subscriptions registered; RowsWritten skips all at 0
  std::atomic<uint64_t> opened_{0}, refused_{0}, too_slow_{0}, sent_{0}, catch_ups_{0},
      catch_ups_delayed_{0};
  // Changes of partitions queued and not yet pushed to every subscription they go to.
  std::atomic<size_t> changes_undelivered_{0};

  mutable std::shared_mutex mu_;
  // Guarded by mu_.
  SubscriptionMap by_id_;
  SubscriptionMap by_index_;
  std::vector<std::shared_ptr<Subscription>> latest_;
  // SetOwnedPartitions': whether it was called, and what is carried (names; the keys of those
  // the store has numbered).
  bool owned_known_ = false;
  std::set<store::TopicPartition> carried_;
  std::unordered_set<uint64_t> carried_keys_;
  // SetServedPartitions': whether it was called, and what it named.
  bool served_known_ = false;
  std::set<store::TopicPartition> served_;

  // The late rows of the buckets still held, by bucket start and PartitionKey, and those of the
  // buckets dropped, by PartitionKey; whether a bucket from before the hub was made was dropped.
  mutable std::mutex late_mu_;
  std::map<int64_t, std::unordered_map<uint64_t, LateRows>> late_held_;  // guarded by late_mu_
  std::unordered_map<uint64_t, LateRows> late_dropped_;                  // guarded by late_mu_
  bool dropped_from_before_ = false;                                     // guarded by late_mu_

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;      // the delivery thread waits for a batch or the stop
  std::condition_variable delivered_cv_;  // WaitDelivered waits for the queue to empty
  // Guarded by queue_mu_: each Write's matched rows, in the order the Writes told the hub.
  std::deque<std::vector<Matched>> queue_;
  size_t undelivered_ = 0;  // rows in queue_ and in the batch being delivered
  bool stopping_ = false;

  std::mutex catch_up_mu_;
  std::condition_variable catch_up_cv_;
  // Guarded by catch_up_mu_: the subscriptions that asked, in order (each asks once per fall).
  std::deque<std::weak_ptr<Subscription>> catch_up_queue_;
  bool catch_up_stopping_ = false;

  // Last: started once the rest is built.
  std::thread deliverer_;
  std::thread catcher_;
};

}  // namespace hotrow::live
