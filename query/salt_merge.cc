#include "query/salt_merge.h"

#include <algorithm>
#include <tuple>

#include "keying/index_key.h"
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

std::shared_ptr<QueryRun::WorkerToken> QueryRun::NewWorkerLocked() {
  auto token = std::make_shared<WorkerToken>();
  waiting_workers_.push_back(token);
  return token;
}

void QueryRun::SubmitWorker(ThreadPool* pool, std::shared_ptr<WorkerToken> token) {
  // A worker Drain gave up before it started touches nothing: the run may be gone by then.
  pool->Submit([this, token] {
    if (!token->claimed.exchange(true, std::memory_order_acq_rel)) Work(token);
  });
}

void QueryRun::Submit(std::shared_ptr<FillTicket> ticket) {
  std::shared_ptr<WorkerToken> token;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(ticket));
    if (workers_ < max_workers_) {
      ++workers_;
      ++running_;  // a worker counts as a task: Drain waits for the ones that started
      token = NewWorkerLocked();
    }
  }
  if (token != nullptr) SubmitWorker(pool_, std::move(token));
}

void QueryRun::Work(const std::shared_ptr<WorkerToken>& token) {
  {
    std::lock_guard lock(mu_);
    std::erase(waiting_workers_, token);
  }
  ThreadPool* const pool = pool_;
  while (true) {
    std::shared_ptr<FillTicket> ticket;
    {
      std::lock_guard lock(mu_);
      while (ticket == nullptr && !queue_.empty() && !cancelled()) {
        // A ticket the query thread claimed (or abandoned) is spent: skip it.
        if (!queue_.front()->claimed.exchange(true, std::memory_order_acq_rel)) {
          ticket = queue_.front();
        }
        queue_.pop_front();
      }
      if (ticket == nullptr) {
        // The last touch of this run: once running_ reaches 0 the query may destroy it.
        --workers_;
        --running_;
        cv_.notify_all();
        return;
      }
    }
    SaltStream* stream = ticket->stream;
    if (hook_ != nullptr && *hook_) (*hook_)(stream->spec_.min_ts, stream->spec_.max_ts);
    stream->Fill(this);
    TaskFinished();  // this worker still counts in running_: the run lives on
    // When other work waits for a pool thread, this one goes back to the pool and the query's
    // next Fill queues behind it: no query keeps a thread for its whole run while others wait.
    if (!pool->HasWaitingTasks()) continue;
    std::shared_ptr<WorkerToken> next;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty() || cancelled()) {
        --workers_;
        --running_;
        cv_.notify_all();
        return;
      }
      next = NewWorkerLocked();  // takes over this worker's place in workers_ and running_
    }
    SubmitWorker(pool, std::move(next));
    return;
  }
}

void QueryRun::Drain() {
  Cancel();
  std::unique_lock lock(mu_);
  queue_.clear();  // the query thread abandoned every Fill no one claimed
  // Workers no pool thread has started yet are given up rather than waited for: on a busy pool
  // that wait could last as long as other queries' work.
  for (const auto& token : waiting_workers_) {
    if (!token->claimed.exchange(true, std::memory_order_acq_rel)) {
      --workers_;
      --running_;
    }
  }
  waiting_workers_.clear();
  cv_.wait(lock, [&] { return running_ == 0; });
}

// ---- SaltStream ----

namespace {

// The buffers of one chunk, as a stream lets go of them.
struct SpentChunk {
  std::string text;
  std::vector<size_t> ends;
  std::vector<keying::RowKey> keys;
  std::vector<KeyedEvent> events;
};

// Chunks kept per thread for the next streams it makes: a bucket's salts and a few more. Only the
// thread that makes and destroys streams touches its list (a Fill on the pool writes the stream's
// own buffers), so no lock.
constexpr size_t kKeptChunks = 24;
// A chunk larger than this goes back to the allocator: what a thread keeps stays under about
// kKeptChunks x (64 KiB of text + 256 events), whatever the queries it served read.
constexpr size_t kKeptTextBytes = 64 << 10;
constexpr size_t kKeptEvents = 256;
thread_local std::vector<SpentChunk> kept_chunks;

// Moves the buffers of a spent chunk to this thread's list when there is room and they are not too
// large; they go empty, as if freshly made.
void KeepChunk(std::string* text, std::vector<size_t>* ends, std::vector<keying::RowKey>* keys,
               std::vector<KeyedEvent>* events) {
  if (text->capacity() == 0 && keys->capacity() == 0 && events->capacity() == 0) return;
  if (kept_chunks.size() >= kKeptChunks || text->capacity() > kKeptTextBytes ||
      events->capacity() > kKeptEvents) {
    return;
  }
  SpentChunk& c = kept_chunks.emplace_back();
  c.text.swap(*text);
  c.ends.swap(*ends);
  c.keys.swap(*keys);
  c.events.swap(*events);
  c.text.clear();
  c.ends.clear();
  c.keys.clear();
  c.events.clear();
}

}  // namespace

SaltStream::SaltStream(std::shared_ptr<const store::Bucket> bucket, store::EventStore* store,
                       StreamSpec spec, size_t first_chunk, size_t max_chunk)
    : bucket_(std::move(bucket)),
      store_(store),
      spec_(std::move(spec)),
      chunk_events_(std::max<size_t>(1, std::min(first_chunk, max_chunk))),
      max_chunk_events_(std::max<size_t>(1, max_chunk)) {
  // The first Fill writes into spare_: give it the buffers of a stream that has gone.
  if (!kept_chunks.empty()) {
    SpentChunk& c = kept_chunks.back();
    spare_text_.swap(c.text);
    spare_ends_.swap(c.ends);
    spare_keys_.swap(c.keys);
    spare_.swap(c.events);
    kept_chunks.pop_back();
  }
}

SaltStream::~SaltStream() {
  // Every Fill has finished (QueryRun::Drain ran before the streams go): the buffers are this
  // thread's to keep.
  KeepChunk(&current_text_, &current_ends_, &current_keys_, &current_);
  KeepChunk(&spare_text_, &spare_ends_, &spare_keys_, &spare_);
  KeepChunk(&next_text_, &next_ends_, &next_keys_, &next_);
}

std::shared_ptr<FillTicket> SaltStream::Arm(QueryRun* run) {
  {
    std::lock_guard lock(run->mu());
    if (in_flight_ || fetched_ || exhausted_) return nullptr;
    in_flight_ = true;
  }
  auto ticket = std::make_shared<FillTicket>();
  ticket->stream = this;
  ticket_ = ticket;
  run->TaskStarted();
  return ticket;
}

void SaltStream::Prefetch(QueryRun* run) {
  if (std::shared_ptr<FillTicket> ticket = Arm(run)) run->Submit(std::move(ticket));
}

void SaltStream::PrefetchAll(const std::vector<SaltStream*>& streams, QueryRun* run) {
  // Every salt is queued at once; the run's workers (at most one per pool thread it may use) and
  // the query thread take them in turn: waking a pool thread per salt would cost more than a
  // small read.
  for (SaltStream* s : streams) s->Prefetch(run);
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
  // A scan's salt range holds the salt's index rows too (keying/index_key.h): not events.
  if (keying::IsIndexKey(key)) return Decoded::kSkip;
  if (!keying::DecodeRowKey(key, &out->key)) return Decoded::kCorrupt;
  if (out->key.ts_ms < spec_.min_ts || out->key.ts_ms >= spec_.max_ts) return Decoded::kSkip;
  if (spec_.filter != nullptr && !(*spec_.filter)(out->key.topic, out->key.partition)) {
    return Decoded::kSkip;
  }
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
  std::string text;
  std::vector<size_t> ends;
  std::vector<keying::RowKey> keys;
  {
    std::lock_guard lock(run->mu());
    chunk.swap(spare_);  // the chunk the query finished with, to be overwritten in place
    text.swap(spare_text_);
    ends.swap(spare_ends_);
    keys.swap(spare_keys_);
  }
  size_t n = 0;
  Status failure;
  bool end = false;
  if (run->cancelled()) {
    end = true;
  } else {
    if (iter_ == nullptr && spec_.shelf != nullptr) {
      iter_ = spec_.shelf->Take();
      if (iter_ != nullptr) iter_->SetRange(spec_.range);
    }
    if (iter_ == nullptr) {
      iter_ = bucket_->NewIterator(spec_.range, spec_.within_id_prefix, spec_.at);
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
      KeyedEvent* slot = &scratch_;
      if (spec_.encode == nullptr) {
        if (n == chunk.size()) chunk.emplace_back();
        slot = &chunk[n];
      }
      ++stepped;
      const Decoded d = Decode(iter_->key(), iter_->value(), slot);
      if (d == Decoded::kCorrupt) {
        failure = bucket_->NotARow();
        end = true;
        break;
      }
      if (d == Decoded::kKeep) {
        if (spec_.encode != nullptr) {
          (*spec_.encode)(slot->event, &text);
          ends.push_back(text.size());
          keys.push_back(slot->key);
        }
        ++n;
        ++read_;
      }
      spec_.backward ? iter_->Prev() : iter_->Next();
    }
    if (read_ >= spec_.budget) end = true;
    if (spec_.work) spec_.work->rows_read.fetch_add(stepped, std::memory_order_relaxed);
    // Read out: the cursor serves the next stream of the shelf.
    if (end && failure.ok() && spec_.shelf != nullptr) {
      spec_.shelf->Put(std::move(iter_));
    }
  }
  if (spec_.encode == nullptr) chunk.resize(n);
  chunk_events_ = std::min(2 * chunk_events_, max_chunk_events_);
  {
    std::lock_guard lock(run->mu());
    next_ = std::move(chunk);
    next_text_ = std::move(text);
    next_ends_ = std::move(ends);
    next_keys_ = std::move(keys);
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

void SaltStream::RecycleEncoded(std::string* text, std::vector<size_t>* ends,
                                std::vector<keying::RowKey>* keys) {
  if (spare_text_.capacity() < text->capacity()) spare_text_.swap(*text);
  if (spare_ends_.capacity() < ends->capacity()) spare_ends_.swap(*ends);
  if (spare_keys_.capacity() < keys->capacity()) spare_keys_.swap(*keys);
  spare_text_.clear();
  spare_ends_.clear();
  spare_keys_.clear();
  text->clear();
  ends->clear();
  keys->clear();
}

Result<bool> SaltStream::Advance(QueryRun* run) {
  if (HasBuffered()) return true;
  while (!done_) {
    Prefetch(run);  // no-op when a chunk is in flight or waiting
    HelpIfUnclaimed(run);
    Status s = run->WaitUntil([&] { return fetched_ || (exhausted_ && !in_flight_); });
    if (!s.ok()) return s;
    {
      std::lock_guard lock(run->mu());
      if (fetched_) {
        if (spec_.encode != nullptr) {
          current_text_.swap(next_text_);
          current_ends_.swap(next_ends_);
          current_keys_.swap(next_keys_);
          RecycleEncoded(&next_text_, &next_ends_, &next_keys_);
        } else {
          current_.swap(next_);
          Recycle(&next_);
        }
        fetched_ = false;
        pos_ = 0;
      } else {
        done_ = true;
        current_.clear();
        current_keys_.clear();
        pos_ = 0;
      }
    }
    if (!done_) Prefetch(run);  // read ahead while this chunk is merged
    if (HasBuffered()) return true;
  }
  return false;
}

bool SaltStream::ReadOut(QueryRun* run, size_t* buffered) const {
  std::lock_guard lock(run->mu());
  if (!exhausted_ || in_flight_ || fetched_) return false;
  const size_t held = spec_.encode != nullptr ? current_keys_.size() : current_.size();
  *buffered = done_ ? 0 : held - pos_;
  return true;
}

bool SaltStream::TakeChunk(QueryRun* run, std::vector<KeyedEvent>* out) {
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
  Prefetch(run);
  return true;
}

bool SaltStream::TakeEncoded(QueryRun* run, std::string* text, std::vector<size_t>* ends) {
  {
    std::lock_guard lock(run->mu());
    // The caller is done with the last chunk it took: keep its buffers for the next Fill.
    RecycleEncoded(text, ends, &current_keys_);
    if (!fetched_) {
      done_ = true;
      return false;
    }
    text->swap(next_text_);
    ends->swap(next_ends_);
    current_keys_.swap(next_keys_);  // a scan does not read them; kept for the next Fill
    fetched_ = false;
  }
  Prefetch(run);
  return true;
}

// ---- The merge ----

namespace {

// What a merge hands on, and how: the events of plain streams...
struct EventOut {
  const EventSink& sink;
  using Held = KeyedEvent;  // an event taken out of its stream (MergeTiesByName)
  bool Emit(SaltStream* s) const { return sink(s->front().event); }
  static Held Take(SaltStream* s) { return std::move(s->front()); }
  bool Emit(const Held& held) const { return sink(held.event); }
};

// ...or the text of streams with StreamSpec::encode.
struct TextOut {
  const TextSink& sink;
  struct Held {
    keying::RowKey key;
    std::string text;
  };
  bool Emit(SaltStream* s) const { return sink(s->FrontText(), 1); }
  static Held Take(SaltStream* s) { return {s->FrontKey(), std::string(s->FrontText())}; }
  bool Emit(const Held& held) const { return sink(held.text, 1); }
};

// A stream in the merge's heap with its front event's place in the answer: the greater entry
// comes sooner. Keys are non-negative, so for kAsc every word is flipped and the same comparison
// serves both orders.
struct HeapEntry {
  uint64_t ts = 0;
  uint64_t topic_partition = 0;
  uint64_t offset = 0;
  SaltStream* stream = nullptr;
};

HeapEntry EntryOf(SaltStream* s, Order order) {
  const keying::RowKey& k = s->FrontKey();
  const uint64_t flip = order == Order::kDesc ? 0 : ~uint64_t{0};
  return {static_cast<uint64_t>(k.ts_ms) ^ flip,
          ((uint64_t{k.topic} << 32) | static_cast<uint32_t>(k.partition)) ^ flip,
          static_cast<uint64_t>(k.offset) ^ flip, s};
}

bool Sooner(const HeapEntry& a, const HeapEntry& b) {
  if (a.ts != b.ts) return a.ts > b.ts;
  if (a.topic_partition != b.topic_partition) return a.topic_partition > b.topic_partition;
  return a.offset > b.offset;
}

// Restores the heap below `i` (the soonest entry on top) after heap[i] changed.
void SiftDown(std::vector<HeapEntry>* heap, size_t i) {
  const size_t n = heap->size();
  const HeapEntry moving = (*heap)[i];
  while (true) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && Sooner((*heap)[child + 1], (*heap)[child])) ++child;
    if (!Sooner((*heap)[child], moving)) break;
    (*heap)[i] = (*heap)[child];
    i = child;
  }
  (*heap)[i] = moving;
}

// Moves the stream on top of `heap` (popped to its back) to its next event: pushed back when it
// has one, dropped when it is spent.
template <typename Below>
Status StepTop(std::vector<SaltStream*>* heap, QueryRun* run, const Below& below) {
  SaltStream* top = heap->back();
  top->Pop();
  Result<bool> has = top->Advance(run);
  if (!has.ok()) return has.status();
  if (*has) {
    std::push_heap(heap->begin(), heap->end(), below);
  } else {
    heap->pop_back();
  }
  return Status::Ok();
}

// The merge when topic ranks are not the numbers' order: a stream yields the events of one time in
// number order, so every event of the time on top is gathered from every stream, sorted by rank,
// then emitted.
template <typename Out>
Status MergeTiesByName(std::vector<SaltStream*> heap, Order order, const TopicOrder& topics,
                       QueryRun* run, int64_t* remaining, const Out& out, bool* stopped) {
  auto key = [&topics](const keying::RowKey& k) {
    return std::make_tuple(k.ts_ms, topics.Rank(k.topic), k.partition, k.offset);
  };
  auto below = [&](SaltStream* a, SaltStream* b) {
    return order == Order::kDesc ? key(a->FrontKey()) < key(b->FrontKey())
                                 : key(b->FrontKey()) < key(a->FrontKey());
  };
  auto held_key = [](const typename Out::Held& h) -> const keying::RowKey& { return h.key; };
  std::make_heap(heap.begin(), heap.end(), below);
  std::vector<typename Out::Held> tied;
  while (!heap.empty() && *remaining > 0) {
    const int64_t ts = heap.front()->FrontKey().ts_ms;
    tied.clear();
    while (!heap.empty() && heap.front()->FrontKey().ts_ms == ts) {
      std::pop_heap(heap.begin(), heap.end(), below);
      tied.push_back(Out::Take(heap.back()));
      HOTROW_RETURN_IF_ERROR(StepTop(&heap, run, below));
    }
    std::sort(tied.begin(), tied.end(), [&](const auto& a, const auto& b) {
      return order == Order::kDesc ? key(held_key(b)) < key(held_key(a))
                                   : key(held_key(a)) < key(held_key(b));
    });
    for (const auto& e : tied) {
      if (*remaining <= 0) break;
      --*remaining;
      if (!out.Emit(e)) {
        *stopped = true;
        return Status::Ok();
      }
    }
  }
  return Status::Ok();
}

template <typename Out>
Status Merge(const std::vector<SaltStream*>& streams, const MergeArgs& args, const Out& out,
             bool* stopped) {
  const Order order = args.order;
  QueryRun* const run = args.run;
  int64_t* const remaining = args.remaining;
  const TopicOrder* const topics = args.topics;
  *stopped = false;
  if (*remaining <= 0) return Status::Ok();
  SaltStream::PrefetchAll(streams, run);  // every salt reads at once...
  // ...and this thread takes its share rather than wait: whatever no pool thread has picked up
  // yet, it reads itself.
  for (SaltStream* s : streams) s->HelpIfUnclaimed(run);

  // The streams with an event, made into a heap by their front event below: the newest on top
  // for kDesc, the oldest for kAsc.
  std::vector<SaltStream*> heap;
  heap.reserve(streams.size());
  for (SaltStream* s : streams) {
    Result<bool> has = s->Advance(run);
    if (!has.ok()) return has.status();
    if (*has) heap.push_back(s);
  }
  if (topics != nullptr && !topics->InNumberOrder()) {
    return MergeTiesByName(std::move(heap), order, *topics, run, remaining, out, stopped);
  }
  // The heap holds each stream's front key beside it, and the stream on top, once emitted, is
  // moved on and sifted down in one pass (a pop and a push sifted twice and compared keys through
  // each stream's buffers: a third of a range's merge cost, callgrind over range_cpu_bench).
  std::vector<HeapEntry> by_key;
  by_key.reserve(heap.size());
  for (SaltStream* s : heap) by_key.push_back(EntryOf(s, order));
  for (size_t i = by_key.size() / 2; i-- > 0;) SiftDown(&by_key, i);
  while (!by_key.empty() && *remaining > 0) {
    SaltStream* top = by_key.front().stream;
    --*remaining;
    if (!out.Emit(top)) {
      *stopped = true;
      return Status::Ok();
    }
    top->Pop();
    Result<bool> has = top->Advance(run);
    if (!has.ok()) return has.status();
    if (*has) {
      by_key.front() = EntryOf(top, order);
    } else {
      by_key.front() = by_key.back();
      by_key.pop_back();
    }
    if (!by_key.empty()) SiftDown(&by_key, 0);
  }
  return Status::Ok();
}

}  // namespace

Status MergeStreams(const std::vector<SaltStream*>& streams, const MergeArgs& args,
                    const EventSink& sink, bool* stopped) {
  return Merge(streams, args, EventOut{sink}, stopped);
}

Status MergeEncodedStreams(const std::vector<SaltStream*>& streams, const MergeArgs& args,
                           const TextSink& sink, bool* stopped) {
  return Merge(streams, args, TextOut{sink}, stopped);
}

}  // namespace hotrow::query
