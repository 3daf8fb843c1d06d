// The secondary-index queries of the HTTP API (CONTRACT.md "HTTP API"):
//   GET /v1/index/{field}/{value}/latest?n=N
//   GET /v1/index/{field}/{value}?from=T&to=T[&limit=L][&order=desc|asc]
//   GET /v1/index/{field}/{value}/series?field=F&from=T&to=T&(step=S|max_points=K)[&agg=...]
//       (answered with the id series, device_handlers.cc)
// answered {"field": F, "value": V, "events": [E...]}, plus "unindexed": [{"from": MS, "to":
// MS}...] when buckets of the range were made before `field` was indexed (their events cannot be
// found by the index, and the answer says so rather than miss them silently). With cluster.peers
// they fan out like the per-id queries (HttpServer::Impl::FanOutClusterQuery), `?local=true`
// included, and the merged answer names every instance's unindexed spans.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/local_answer.h"
#include "http/query_params.h"
#include "http/server_impl.h"
#include "keying/index_key.h"
#include "query/index_query.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

Status CheckIndexValue(std::string_view value) {
  if (value.size() > keying::kMaxIndexValueSize) {
    return Status::InvalidArgument("the value is " + std::to_string(value.size()) +
                                   " bytes; indexed values are at most " +
                                   std::to_string(keying::kMaxIndexValueSize) + " bytes");
  }
  if (!wire::IsValidUtf8(value)) {
    return Status::InvalidArgument("the value is not valid UTF-8; indexed values are UTF-8 text");
  }
  return Status::Ok();
}

// The answer object up to and including "events":[.
std::string IndexOpenBody(const std::string& field, const std::string& value) {
  std::string body = "{\"field\":";
  wire::AppendJsonString(field, &body);
  body.append(",\"value\":");
  wire::AppendJsonString(value, &body);
  body.append(",\"events\":[");
  return body;
}

std::string IndexBody(const std::string& field, const std::string& value,
                      const query::IndexAnswer& answer) {
  std::string body = IndexOpenBody(field, value);
  bool first = true;
  for (const query::Event& e : answer.events) {
    if (!first) body.push_back(',');
    first = false;
    wire::AppendEventJson(e, &body);
  }
  body.push_back(']');
  cluster::AppendUnindexedJson(answer.unindexed, &body);
  body.push_back('}');
  return body;
}

}  // namespace

bool HttpServer::Impl::IndexRoute(const std::vector<std::string>& s, std::string_view raw_query,
                                  Response& res) {
  if (s.size() < 4 || s[0] != "v1" || s[1] != "index") return false;
  const bool latest = s.size() == 5 && s[4] == "latest";
  const bool series = s.size() == 5 && s[4] == "series";
  if (!latest && !series && s.size() != 4) return false;
  const QueryKind kind = series ? QueryKind::kSeries
                         : latest ? QueryKind::kLatest
                                  : QueryKind::kRange;
  const auto start = HttpClock::now();
  const std::string& field = s[2];
  const std::string& value = s[3];
  // Cluster mode: `local=true` answers from this instance's serving partitions; without it every
  // instance is asked, as for the per-id queries (http_cluster_handlers.cc).
  const bool cluster = backend.cluster != nullptr && backend.cluster->enabled();
  bool local = false;
  std::string rest;
  if (!cluster) {
    rest = raw_query;
  } else if (!TakeClusterLocal(raw_query, kind, &local, &rest, res)) {
    return true;
  }
  if (series) {
    if (Status st = CheckIndexValue(value); !st.ok()) return Fail(res, kind, st), true;
    Series(SeriesSubject::OfIndex(field, value), rest, local, res);
    return true;
  }
  Result<LatestParams> latest_params = LatestParams{};
  Result<RangeParams> range_params = RangeParams{};
  if (latest) {
    latest_params = ParseLatestParams(rest);
    if (!latest_params.ok()) return Fail(res, kind, latest_params.status()), true;
  } else {
    range_params = ParseRangeParams(rest);
    if (!range_params.ok()) return Fail(res, kind, range_params.status()), true;
  }
  if (Status st = CheckIndexValue(value); !st.ok()) return Fail(res, kind, st), true;
  if (cluster) {
    ClusterQuery q;
    q.kind = kind;
    q.open_body = IndexOpenBody(field, value);
    q.group.peer_target = "/v1/index/" + wire::PercentEncode(field) + "/" +
                          wire::PercentEncode(value) + (latest ? "/latest" : "") +
                          (rest.empty() ? "" : "?" + rest);
    q.group.limit = latest ? latest_params->n : range_params->limit;
    q.group.order = latest ? query::Order::kDesc : range_params->order;
    q.group.run = [store = backend.store, field, value, latest, n = latest_params->n,
                   r = *range_params](const query::PartitionFilter& filter,
                                      std::vector<query::Event>* events,
                                      std::vector<query::UnindexedSpan>* unindexed) {
      const query::IndexQuery index(store, nullptr, &filter);
      Result<query::IndexAnswer> answer =
          latest ? index.Latest(field, value, n)
                 : index.Range(field, value, r.from_ms, r.to_ms, r.limit, r.order);
      if (!answer.ok()) return answer.status();
      *events = std::move(answer->events);
      *unindexed = std::move(answer->unindexed);
      return Status::Ok();
    };
    local ? LocalClusterQuery(q, res) : FanOutClusterQuery(q, res);
    return true;
  }
  QuerySlot slot(this);
  if (!slot.acquired()) return Busy(res, kind, "too many queries at once; retry later"), true;
  const query::IndexQuery index(backend.store, nullptr);
  Result<query::IndexAnswer> answer =
      latest ? index.Latest(field, value, latest_params->n)
             : index.Range(field, value, range_params->from_ms, range_params->to_ms,
                           range_params->limit, range_params->order);
  if (!answer.ok()) return Fail(res, kind, answer.status()), true;
  SetJson(res, 200, IndexBody(field, value, *answer));
  backend.metrics->RecordQuery(kind, QueryOutcome::kOk, SecondsSince(start));
  return true;
}

}  // namespace hotrow::http
