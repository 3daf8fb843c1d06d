#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "query/index_query.h"
#include "query/series.h"
#include "query/series_answer.h"

namespace hotrow::query {

struct IndexSeriesAnswer {
  SeriesAnswer series;
  // The buckets of the range made before `index_field` was indexed, oldest first: their events
  // cannot be found by the index and are in no point (IndexAnswer::unindexed).
  std::vector<UnindexedSpan> unindexed;
};

// The series of the numeric payload field `field` over the events whose indexed `index_field`
// equals `value`: the events the index range answers (query/index_query.h), aggregated as
// IdSeries aggregates an id's (query/series.h). Every (bucket, salt) is one task on the pool: it
// walks the salt's index rows of the value in the bucket and reads each row's event through a
// second cursor opened after the first, so it sees every event an index row it read points at.
// Errors: those of CheckIndexedField; Corruption for an index row without its event.
// REQUIRES: CheckSeriesArgs(from_ms, to_ms, step_ms).ok(); field not empty.
Result<IndexSeriesAnswer> IndexSeries(const SeriesRun& run, std::string_view index_field,
                                      std::string_view value, std::string_view field,
                                      int64_t from_ms, int64_t to_ms, int64_t step_ms);

}  // namespace hotrow::query
