#include "query/index_series.h"

#include <algorithm>
#include <memory>

#include "keying/index_key.h"
#include "keying/row_key.h"
#include "query/payload_field.h"
#include "query/series_steps.h"

namespace hotrow::query {

Result<IndexSeriesAnswer> IndexSeries(const SeriesRun& run, std::string_view index_field,
                                      std::string_view value, std::string_view field,
                                      int64_t from_ms, int64_t to_ms, int64_t step_ms) {
  HOTROW_RETURN_IF_ERROR(CheckIndexedField(*run.store, index_field, value));
  IndexSeriesAnswer answer;
  answer.series.step_ms = step_ms;
  // Nothing older than the window; steps are still counted from `from_ms`.
  const int64_t from = std::max(from_ms, run.store->WindowStartMs());
  if (from >= to_ms) return answer;

  const uint64_t value_hash = keying::IndexHash(index_field, value);
  std::vector<internal::SeriesSpan> spans;
  for (const auto& bucket : run.store->Buckets()) {  // oldest first
    if (bucket->end_ms() <= from || bucket->start_ms() >= to_ms) continue;
    if (!bucket->Indexes(index_field)) {
      answer.unindexed.push_back({bucket->start_ms(), bucket->end_ms()});
      continue;
    }
    spans.push_back({bucket, 0});  // postings are not salted (keying/index_key.h)
  }
  auto read = [&](const internal::SeriesSpan& span, int64_t lo, int64_t hi,
                  internal::SeriesTask* out) -> Status {
    const keying::KeyRange range = keying::PostingKeyRange(value_hash, lo, hi);
    std::unique_ptr<store::RowIterator> rows = span.bucket->NewIterator(range, true);
    // Opened after `rows`: its snapshot holds every event a posting of `rows` lists (both are
    // written in one batch, and nothing in a bucket is deleted row by row).
    std::unique_ptr<store::RowIterator> events = span.bucket->NewIterator(range, true);
    if (run.work != nullptr) {
      run.work->iterators_created.fetch_add(2, std::memory_order_relaxed);
      run.work->seeks.fetch_add(1, std::memory_order_relaxed);
    }
    PayloadField reader(field);
    uint64_t stepped = 0;
    for (rows->SeekToFirst(); rows->Valid(); rows->Next()) {
      ++stepped;
      keying::IndexKey key;
      std::string_view f, v, listed;
      if (!keying::DecodeIndexKey(rows->key(), &key) ||
          !keying::DecodePosting(rows->value(), &f, &v, &listed)) {
        return Status::Corruption("an index range holds a row that is not an index posting");
      }
      // The full field and value decide: a 64-bit hash collision never counts another value.
      if (f != index_field || v != value) continue;
      for (size_t at = 0; at < listed.size(); at += keying::kRowKeySize) {
        keying::RowKey event;
        if (!keying::DecodeRowKey(listed.substr(at, keying::kRowKeySize), &event)) {
          return Status::Corruption("an index posting lists a key that is not an event's");
        }
        if (event.ts_ms < lo || event.ts_ms >= hi) continue;
        if (run.filter != nullptr && !(*run.filter)(event.topic, event.partition)) continue;
        std::string_view id, payload;
        HOTROW_RETURN_IF_ERROR(SeekIndexedEvent(events.get(), event, run.work, &id, &payload));
        double number = 0;
        const PayloadField::Kind kind = reader.Read(payload, &number);
        out->Add(event, kind, number, run.topics);
      }
    }
    if (run.work != nullptr) run.work->rows_read.fetch_add(stepped, std::memory_order_relaxed);
    return rows->status();
  };
  Result<SeriesAnswer> series =
      internal::RunSeriesTasks(run, spans, from_ms, from, to_ms, step_ms, read);
  if (!series.ok()) return series.status();
  answer.series = std::move(series).value();
  return answer;
}

}  // namespace hotrow::query
