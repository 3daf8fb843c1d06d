#include "live/stream_hub.h"

#include <pthread.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <tuple>
#include <utility>

#include "keying/row_value.h"
#include "query/index_query.h"
#include "wire/event_json.h"

namespace hotrow::live {
namespace {

LiveEventPtr FromQueryEvent(const query::Event& e) {
  auto live = std::make_shared<LiveEvent>();
  live->id = e.id;
  live->tp = {e.topic, e.partition};
  live->offset = e.offset;
  live->ts_ms = e.ts_ms;
  wire::AppendEventJson(e, &live->json);
  return live;
}

}  // namespace

StreamHub::StreamHub(store::EventStore* store, query::QueryEngine* engine,
                     StreamHubOptions options)
    : store_(store), engine_(engine), options_(options) {
  deliverer_ = std::thread([this] { DeliverLoop(); });
}

StreamHub::~StreamHub() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  deliverer_.join();
  CloseAll("the server is stopping");
}

void StreamHub::DeliverLoop() {
  pthread_setname_np(pthread_self(), "hotrow-live");
  std::unique_lock lock(queue_mu_);
  while (true) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued was delivered
    std::vector<Matched> batch = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    for (const Matched& m : batch) {
      const LiveEventPtr event = MakeEvent(m.key, m.id, m.payload);
      for (const std::shared_ptr<Subscription>& s : m.to) Push(*s, event);
    }
    lock.lock();
    undelivered_ -= batch.size();
    if (undelivered_ == 0) delivered_cv_.notify_all();
  }
}

void StreamHub::WaitDelivered() {
  std::unique_lock lock(queue_mu_);
  delivered_cv_.wait(lock, [&] { return undelivered_ == 0; });
}

std::string StreamHub::IndexKey(std::string_view field, std::string_view value) {
  std::string key(field);
  key += '\0';
  key += value;
  return key;
}

Result<StreamStart> StreamHub::Subscribe(const StreamSpec& spec, const StreamPosition* after,
                                         const query::PartitionFilter* filter) {
  if (spec.kind == StreamSpec::Kind::kIndex) {
    HOTROW_RETURN_IF_ERROR(query::CheckIndexedField(*store_, spec.field, spec.value));
  }
  std::shared_ptr<Subscription> subscription;
  {
    std::unique_lock lock(mu_);
    if (open_.load() >= options_.max_streams) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return Status::Busy("the server streams " + std::to_string(options_.max_streams) +
                          " streams already (http.max_streams)");
    }
    // Counted before the offsets are read: a Write whose offsets are not in them updates them
    // after this read, so its RowsWritten sees the count and does not skip the hub.
    open_.fetch_add(1);
    // Under the lock exclusive: no RowsWritten runs, so the offsets read here divide the rows
    // into those already stored (below) and those every later RowsWritten pushes.
    StreamPosition start;
    start.made_ms = store_->NowMs();
    start.next = store_->StoredOffsets();
    subscription = std::make_shared<Subscription>(spec, options_.max_buffered, std::move(start));
    switch (spec.kind) {
      case StreamSpec::Kind::kId:
        by_id_.emplace(spec.id, subscription);
        break;
      case StreamSpec::Kind::kIndex:
        by_index_.emplace(IndexKey(spec.field, spec.value), subscription);
        break;
      case StreamSpec::Kind::kLatest:
        latest_.push_back(subscription);
        break;
    }
    opened_.fetch_add(1, std::memory_order_relaxed);
  }
  StreamStart out;
  out.subscription = subscription;
  if (after != nullptr) {
    out.gap = after->made_ms < store_->WindowStartMs();
    Result<std::vector<LiveEventPtr>> replay =
        Replay(spec, *after, subscription->start(), filter, &out.replay_truncated);
    if (!replay.ok()) {
      Unsubscribe(subscription);
      return replay.status();
    }
    subscription->SetReplay(std::move(replay).value());
  }
  return out;
}

void StreamHub::Unsubscribe(const std::shared_ptr<Subscription>& subscription) {
  subscription->Close("unsubscribed");
  std::unique_lock lock(mu_);
  bool found = false;
  auto erase_from = [&](auto& map, const std::string& key) {
    auto [begin, end] = map.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      if (it->second == subscription) {
        map.erase(it);
        found = true;
        return;
      }
    }
  };
  const StreamSpec& spec = subscription->spec();
  switch (spec.kind) {
    case StreamSpec::Kind::kId:
      erase_from(by_id_, spec.id);
      break;
    case StreamSpec::Kind::kIndex:
      erase_from(by_index_, IndexKey(spec.field, spec.value));
      break;
    case StreamSpec::Kind::kLatest: {
      auto it = std::find(latest_.begin(), latest_.end(), subscription);
      if (it != latest_.end()) {
        latest_.erase(it);
        found = true;
      }
      break;
    }
  }
  if (found) open_.fetch_sub(1);
}

void StreamHub::CloseAll(const std::string& reason) {
  std::shared_lock lock(mu_);
  for (auto& [key, s] : by_id_) s->Close(reason);
  for (auto& [key, s] : by_index_) s->Close(reason);
  for (auto& s : latest_) s->Close(reason);
}

StreamHubStats StreamHub::Stats() const {
  StreamHubStats stats;
  stats.open = open_.load();
  stats.opened = opened_.load();
  stats.refused = refused_.load();
  stats.too_slow = too_slow_.load();
  stats.events_sent = sent_.load();
  return stats;
}

LiveEventPtr StreamHub::MakeEvent(const keying::RowKey& key, std::string_view id,
                                  std::string_view payload) const {
  query::Event e;
  e.id = std::string(id);
  e.ts_ms = key.ts_ms;
  e.topic = store_->TopicName(key.topic).value_or(std::to_string(key.topic));
  e.partition = key.partition;
  e.offset = key.offset;
  e.payload = std::string(payload);
  return FromQueryEvent(e);
}

void StreamHub::RowsWritten(std::span<const store::WrittenRow> rows) {
  if (open_.load(std::memory_order_acquire) == 0) return;
  std::vector<Matched> matched;
  {
    std::shared_lock lock(mu_);
    for (const store::WrittenRow& row : rows) {
      std::string_view id;
      std::string_view payload;
      if (!keying::DecodeRowValue(row.value, &id, &payload)) continue;  // the store wrote it
      Matched* m = nullptr;
      auto to = [&](const std::shared_ptr<Subscription>& s) {
        if (m == nullptr) {
          m = &matched.emplace_back();
          m->key = row.key;
          m->id = std::string(id);
          m->payload = std::string(payload);
        }
        m->to.push_back(s);
      };
      if (!by_id_.empty()) {
        auto [begin, end] = by_id_.equal_range(id);
        for (auto it = begin; it != end; ++it) to(it->second);
      }
      for (const auto& s : latest_) {
        if (id.starts_with(s->spec().prefix)) to(s);
      }
      if (!by_index_.empty()) {
        for (const keying::IndexEntry& entry : row.index) {
          auto [begin, end] = by_index_.equal_range(IndexKey(entry.field, entry.value));
          for (auto it = begin; it != end; ++it) to(it->second);
        }
      }
    }
  }
  if (matched.empty()) return;
  // The store passes rows in key order (bucket, salt, id, time); streams send each partition's
  // events in offset order.
  std::sort(matched.begin(), matched.end(), [](const Matched& a, const Matched& b) {
    return std::tie(a.key.topic, a.key.partition, a.key.offset) <
           std::tie(b.key.topic, b.key.partition, b.key.offset);
  });
  {
    std::lock_guard lock(queue_mu_);
    if (undelivered_ + matched.size() <= options_.max_undelivered) {
      undelivered_ += matched.size();
      const bool was_empty = queue_.empty();
      queue_.push_back(std::move(matched));
      if (was_empty) queue_cv_.notify_one();
      return;
    }
  }
  // The delivery thread is this far behind: these events cannot be delivered in order, so
  // their streams end (their clients resume from the last id they got).
  for (const Matched& m : matched) {
    for (const std::shared_ptr<Subscription>& s : m.to) {
      if (s->TooSlow("too slow: the server fell behind delivering; resume from the last id")) {
        too_slow_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
}

void StreamHub::BucketsDropped(int64_t /*until_ms*/) {}

Result<std::vector<LiveEventPtr>> StreamHub::Replay(const StreamSpec& spec,
                                                    const StreamPosition& after,
                                                    const StreamPosition& start,
                                                    const query::PartitionFilter* filter,
                                                    bool* truncated) {
  std::vector<query::Event> events;
  const int64_t from = store_->WindowStartMs();
  const int64_t to = std::numeric_limits<int64_t>::max();
  switch (spec.kind) {
    case StreamSpec::Kind::kId: {
      Result<std::vector<query::Event>> got =
          engine_->Range(spec.id, from, to, query::kMaxRangeLimit, query::Order::kAsc, filter);
      if (!got.ok()) return got.status();
      events = std::move(got).value();
      *truncated = static_cast<int64_t>(events.size()) == query::kMaxRangeLimit;
      break;
    }
    case StreamSpec::Kind::kIndex: {
      query::IndexQuery index(store_, nullptr, filter);
      Result<query::IndexAnswer> got = index.Range(spec.field, spec.value, from, to,
                                                   query::kMaxRangeLimit, query::Order::kAsc);
      if (!got.ok()) return got.status();
      events = std::move(got->events);
      *truncated = static_cast<int64_t>(events.size()) == query::kMaxRangeLimit;
      break;
    }
    case StreamSpec::Kind::kLatest: {
      std::string page_after;
      while (true) {
        Result<query::LatestAllPage> page =
            engine_->LatestAll(spec.prefix, page_after, query::kMaxLatestAllLimit, filter);
        if (!page.ok()) return page.status();
        for (query::Event& e : page->events) events.push_back(std::move(e));
        if (!page->next) break;
        page_after = *page->next;
      }
      break;
    }
  }
  std::vector<LiveEventPtr> out;
  for (const query::Event& e : events) {
    const store::TopicPartition tp{e.topic, e.partition};
    if (e.offset < after.NextOf(tp) || e.offset >= start.NextOf(tp)) continue;
    out.push_back(FromQueryEvent(e));
  }
  std::stable_sort(out.begin(), out.end(), [](const LiveEventPtr& a, const LiveEventPtr& b) {
    if (a->tp != b->tp) return a->tp < b->tp;
    return a->offset < b->offset;
  });
  return out;
}

}  // namespace hotrow::live
