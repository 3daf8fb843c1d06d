#include "query/series.h"

#include <algorithm>
#include <memory>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/id_salts.h"
#include "query/payload_field.h"
#include "query/series_steps.h"

namespace hotrow::query {

Result<SeriesAnswer> IdSeries(const SeriesRun& run, std::string_view id, std::string_view field,
                              int64_t from_ms, int64_t to_ms, int64_t step_ms) {
  // Nothing older than the window; steps are still counted from `from_ms`.
  const int64_t from = std::max(from_ms, run.store->WindowStartMs());
  if (from >= to_ms) {
    SeriesAnswer empty;
    empty.step_ms = step_ms;
    return empty;
  }

  const IdSalts id_salts(run.store->salter(), id);
  const uint64_t id_hash = id_salts.id_hash();
  // Taken before the buckets are listed and their salts decided: the decisions then cover every
  // row read at it (query/id_salts.h).
  const std::shared_ptr<const store::ReadPoint> at = run.store->ReadPointNow();
  std::vector<internal::SeriesSpan> spans;
  for (const auto& bucket : run.store->Buckets()) {
    if (bucket->end_ms() <= from || bucket->start_ms() >= to_ms) continue;
    for (uint8_t salt : id_salts.In(*bucket)) {
      if (bucket->MayHoldId(salt, id_hash)) spans.push_back({bucket, salt});
    }
    if (run.decided_hook != nullptr && *run.decided_hook) (*run.decided_hook)(bucket->start_ms());
  }
  auto read = [&](const internal::SeriesSpan& span, int64_t lo, int64_t hi,
                  internal::SeriesTask* out) -> Status {
    const store::Bucket& bucket = *span.bucket;
    PayloadField reader(field);
    auto it =
        bucket.NewIterator(keying::IdTimeKeyRange(span.salt, id_hash, lo, hi), true, at.get());
    uint64_t rows = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++rows;
      keying::RowKey key;
      std::string_view row_id, payload;
      if (!keying::DecodeRowKey(it->key(), &key) ||
          !keying::DecodeRowValue(it->value(), &row_id, &payload)) {
        return bucket.NotARow();
      }
      if (key.ts_ms < lo || key.ts_ms >= hi || row_id != id) continue;
      if (run.filter != nullptr && !(*run.filter)(key.topic, key.partition)) continue;
      double v = 0;
      const PayloadField::Kind kind = reader.Read(payload, &v);
      out->Add(key, kind, v, run.topics);
    }
    if (run.work != nullptr) {
      run.work->iterators_created.fetch_add(1, std::memory_order_relaxed);
      run.work->seeks.fetch_add(1, std::memory_order_relaxed);
      run.work->rows_read.fetch_add(rows, std::memory_order_relaxed);
    }
    return it->status();
  };
  return internal::RunSeriesTasks(run, spans, from_ms, from, to_ms, step_ms, read);
}

}  // namespace hotrow::query
