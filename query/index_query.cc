#include "query/index_query.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <string>
#include <tuple>

#include "common/time_format.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/topic_order.h"

namespace hotrow::query {
namespace {

// One event a posting listed that matched: its data key.
struct Hit {
  keying::RowKey key;
};

// Ties in time order topics by name (query/topic_order.h).
auto OrderKey(const Hit& h, const TopicOrder& topics) {
  return std::make_tuple(h.key.ts_ms, topics.Rank(h.key.topic), h.key.partition, h.key.offset);
}

void Count(std::atomic<uint64_t> QueryWork::*counter, QueryWork* work, uint64_t n) {
  if (work != nullptr) (work->*counter).fetch_add(n, std::memory_order_relaxed);
}

// Reads the postings of `value_hash` that may hold events of [from, to), through `it`, in the
// answer's order (newest posting first for kDesc), into `hits`: the listed events that match
// (field, value, time, partition), in no order. Stops once `budget` hits are ahead of every event
// an unread posting can hold: for kDesc, newer than the next posting's key (its newest event);
// for kAsc, older than the start of its span (keying::PostingSpanStart). Ties in time with the
// last hit needed are therefore all read, as the merge by topic name needs.
Status ReadPostings(store::RowIterator* it, uint64_t value_hash, std::string_view field,
                    std::string_view value, int64_t from, int64_t to, int64_t budget, Order order,
                    const PartitionFilter* filter, QueryWork* work, std::vector<Hit>* hits) {
  it->SetRange(keying::PostingKeyRange(value_hash, from, to));
  const bool desc = order == Order::kDesc;
  desc ? it->SeekToFirst() : it->SeekToLast();
  Count(&QueryWork::seeks, work, 1);
  // The hits not yet known to be ahead, as desc ? ts : -ts (the larger, the further ahead).
  std::priority_queue<int64_t> pending;
  int64_t ahead = 0;
  uint64_t stepped = 0;
  for (; it->Valid(); desc ? it->Next() : it->Prev()) {
    keying::IndexKey key;
    if (!keying::DecodeIndexKey(it->key(), &key)) {
      return Status::Corruption("an index range holds a row that is not an index posting");
    }
    const int64_t bound = desc ? key.ts_ms : -keying::PostingSpanStart(key.ts_ms);
    while (!pending.empty() && pending.top() > bound) {
      pending.pop();
      ++ahead;
    }
    if (ahead >= budget) break;
    ++stepped;
    std::string_view f, v, events;
    if (!keying::DecodePosting(it->value(), &f, &v, &events)) {
      return Status::Corruption("an index posting's value is not one");
    }
    // The full field and value decide: a 64-bit hash collision never returns another value.
    if (f != field || v != value) continue;
    for (size_t at = 0; at < events.size(); at += keying::kRowKeySize) {
      Hit hit;
      if (!keying::DecodeRowKey(events.substr(at, keying::kRowKeySize), &hit.key)) {
        return Status::Corruption("an index posting lists a key that is not an event's");
      }
      if (hit.key.ts_ms < from || hit.key.ts_ms >= to) continue;
      if (filter != nullptr && !(*filter)(hit.key.topic, hit.key.partition)) continue;
      hits->push_back(hit);
      pending.push(desc ? hit.key.ts_ms : -hit.key.ts_ms);
    }
  }
  Count(&QueryWork::rows_read, work, stepped);
  return it->Valid() ? Status::Ok() : it->status();
}

// Reads the event a posting listed, through the cursor that read the posting.
Status ReadEvent(store::RowIterator* it, const Hit& hit, store::EventStore* store, QueryWork* work,
                 Event* out) {
  std::string_view id, payload;
  HOTROW_RETURN_IF_ERROR(SeekIndexedEvent(it, hit.key, work, &id, &payload));
  out->id.assign(id);
  out->ts_ms = hit.key.ts_ms;
  out->topic = store->TopicName(hit.key.topic).value_or(std::to_string(hit.key.topic));
  out->partition = hit.key.partition;
  out->offset = hit.key.offset;
  out->payload.assign(payload);
  return Status::Ok();
}

}  // namespace

Result<IndexAnswer> IndexQuery::Latest(std::string_view field, std::string_view value,
                                       int n) const {
  if (n < 1 || n > kMaxLatest) {
    return Status::InvalidArgument("n must be between 1 and " + std::to_string(kMaxLatest) +
                                   ", got " + std::to_string(n));
  }
  return Range(field, value, 0, kMaxTimeMs, n, Order::kDesc);
}

Status CheckIndexedField(const store::EventStore& store, std::string_view field,
                         std::string_view value) {
  const auto& indexed = store.options().index_fields;
  if (std::find(indexed.begin(), indexed.end(), field) == indexed.end()) {
    std::string list;
    for (const std::string& f : indexed) list += (list.empty() ? "" : ", ") + f;
    return Status::InvalidArgument("field \"" + std::string(field.substr(0, 64)) +
                                   "\" is not in index.fields (" +
                                   (list.empty() ? "none is indexed" : "indexed: " + list) + ")");
  }
  if (value.size() > keying::kMaxIndexValueSize) {
    return Status::InvalidArgument("value of " + std::to_string(value.size()) +
                                   " bytes; indexed values are at most " +
                                   std::to_string(keying::kMaxIndexValueSize) + " bytes");
  }
  return Status::Ok();
}

Status SeekIndexedEvent(store::RowIterator* it, const keying::RowKey& event, QueryWork* work,
                        std::string_view* id, std::string_view* payload) {
  const std::string row = keying::EncodeRowKey(event);
  it->SetRange(keying::KeyRange{row, row + '\0'});
  it->SeekToFirst();
  Count(&QueryWork::seeks, work, 1);
  if (!it->Valid()) {
    HOTROW_RETURN_IF_ERROR(it->status());
    return Status::Corruption("an index posting lists an event the store does not hold");
  }
  Count(&QueryWork::rows_read, work, 1);
  if (it->key() != row || !keying::DecodeRowValue(it->value(), id, payload)) {
    return Status::Corruption("an index posting lists a row that is not its event");
  }
  return Status::Ok();
}

Result<IndexAnswer> IndexQuery::Range(std::string_view field, std::string_view value,
                                      int64_t from_ms, int64_t to_ms, int64_t limit,
                                      Order order) const {
  HOTROW_RETURN_IF_ERROR(CheckIndexedField(*store_, field, value));
  HOTROW_RETURN_IF_ERROR(CheckRangeArgs(from_ms, to_ms, limit));
  IndexAnswer answer;
  // Nothing older than the window, whether or not its bucket has been dropped yet.
  const int64_t from = std::max(from_ms, store_->WindowStartMs());
  if (from >= to_ms) return answer;

  const uint64_t value_hash = keying::IndexHash(field, value);
  auto buckets = store_->Buckets();  // oldest first
  if (order == Order::kDesc) std::reverse(buckets.begin(), buckets.end());
  int64_t remaining = limit;
  std::vector<Hit> hits;
  const TopicOrder topics(*store_);
  for (const auto& bucket : buckets) {
    if (remaining == 0) break;
    if (bucket->end_ms() <= from || bucket->start_ms() >= to_ms) continue;
    if (!bucket->Indexes(field)) {
      answer.unindexed.push_back({bucket->start_ms(), bucket->end_ms()});
      continue;
    }
    // One cursor per bucket for its postings and their events: one snapshot. Every range it is
    // aimed at lies inside one 9-byte prefix, so the prefix bloom filter applies throughout.
    std::unique_ptr<store::RowIterator> it = bucket->NewIterator(
        keying::PostingKeyRange(value_hash, from, to_ms), /*within_id_prefix=*/true);
    Count(&QueryWork::iterators_created, work_, 1);
    hits.clear();
    HOTROW_RETURN_IF_ERROR(ReadPostings(it.get(), value_hash, field, value, from, to_ms, remaining,
                                        order, filter_, work_, &hits));
    // Buckets hold disjoint time spans: merging inside one bucket is enough.
    if (order == Order::kDesc) {
      std::sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
        return OrderKey(b, topics) < OrderKey(a, topics);
      });
    } else {
      std::sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
        return OrderKey(a, topics) < OrderKey(b, topics);
      });
    }
    if (static_cast<int64_t>(hits.size()) > remaining) hits.resize(static_cast<size_t>(remaining));
    for (const Hit& hit : hits) {
      HOTROW_RETURN_IF_ERROR(
          ReadEvent(it.get(), hit, store_, work_, &answer.events.emplace_back()));
    }
    remaining -= static_cast<int64_t>(hits.size());
  }
  return answer;
}

Status IndexQuery::Each(std::string_view field, std::string_view value, int64_t from_ms,
                        int64_t to_ms, const std::function<bool(const keying::RowKey&)>& want,
                        const EventSink& sink) const {
  HOTROW_RETURN_IF_ERROR(CheckIndexedField(*store_, field, value));
  HOTROW_RETURN_IF_ERROR(CheckRangeArgs(from_ms, to_ms, 1));
  const int64_t from = std::max(from_ms, store_->WindowStartMs());
  if (from >= to_ms) return Status::Ok();
  const uint64_t value_hash = keying::IndexHash(field, value);
  const TopicOrder topics(*store_);
  std::vector<Hit> hits;
  Event event;
  for (const auto& bucket : store_->Buckets()) {  // oldest first
    if (bucket->end_ms() <= from || bucket->start_ms() >= to_ms) continue;
    if (!bucket->Indexes(field)) continue;
    std::unique_ptr<store::RowIterator> it = bucket->NewIterator(
        keying::PostingKeyRange(value_hash, from, to_ms), /*within_id_prefix=*/true);
    Count(&QueryWork::iterators_created, work_, 1);
    hits.clear();
    // Every posting of the bucket: keys only, the events are read below for the hits kept.
    HOTROW_RETURN_IF_ERROR(ReadPostings(it.get(), value_hash, field, value, from, to_ms, INT64_MAX,
                                        Order::kAsc, filter_, work_, &hits));
    std::erase_if(hits, [&](const Hit& h) { return !want(h.key); });
    std::sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
      return OrderKey(a, topics) < OrderKey(b, topics);
    });
    for (const Hit& hit : hits) {
      HOTROW_RETURN_IF_ERROR(ReadEvent(it.get(), hit, store_, work_, &event));
      if (!sink(event)) return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace hotrow::query
