#include "query/bucket_range.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>

#include "keying/row_key.h"

namespace hotrow::query {
namespace {

// The smallest first chunk of a merge stream: below this the hand-over costs more than the rows.
constexpr size_t kMinFirstChunk = 16;

// Where one bucket's merged events go, and how many are still wanted.
struct PartOut {
  const EventSink* sink = nullptr;  // set one of the two
  const TextSink* text = nullptr;
  int64_t* remaining = nullptr;
  bool* stopped = nullptr;  // set when a sink said stop
  // When set, called once as the bucket's first event is handed on if by then every salt is read
  // out and the bucket holds fewer events than were wanted: the answer needs the next bucket.
  const std::function<void()>* short_of_wanted = nullptr;
};

// Merges the salts of `bucket` that may hold the id into `out`, reading them with `workers` pool
// threads beside this one.
Status MergeBucket(const BucketRangeSpec& spec, const std::shared_ptr<const store::Bucket>& bucket,
                   int workers, const PartOut& out) {
  const int64_t wanted = *out.remaining;
  // The salts pass their cursors on (most read out in their first Fill), on whichever thread
  // reads them: one cursor per reading thread, not one per salt. Outlives the streams.
  CursorShelf shelf;
  // Decided after spec.at was taken (RangeOverBuckets): it covers every row read at it.
  const std::vector<uint8_t>& salts = spec.salts->In(*bucket);
  std::vector<uint8_t> holding;
  for (uint8_t salt : salts) {
    if (bucket->MayHoldId(salt, spec.salts->id_hash())) holding.push_back(salt);
  }
  if (spec.decided_hook != nullptr && *spec.decided_hook) (*spec.decided_hook)(bucket->start_ms());
  std::vector<std::unique_ptr<SaltStream>> owned;
  std::vector<SaltStream*> streams;
  for (uint8_t salt : holding) {
    StreamSpec s;
    s.range = keying::IdTimeKeyRange(salt, spec.salts->id_hash(), spec.from_ms, spec.to_ms);
    s.within_id_prefix = true;
    s.backward = spec.order == Order::kAsc;
    s.min_ts = spec.from_ms;
    s.max_ts = spec.to_ms;
    s.match_id = true;
    s.id = std::string(spec.id);
    // A salt stopped inside a run of events tied in time would leave the merge to pick among
    // them in number order.
    s.budget = spec.topics->InNumberOrder() ? wanted : INT64_MAX;
    s.work = spec.work;
    s.filter = spec.filter;
    s.encode = spec.encode;
    s.shelf = &shelf;
    s.at = spec.at;
    // Each salt first reads about twice its share of what is still missing.
    const size_t share = static_cast<size_t>(2 * wanted / static_cast<int64_t>(salts.size()));
    const size_t first =
        std::min<size_t>(std::max<size_t>(share, kMinFirstChunk), static_cast<size_t>(wanted));
    owned.push_back(
        std::make_unique<SaltStream>(bucket, spec.store, std::move(s), first, spec.chunk_events));
    streams.push_back(owned.back().get());
  }
  if (streams.empty()) return Status::Ok();
  QueryRun run(spec.pool, workers, spec.hook);
  DrainOnExit drain(&run, &owned);
  MergeArgs args;
  args.order = spec.order;
  args.run = &run;
  args.remaining = out.remaining;
  args.topics = spec.topics;
  if (out.short_of_wanted == nullptr) {
    return out.text != nullptr ? MergeEncodedStreams(streams, args, *out.text, out.stopped)
                               : MergeStreams(streams, args, *out.sink, out.stopped);
  }
  // By the first event every salt has made its first read, which reads most salts out.
  bool checked = false;
  auto check = [&] {
    if (checked) return;
    checked = true;
    int64_t held = 0;
    for (SaltStream* s : streams) {
      size_t buffered = 0;
      if (!s->ReadOut(&run, &buffered)) return;  // unknown: maybe enough
      held += static_cast<int64_t>(buffered);
    }
    if (held < wanted) (*out.short_of_wanted)();
  };
  if (out.text != nullptr) {
    const TextSink text = [&](std::string_view t, int64_t n) {
      check();
      return (*out.text)(t, n);
    };
    return MergeEncodedStreams(streams, args, text, out.stopped);
  }
  const EventSink sink = [&](const Event& e) {
    check();
    return (*out.sink)(e);
  };
  return MergeStreams(streams, args, sink, out.stopped);
}

// An event of a part kept for a plain sink: its topic and payload are in Part::text, in this order;
// its id is the range's.
struct PackedEvent {
  int64_t ts_ms = 0;
  int64_t offset = 0;
  int32_t partition = 0;
  uint32_t topic_size = 0;
  uint32_t payload_size = 0;
};

// One bucket read ahead: merged whole by whichever thread claims it first, kept until its turn.
struct Part {
  size_t index = 0;  // in the answer's order of buckets
  std::shared_ptr<const store::Bucket> bucket;
  int64_t budget = 0;  // what was still missing when it was made: the most it may hold
  std::atomic<bool> claimed{false};
  std::atomic<int64_t> held{0};  // events kept so far, for the parts after it to see
  // Written by the thread that claimed it; read by the query thread once `done`.
  Status status;
  std::vector<Event> events;  // into spec.events: moved there whole
  // With spec.encode: each event's text, one after the other, and where each ends. For a plain
  // sink: each event's id, topic and payload bytes, one after the other, with the rest in
  // `packed`: no allocation per event on the reading thread and no free of it on the query thread
  // (a copy of each Event cost the 2-thread range 1.5x the CPU per event of 1 thread,
  // busy_range_bench).
  std::string text;
  std::vector<size_t> ends;
  std::vector<PackedEvent> packed;
  bool done = false;  // guarded by Shared::mu
};

// What the query thread shares with the pool workers it started. Held by shared_ptr: a worker
// that starts after the query returned finds it cancelled and touches nothing else.
struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> cancelled{false};        // set under mu
  // One per bucket, made in turn under mu; an entry never changes once made (an emitted part
  // only lets go of its events), so a thread that claimed part j may read parts[i < j] freely.
  std::vector<std::shared_ptr<Part>> parts;
  size_t made = 0;  // parts made so far; mu
  int in_pool = 0;  // workers submitted and not finished: the pool threads the range holds; mu
  int running = 0;  // workers started before the cancel and not finished; mu
  int64_t limit = 0;  // the most events the parts are read for; set before any part is made

  // True when the parts before `part` hold `limit` events between them: the answer ends before
  // `part`, which will not be emitted. (A part's events are the first of its bucket's, so what
  // they hold stays part of the answer.)
  bool Covered(const Part& part) const {
    int64_t held = 0;
    for (size_t i = 0; i < part.index; ++i) held += parts[i]->held.load(std::memory_order_relaxed);
    return held >= limit;
  }

  // The first part made and not claimed, claimed now; null when there is none. REQUIRES: mu.
  Part* ClaimNextLocked(size_t from) {
    for (size_t j = from; j < made; ++j) {
      if (!parts[j]->claimed.exchange(true)) return parts[j].get();
    }
    return nullptr;
  }
};

// Reads `part` on this thread (alone: the range already holds pool threads for other buckets).
// Stops early once the parts before it hold the rest of the answer: then it is never emitted.
void ReadPart(const BucketRangeSpec& spec, const Shared& shared, Part* part) {
  int64_t remaining = part->budget;
  bool stopped = false;
  // Counts an event kept; false when the read should stop.
  auto kept = [&] {
    const int64_t n = part->held.fetch_add(1, std::memory_order_relaxed) + 1;
    if (shared.cancelled.load(std::memory_order_relaxed)) return false;
    return n % 64 != 0 || !shared.Covered(*part);
  };
  const EventSink keep = [&](const Event& e) {
    part->events.push_back(e);
    return kept();
  };
  // The id is the range's (MergeBucket's streams match it): not kept.
  const EventSink pack = [&](const Event& e) {
    part->text.append(e.topic).append(e.payload);
    part->packed.push_back({.ts_ms = e.ts_ms,
                            .offset = e.offset,
                            .partition = e.partition,
                            .topic_size = static_cast<uint32_t>(e.topic.size()),
                            .payload_size = static_cast<uint32_t>(e.payload.size())});
    return kept();
  };
  const TextSink keep_text = [&](std::string_view text, int64_t /*events*/) {
    part->text.append(text);
    part->ends.push_back(part->text.size());
    return kept();
  };
  PartOut out;
  if (spec.encode != nullptr) {
    out.text = &keep_text;
  } else {
    out.sink = spec.events != nullptr ? &keep : &pack;
  }
  out.remaining = &remaining;
  out.stopped = &stopped;
  part->status = MergeBucket(spec, part->bucket, /*workers=*/0, out);
}

// Reads the first part, `part`, with its salts on up to spec.max_workers pool threads beside this
// one, and merges it here straight to the range's sinks (a busy id's range, which the first bucket
// fills, is then read as fast as a bucket can be). `short_of_wanted` as PartOut's.
Status EmitFirstPart(const BucketRangeSpec& spec, Part* part, int64_t* remaining,
                     const std::function<void()>* short_of_wanted, bool* stopped) {
  // What reaches the sinks counts as held, for the parts read ahead to see (Shared::Covered).
  const TextSink text = [&](std::string_view t, int64_t n) {
    part->held.fetch_add(n, std::memory_order_relaxed);
    return (*spec.text)(t, n);
  };
  const EventSink sink = [&](const Event& e) {
    part->held.fetch_add(1, std::memory_order_relaxed);
    return (*spec.sink)(e);
  };
  PartOut out;
  if (spec.encode != nullptr) {
    out.text = &text;
  } else {
    out.sink = &sink;
  }
  out.remaining = remaining;
  out.stopped = stopped;
  out.short_of_wanted = short_of_wanted;
  return MergeBucket(spec, part->bucket, spec.max_workers, out);
}

// A pool worker of a range: reads the parts no one has claimed, in order, until none is left.
void Work(const std::shared_ptr<Shared>& shared, const BucketRangeSpec* spec) {
  std::unique_lock lock(shared->mu);
  if (shared->cancelled.load(std::memory_order_relaxed)) {
    --shared->in_pool;  // the query has returned or is returning: `spec` may be gone
    return;
  }
  ++shared->running;  // the query now waits for this worker
  while (!shared->cancelled.load(std::memory_order_relaxed)) {
    Part* part = shared->ClaimNextLocked(0);
    if (part == nullptr) break;
    lock.unlock();
    if (spec->hook != nullptr && *spec->hook) (*spec->hook)(spec->from_ms, spec->to_ms);
    ReadPart(*spec, *shared, part);
    lock.lock();
    part->done = true;
    shared->cv.notify_all();
  }
  --shared->running;
  --shared->in_pool;
  shared->cv.notify_all();
}

// Hands `part`'s events on to the range's sink, at most *remaining of them; false when the sink
// said stop.
bool EmitPart(const BucketRangeSpec& spec, Part& part, int64_t* remaining) {
  if (spec.encode != nullptr) {
    // The text of every event wanted, at once.
    const int64_t n = std::min(*remaining, static_cast<int64_t>(part.ends.size()));
    if (n == 0) return true;
    *remaining -= n;
    return (*spec.text)(std::string_view(part.text).substr(0, part.ends[n - 1]), n);
  }
  if (spec.events != nullptr) {
    const size_t n = static_cast<size_t>(
        std::min(*remaining, static_cast<int64_t>(part.events.size())));
    *remaining -= static_cast<int64_t>(n);
    spec.events->insert(spec.events->end(), std::make_move_iterator(part.events.begin()),
                        std::make_move_iterator(part.events.begin() + static_cast<ptrdiff_t>(n)));
    return true;
  }
  // Each event rebuilt in one Event whose strings keep their capacity; a topic is copied only
  // when it changes.
  Event e;
  e.id.assign(spec.id);
  size_t at = 0;
  const std::string_view text(part.text);
  for (size_t i = 0; i < part.packed.size() && *remaining > 0; ++i) {
    const PackedEvent& p = part.packed[i];
    const std::string_view topic = text.substr(at, p.topic_size);
    if (topic != e.topic) e.topic.assign(topic);
    at += p.topic_size;
    e.payload.assign(text.substr(at, p.payload_size));
    at += p.payload_size;
    e.ts_ms = p.ts_ms;
    e.partition = p.partition;
    e.offset = p.offset;
    --*remaining;
    if (!(*spec.sink)(e)) return false;
  }
  return true;
}

// Cancels the tasks of a range and waits until none runs: they use what the caller owns.
class JoinOnExit {
 public:
  explicit JoinOnExit(Shared* shared) : shared_(shared) {}
  ~JoinOnExit() {
    std::unique_lock lock(shared_->mu);
    shared_->cancelled.store(true, std::memory_order_relaxed);
    // A task no pool thread has started yet will touch nothing but `shared`: not waited for.
    shared_->cv.wait(lock, [&] { return shared_->running == 0; });
  }
  JoinOnExit(const JoinOnExit&) = delete;
  JoinOnExit& operator=(const JoinOnExit&) = delete;

 private:
  Shared* shared_;
};

// The ahead part of RangeOverBuckets: `buckets` read in parallel, each merged whole on one thread.
Status ReadAhead(const BucketRangeSpec& spec,
                 const std::vector<std::shared_ptr<const store::Bucket>>& buckets, int64_t limit) {
  int64_t remaining = limit;
  auto shared = std::make_shared<Shared>();
  shared->parts.resize(buckets.size());
  shared->limit = limit;
  JoinOnExit join(shared.get());
  // Buckets made ahead of the one being emitted: enough that every worker and this thread find
  // one to read.
  const size_t window = static_cast<size_t>(spec.max_workers) + 2;
  // A pool worker, when the range has fewer than it may hold and a part is waiting for it.
  auto start_worker = [&](size_t k) {
    {
      std::lock_guard lock(shared->mu);
      if (shared->in_pool >= spec.max_workers || shared->made <= k + 1) return;
      ++shared->in_pool;
    }
    spec.pool->Submit([shared, &spec] { Work(shared, &spec); });
  };
  // The first bucket's salts are read on the pool and merged on this thread before any worker
  // reads ahead, so that a range it fills (a busy id) reads no other bucket; the worker starts on
  // the second bucket as soon as the first one's salts are read out and hold too few events, which
  // for most ranges is before its merge: the pool reads ahead while this thread merges.
  const std::function<void()> first_is_short = [&] { start_worker(0); };
  for (size_t k = 0; k < buckets.size() && remaining > 0; ++k) {
    {
      std::lock_guard lock(shared->mu);
      while (shared->made < buckets.size() && shared->made < k + window) {
        auto part = std::make_shared<Part>();
        part->index = shared->made;
        part->bucket = buckets[shared->made];
        part->budget = remaining;
        shared->parts[shared->made++] = std::move(part);
      }
    }
    if (k == 0) {
      Part& first = *shared->parts[0];
      first.claimed.store(true);  // no worker runs yet
      bool stopped = false;
      HOTROW_RETURN_IF_ERROR(EmitFirstPart(spec, &first, &remaining, &first_is_short, &stopped));
      if (stopped) return Status::Ok();
      continue;
    }
    start_worker(k);
    Part& part = *shared->parts[k];
    if (!part.claimed.exchange(true)) {
      ReadPart(spec, *shared, &part);
    } else {
      // Read by a worker: meanwhile read the next part no one has started, then wait.
      std::unique_lock lock(shared->mu);
      while (!part.done) {
        Part* next = shared->ClaimNextLocked(k + 1);
        if (next == nullptr) {
          shared->cv.wait(lock, [&] { return part.done; });
          break;
        }
        lock.unlock();
        ReadPart(spec, *shared, next);
        lock.lock();
        next->done = true;
      }
    }
    HOTROW_RETURN_IF_ERROR(part.status);
    if (!EmitPart(spec, part, &remaining)) return Status::Ok();
    // Its memory goes as soon as it is out; no other thread touches its events again.
    std::vector<Event>().swap(part.events);
    std::string().swap(part.text);
    std::vector<size_t>().swap(part.ends);
    std::vector<PackedEvent>().swap(part.packed);
  }
  return Status::Ok();
}

}  // namespace

Status RangeOverBuckets(const BucketRangeSpec& given,
                        const std::vector<std::shared_ptr<const store::Bucket>>& buckets,
                        int64_t limit) {
  // Taken before any bucket's salts are decided (MergeBucket), held until every read is done.
  const std::shared_ptr<const store::ReadPoint> at = given.store->ReadPointNow();
  BucketRangeSpec spec = given;
  spec.at = at.get();
  // With pool workers and reading ahead: the first bucket's salts on the pool, merged here, and
  // every later bucket a part merged whole on one thread (ReadAhead).
  if (spec.ahead && spec.max_workers > 0) return ReadAhead(spec, buckets, limit);
  // One bucket at a time, its salts read on the pool, straight to the sinks: latest N, or a range
  // without pool workers.
  int64_t remaining = limit;
  bool stopped = false;
  PartOut out;
  out.sink = spec.encode != nullptr ? nullptr : spec.sink;
  out.text = spec.encode != nullptr ? spec.text : nullptr;
  out.remaining = &remaining;
  out.stopped = &stopped;
  for (const auto& bucket : buckets) {
    HOTROW_RETURN_IF_ERROR(MergeBucket(spec, bucket, spec.max_workers, out));
    if (stopped || remaining == 0) return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace hotrow::query
