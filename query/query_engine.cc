#include "query/query_engine.h"

#include <algorithm>
#include <thread>

#include "common/time_format.h"
#include "keying/row_key.h"
#include "query/bucket_range.h"
#include "query/id_salts.h"
#include "query/index_series.h"
#include "query/latest_all.h"
#include "query/salt_merge.h"
#include "query/series.h"
#include "query/small_query.h"
#include "query/thread_pool.h"
#include "query/topic_order.h"

namespace hotrow::query {
namespace {

// Holds one of the engine's query slots for the life of a query.
class Admission {
 public:
  Admission(std::atomic<int>* running, int max) : running_(running) {
    admitted_ = running_->fetch_add(1) < max;
  }
  ~Admission() { running_->fetch_sub(1); }
  bool admitted() const { return admitted_; }

 private:
  std::atomic<int>* running_;
  bool admitted_;
};

Status BusyStatus(int max) {
  return Status::Busy("too many queries at once (" + std::to_string(max) +
                      " running); retry shortly");
}

}  // namespace

QueryEngine::QueryEngine(store::EventStore* store, const QueryOptions& options)
    : store_(store), options_(options) {
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  pool_ = std::make_unique<ThreadPool>(std::max(1, threads), "hotrow-query");
  cursors_ = std::make_unique<CursorCache>();
  if (options.last_cache > 0) {
    LastCacheOptions cache_options;
    cache_options.depth = options.last_cache;
    cache_options.max_bytes = options.last_cache_bytes;
    cache_ = std::make_unique<LastCache>(cache_options);
    // Told of every Write that returns from now on; the rebuild reads what is stored already.
    store_->AddWriteObserver(cache_.get());
    rebuild_ =
        std::make_unique<LastCacheRebuild>(store_, cache_.get(), pool_.get(), MaxWorkersPerQuery());
  }
}

QueryWorkStats QueryEngine::Work() const {
  QueryWorkStats out;
  out.iterators_created = work_.iterators_created.load(std::memory_order_relaxed);
  out.seeks = work_.seeks.load(std::memory_order_relaxed);
  out.rows_read = work_.rows_read.load(std::memory_order_relaxed);
  return out;
}

QueryEngine::~QueryEngine() {
  rebuild_.reset();  // stops and joins its thread
  if (cache_ != nullptr) store_->RemoveWriteObserver(cache_.get());
}

LastCacheStatus QueryEngine::Cache() const {
  LastCacheStatus status;
  if (cache_ == nullptr) return status;
  status.enabled = true;
  status.depth = cache_->depth();
  status.cache = cache_->Stats();
  status.rebuild = rebuild_->progress();
  return status;
}

void QueryEngine::WaitForCacheRebuild() {
  if (rebuild_ != nullptr) rebuild_->Wait();
}

void QueryEngine::ForgetPartitions(const PartitionFilter& drop) {
  if (cache_ != nullptr) cache_->ForgetPartitions(drop);
}

int QueryEngine::threads() const { return pool_->size(); }

int QueryEngine::MaxWorkersPerQuery() const { return pool_->size() - 1; }

Result<std::vector<Event>> QueryEngine::Latest(std::string_view id, int n,
                                               const PartitionFilter* filter) {
  if (n < 1 || n > kMaxLatest) {
    return Status::InvalidArgument("n must be between 1 and " + std::to_string(kMaxLatest) +
                                   ", got " + std::to_string(n));
  }
  Admission admission(&running_, options_.max_concurrent_queries);
  if (!admission.admitted()) return BusyStatus(options_.max_concurrent_queries);
  std::vector<Event> out;
  HOTROW_RETURN_IF_ERROR(LatestAdmitted(id, n, filter, &out));
  return out;
}

bool QueryEngine::LatestCached(std::string_view id, int n, std::vector<Event>* out) {
  out->clear();
  if (cache_ == nullptr || n < 1 || n > cache_->depth()) return false;
  std::vector<CachedEvent> cached;
  const TopicOrder topics(*store_);
  if (!cache_->Latest(id, keying::IdHash(id), n, store_->WindowStartMs(), nullptr, &cached,
                      &topics)) {
    return false;
  }
  out->reserve(cached.size());
  for (CachedEvent& c : cached) out->push_back(FromCached(std::string(id), std::move(c)));
  return true;
}

Status QueryEngine::LatestAdmitted(std::string_view id, int n, const PartitionFilter* filter,
                                   std::vector<Event>* out, const TopicOrder* topics) {
  out->clear();
  if (cache_ != nullptr && n <= cache_->depth()) {
    std::vector<CachedEvent> cached;
    std::optional<TopicOrder> own;  // ties in time order topics by name
    if (topics == nullptr) topics = &own.emplace(*store_);
    if (cache_->Latest(id, keying::IdHash(id), n, store_->WindowStartMs(), filter, &cached,
                       topics)) {
      out->reserve(cached.size());
      for (CachedEvent& c : cached) out->push_back(FromCached(std::string(id), std::move(c)));
      return Status::Ok();
    }
  }
  out->reserve(static_cast<size_t>(std::min(n, 64)));
  return RangeAdmitted(id, 0, kMaxTimeMs, n, Order::kDesc,
                       RangeOut{.events = out, .latest = true, .filter = filter});
}

Event QueryEngine::FromCached(std::string id, CachedEvent&& cached) const {
  std::optional<std::string> topic = store_->TopicName(cached.topic);
  std::string name = topic ? std::move(*topic) : std::to_string(cached.topic);
  return Event{.id = std::move(id),
               .ts_ms = cached.ts_ms,
               .topic = std::move(name),
               .partition = cached.partition,
               .offset = cached.offset,
               .payload = std::move(cached.payload)};
}

Result<std::vector<std::vector<Event>>> QueryEngine::LatestMany(const std::vector<std::string>& ids,
                                                                int n,
                                                                const PartitionFilter* filter) {
  if (n < 1 || n > kMaxLatest) {
    return Status::InvalidArgument("n must be between 1 and " + std::to_string(kMaxLatest) +
                                   ", got " + std::to_string(n));
  }
  if (ids.size() > kMaxLatestIds) {
    return Status::InvalidArgument("at most " + std::to_string(kMaxLatestIds) +
                                   " ids at once, got " + std::to_string(ids.size()));
  }
  Admission admission(&running_, options_.max_concurrent_queries);
  if (!admission.admitted()) return BusyStatus(options_.max_concurrent_queries);
  std::vector<std::vector<Event>> out(ids.size());
  const TopicOrder topics(*store_);
  for (size_t i = 0; i < ids.size(); ++i) {
    HOTROW_RETURN_IF_ERROR(LatestAdmitted(ids[i], n, filter, &out[i], &topics));
  }
  return out;
}

Result<LatestAllPage> QueryEngine::LatestAll(std::string_view prefix, std::string_view after,
                                             int64_t limit, const PartitionFilter* filter) {
  if (limit < 1 || limit > kMaxLatestAllLimit) {
    return Status::InvalidArgument("limit must be between 1 and " +
                                   std::to_string(kMaxLatestAllLimit) + ", got " +
                                   std::to_string(limit));
  }
  Admission admission(&running_, options_.max_concurrent_queries);
  if (!admission.admitted()) return BusyStatus(options_.max_concurrent_queries);
  // One id more than the page: whether another page follows.
  const size_t wanted = static_cast<size_t>(limit) + 1;
  LatestAllPage page;
  const int64_t window_start = store_->WindowStartMs();
  page.from_cache = cache_ != nullptr && cache_->Complete(window_start);
  if (page.from_cache) {
    // Every id with a row in the window has an entry: walk them in id order. An id whose entry
    // cannot tell its newest event exactly is read from the store.
    const TopicOrder topics(*store_);
    std::string cursor(after);
    std::vector<Event> newest;
    while (page.events.size() < wanted) {
      std::optional<std::vector<LastCache::IdNewest>> walked = cache_->NewestAfter(
          prefix, cursor, wanted - page.events.size(), window_start, filter, &topics, pool_.get(),
          MaxWorkersPerQuery(), &options_.cache_walk_hook);
      if (!walked) {
        // A shard lost an id of the window while the walk ran (an eviction, a partition
        // forgotten): the whole page is read from the store, below.
        page.from_cache = false;
        page.events.clear();
        break;
      }
      std::vector<LastCache::IdNewest>& ids = *walked;
      if (ids.empty()) break;
      cursor = ids.back().id;
      page.events.reserve(page.events.size() + ids.size());
      for (LastCache::IdNewest& id : ids) {
        if (id.newest) {
          page.events.push_back(FromCached(std::move(id.id), std::move(*id.newest)));
          continue;
        }
        // The cache cannot tell this id (and counted the miss): read the store, as latest-N does.
        newest.clear();
        HOTROW_RETURN_IF_ERROR(
            RangeAdmitted(id.id, 0, kMaxTimeMs, 1, Order::kDesc,
                          RangeOut{.events = &newest, .latest = true, .filter = filter}));
        if (!newest.empty()) page.events.push_back(std::move(newest.front()));
      }
    }
  }
  if (!page.from_cache) {
    LatestAllRun run;
    run.store = store_;
    run.pool = pool_.get();
    run.max_workers = MaxWorkersPerQuery();
    run.filter = filter;
    run.work = &work_;
    const TopicOrder topics(*store_);
    run.topics = &topics;
    HOTROW_RETURN_IF_ERROR(LatestAllFromStore(run, prefix, after, wanted, &page.events));
  }
  if (page.events.size() > static_cast<size_t>(limit)) {
    page.events.resize(static_cast<size_t>(limit));
    page.next = page.events.back().id;
  }
  return page;
}

template <typename Answer>
Result<Answer> QueryEngine::WithSeriesRun(
    std::string_view field, int64_t from_ms, int64_t to_ms, int64_t step_ms,
    const PartitionFilter* filter, const std::function<Result<Answer>(const SeriesRun&)>& series) {
  HOTROW_RETURN_IF_ERROR(CheckSeriesArgs(from_ms, to_ms, step_ms));
  if (field.empty()) return Status::InvalidArgument("the field is empty");
  Admission admission(&running_, options_.max_concurrent_queries);
  if (!admission.admitted()) return BusyStatus(options_.max_concurrent_queries);
  SeriesRun run;
  run.store = store_;
  run.pool = pool_.get();
  run.max_workers = MaxWorkersPerQuery();
  run.filter = filter;
  run.work = &work_;
  const TopicOrder topics(*store_);  // ties in time order topics by name
  run.topics = &topics;
  run.decided_hook = &options_.salts_decided_hook;
  return series(run);
}

Result<SeriesAnswer> QueryEngine::Series(std::string_view id, std::string_view field,
                                         int64_t from_ms, int64_t to_ms, int64_t step_ms,
                                         const PartitionFilter* filter) {
  return WithSeriesRun<SeriesAnswer>(
      field, from_ms, to_ms, step_ms, filter,
      [&](const SeriesRun& run) { return IdSeries(run, id, field, from_ms, to_ms, step_ms); });
}

Result<IndexSeriesAnswer> QueryEngine::IndexSeries(std::string_view index_field,
                                                   std::string_view value, std::string_view field,
                                                   int64_t from_ms, int64_t to_ms, int64_t step_ms,
                                                   const PartitionFilter* filter) {
  return WithSeriesRun<IndexSeriesAnswer>(
      field, from_ms, to_ms, step_ms, filter, [&](const SeriesRun& run) {
        return query::IndexSeries(run, index_field, value, field, from_ms, to_ms, step_ms);
      });
}

Result<std::vector<Event>> QueryEngine::Range(std::string_view id, int64_t from_ms, int64_t to_ms,
                                              int64_t limit, Order order,
                                              const PartitionFilter* filter) {
  std::vector<Event> out;
  Status s =
      RangeImpl(id, from_ms, to_ms, limit, order, RangeOut{.events = &out, .filter = filter});
  if (!s.ok()) return s;
  return out;
}

Status CheckRangeArgs(int64_t from_ms, int64_t to_ms, int64_t limit) {
  if (from_ms < 0) return Status::InvalidArgument("from must not be negative");
  if (from_ms >= to_ms) {
    return Status::InvalidArgument("from must be before to (from=" + std::to_string(from_ms) +
                                   ", to=" + std::to_string(to_ms) + ")");
  }
  if (limit < 1 || limit > kMaxRangeLimit) {
    return Status::InvalidArgument("limit must be between 1 and " + std::to_string(kMaxRangeLimit) +
                                   ", got " + std::to_string(limit));
  }
  return Status::Ok();
}

Status QueryEngine::RangeTo(std::string_view id, int64_t from_ms, int64_t to_ms, int64_t limit,
                            Order order, const EventSink& sink) {
  return RangeImpl(id, from_ms, to_ms, limit, order, RangeOut{.sink = &sink});
}

Status QueryEngine::RangeEncoded(std::string_view id, int64_t from_ms, int64_t to_ms, int64_t limit,
                                 Order order, const EventEncoder& encode, const TextSink& sink) {
  return RangeImpl(id, from_ms, to_ms, limit, order, RangeOut{.encode = &encode, .text = &sink});
}

Status QueryEngine::RangeEach(std::string_view id, int64_t from_ms, int64_t to_ms,
                              const EventSink& sink, const PartitionFilter* filter) {
  HOTROW_RETURN_IF_ERROR(CheckRangeArgs(from_ms, to_ms, 1));
  Admission admission(&running_, options_.max_concurrent_queries);
  if (!admission.admitted()) return BusyStatus(options_.max_concurrent_queries);
  // No limit, but one the merge may double (a salt's first share) without overflowing.
  constexpr int64_t kEvery = kNoLimit / 4;
  return RangeAdmitted(id, from_ms, to_ms, kEvery, Order::kAsc,
                       RangeOut{.sink = &sink, .filter = filter});
}

Status QueryEngine::RangeImpl(std::string_view id, int64_t from_ms, int64_t to_ms, int64_t limit,
                              Order order, const RangeOut& out) {
  HOTROW_RETURN_IF_ERROR(CheckRangeArgs(from_ms, to_ms, limit));
  Admission admission(&running_, options_.max_concurrent_queries);
  if (!admission.admitted()) return BusyStatus(options_.max_concurrent_queries);
  return RangeAdmitted(id, from_ms, to_ms, limit, order, out);
}

Status QueryEngine::RangeAdmitted(std::string_view id, int64_t from_ms, int64_t to_ms,
                                  int64_t limit, Order order, const RangeOut& out) {
  // Nothing older than the window, whether or not its bucket has been dropped yet.
  const int64_t from = std::max(from_ms, store_->WindowStartMs());
  if (from >= to_ms) return Status::Ok();

  const IdSalts id_salts(store_->salter(), id);

  auto buckets = store_->Buckets();  // oldest first
  const PartitionFilter* filter_or_null = out.filter;
  // Ties in time order topics by name (query/topic_order.h).
  const TopicOrder topics(*store_);
  if (limit <= kSmallQueryLimit) {
    // Tens of microseconds of work: waking a pool thread would cost more than the reads. Each
    // event is moved into `out.events`, or handed on as it is, or encoded here.
    std::string text;
    const EventTaker take = [&](Event& e) {
      if (out.events != nullptr) {
        out.events->push_back(std::move(e));
        return true;
      }
      if (out.sink != nullptr) return (*out.sink)(e);
      text.clear();
      (*out.encode)(e, &text);
      return (*out.text)(text, 1);
    };
    return SmallRange(cursors_.get(), store_, buckets, id_salts, id, from, to_ms, limit, order,
                      &work_, take, filter_or_null, &topics, &options_.salts_decided_hook);
  }
  // Into `out.events` when given: a bucket merged on this thread copies each event in, one read
  // ahead moves them.
  const EventSink append = [&out](const Event& e) {
    out.events->push_back(e);
    return true;
  };
  // The buckets the range overlaps, in the answer's order.
  std::erase_if(buckets,
                [&](const auto& b) { return b->end_ms() <= from || b->start_ms() >= to_ms; });
  if (order == Order::kDesc) std::reverse(buckets.begin(), buckets.end());
  BucketRangeSpec spec;
  spec.store = store_;
  spec.pool = pool_.get();
  spec.max_workers = MaxWorkersPerQuery();
  // Latest N opens no bucket once it has its answer; a range reads the next buckets ahead.
  spec.ahead = !out.latest;
  spec.hook = &options_.pool_fill_hook;
  spec.decided_hook = &options_.salts_decided_hook;
  spec.salts = &id_salts;
  spec.id = id;
  spec.from_ms = from;
  spec.to_ms = to_ms;
  spec.order = order;
  spec.topics = &topics;
  spec.filter = filter_or_null;
  spec.work = &work_;
  spec.chunk_events = options_.chunk_events;
  spec.sink = out.sink != nullptr ? out.sink : &append;
  spec.events = out.events;
  spec.encode = out.encode;
  spec.text = out.text;
  return RangeOverBuckets(spec, buckets, limit);
}

Status QueryEngine::Scan(int64_t from_ms, int64_t to_ms, int64_t limit, const EventSink& sink,
                         const PartitionFilter* filter) {
  return ScanImpl(from_ms, to_ms, limit, &sink, nullptr, nullptr, filter);
}

Status QueryEngine::ScanEncoded(int64_t from_ms, int64_t to_ms, int64_t limit,
                                const EventEncoder& encode, const TextSink& sink) {
  return ScanImpl(from_ms, to_ms, limit, nullptr, &encode, &sink, nullptr);
}

Status QueryEngine::ScanImpl(int64_t from_ms, int64_t to_ms, int64_t limit, const EventSink* sink,
                             const EventEncoder* encode, const TextSink* text_sink,
                             const PartitionFilter* filter) {
  if (from_ms < 0) return Status::InvalidArgument("from must not be negative");
  if (from_ms >= to_ms) {
    return Status::InvalidArgument("from must be before to (from=" + std::to_string(from_ms) +
                                   ", to=" + std::to_string(to_ms) + ")");
  }
  if (limit < 1)
    return Status::InvalidArgument("limit must be at least 1, got " + std::to_string(limit));
  Admission admission(&running_, options_.max_concurrent_queries);
  if (!admission.admitted()) return BusyStatus(options_.max_concurrent_queries);

  const int64_t from = std::max(from_ms, store_->WindowStartMs());
  if (from >= to_ms) return Status::Ok();

  // Every (bucket, salt) pair is a stream; a bounded number are open at once, oldest bucket
  // first, so a scan of the whole store holds at most 2 chunks per open stream.
  struct Pending {
    std::shared_ptr<const store::Bucket> bucket;
    uint8_t salt;
  };
  std::vector<Pending> pending;
  for (const auto& bucket : store_->Buckets()) {
    if (bucket->end_ms() <= from || bucket->start_ms() >= to_ms) continue;
    for (int s = 0; s < store_->salter().salts(); ++s) {
      pending.push_back({bucket, static_cast<uint8_t>(s)});
    }
  }
  // Enough streams that the pool worker always finds a chunk to read while this thread reads or
  // writes one: with 4 (2 per pool thread) the worker ran dry and this thread did 60 % of the
  // reads (range_http_bench, CPU per scan); with 8 the split is even.
  const size_t max_open = static_cast<size_t>(std::max(8, 4 * pool_->size()));

  std::vector<std::unique_ptr<SaltStream>> open;
  QueryRun run(pool_.get(), MaxWorkersPerQuery(), &options_.pool_fill_hook);
  DrainOnExit drain(&run, &open);
  size_t next = 0;
  int64_t remaining = limit;
  std::vector<KeyedEvent> chunk;
  std::string text;
  std::vector<size_t> ends;
  while (remaining > 0) {
    while (open.size() < max_open && next < pending.size()) {
      StreamSpec spec;
      spec.range = keying::SaltKeyRange(pending[next].salt);
      spec.min_ts = from;
      spec.max_ts = to_ms;
      spec.budget = remaining;
      spec.work = &work_;
      spec.encode = encode;
      spec.filter = filter;
      open.push_back(std::make_unique<SaltStream>(pending[next].bucket, store_, std::move(spec),
                                                  options_.chunk_events, options_.chunk_events));
      open.back()->Prefetch(&run);
      ++next;
    }
    if (open.empty()) break;
    // Emit bucket by bucket, oldest first: only the oldest open bucket's chunks go out; streams
    // of newer buckets read ahead one chunk each and wait. `open` is in (bucket, salt) order.
    const int64_t oldest = open.front()->bucket_start_ms();
    auto emittable = [oldest](const std::unique_ptr<SaltStream>& s) {
      return s->bucket_start_ms() == oldest;
    };
    auto any_ready = [&] {
      return std::any_of(open.begin(), open.end(),
                         [&](const auto& s) { return emittable(s) && s->ChunkReadyLocked(); });
    };
    // While nothing can go out, this thread reads a chunk no pool worker has claimed.
    while (true) {
      {
        std::lock_guard lock(run.mu());
        if (any_ready()) break;
      }
      bool helped = false;
      for (auto& stream : open) {
        if (!emittable(stream)) break;
        if ((helped = stream->HelpIfUnclaimed(&run))) break;
      }
      if (!helped) {
        HOTROW_RETURN_IF_ERROR(run.WaitUntil(any_ready));
        break;
      }
    }
    for (auto& stream : open) {
      if (!emittable(stream)) break;
      bool ready;
      {
        std::lock_guard lock(run.mu());
        ready = stream->ChunkReadyLocked();
      }
      if (!ready) continue;
      if (encode != nullptr) {
        if (!stream->TakeEncoded(&run, &text, &ends) || ends.empty()) continue;
        const int64_t n = std::min<int64_t>(remaining, static_cast<int64_t>(ends.size()));
        remaining -= n;
        if (!(*text_sink)(std::string_view(text).substr(0, ends[n - 1]), n)) return Status::Ok();
        if (remaining == 0) break;
        continue;
      }
      if (!stream->TakeChunk(&run, &chunk)) continue;
      for (const KeyedEvent& item : chunk) {
        if (remaining == 0) break;
        --remaining;
        if (!(*sink)(item.event)) return Status::Ok();
      }
    }
    std::erase_if(open, [](const auto& s) { return s->done(); });
  }
  return Status::Ok();
}

}  // namespace hotrow::query
