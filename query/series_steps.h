#pragma once

// What the id and index series share (query/series.h, query/index_series.h): each task of a
// query aggregates the rows it reads into the steps its span covers, and the tasks' partials
// merge, in any order, into the answer's points.

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "keying/row_key.h"
#include "query/payload_field.h"
#include "query/series.h"
#include "query/series_answer.h"
#include "store/event_store.h"

namespace hotrow::query {

class TopicOrder;

namespace internal {

// One step's aggregates so far. Merging two is associative and commutative.
struct StepPartial {
  uint64_t count = 0;
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  // The newest event's (ts, topic rank, partition, offset): ties in time order topics by name
  // (query/topic_order.h), as the contract's order and the cluster's merge of `last` do.
  std::tuple<int64_t, uint32_t, int32_t, int64_t> last_key{-1, 0, 0, 0};
  uint16_t last_topic = 0;  // the store's number of the newest event's topic
  double last = 0;

  void Add(const keying::RowKey& key, double v, const TopicOrder* topics);
  void Merge(const StepPartial& o);
};

// The steps of a query (counted in step_ms from from_ms) that one task's rows fall in.
class SeriesTask {
 public:
  // The task reads rows with lo <= ts < hi. REQUIRES: from_ms <= lo < hi.
  SeriesTask(int64_t from_ms, int64_t step_ms, int64_t lo, int64_t hi);
  SeriesTask() = default;

  // One event's field as PayloadField read it: a number joins its step, the others are counted.
  // REQUIRES: lo <= key.ts_ms < hi.
  void Add(const keying::RowKey& key, PayloadField::Kind kind, double v, const TopicOrder* topics);

 private:
  friend SeriesAnswer MergeSeriesTasks(const std::vector<SeriesTask>& tasks, int64_t from_ms,
                                       int64_t from, int64_t to_ms, int64_t step_ms);
  int64_t from_ms_ = 0;
  int64_t step_ms_ = 1;
  int64_t first_ = 0;  // the query's index of steps_[0]
  std::vector<StepPartial> steps_;
  uint64_t absent_ = 0;
  uint64_t not_number_ = 0;
};

// The answer of a query over [from, to_ms) (from: from_ms raised to the window's start) whose
// tasks are `tasks`: every step with a number, oldest first, and what was skipped.
SeriesAnswer MergeSeriesTasks(const std::vector<SeriesTask>& tasks, int64_t from_ms, int64_t from,
                              int64_t to_ms, int64_t step_ms);

// One (bucket, salt) a series reads.
struct SeriesSpan {
  std::shared_ptr<const store::Bucket> bucket;
  uint8_t salt = 0;
};
// What a series reads of one span: the rows with lo <= ts < hi, each added to `out`.
using SeriesReader = std::function<Status(const SeriesSpan& span, int64_t lo, int64_t hi,
                                          SeriesTask* out)>;

// Reads every span on the run's pool (one task each, query/salt_tasks.h), each into the steps of
// its part of [from, to_ms), and merges them (MergeSeriesTasks).
Result<SeriesAnswer> RunSeriesTasks(const SeriesRun& run, const std::vector<SeriesSpan>& spans,
                                    int64_t from_ms, int64_t from, int64_t to_ms, int64_t step_ms,
                                    const SeriesReader& read);

}  // namespace internal
}  // namespace hotrow::query
