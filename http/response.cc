#include "http/response.h"

#include <utility>

#include "wire/event_json.h"

namespace hotrow::http {

Endpoint MatchRoute(const std::vector<std::string>& s, std::string* id) {
  if (s.size() == 1) {
    if (s[0] == "healthz") return Endpoint::kHealthz;
    if (s[0] == "readyz") return Endpoint::kReadyz;
    if (s[0] == "metrics") return Endpoint::kMetrics;
    return Endpoint::kNone;
  }
  if (s.size() < 2 || s[0] != "v1") return Endpoint::kNone;
  if (s.size() == 2 && s[1] == "stats") return Endpoint::kStats;
  if (s.size() == 2 && s[1] == "scan") return Endpoint::kScan;
  if (s.size() == 2 && s[1] == "latest") return Endpoint::kLatestAll;
  if (s[1] != "events") return Endpoint::kNone;
  if (s.size() == 3) {
    *id = s[2];
    return Endpoint::kRange;
  }
  if (s.size() == 4 && s[3] == "latest") {
    *id = s[2];
    return Endpoint::kLatest;
  }
  if (s.size() == 4 && s[3] == "series") {
    *id = s[2];
    return Endpoint::kSeries;
  }
  return Endpoint::kNone;
}

std::string ErrorBody(std::string_view message) {
  std::string body = "{\"error\":";
  wire::AppendJsonString(message, &body);
  body.push_back('}');
  return body;
}

void SetJson(Response& res, int status, std::string body) {
  res.status = status;
  body.push_back('\n');
  res.set_content(std::move(body), "application/json");
}

void SetError(Response& res, int status, std::string_view message) {
  SetJson(res, status, ErrorBody(message));
}

int HttpStatusOf(const Status& st) {
  if (st.IsInvalidArgument()) return 400;
  if (st.IsBusy()) return 503;
  return 500;
}

QueryOutcome OutcomeOf(const Status& st) {
  if (st.ok()) return QueryOutcome::kOk;
  if (st.IsInvalidArgument()) return QueryOutcome::kBadRequest;
  if (st.IsBusy()) return QueryOutcome::kBusy;
  if (st.code() == Status::Code::kCancelled) return QueryOutcome::kCancelled;
  return QueryOutcome::kError;
}

double SecondsSince(HttpClock::time_point start) {
  return std::chrono::duration<double>(HttpClock::now() - start).count();
}

}  // namespace hotrow::http
