#include "query/series_steps.h"

#include <algorithm>

#include "query/salt_tasks.h"
#include "query/topic_order.h"

namespace hotrow::query::internal {

void StepPartial::Add(const keying::RowKey& key, double v, const TopicOrder* topics) {
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

void StepPartial::Merge(const StepPartial& o) {
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

SeriesTask::SeriesTask(int64_t from_ms, int64_t step_ms, int64_t lo, int64_t hi)
    : from_ms_(from_ms), step_ms_(step_ms), first_((lo - from_ms) / step_ms) {
  steps_.resize(static_cast<size_t>((hi - 1 - from_ms) / step_ms - first_ + 1));
}

void SeriesTask::Add(const keying::RowKey& key, PayloadField::Kind kind, double v,
                     const TopicOrder* topics) {
  switch (kind) {
    case PayloadField::Kind::kNumber:
      steps_[static_cast<size_t>((key.ts_ms - from_ms_) / step_ms_ - first_)].Add(key, v, topics);
      break;
    case PayloadField::Kind::kAbsent:
      ++absent_;
      break;
    case PayloadField::Kind::kNotNumber:
      ++not_number_;
      break;
  }
}

SeriesAnswer MergeSeriesTasks(const std::vector<SeriesTask>& tasks, int64_t from_ms, int64_t from,
                              int64_t to_ms, int64_t step_ms) {
  SeriesAnswer answer;
  answer.step_ms = step_ms;
  const int64_t first = (from - from_ms) / step_ms;
  const int64_t last = (to_ms - 1 - from_ms) / step_ms;
  std::vector<StepPartial> total(static_cast<size_t>(last - first + 1));
  for (const SeriesTask& t : tasks) {
    answer.absent += t.absent_;
    answer.not_number += t.not_number_;
    for (size_t j = 0; j < t.steps_.size(); ++j) {
      total[static_cast<size_t>(t.first_ - first) + j].Merge(t.steps_[j]);
    }
  }
  for (size_t j = 0; j < total.size(); ++j) {
    const StepPartial& p = total[j];
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

Result<SeriesAnswer> RunSeriesTasks(const SeriesRun& run, const std::vector<SeriesSpan>& spans,
                                    int64_t from_ms, int64_t from, int64_t to_ms, int64_t step_ms,
                                    const SeriesReader& read) {
  std::vector<SeriesTask> results(spans.size());
  HOTROW_RETURN_IF_ERROR(
      RunSaltTasks(run.pool, run.max_workers, spans.size(), [&](size_t i) -> Status {
        const store::Bucket& bucket = *spans[i].bucket;
        const int64_t lo = std::max(from, bucket.start_ms());
        const int64_t hi = std::min(to_ms, bucket.end_ms());
        results[i] = SeriesTask(from_ms, step_ms, lo, hi);
        return read(spans[i], lo, hi, &results[i]);
      }));
  return MergeSeriesTasks(results, from_ms, from, to_ms, step_ms);
}

}  // namespace hotrow::query::internal
