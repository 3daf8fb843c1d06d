#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/exchange.h"
#include "http/metrics.h"

namespace hotrow::http {

// The HTTP API's routes and the shape of its answers, shared by the server and its handlers.

enum class Endpoint {
  kNone,
  kHealthz,
  kReadyz,
  kMetrics,
  kStats,
  kScan,
  kLatest,
  kRange,
  kLatestAll,  // /v1/latest: the latest of every id, or of many (GET and POST)
  kSeries,     // /v1/events/{id}/series
};

// Matches decoded path segments; `*id` is set for the per-id routes.
Endpoint MatchRoute(const std::vector<std::string>& segments, std::string* id);

// {"error": message}, without the trailing newline.
std::string ErrorBody(std::string_view message);

// Every JSON answer ends with a newline, so that a curl in a terminal leaves the prompt on a line
// of its own.
void SetJson(Response& res, int status, std::string body);
void SetError(Response& res, int status, std::string_view message);

// 400 for InvalidArgument, 503 for Busy, 500 for the rest; and the metrics' outcome of `st`.
int HttpStatusOf(const Status& st);
QueryOutcome OutcomeOf(const Status& st);

using HttpClock = std::chrono::steady_clock;
double SecondsSince(HttpClock::time_point start);

}  // namespace hotrow::http
