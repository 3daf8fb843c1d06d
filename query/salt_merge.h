#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "keying/row_key.h"
#include "query/query_engine.h"
#include "query/thread_pool.h"
#include "query/topic_order.h"
#include "store/event_store.h"

namespace hotrow::query {

// One event with the key fields the merge orders by.
struct KeyedEvent {
  keying::RowKey key;
  Event event;
};

class SaltStream;

// One Fill of a stream, shared by the query thread and the pool worker that may run it: whoever
// claims it first runs it and counts it finished. The other touches nothing else, so the query
// never waits for a pool thread to be scheduled just to learn that there was nothing left to do.
struct FillTicket {
  std::atomic<bool> claimed{false};
  SaltStream* stream = nullptr;
};

// The state one query shares with the tasks it runs on the pool: the first error, a cancel flag,
// the Fills queued for its pool workers, and the count of tasks still running. The query waits
// for that count to reach zero before it returns, so tasks never outlive the streams they fill.
//
// A query occupies at most `max_workers` pool threads at once, however many Fills it queues:
// queries that read much (scans, large ranges) get max(0, pool size - 1), so that one of them
// never holds every pool thread and a second query always finds one free. The query thread reads
// too (SaltStream::HelpIfUnclaimed), so a query's parallelism is its workers plus its own thread.
//
// Thread-safety: every member is safe to use from the query's thread and from its tasks.
class QueryRun {
 public:
  // For tests: runs on a pool worker after it claimed a Fill of a stream over [min_ts, max_ts),
  // before reading; may block to hold the worker.
  using FillHook = std::function<void(int64_t min_ts, int64_t max_ts)>;

  // `pool` and `hook` are not owned. REQUIRES: max_workers >= 0.
  QueryRun(ThreadPool* pool, int max_workers, const FillHook* hook = nullptr)
      : pool_(pool), max_workers_(max_workers), hook_(hook) {}

  // Queues a Fill for the run's pool workers, and starts one more worker when fewer than
  // max_workers are running. With max_workers == 0 the Fill waits for the query thread.
  void Submit(std::shared_ptr<FillTicket> ticket);

  // Records `status` as the query's failure (the first one wins) and wakes the query.
  void Fail(const Status& status);
  // Stops every task at its next row.
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  void TaskStarted();
  void TaskFinished();  // wakes the query
  void Notify();        // wakes the query: a chunk arrived
  // Blocks until `ready()` holds or the query failed; returns the failure, if any.
  // `ready` is evaluated under the run's mutex.
  Status WaitUntil(const std::function<bool()>& ready);
  // Cancels and waits for every task to finish. Called before the streams go.
  void Drain();

  std::mutex& mu() { return mu_; }

 private:
  // A pool task that runs one queued Fill; whoever claims it first, the pool thread or Drain,
  // decides whether it runs.
  struct WorkerToken {
    std::atomic<bool> claimed{false};
  };
  std::shared_ptr<WorkerToken> NewWorkerLocked();  // REQUIRES: mu_
  void SubmitWorker(ThreadPool* pool, std::shared_ptr<WorkerToken> token);
  // On the pool: runs queued Fills; after each, requeues behind other waiting tasks, if any.
  void Work(const std::shared_ptr<WorkerToken>& token);

  ThreadPool* const pool_;
  const int max_workers_;
  const FillHook* const hook_;
  std::mutex mu_;
  std::deque<std::shared_ptr<FillTicket>> queue_;  // guarded by mu_
  int workers_ = 0;                                // guarded by mu_
  std::vector<std::shared_ptr<WorkerToken>> waiting_workers_;  // submitted, not started; mu_
  std::condition_variable cv_;
  Status error_;  // guarded by mu_
  int running_ = 0;  // guarded by mu_
  std::atomic<bool> cancelled_{false};
};

// Cursors of one bucket that its streams pass on: a stream that has read its last row leaves its
// cursor here for the next stream's first read, which re-aims it (RowIterator::SetRange) instead
// of making its own. A bucket's salts read by the pool and the query thread then make one cursor
// per thread that reads, not one per salt: on a bucket as ingest leaves it (several L0 files), a
// cursor is a table iterator per file and memtable, and a range read on two threads made 4.7x the
// cursors of one read on one (docs/BENCHMARKS.md).
//
// Thread-safety: Take and Put may be called from any thread; a cursor is used by one Fill at a
// time, the shelf's mutex ordering one thread's use before the next one's.
class CursorShelf {
 public:
  // A cursor left by a stream, or null when there is none.
  std::unique_ptr<store::RowIterator> Take() {
    std::lock_guard lock(mu_);
    if (cursors_.empty()) return nullptr;
    std::unique_ptr<store::RowIterator> cursor = std::move(cursors_.back());
    cursors_.pop_back();
    return cursor;
  }
  void Put(std::unique_ptr<store::RowIterator> cursor) {
    std::lock_guard lock(mu_);
    cursors_.push_back(std::move(cursor));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<store::RowIterator>> cursors_;  // guarded by mu_
};

// Which rows of a bucket a SaltStream yields and how.
struct StreamSpec {
  keying::KeyRange range;
  bool within_id_prefix = false;  // range is inside one (salt, id) prefix
  bool backward = false;          // oldest first (Order::kAsc) instead of newest first
  // Only rows with min_ts <= ts < max_ts; only this id when `match_id` (the full id in the value
  // is compared: a 64-bit hash collision never returns another id's event).
  int64_t min_ts = 0;
  int64_t max_ts = INT64_MAX;
  bool match_id = false;
  std::string id;
  // At most this many rows are ever read out (no salt needs more than the query's limit).
  int64_t budget = INT64_MAX;
  // Where the stream counts its cursors, seeks and rows; null for none.
  QueryWork* work = nullptr;
  // When set, Fill encodes every kept event with it into the chunk's text instead of keeping the
  // events, and keeps each event's key beside its text: the encoding runs wherever the Fill runs,
  // on the pool. A scan takes the text a chunk at a time (TakeEncoded), a merge an event at a time
  // (FrontText). Not owned.
  const EventEncoder* encode = nullptr;
  // Only rows of partitions it accepts (the query's filter: QueryEngine); null for all. Not owned.
  const PartitionFilter* filter = nullptr;
  // When set, every stream using it is of the same bucket with the same within_id_prefix, range
  // order and read point `at`; their Fills may run on any thread. Not owned.
  CursorShelf* shelf = nullptr;
  // Where the stream's cursor reads (store::ReadPoint; the shelf's cursors must read there too);
  // null: the store as it is when the cursor is made. Not owned.
  const store::ReadPoint* at = nullptr;
};

// The rows of one salt of one bucket, read in chunks by tasks on the pool while the query merges.
// At most two chunks are held (the one being merged and the one being read), so a query's memory
// is bounded by the number of streams, not by the data.
//
// Thread-safety: the query thread calls everything; Fill runs on the pool; they meet under
// QueryRun::mu().
class SaltStream {
 public:
  // The first chunk holds up to `first_chunk` rows; each next one twice as many, up to
  // `max_chunk`. A merge starts small (a salt's share of the answer) so that no salt reads far
  // past what the query needs; a long stream grows to chunks that amortise the hand-over.
  //
  // A stream starts with chunk buffers that an earlier stream of the same thread let go of (a
  // range makes 16 streams per bucket, most read out in one chunk: buffers grown from empty each
  // time cost about 90 instructions per event), and leaves its own there when it goes: a few per
  // thread, each up to a bound (salt_merge.cc, kKeptChunks).
  SaltStream(std::shared_ptr<const store::Bucket> bucket, store::EventStore* store, StreamSpec spec,
             size_t first_chunk, size_t max_chunk);
  ~SaltStream();
  SaltStream(const SaltStream&) = delete;
  SaltStream& operator=(const SaltStream&) = delete;

  // Queues the read of the next chunk on `run` when none is in flight and rows may remain.
  void Prefetch(QueryRun* run);
  static void PrefetchAll(const std::vector<SaltStream*>& streams, QueryRun* run);

  // When the chunk in flight has not been picked up by a pool thread yet, reads it on the calling
  // thread instead of waiting for one: a query with little to read per salt (latest N) then costs
  // no hand-over at all for the salts it waits on. True when it did.
  bool HelpIfUnclaimed(QueryRun* run);

  // Gives up a Fill no pool thread has started, so that QueryRun::Drain need not wait for one to
  // be scheduled. Called when the query ends.
  void Abandon(QueryRun* run);

  // Makes the next event available in front(). Waits for the chunk in flight when needed.
  // Returns false with ok status when the stream is exhausted; a non-ok status when the query
  // failed (this stream or any other).
  Result<bool> Advance(QueryRun* run);

  // REQUIRES: the last Advance returned true; front() without spec.encode, FrontText() with it.
  KeyedEvent& front() { return current_[pos_]; }
  const keying::RowKey& FrontKey() const {
    return spec_.encode != nullptr ? current_keys_[pos_] : current_[pos_].key;
  }
  std::string_view FrontText() const {
    const size_t start = pos_ == 0 ? 0 : current_ends_[pos_ - 1];
    return std::string_view(current_text_).substr(start, current_ends_[pos_] - start);
  }
  void Pop() { ++pos_; }
  bool HasBuffered() const {
    return pos_ < (spec_.encode != nullptr ? current_keys_.size() : current_.size());
  }

  // For scans: true when a chunk has arrived and may be taken without waiting. REQUIRES: run->mu().
  bool ChunkReadyLocked() const { return fetched_ || (!in_flight_ && exhausted_); }
  // Takes the arrived chunk (Scan); returns false when exhausted. REQUIRES: ChunkReadyLocked().
  bool TakeChunk(QueryRun* run, std::vector<KeyedEvent>* out);
  // The same for a stream with spec.encode: the events' text, and where each event ends in it.
  bool TakeEncoded(QueryRun* run, std::string* text, std::vector<size_t>* ends);
  bool done() const { return done_; }
  int64_t bucket_start_ms() const { return bucket_->start_ms(); }
  // True when every row the stream will yield has been read, none still to come from its cursor;
  // then `*buffered` is how many it holds still (the front one included).
  bool ReadOut(QueryRun* run, size_t* buffered) const;

 private:
  friend class QueryRun;
  enum class Decoded { kKeep, kSkip, kCorrupt };
  void Fill(QueryRun* run);  // on the pool, or on the query thread through HelpIfUnclaimed
  Decoded Decode(std::string_view key, std::string_view value, KeyedEvent* out);
  // Keeps a chunk the query is done with for the next Fill to overwrite. REQUIRES: run->mu().
  void Recycle(std::vector<KeyedEvent>* spent);
  // The same for an encoded chunk; leaves the three empty.
  void RecycleEncoded(std::string* text, std::vector<size_t>* ends,
                      std::vector<keying::RowKey>* keys);

  const std::shared_ptr<const store::Bucket> bucket_;
  store::EventStore* const store_;
  const StreamSpec spec_;
  size_t chunk_events_;  // only Fill, after construction
  const size_t max_chunk_events_;
  std::unique_ptr<store::RowIterator> iter_;  // used by one Fill at a time
  bool positioned_ = false;                   // only Fill touches iter_ and this
  std::shared_ptr<FillTicket> ticket_;        // the Fill in flight; query thread only

  // Marks a Fill in flight and returns its ticket; nullptr when none is needed.
  std::shared_ptr<FillTicket> Arm(QueryRun* run);
  std::vector<std::pair<uint16_t, std::string>> topic_cache_;  // only Fill
  KeyedEvent scratch_;                                         // only Fill, with spec_.encode

  // Shared with Fill, guarded by run->mu().
  std::vector<KeyedEvent> next_;                // the chunk read by the last Fill
  std::vector<KeyedEvent> spare_;               // a spent chunk, overwritten by the next Fill
  std::string next_text_, spare_text_;          // the same, with spec_.encode
  std::vector<size_t> next_ends_, spare_ends_;  // where each event of next_text_ ends
  std::vector<keying::RowKey> next_keys_, spare_keys_;  // each event's key
  bool in_flight_ = false;
  bool fetched_ = false;    // next_ holds a chunk not yet taken
  bool exhausted_ = false;  // the iterator or the budget is spent
  int64_t read_ = 0;        // rows read out so far, against spec_.budget

  // The query thread's own.
  std::vector<KeyedEvent> current_;
  std::string current_text_;  // with spec_.encode: the chunk being merged
  std::vector<size_t> current_ends_;
  std::vector<keying::RowKey> current_keys_;
  size_t pos_ = 0;
  bool done_ = false;
};

// Waits for every task of a run before the streams they fill go away; Fills no pool thread has
// started are abandoned instead of waited for. Declare after the streams.
template <typename Streams>
class DrainOnExit {
 public:
  DrainOnExit(QueryRun* run, const Streams* streams) : run_(run), streams_(streams) {}
  ~DrainOnExit() {
    run_->Cancel();
    for (const auto& s : *streams_) s->Abandon(run_);
    run_->Drain();
  }
  DrainOnExit(const DrainOnExit&) = delete;
  DrainOnExit& operator=(const DrainOnExit&) = delete;

 private:
  QueryRun* run_;
  const Streams* streams_;
};

// How a merge runs, beside its streams and its output.
struct MergeArgs {
  Order order = Order::kDesc;
  QueryRun* run = nullptr;
  // Events still wanted; counted down as they are emitted.
  int64_t* remaining = nullptr;
  // Topics compare by these ranks (their names); when they are not the numbers' order (null:
  // they are), each run of events tied in time is gathered from every stream and sorted before it
  // is emitted, and the streams must not stop inside such a run (no StreamSpec::budget).
  const TopicOrder* topics = nullptr;
};

// Merges streams by (ts, topic, partition, offset): descending for kDesc, ascending for kAsc, as
// each stream yields in that order. Emits to `sink` until `*args.remaining` reaches 0, the sink
// says stop (`*stopped` = true), or every stream is spent.
Status MergeStreams(const std::vector<SaltStream*>& streams, const MergeArgs& args,
                    const EventSink& sink, bool* stopped);
// The same over streams with StreamSpec::encode: each event's text goes to `sink`, one event per
// call.
Status MergeEncodedStreams(const std::vector<SaltStream*>& streams, const MergeArgs& args,
                           const TextSink& sink, bool* stopped);

}  // namespace hotrow::query
