#include "query/latest_all.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/salt_merge.h"
#include "query/salt_tasks.h"

namespace hotrow::query {
namespace {

// The newest row found so far of each id, for at most `cap` ids: the smallest.
using Found = std::map<std::string, KeyedEvent, std::less<>>;

auto OrderKey(const keying::RowKey& k, const TopicOrder* topics) {
  return std::make_tuple(k.ts_ms, topics != nullptr ? topics->Rank(k.topic) : uint32_t{k.topic},
                         k.partition, k.offset);
}

// Whether `id` can still be among the `cap` smallest of `found`.
bool MayEnter(const Found& found, size_t cap, std::string_view id) {
  return found.size() < cap || id < std::string_view(found.rbegin()->first);
}

// Offers an id's newest row (of one salt, or of one bucket) to `found`: kept when it is newer
// than what `found` holds of the id, or when the id is new and among the `cap` smallest.
void Offer(Found* found, size_t cap, const TopicOrder* topics, KeyedEvent&& e) {
  auto it = found->find(e.event.id);
  if (it != found->end()) {
    if (OrderKey(e.key, topics) > OrderKey(it->second.key, topics)) it->second = std::move(e);
    return;
  }
  if (!MayEnter(*found, cap, e.event.id)) return;
  std::string id = e.event.id;
  found->emplace(std::move(id), std::move(e));
  if (found->size() > cap) found->erase(std::prev(found->end()));
}

}  // namespace

Status LatestAllFromStore(const LatestAllRun& run, std::string_view prefix, std::string_view after,
                          size_t max_ids, std::vector<Event>* out) {
  out->clear();
  const int64_t window_start = run.store->WindowStartMs();
  auto buckets = run.store->Buckets();
  std::reverse(buckets.begin(), buckets.end());  // newest first
  const int salts = run.store->salter().salts();
  Found found;  // over the buckets read so far; read-only while a bucket's tasks run
  for (const auto& bucket : buckets) {
    if (bucket->end_ms() <= window_start) break;
    std::vector<Found> per_salt(static_cast<size_t>(salts));
    Status st =
        RunSaltTasks(run.pool, run.max_workers, per_salt.size(), [&](size_t salt) -> Status {
          Found& mine = per_salt[salt];
          auto it = bucket->NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
          uint64_t rows = 0;
          // The id of the row before, and whether that id is settled for this salt. An id's rows
          // in a salt come newest first, so once its first row in the window that the filter
          // accepts is seen (kept or not), the rest of its rows change nothing.
          // When topics rank otherwise than their numbers, the rows tied in time with the first
          // are offered too (Offer keeps the newest by rank).
          const bool by_rank = run.topics != nullptr && !run.topics->InNumberOrder();
          std::string last_id;
          uint64_t last_hash = 0;
          int64_t settled_ts = 0;
          bool have_last = false, settled = false;
          for (it->SeekToFirst(); it->Valid(); it->Next()) {
            ++rows;
            keying::RowKey key;
            if (!keying::DecodeRowKey(it->key(), &key)) continue;  // an index row
            std::string_view id, payload;
            if (!keying::DecodeRowValue(it->value(), &id, &payload)) return bucket->NotARow();
            if (have_last && key.id_hash == last_hash && id == last_id) {
              if (settled && !(by_rank && key.ts_ms == settled_ts)) continue;
            } else {
              last_hash = key.id_hash;
              last_id.assign(id);
              have_last = true;
              settled = false;
            }
            if (key.ts_ms < window_start) {
              settled = true;  // the rest of its rows are older still
              settled_ts = key.ts_ms;
              continue;
            }
            if (run.filter != nullptr && !(*run.filter)(key.topic, key.partition)) continue;
            settled = true;
            settled_ts = key.ts_ms;
            if (!id.starts_with(prefix) || (!after.empty() && id <= after)) continue;
            // Found in a newer bucket, beyond the ids that can make the page, or met in this salt
            // already (another id with the same hash came between).
            if (found.find(id) != found.end() || !MayEnter(found, max_ids, id)) continue;
            const bool met = mine.find(id) != mine.end();
            if ((met && !by_rank) || (!met && !MayEnter(mine, max_ids, id))) continue;
            KeyedEvent e;
            e.key = key;
            e.event.id.assign(id);
            e.event.ts_ms = key.ts_ms;
            e.event.partition = key.partition;
            e.event.offset = key.offset;
            e.event.payload.assign(payload);
            Offer(&mine, max_ids, run.topics, std::move(e));
          }
          if (run.work != nullptr) {
            run.work->iterators_created.fetch_add(1, std::memory_order_relaxed);
            run.work->seeks.fetch_add(1, std::memory_order_relaxed);
            run.work->rows_read.fetch_add(rows, std::memory_order_relaxed);
          }
          return it->status();
        });
    HOTROW_RETURN_IF_ERROR(st);
    // This bucket's newest of each id not found in a newer one (newer than any older bucket's).
    Found bucket_best;
    for (Found& mine : per_salt) {
      for (auto& [id, e] : mine) Offer(&bucket_best, max_ids, run.topics, std::move(e));
    }
    for (auto& [id, e] : bucket_best) Offer(&found, max_ids, run.topics, std::move(e));
  }
  out->reserve(found.size());
  for (auto& [id, e] : found) {
    e.event.topic = run.store->TopicName(e.key.topic).value_or(std::to_string(e.key.topic));
    out->push_back(std::move(e.event));
  }
  return Status::Ok();
}

}  // namespace hotrow::query
