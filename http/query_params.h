#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "query/query_engine.h"

namespace hotrow::http {

// The query parameters of the HTTP API's three queries (CONTRACT.md "HTTP API"), checked without a
// server so that they can be tested and fuzzed alone. Each parser takes the raw query string (the
// part after '?', still percent-encoded) and fails with InvalidArgument naming the parameter: bad
// encoding, a name the route does not take, a name given twice, a missing or bad value.

// GET /v1/events/{id}/latest?n=N: 1 <= n <= query::kMaxLatest, default 10.
struct LatestParams {
  int n = 10;
};
Result<LatestParams> ParseLatestParams(std::string_view raw_query);

// GET /v1/events/{id}?from=T&to=T[&limit=L][&order=desc|asc]: from < to (ms or RFC 3339),
// 1 <= limit <= query::kMaxRangeLimit (default 1000), order desc by default.
struct RangeParams {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  int64_t limit = 1000;
  query::Order order = query::Order::kDesc;
};
Result<RangeParams> ParseRangeParams(std::string_view raw_query);

// GET /v1/scan?from=T&to=T[&limit=L]: from < to, any positive limit (default: none).
struct ScanParams {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  int64_t limit = query::kNoLimit;
};
Result<ScanParams> ParseScanParams(std::string_view raw_query);

// GET /v1/latest[?prefix=P][&limit=L][&after=CURSOR] (CONTRACT.md "Device state and series"):
// the newest event of every id. 1 <= limit <= query::kMaxLatestAllLimit, default 1000; `after`
// is the `next` of the page before (an id); the prefix and the cursor are at most
// keying::kMaxIdSize bytes.
struct LatestAllParams {
  std::string prefix;
  std::string after;
  int64_t limit = 1000;
};
Result<LatestAllParams> ParseLatestAllParams(std::string_view raw_query);

// GET /v1/latest?ids=A,B,C[&n=N] and POST /v1/latest with {"ids": [...], "n": N}: the newest n of
// each id. 1 to query::kMaxLatestIds ids, each one CheckQueryId accepts; an id given twice is
// answered once; n as for latest. In the query string the list is split on its commas before it
// is percent-decoded, so an id holding a comma is sent with it encoded (%2C).
struct LatestIdsParams {
  std::vector<std::string> ids;  // in the order given, without repeats
  int n = 10;
};
// Whether a /v1/latest query string names ids (the latest of many ids, not of every id).
bool HasIdsParam(std::string_view raw_query);
Result<LatestIdsParams> ParseLatestIdsParams(std::string_view raw_query);
// The POST body: a JSON object with "ids" (an array of strings) and optionally "n"; nothing else.
Result<LatestIdsParams> ParseLatestIdsBody(std::string_view body);

// GET /v1/events/{id}/series?field=F&from=T&to=T&(step=S|max_points=K)[&agg=A,B...]: a series of
// the numeric payload field F (a dotted path). `step` is integer ms or an interval as Grafana
// writes `${__interval}` (500ms, 30s, 1m, 1h, 1d, 1w, 1y: common/time_format.h ParseIntervalMs);
// `max_points` asks for the smallest step giving at most K points; exactly one of them.
// `agg` names the aggregates to return, any of avg, min, max, count, last (default: all).
enum SeriesAgg : uint32_t {
  kAggAvg = 1,
  kAggMin = 2,
  kAggMax = 4,
  kAggCount = 8,
  kAggLast = 16,
  kAggAll = 31,
};
struct SeriesParams {
  std::string field;
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  int64_t step_ms = 0;
  uint32_t aggs = kAggAll;
};
Result<SeriesParams> ParseSeriesParams(std::string_view raw_query);

// The id of a per-id route, already percent-decoded: InvalidArgument naming the rule when it is
// empty, over keying::kMaxIdSize (256) bytes or not valid UTF-8. No record can carry such an id
// (CONTRACT.md "Events on the wire"), so the query is refused rather than answered for an id
// altered on its way back (JSON cannot carry bytes that are not UTF-8).
Status CheckQueryId(std::string_view id);

// Paths that take no parameters (/healthz, /metrics, ...): any parameter is InvalidArgument.
Status CheckNoParams(std::string_view raw_query);

// A short excerpt of what a client sent, quoted, for error messages (at most 64 bytes of it).
std::string QuoteClientText(std::string_view text);

// How an answer is written (CONTRACT.md "Grafana"): `format=json` (the default: the answer as the
// route documents it) or `format=rows` (http/rows_format.h: one flat object per event or series
// point under "rows", for Grafana's Infinity datasource). Only the series and latest routes take
// it.
enum class AnswerFormat { kJson, kRows };

// Takes `format` out of a raw query string into `*format` (kJson when absent); the rest goes to
// `*rest` for the route's parser. InvalidArgument when it is given twice or is neither json nor
// rows.
Status TakeFormatParam(std::string_view raw, AnswerFormat* format, std::string* rest);

// Takes `local=true|false` (cluster mode's "answer from this instance only") out of a raw query
// string into `*local`; the rest goes to `*rest` for the route's parser. InvalidArgument when it
// is given twice or is neither true nor false.
Status TakeLocalFlag(std::string_view raw, bool* local, std::string* rest);

}  // namespace hotrow::http
