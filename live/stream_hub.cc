#include "live/stream_hub.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <tuple>
#include <utility>

#include "keying/row_value.h"
#include "live/replay.h"
#include "query/index_query.h"
#include "wire/event_json.h"

namespace hotrow::live {
namespace {

// How long a catch-up that found every query slot taken waits before it asks again: a query's
// few milliseconds, so that a slot freed is taken soon without spinning.
constexpr std::chrono::milliseconds kCatchUpRetry{10};

int64_t FirstBucketEnd(const store::EventStore& store) {
  const auto buckets = store.Buckets();
  return buckets.empty() ? INT64_MAX : buckets.front()->end_ms();
}

int64_t FloorTo(int64_t ms, int64_t width) {
  const int64_t q = ms / width;
  return (ms % width < 0 ? q - 1 : q) * width;
}

}  // namespace

StreamHub::StreamHub(store::EventStore* store, query::QueryEngine* engine, StreamHubOptions options)
    : store_(store),
      engine_(engine),
      options_(options),
      started_ms_(store->NowMs()),
      first_bucket_end_ms_(FirstBucketEnd(*store)) {
  deliverer_ = std::thread([this] { DeliverLoop(); });
  catcher_ = std::thread([this] { CatchUpLoop(); });
}

StreamHub::~StreamHub() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  deliverer_.join();
  {
    std::lock_guard lock(catch_up_mu_);
    catch_up_stopping_ = true;
  }
  catch_up_cv_.notify_all();
  catcher_.join();
  CloseAll("the server is stopping");
}

void StreamHub::AskCatchUp(std::weak_ptr<Subscription> subscription) {
  {
    std::lock_guard lock(catch_up_mu_);
    catch_up_queue_.push_back(std::move(subscription));
  }
  catch_up_cv_.notify_one();
}

void StreamHub::CatchUpLoop() {
  pthread_setname_np(pthread_self(), "hotrow-catchup");
  std::unique_lock lock(catch_up_mu_);
  while (true) {
    catch_up_cv_.wait(lock, [&] { return catch_up_stopping_ || !catch_up_queue_.empty(); });
    if (catch_up_stopping_) return;  // the subscriptions are closed next
    std::shared_ptr<Subscription> subscription = catch_up_queue_.front().lock();
    catch_up_queue_.pop_front();
    if (subscription == nullptr) continue;
    lock.unlock();
    CatchUp(subscription);
    lock.lock();
  }
}

void StreamHub::CatchUp(const std::shared_ptr<Subscription>& subscription) {
  StreamPosition from;
  StreamPosition to;
  {
    // Under the lock exclusive, as Subscribe: the offsets read here divide the rows into those
    // stored (read from the store below) and those every later RowsWritten pushes.
    std::unique_lock lock(mu_);
    if (changes_undelivered_.load() > 0) {
      lock.unlock();
      if (subscription->TooSlow("too slow: the stream's partitions changed while it caught up "
                                "from the store; resume from the last id")) {
        too_slow_.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    }
    to.made_ms = store_->NowMs();
    to.next = store_->StoredOffsets();
    if (owned_known_) {
      std::map<store::TopicPartition, int64_t> carried;
      for (const store::TopicPartition& tp : carried_) carried[tp] = to.NextOf(tp);
      to.next = std::move(carried);
    }
    if (!subscription->BeginCatchUp(to, &from)) return;
  }
  catch_ups_.fetch_add(1, std::memory_order_relaxed);
  Result<Replay> replay =
      ReadReplay(store_, engine_, subscription->spec(), from, to, nullptr, options_.max_replay);
  while (!replay.ok() && replay.status().IsBusy() && subscription->reason().empty()) {
    // Every query slot is taken (a saturated server): the catch-up waits for one, as a query
    // would in its queue, rather than end a stream whose client reads. The engine tells no one
    // when a slot frees, so it asks again shortly; the hub's stop ends the wait.
    catch_ups_delayed_.fetch_add(1, std::memory_order_relaxed);
    {
      std::unique_lock lock(catch_up_mu_);
      if (catch_up_cv_.wait_for(lock, kCatchUpRetry, [&] { return catch_up_stopping_; })) return;
    }
    replay =
        ReadReplay(store_, engine_, subscription->spec(), from, to, nullptr, options_.max_replay);
  }
  if (!replay.ok()) {
    if (subscription->TooSlow("too slow, and reading what it missed from the store failed (" +
                              replay.status().message() + "); resume from the last id")) {
      too_slow_.fetch_add(1, std::memory_order_relaxed);
    }
    return;
  }
  subscription->FinishCatchUp(std::move(replay->events), replay->truncated);
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
      if (m.change != nullptr) {
        for (const std::shared_ptr<Subscription>& s : m.to) {
          if (s->PushChange(m.change)) too_slow_.fetch_add(1, std::memory_order_relaxed);
        }
        changes_undelivered_.fetch_sub(1);
        continue;
      }
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
                                         const query::PartitionFilter* filter, std::string tag) {
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
    if (owned_known_) {
      // Only what this instance serves as owner: the position names those, each from where the
      // store stands (0 for one it holds nothing of yet).
      std::map<store::TopicPartition, int64_t> carried;
      for (const store::TopicPartition& tp : carried_) carried[tp] = start.NextOf(tp);
      start.next = std::move(carried);
    } else if (served_known_ && !served_.empty()) {
      // Only what this instance consumes, not every partition the store still holds. While it
      // consumes nothing (starting, or between an eager rebalance's revocation and assignment),
      // every partition stored, so that a resume never reads from the window's start what was
      // stored before the stream began.
      std::map<store::TopicPartition, int64_t> served;
      for (const store::TopicPartition& tp : served_) served[tp] = start.NextOf(tp);
      start.next = std::move(served);
    }
    subscription = std::make_shared<Subscription>(spec, options_.max_buffered, std::move(start),
                                                  std::move(tag));
    subscription->SetCatchUp(
        [this, weak = std::weak_ptr<Subscription>(subscription)] { AskCatchUp(weak); });
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
    out.gap = Gap(*after);
    Result<Replay> replay = ReadReplay(store_, engine_, spec, *after, subscription->start(), filter,
                                       options_.max_replay);
    if (!replay.ok()) {
      Unsubscribe(subscription);
      return replay.status();
    }
    out.replay_truncated = replay->truncated;
    std::string then_close;
    if (replay->truncated) {
      then_close = "the replay reached " + std::to_string(options_.max_replay) +
                   " events; resume from the last id for the rest";
    }
    subscription->SetReplay(std::move(replay->events), std::move(then_close));
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

std::vector<std::shared_ptr<Subscription>> StreamHub::AllLocked() const {
  std::vector<std::shared_ptr<Subscription>> all;
  all.reserve(by_id_.size() + by_index_.size() + latest_.size());
  for (const auto& [key, s] : by_id_) all.push_back(s);
  for (const auto& [key, s] : by_index_) all.push_back(s);
  for (const auto& s : latest_) all.push_back(s);
  return all;
}

size_t StreamHub::CloseWhere(const std::function<bool(const Subscription&)>& which,
                             const std::string& reason) {
  std::shared_lock lock(mu_);
  size_t closed = 0;
  for (const std::shared_ptr<Subscription>& s : AllLocked()) {
    if (!which(*s)) continue;
    if (s->reason().empty()) ++closed;  // still open
    s->Close(reason);
  }
  return closed;
}

void StreamHub::SetOwnedPartitions(const std::vector<store::TopicPartition>& owned) {
  // The store's numbers of the topics named (dense from 0, store/event_store.h).
  std::map<std::string, uint16_t, std::less<>> numbers;
  for (uint32_t n = 0; n <= UINT16_MAX; ++n) {
    std::optional<std::string> name = store_->TopicName(static_cast<uint16_t>(n));
    if (!name) break;
    numbers.emplace(std::move(*name), static_cast<uint16_t>(n));
  }
  std::set<store::TopicPartition> carried;
  for (const store::TopicPartition& tp : owned) {
    if (numbers.contains(tp.topic)) carried.insert(tp);
  }
  std::unique_lock lock(mu_);
  if (owned_known_ && carried == carried_) return;
  auto change = std::make_shared<PartitionChange>();
  // Under the lock exclusive no RowsWritten runs, and every one before queued its rows: the
  // offsets read here divide each partition's rows into pushed (below) and not (at or above).
  const std::map<store::TopicPartition, int64_t> offsets = store_->StoredOffsets();
  auto offset_of = [&](const store::TopicPartition& tp) {
    auto it = offsets.find(tp);
    return it == offsets.end() ? int64_t{0} : it->second;
  };
  for (const store::TopicPartition& tp : carried) {
    if (!owned_known_ || !carried_.contains(tp)) change->added[tp] = offset_of(tp);
  }
  if (owned_known_) {
    for (const store::TopicPartition& tp : carried_) {
      if (!carried.contains(tp)) change->removed[tp] = offset_of(tp);
    }
  } else {
    // Until now every partition was carried: those stored and not kept leave.
    for (const auto& [tp, next] : offsets) {
      if (!carried.contains(tp)) change->removed[tp] = next;
    }
    change->added.clear();  // they were carried already, each from its subscription's start
  }
  owned_known_ = true;
  carried_ = std::move(carried);
  carried_keys_.clear();
  for (const store::TopicPartition& tp : carried_) {
    carried_keys_.insert(PartitionKey(numbers.find(tp.topic)->second, tp.partition));
  }
  if (change->added.empty() && change->removed.empty()) return;
  Matched m;
  m.change = std::move(change);
  m.to = AllLocked();
  if (m.to.empty()) return;
  std::vector<Matched> batch;
  batch.push_back(std::move(m));
  std::lock_guard queue_lock(queue_mu_);
  undelivered_ += 1;
  changes_undelivered_.fetch_add(1);
  const bool was_empty = queue_.empty();
  queue_.push_back(std::move(batch));
  if (was_empty) queue_cv_.notify_one();
}

void StreamHub::SetServedPartitions(const std::vector<store::TopicPartition>& served) {
  std::set<store::TopicPartition> named(served.begin(), served.end());
  std::unique_lock lock(mu_);
  served_known_ = true;
  served_ = std::move(named);
}

StreamHubStats StreamHub::Stats() const {
  StreamHubStats stats;
  stats.open = open_.load();
  stats.opened = opened_.load();
  stats.refused = refused_.load();
  stats.too_slow = too_slow_.load();
  stats.events_sent = sent_.load();
  stats.catch_ups = catch_ups_.load();
  stats.catch_ups_delayed = catch_ups_delayed_.load();
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
  return MakeLiveEvent(e);
}

void StreamHub::NoteLateRows(std::span<const store::WrittenRow> rows) {
  const int64_t now = store_->NowMs();
  const int64_t width = store_->options().bucket_ms;
  // A row below the start of the bucket of now was stored after its bucket's span had passed.
  const int64_t late_below = FloorTo(now, width);
  std::vector<std::pair<int64_t, uint64_t>> late;  // (bucket start, PartitionKey)
  std::vector<int64_t> offsets;
  for (const store::WrittenRow& row : rows) {
    if (row.key.ts_ms >= late_below) continue;
    late.emplace_back(FloorTo(row.key.ts_ms, width),
                      PartitionKey(row.key.topic, row.key.partition));
    offsets.push_back(row.key.offset);
  }
  if (late.empty()) return;
  std::lock_guard lock(late_mu_);
  for (size_t i = 0; i < late.size(); ++i) {
    late_held_[late[i].first][late[i].second].Merge({now, offsets[i]});
  }
}

void StreamHub::RowsWritten(std::span<const store::WrittenRow> rows) {
  // Before the count: positions outlive subscriptions, so a late row matters with none open.
  NoteLateRows(rows);
  if (open_.load(std::memory_order_acquire) == 0) return;
  std::vector<Matched> matched;
  // Held until the rows are queued: SetOwnedPartitions, under the lock exclusive, then queues its
  // change after them.
  std::shared_lock lock(mu_);
  {
    for (const store::WrittenRow& row : rows) {
      if (owned_known_ && !carried_keys_.contains(PartitionKey(row.key.topic, row.key.partition))) {
        continue;  // not served as owner here: a standby's row, or one of a partition gone
      }
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
    std::lock_guard queue_lock(queue_mu_);
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

void StreamHub::BucketsDropped(int64_t until_ms) {
  std::lock_guard lock(late_mu_);
  if (until_ms >= first_bucket_end_ms_) dropped_from_before_ = true;
  // Every row with ts < until_ms is gone: a bucket reaching past it is folded in whole, which can
  // only make Gap say yes more often.
  for (auto it = late_held_.begin(); it != late_held_.end() && it->first < until_ms;
       it = late_held_.erase(it)) {
    for (const auto& [key, rows] : it->second) late_dropped_[key].Merge(rows);
  }
}

bool StreamHub::Gap(const StreamPosition& after) const {
  if (after.made_ms < store_->WindowStartMs()) return true;
  std::unordered_map<uint64_t, LateRows> dropped;
  {
    std::lock_guard lock(late_mu_);
    if (after.made_ms < started_ms_ && dropped_from_before_) return true;
    dropped = late_dropped_;  // the store's topic names are read without late_mu_ held
  }
  for (const auto& [key, rows] : dropped) {
    // Stored before the position was made: sent, or below it, or not the stream's.
    if (rows.stored_ms < after.made_ms) continue;
    const std::optional<std::string> topic = store_->TopicName(static_cast<uint16_t>(key >> 32));
    if (!topic) continue;
    const store::TopicPartition tp{*topic, static_cast<int32_t>(key & 0xffffffffu)};
    // A partition the position does not name makes no claim (it is sent from the window).
    if (after.next.contains(tp) && rows.offset >= after.NextOf(tp)) return true;
  }
  return false;
}

}  // namespace hotrow::live
