#include "query/small_query.h"

#include <algorithm>
#include <tuple>

#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::query {

CursorCache::Local* CursorCache::ForThisThread(
    const std::vector<std::shared_ptr<const store::Bucket>>& live) {
  std::lock_guard lock(mu_);
  bool changed = live.size() != last_live_.size();
  for (size_t i = 0; !changed && i < live.size(); ++i) changed = live[i].get() != last_live_[i];
  if (changed) {
    last_live_.clear();
    for (const auto& b : live) last_live_.push_back(b.get());
    for (auto& [thread, local] : locals_) {
      std::lock_guard local_lock(local->mu);
      local->entries.clear();
    }
  }
  std::unique_ptr<Local>& local = locals_[std::this_thread::get_id()];
  if (local == nullptr) local = std::make_unique<Local>();
  return local.get();
}

namespace {

using Candidate = CursorCache::Candidate;

// Aims `range` (a range of salt `from`'s keys) at salt `to`: the salt is the first byte of both
// bounds, so no new strings are made when both bounds lie in that salt.
void AimAtSalt(uint8_t salt, uint64_t id_hash, int64_t from_ms, int64_t to_ms,
               keying::KeyRange* range) {
  if (!range->start.empty() && !range->limit.empty() && range->limit[0] == range->start[0]) {
    range->start[0] = static_cast<char>(salt);
    range->limit[0] = static_cast<char>(salt);
  } else {
    *range = keying::IdTimeKeyRange(salt, id_hash, from_ms, to_ms);
  }
}

}  // namespace

Status SmallRange(CursorCache* cache, store::EventStore* store,
                  const std::vector<std::shared_ptr<const store::Bucket>>& live,
                  const IdSalts& salts, std::string_view id, int64_t from_ms, int64_t to_ms,
                  int64_t limit, Order order, QueryWork* work, const EventTaker& take,
                  const PartitionFilter* filter, const TopicOrder* topics,
                  const SaltsDecidedHook* decided_hook) {
  const uint64_t id_hash = salts.id_hash();
  const bool desc = order == Order::kDesc;
  const bool by_rank = topics != nullptr && !topics->InNumberOrder();
  auto key_of = [&](const keying::RowKey& k) {
    return std::make_tuple(k.ts_ms, by_rank ? topics->Rank(k.topic) : uint32_t{k.topic},
                           k.partition, k.offset);
  };
  // `a` comes before `b` in the answer.
  auto before = [&](const keying::RowKey& a, const keying::RowKey& b) {
    return desc ? key_of(b) < key_of(a) : key_of(a) < key_of(b);
  };
  // A max-heap on "comes later": its top is the worst candidate kept.
  auto heap_less = [&](const Candidate& a, const Candidate& b) { return before(a.key, b.key); };

  CursorCache::Local* local = cache->ForThisThread(live);
  std::lock_guard local_lock(local->mu);
  std::vector<Candidate>& top = local->top;
  std::vector<Candidate>& spare = local->spare;
  // Whatever the last query left in `top` (it stops early when its sink does) goes to `spare`.
  for (Candidate& c : top) spare.push_back(std::move(c));
  top.clear();
  int64_t remaining = limit;
  uint64_t seeks = 0, rows = 0, created = 0;
  Status failure;
  keying::KeyRange range = keying::IdTimeKeyRange(0, id_hash, from_ms, to_ms);
  Event e;
  for (size_t b = 0; b < live.size() && failure.ok() && remaining > 0; ++b) {
    const std::shared_ptr<const store::Bucket>& bucket = desc ? live[live.size() - 1 - b] : live[b];
    if (bucket->end_ms() <= from_ms || bucket->start_ms() >= to_ms) continue;
    store::RowIterator* cursor = nullptr;
    for (auto& entry : local->entries) {
      if (entry.bucket == bucket) cursor = entry.cursor.get();
    }
    if (cursor == nullptr) {
      // Aimed at a salt below, before each seek.
      auto fresh = bucket->NewIterator(range, /*within_id_prefix=*/true);
      cursor = fresh.get();
      local->entries.push_back({bucket, std::move(fresh)});
      ++created;
    } else if (Status st = cursor->RefreshIfStale(); !st.ok()) {
      failure = st;
      break;
    }
    // Decided once the cursor's read point is set, never before: the writer marks an id spread
    // (and a salt as holding it, below) before the row is readable, and never unmarks it, so
    // what is decided now covers every row the cursor can see. Decided before a refresh, a write
    // that turned the id hot in between would be read half: its rows in the home salt only.
    const std::vector<uint8_t>& bucket_salts = salts.In(*bucket);
    if (decided_hook != nullptr && *decided_hook) (*decided_hook)(bucket->start_ms());
    for (Candidate& c : top) spare.push_back(std::move(c));
    top.clear();
    // The salts that may hold a row of the id in [from, to) (the bucket's id filter), newest
    // bound first when the answer is newest first.
    std::vector<std::pair<int64_t, uint8_t>>& seek_order = local->seek_order;
    seek_order.clear();
    for (uint8_t salt : bucket_salts) {
      const int64_t bound = bucket->NewestIdTsBound(salt, id_hash);
      if (bound > std::max(bucket->start_ms(), from_ms)) seek_order.emplace_back(bound, salt);
    }
    if (desc) {
      std::stable_sort(seek_order.begin(), seek_order.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
    }
    for (const auto& [bound, salt] : seek_order) {
      // Newest first, every row of this salt and of those after it is older than `bound`: once
      // the best `remaining` so far are all at least that new, none of them can enter.
      if (desc && static_cast<int64_t>(top.size()) == remaining && top.front().key.ts_ms >= bound) {
        break;
      }
      AimAtSalt(salt, id_hash, from_ms, to_ms, &range);
      cursor->SetRange(range);
      desc ? cursor->SeekToFirst() : cursor->SeekToLast();
      ++seeks;
      for (; cursor->Valid(); desc ? cursor->Next() : cursor->Prev()) {
        ++rows;
        keying::RowKey key;
        if (!keying::DecodeRowKey(cursor->key(), &key)) {
          failure = bucket->NotARow();
          break;
        }
        if (key.ts_ms < from_ms || key.ts_ms >= to_ms) continue;
        // This salt yields in the answer's order: once a row cannot make the answer, none after
        // it can. Ranked by name, rows tied in time come in number order: only a row older (for
        // kAsc newer) than the worst kept ends the salt.
        if (static_cast<int64_t>(top.size()) == remaining && !before(key, top.front().key)) {
          const int64_t worst = top.front().key.ts_ms;
          if (!by_rank || (desc ? key.ts_ms < worst : key.ts_ms > worst)) break;
          continue;
        }
        if (filter != nullptr && !(*filter)(key.topic, key.partition)) continue;
        std::string_view row_id, payload;
        if (!keying::DecodeRowValue(cursor->value(), &row_id, &payload)) {
          failure = bucket->NotARow();
          break;
        }
        if (row_id != id) continue;  // another id with the same 64-bit hash
        if (static_cast<int64_t>(top.size()) == remaining) {
          std::pop_heap(top.begin(), top.end(), heap_less);
          spare.push_back(std::move(top.back()));
          top.pop_back();
        }
        if (!spare.empty()) {
          top.push_back(std::move(spare.back()));
          spare.pop_back();
        } else {
          top.emplace_back();
        }
        top.back().key = key;
        top.back().payload.assign(payload);
        std::push_heap(top.begin(), top.end(), heap_less);
      }
      if (failure.ok() && !cursor->Valid()) failure = cursor->status();
      if (!failure.ok()) break;
    }
    if (!failure.ok()) break;
    std::sort_heap(top.begin(), top.end(), heap_less);  // the answer's order
    for (Candidate& c : top) {
      auto cached = std::find_if(local->topics.begin(), local->topics.end(),
                                 [&](const auto& t) { return t.first == c.key.topic; });
      if (cached == local->topics.end()) {
        local->topics.emplace_back(
            c.key.topic, store->TopicName(c.key.topic).value_or(std::to_string(c.key.topic)));
        cached = std::prev(local->topics.end());
      }
      e.id.assign(id);
      e.topic.assign(cached->second);
      e.ts_ms = c.key.ts_ms;
      e.partition = c.key.partition;
      e.offset = c.key.offset;
      e.payload.swap(c.payload);  // moved, not copied; `take` may move it on
      --remaining;
      if (!take(e)) {
        remaining = 0;
        break;
      }
    }
  }
  if (work != nullptr) {
    work->iterators_created.fetch_add(created, std::memory_order_relaxed);
    work->seeks.fetch_add(seeks, std::memory_order_relaxed);
    work->rows_read.fetch_add(rows, std::memory_order_relaxed);
  }
  return failure;
}

}  // namespace hotrow::query
