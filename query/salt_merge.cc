#include "query/salt_merge.h"

#include <algorithm>
#include <tuple>

#include "keying/row_value.h"

namespace hotrow::query {

// ---- QueryRun ----

void QueryRun::Fail(const Status& status) {
  {
    std::lock_guard lock(mu_);
    if (error_.ok()) error_ = status;
  }
  Cancel();
  cv_.notify_all();
}

void QueryRun::TaskStarted() {
  std::lock_guard lock(mu_);
  ++running_;
}

void QueryRun::TaskFinished() {
  // Notify under the lock: once running_ reaches 0 the query may return and destroy this object,
  // so nothing here may touch it after the unlock.
  std::lock_guard lock(mu_);
  --running_;
  cv_.notify_all();
}

void QueryRun::Notify() {
  { std::lock_guard lock(mu_); }  // a waiter between its check and its wait must not miss this
  cv_.notify_all();
}

Status QueryRun::WaitUntil(const std::function<bool()>& ready) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !error_.ok() || ready(); });
  return error_;
}

void QueryRun::Drain() {
  Cancel();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return running_ == 0; });
}

// ---- SaltStream ----

SaltStream::SaltStream(std::shared_ptr<const store::Bucket> bucket, store::EventStore* store,
                       StreamSpec spec, size_t first_chunk, size_t max_chunk)
    : bucket_(std::move(bucket)),
      store_(store),
      spec_(std::move(spec)),
      chunk_events_(std::max<size_t>(1, std::min(first_chunk, max_chunk))),
      max_chunk_events_(std::max<size_t>(1, max_chunk)) {}

std::shared_ptr<SaltStream::Ticket> SaltStream::Arm(QueryRun* run) {
  {
    std::lock_guard lock(run->mu());
    if (in_flight_ || fetched_ || exhausted_) return nullptr;
    in_flight_ = true;
  }
  // Whoever claims the ticket first, a pool thread or the query thread, runs the Fill and counts
  // it finished. Pool tasks hold tickets, not streams: when the query thread claimed one, the
  // task touches nothing else, so the query never waits for a pool thread to be scheduled just to
  // learn that there was nothing left to do.
  auto ticket = std::make_shared<Ticket>();
  ticket->stream = this;
  ticket->run = run;
  ticket_ = ticket;
  run->TaskStarted();
  return ticket;
}

void SaltStream::RunUnclaimed(const std::vector<std::shared_ptr<Ticket>>& tickets) {
  for (const auto& ticket : tickets) {
    if (!ticket->claimed.exchange(true, std::memory_order_acq_rel)) {
      ticket->stream->Fill(ticket->run);
      ticket->run->TaskFinished();
    }
  }
}

void SaltStream::Prefetch(ThreadPool* pool, QueryRun* run) {
  std::shared_ptr<Ticket> ticket = Arm(run);
  if (ticket == nullptr) return;
  pool->Submit([ticket] { RunUnclaimed({ticket}); });
}

void SaltStream::PrefetchAll(const std::vector<SaltStream*>& streams, ThreadPool* pool,
                             QueryRun* run) {
  auto tickets = std::make_shared<std::vector<std::shared_ptr<Ticket>>>();
  for (SaltStream* s : streams) {
    if (auto ticket = s->Arm(run)) tickets->push_back(std::move(ticket));
  }
  // One pool task per thread, each taking whatever ticket is still unclaimed, rather than one
  // task per salt: waking a pool thread costs more than a small read, and the query thread takes
  // its share too (HelpIfUnclaimed).
  const size_t helpers = std::min(static_cast<size_t>(pool->size()), tickets->size());
  for (size_t i = 0; i < helpers; ++i) pool->Submit([tickets] { RunUnclaimed(*tickets); });
}

bool SaltStream::HelpIfUnclaimed(QueryRun* run) {
  if (ticket_ == nullptr || ticket_->claimed.exchange(true, std::memory_order_acq_rel)) return false;
  Fill(run);
  run->TaskFinished();
  return true;
}

void SaltStream::Abandon(QueryRun* run) {
  if (ticket_ != nullptr && !ticket_->claimed.exchange(true, std::memory_order_acq_rel)) {
    run->TaskFinished();
  }
}

SaltStream::Decoded SaltStream::Decode(std::string_view key, std::string_view value,
                                       KeyedEvent* out) {
  if (!keying::DecodeRowKey(key, &out->key)) return Decoded::kCorrupt;
  if (out->key.ts_ms < spec_.min_ts || out->key.ts_ms >= spec_.max_ts) return Decoded::kSkip;
  std::string_view id, payload;
  if (!keying::DecodeRowValue(value, &id, &payload)) return Decoded::kCorrupt;
  if (spec_.match_id && id != spec_.id) return Decoded::kSkip;
  // assign() into a recycled event reuses its strings' capacity: no allocation per row once a
  // stream has warmed up.
  Event& e = out->event;
  e.id.assign(id);
  e.ts_ms = out->key.ts_ms;
  e.partition = out->key.partition;
  e.offset = out->key.offset;
  e.payload.assign(payload);
  auto cached = std::find_if(topic_cache_.begin(), topic_cache_.end(),
                             [&](const auto& t) { return t.first == out->key.topic; });
  if (cached == topic_cache_.end()) {
    // A number without a name cannot happen in a store hotrow wrote; show the number.
    std::string name = store_->TopicName(out->key.topic).value_or(std::to_string(out->key.topic));
    topic_cache_.emplace_back(out->key.topic, std::move(name));
    cached = std::prev(topic_cache_.end());
  }
  e.topic.assign(cached->second);
  return Decoded::kKeep;
}

void SaltStream::Fill(QueryRun* run) {
  std::vector<KeyedEvent> chunk;
  {
    std::lock_guard lock(run->mu());
    chunk.swap(spare_);  // the chunk the query finished with, to be overwritten in place
  }
  size_t n = 0;
  Status failure;
  bool end = false;
  if (run->cancelled()) {
    end = true;
  } else {
    if (iter_ == nullptr) {
      iter_ = bucket_->NewIterator(spec_.range, spec_.within_id_prefix);
      if (spec_.work) spec_.work->iterators_created.fetch_add(1, std::memory_order_relaxed);
    }
    if (!positioned_) {
      spec_.backward ? iter_->SeekToLast() : iter_->SeekToFirst();
      positioned_ = true;
      if (spec_.work) spec_.work->seeks.fetch_add(1, std::memory_order_relaxed);
    }
    uint64_t stepped = 0;
    while (n < chunk_events_ && read_ < spec_.budget) {
      if (!iter_->Valid()) {
        failure = iter_->status();
        end = true;
        break;
      }
      if (run->cancelled()) {
        end = true;
        break;
      }
      if (n == chunk.size()) chunk.emplace_back();
      ++stepped;
      const Decoded d = Decode(iter_->key(), iter_->value(), &chunk[n]);
      if (d == Decoded::kCorrupt) {
        failure = Status::Corruption("bucket " + std::to_string(bucket_->start_ms()) +
                                     " holds a row that is not a hotrow row");
        end = true;
        break;
      }
      if (d == Decoded::kKeep) {
        ++n;
        ++read_;
      }
      spec_.backward ? iter_->Prev() : iter_->Next();
    }
    if (read_ >= spec_.budget) end = true;
    if (spec_.work) spec_.work->rows_read.fetch_add(stepped, std::memory_order_relaxed);
  }
  chunk.resize(n);
  chunk_events_ = std::min(2 * chunk_events_, max_chunk_events_);
  {
    std::lock_guard lock(run->mu());
    next_ = std::move(chunk);
    fetched_ = true;
    exhausted_ = end;
    in_flight_ = false;
  }
  if (!failure.ok()) run->Fail(failure);
  run->Notify();
}

void SaltStream::Recycle(std::vector<KeyedEvent>* spent) {
  if (spare_.capacity() < spent->capacity()) spare_.swap(*spent);
  spent->clear();
}

Result<bool> SaltStream::Advance(ThreadPool* pool, QueryRun* run) {
  if (HasBuffered()) return true;
  while (!done_) {
    Prefetch(pool, run);  // no-op when a chunk is in flight or waiting
    HelpIfUnclaimed(run);
    Status s = run->WaitUntil([&] { return fetched_ || (exhausted_ && !in_flight_); });
    if (!s.ok()) return s;
    {
      std::lock_guard lock(run->mu());
      if (fetched_) {
        current_.swap(next_);
        Recycle(&next_);
        fetched_ = false;
        pos_ = 0;
      } else {
        done_ = true;
        current_.clear();
        pos_ = 0;
      }
    }
    if (!done_) Prefetch(pool, run);  // read ahead while this chunk is merged
    if (HasBuffered()) return true;
  }
  return false;
}

bool SaltStream::TakeChunk(ThreadPool* pool, QueryRun* run, std::vector<KeyedEvent>* out) {
  {
    std::lock_guard lock(run->mu());
    Recycle(out);  // the caller is done with the last chunk it took
    if (!fetched_) {
      done_ = true;
      return false;
    }
    out->swap(next_);
    fetched_ = false;
  }
  Prefetch(pool, run);
  return true;
}

// ---- The merge ----

namespace {
auto OrderKey(const KeyedEvent& e) {
  return std::make_tuple(e.key.ts_ms, e.key.topic, e.key.partition, e.key.offset);
}
}  // namespace

Status MergeStreams(const std::vector<SaltStream*>& streams, Order order, ThreadPool* pool,
                    QueryRun* run, int64_t* remaining, const EventSink& sink, bool* stopped) {
  *stopped = false;
  if (*remaining <= 0) return Status::Ok();
  SaltStream::PrefetchAll(streams, pool, run);  // every salt reads at once...
  // ...and this thread takes its share rather than wait: whatever no pool thread has picked up
  // yet, it reads itself.
  for (SaltStream* s : streams) s->HelpIfUnclaimed(run);

  // A heap of streams by their front event: the newest on top for kDesc, the oldest for kAsc.
  auto below = [order](SaltStream* a, SaltStream* b) {
    return order == Order::kDesc ? OrderKey(a->front()) < OrderKey(b->front())
                                 : OrderKey(b->front()) < OrderKey(a->front());
  };
  std::vector<SaltStream*> heap;
  heap.reserve(streams.size());
  for (SaltStream* s : streams) {
    Result<bool> has = s->Advance(pool, run);
    if (!has.ok()) return has.status();
    if (*has) heap.push_back(s);
  }
  std::make_heap(heap.begin(), heap.end(), below);
  while (!heap.empty() && *remaining > 0) {
    std::pop_heap(heap.begin(), heap.end(), below);
    SaltStream* top = heap.back();
    --*remaining;
    if (!sink(top->front().event)) {
      *stopped = true;
      return Status::Ok();
    }
    top->Pop();
    Result<bool> has = top->Advance(pool, run);
    if (!has.ok()) return has.status();
    if (*has) {
      std::push_heap(heap.begin(), heap.end(), below);
    } else {
      heap.pop_back();
    }
  }
  return Status::Ok();
}

}  // namespace hotrow::query
