#include "query/series.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <tuple>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/id_salts.h"
#include "query/payload_field.h"
#include "query/salt_tasks.h"
#include "query/topic_order.h"

namespace hotrow::query {
namespace {

// One step's aggregates so far. Merging two is associative and commutative, so the salts'
// partials combine in any order.
struct Partial {
  uint64_t count = 0;
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  // The newest event's (ts, topic rank, partition, offset): ties in time order topics by name
  // (query/topic_order.h), as the contract's order and the cluster's merge of `last` do.
  std::tuple<int64_t, uint32_t, int32_t, int64_t> last_key{-1, 0, 0, 0};
  uint16_t last_topic = 0;  // the store's number of the newest event's topic
  double last = 0;

  void Add(const keying::RowKey& key, double v, const TopicOrder* topics) {
    ++count;
    sum += v;
    min = std::min(min, v);
    max = std::max(max, v);
    const uint32_t rank = topics != nullptr ? topics->Rank(key.topic) : key.topic;
    const auto k = std::make_tuple(key.ts_ms, rank, key.partition, key.offset);
    if (k > last_key) {
      last_key = k;
      last_topic = key.topic;
      last = v;
    }
  }
  void Merge(const Partial& o) {
    if (o.count == 0) return;
    count += o.count;
    sum += o.sum;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    if (o.last_key > last_key) {
      last_key = o.last_key;
      last_topic = o.last_topic;
      last = o.last;
    }
  }
};

// The partial aggregates of one task: the steps [first, first + size) of the query.
struct TaskResult {
  int64_t first = 0;
  std::vector<Partial> steps;
  uint64_t absent = 0;
  uint64_t not_number = 0;
};

Status NotARow(const store::Bucket& bucket) {
  return Status::Corruption("bucket " + std::to_string(bucket.start_ms()) +
                            " holds a row that is not a hotrow row");
}

}  // namespace

Result<SeriesAnswer> IdSeries(const SeriesRun& run, std::string_view id, std::string_view field,
                              int64_t from_ms, int64_t to_ms, int64_t step_ms) {
  SeriesAnswer answer;
  answer.step_ms = step_ms;
  // Nothing older than the window; steps are still counted from `from_ms`.
  const int64_t from = std::max(from_ms, run.store->WindowStartMs());
  if (from >= to_ms) return answer;

  const IdSalts id_salts(run.store->salter(), id);
  const uint64_t id_hash = id_salts.id_hash();
  struct Task {
    std::shared_ptr<const store::Bucket> bucket;
    uint8_t salt;
  };
  std::vector<Task> tasks;
  for (const auto& bucket : run.store->Buckets()) {
    if (bucket->end_ms() <= from || bucket->start_ms() >= to_ms) continue;
    for (uint8_t salt : id_salts.In(*bucket)) {
      if (bucket->MayHoldId(salt, id_hash)) tasks.push_back({bucket, salt});
    }
  }
  std::vector<TaskResult> results(tasks.size());
  Status st = RunSaltTasks(run.pool, run.max_workers, tasks.size(), [&](size_t i) -> Status {
    const store::Bucket& bucket = *tasks[i].bucket;
    const int64_t lo = std::max(from, bucket.start_ms());
    const int64_t hi = std::min(to_ms, bucket.end_ms());
    TaskResult& out = results[i];
    out.first = (lo - from_ms) / step_ms;
    out.steps.resize(static_cast<size_t>((hi - 1 - from_ms) / step_ms - out.first + 1));
    PayloadField reader(field);
    auto it = bucket.NewIterator(keying::IdTimeKeyRange(tasks[i].salt, id_hash, lo, hi), true);
    uint64_t rows = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++rows;
      keying::RowKey key;
      std::string_view row_id, payload;
      if (!keying::DecodeRowKey(it->key(), &key) ||
          !keying::DecodeRowValue(it->value(), &row_id, &payload)) {
        return NotARow(bucket);
      }
      if (key.ts_ms < lo || key.ts_ms >= hi || row_id != id) continue;
      if (run.filter != nullptr && !(*run.filter)(key.topic, key.partition)) continue;
      double v = 0;
      switch (reader.Read(payload, &v)) {
        case PayloadField::Kind::kNumber:
          out.steps[static_cast<size_t>((key.ts_ms - from_ms) / step_ms - out.first)].Add(
              key, v, run.topics);
          break;
        case PayloadField::Kind::kAbsent:
          ++out.absent;
          break;
        case PayloadField::Kind::kNotNumber:
          ++out.not_number;
          break;
      }
    }
    if (run.work != nullptr) {
      run.work->iterators_created.fetch_add(1, std::memory_order_relaxed);
      run.work->seeks.fetch_add(1, std::memory_order_relaxed);
      run.work->rows_read.fetch_add(rows, std::memory_order_relaxed);
    }
    return it->status();
  });
  HOTROW_RETURN_IF_ERROR(st);

  // Merge the partials, step by step.
  const int64_t first = (from - from_ms) / step_ms;
  const int64_t last = (to_ms - 1 - from_ms) / step_ms;
  std::vector<Partial> total(static_cast<size_t>(last - first + 1));
  for (const TaskResult& r : results) {
    answer.absent += r.absent;
    answer.not_number += r.not_number;
    for (size_t j = 0; j < r.steps.size(); ++j) {
      total[static_cast<size_t>(r.first - first) + j].Merge(r.steps[j]);
    }
  }
  for (size_t j = 0; j < total.size(); ++j) {
    const Partial& p = total[j];
    if (p.count == 0) continue;
    SeriesPoint point;
    point.t_ms = from_ms + (first + static_cast<int64_t>(j)) * step_ms;
    point.count = p.count;
    point.sum = p.sum;
    point.min = p.min;
    point.max = p.max;
    point.last = p.last;
    point.last_ts_ms = std::get<0>(p.last_key);
    point.last_topic = p.last_topic;
    point.last_partition = std::get<2>(p.last_key);
    point.last_offset = std::get<3>(p.last_key);
    answer.points.push_back(point);
  }
  return answer;
}

}  // namespace hotrow::query
