#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// The id of a per-id route, already percent-decoded: InvalidArgument naming the rule when it is
// empty, over keying::kMaxIdSize (256) bytes or not valid UTF-8. No record can carry such an id
// (CONTRACT.md "Events on the wire"), so the query is refused rather than answered for an id
// altered on its way back (JSON cannot carry bytes that are not UTF-8).
Status CheckQueryId(std::string_view id);

// Paths that take no parameters (/healthz, /metrics, ...): any parameter is InvalidArgument.
Status CheckNoParams(std::string_view raw_query);

// A short excerpt of what a client sent, quoted, for error messages (at most 64 bytes of it).
std::string QuoteClientText(std::string_view text);

}  // namespace hotrow::http
