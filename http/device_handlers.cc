// The device-state queries of the HTTP API (CONTRACT.md "Device state and series"):
//   GET  /v1/latest[?prefix=P][&limit=L][&after=CURSOR]   the newest event of every id, paged
//   GET  /v1/latest?ids=A,B,C[&n=N]                        the newest n of each of many ids
//   POST /v1/latest  {"ids": [...], "n": N}                the same, for lists a URL cannot hold
//   GET  /v1/events/{id}/series?field=F&from=T&to=T&(step=S|max_points=K)[&agg=...]
//
// This file writes one instance's answers. With cluster.peers, `?local=true` answers from this
// instance's serving partitions with the head the other queries' local answers carry (partitions,
// stale, group, topics, complete); a series' local answer carries every aggregate, the sum and
// where each `last` was found. Without `local` the queries are merged over the group
// (http/device_fanout.cc).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/coverage.h"
#include "cluster/group_query.h"
#include "cluster/local_answer.h"
#include "http/query_params.h"
#include "http/server_impl.h"
#include "query/index_series.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

// A finite number in its shortest exact form; null for what JSON cannot hold (an overflowed sum).
void AppendNumber(double v, std::string* out) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v);
  out->append(buffer, ec == std::errc() ? end : buffer);
}

}  // namespace

void AppendSeriesPoint(int64_t t_ms, uint64_t count, double sum, double min, double max,
                       double last, uint32_t aggs, std::string* out) {
  out->append("{\"t\":" + std::to_string(t_ms));
  if (aggs & kAggAvg) {
    out->append(",\"avg\":");
    AppendNumber(sum / static_cast<double>(count), out);
  }
  if (aggs & kAggMin) {
    out->append(",\"min\":");
    AppendNumber(min, out);
  }
  if (aggs & kAggMax) {
    out->append(",\"max\":");
    AppendNumber(max, out);
  }
  if (aggs & kAggCount) out->append(",\"count\":" + std::to_string(count));
  if (aggs & kAggLast) {
    out->append(",\"last\":");
    AppendNumber(last, out);
  }
}

namespace {

void AppendEvents(const std::vector<query::Event>& events, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < events.size(); ++i) {
    if (i != 0) out->push_back(',');
    wire::AppendEventJson(events[i], out);
  }
  out->push_back(']');
}

}  // namespace

bool HttpServer::Impl::DeviceRoute(const Request& req,
                                   const std::vector<std::string>& segments,
                                   std::string_view raw_query, Response& res) {
  const bool latest = segments.size() == 2 && segments[0] == "v1" && segments[1] == "latest";
  const bool series = segments.size() == 4 && segments[0] == "v1" && segments[1] == "events" &&
                      segments[3] == "series";
  if (!latest && !series) return false;
  const bool ids = latest && (req.method == "POST" || HasIdsParam(raw_query));
  const QueryKind kind = series ? QueryKind::kSeries
                         : ids  ? QueryKind::kLatestIds
                                : QueryKind::kLatestAll;
  bool local = false;
  std::string rest;
  const bool cluster = backend.cluster != nullptr && backend.cluster->enabled();
  if (!cluster) {
    rest = raw_query;  // `local` is then an unknown parameter, as for the other queries
  } else if (Status st = TakeLocalFlag(raw_query, &local, &rest); !st.ok()) {
    Fail(res, kind, st);
    return true;
  }
  if (series) {
    Series(SeriesSubject::OfId(segments[2]), rest, local, res);
  } else if (ids) {
    LatestIds(req, rest, local, res);
  } else {
    LatestAll(rest, local, res);
  }
  return true;
}

Result<std::string> HttpServer::Impl::LatestAllBody(const LatestAllParams& params, bool local) {
  const cluster::QueryView view = local ? backend.cluster->View() : cluster::QueryView{};
  Result<query::LatestAllPage> page = backend.engine->LatestAll(
      params.prefix, params.after, params.limit, local ? &view.filter : nullptr);
  if (!page.ok()) return page.status();
  std::string body = "{\"events\":";
  AppendEvents(page->events, &body);
  body.append(",\"next\":");
  if (page->next) {
    wire::AppendJsonString(*page->next, &body);
  } else {
    body.append("null");
  }
  if (local) cluster::AppendLocalHead(backend.cluster->Head(*view.ownership), &body);
  body.push_back('}');
  return body;
}

void HttpServer::Impl::LatestAll(std::string_view raw_query, bool local, Response& res) {
  const auto start = HttpClock::now();
  Result<LatestAllParams> params = ParseLatestAllParams(raw_query);
  if (!params.ok()) return Fail(res, QueryKind::kLatestAll, params.status());
  QuerySlot slot(this, /*peer=*/local);
  if (!slot.acquired()) return Busy(res, QueryKind::kLatestAll, "too many queries at once");
  Result<std::string> body = GroupWide(local) ? LatestAllForGroup(*params, std::string(raw_query))
                                              : LatestAllBody(*params, local);
  if (!body.ok()) return Fail(res, QueryKind::kLatestAll, body.status());
  SetJson(res, 200, std::move(body).value());
  backend.metrics->RecordQuery(QueryKind::kLatestAll, QueryOutcome::kOk, SecondsSince(start));
}

Result<std::string> HttpServer::Impl::LatestIdsBody(const LatestIdsParams& params, bool local) {
  const cluster::QueryView view = local ? backend.cluster->View() : cluster::QueryView{};
  Result<std::vector<std::vector<query::Event>>> answer =
      backend.engine->LatestMany(params.ids, params.n, local ? &view.filter : nullptr);
  if (!answer.ok()) return answer.status();
  std::string body = "{\"ids\":{";
  for (size_t i = 0; i < params.ids.size(); ++i) {
    if (i != 0) body.push_back(',');
    wire::AppendJsonString(params.ids[i], &body);
    body.push_back(':');
    AppendEvents((*answer)[i], &body);
  }
  body.push_back('}');
  if (local) cluster::AppendLocalHead(backend.cluster->Head(*view.ownership), &body);
  body.push_back('}');
  return body;
}

void HttpServer::Impl::LatestIds(const Request& req, std::string_view raw_query,
                                 bool local, Response& res) {
  const auto start = HttpClock::now();
  Result<LatestIdsParams> params = LatestIdsParams{};
  if (req.method == "POST") {
    if (Status st = CheckNoParams(raw_query); !st.ok()) {
      return Fail(res, QueryKind::kLatestIds, st);
    }
    params = ParseLatestIdsBody(req.body);
  } else {
    params = ParseLatestIdsParams(raw_query);
  }
  if (!params.ok()) return Fail(res, QueryKind::kLatestIds, params.status());
  QuerySlot slot(this, /*peer=*/local);
  if (!slot.acquired()) return Busy(res, QueryKind::kLatestIds, "too many queries at once");
  Result<std::string> body =
      GroupWide(local) ? LatestIdsForGroup(*params) : LatestIdsBody(*params, local);
  if (!body.ok()) return Fail(res, QueryKind::kLatestIds, body.status());
  SetJson(res, 200, std::move(body).value());
  backend.metrics->RecordQuery(QueryKind::kLatestIds, QueryOutcome::kOk, SecondsSince(start));
}

std::string SeriesSubject::Path() const {
  return by_index() ? "/v1/index/" + wire::PercentEncode(index_field) + "/" +
                          wire::PercentEncode(index_value) + "/series"
                    : "/v1/events/" + wire::PercentEncode(id) + "/series";
}

void SeriesSubject::AppendJson(std::string* out) const {
  if (!by_index()) {
    out->append("\"event_id\":");
    wire::AppendJsonString(id, out);
    return;
  }
  out->append("\"index\":{\"field\":");
  wire::AppendJsonString(index_field, out);
  out->append(",\"value\":");
  wire::AppendJsonString(index_value, out);
  out->push_back('}');
}

Result<std::string> HttpServer::Impl::SeriesBody(const SeriesSubject& subject,
                                                 const SeriesParams& params, bool local) {
  const cluster::QueryView view = local ? backend.cluster->View() : cluster::QueryView{};
  const query::PartitionFilter* filter = local ? &view.filter : nullptr;
  Result<query::IndexSeriesAnswer> answer = query::IndexSeriesAnswer{};
  if (subject.by_index()) {
    answer = backend.engine->IndexSeries(subject.index_field, subject.index_value, params.field,
                                         params.from_ms, params.to_ms, params.step_ms, filter);
  } else {
    Result<query::SeriesAnswer> series = backend.engine->Series(
        subject.id, params.field, params.from_ms, params.to_ms, params.step_ms, filter);
    if (!series.ok()) return series.status();
    answer->series = std::move(series).value();
  }
  if (!answer.ok()) return answer.status();
  const query::SeriesAnswer& series = answer->series;
  // A local answer carries everything a merge needs, whatever `agg` asked.
  const uint32_t aggs = local ? kAggAll : params.aggs;
  std::string body = "{";
  subject.AppendJson(&body);
  body.append(",\"field\":");
  wire::AppendJsonString(params.field, &body);
  body.append(",\"step_ms\":" + std::to_string(series.step_ms) + ",\"points\":[");
  for (size_t i = 0; i < series.points.size(); ++i) {
    const query::SeriesPoint& p = series.points[i];
    if (i != 0) body.push_back(',');
    AppendSeriesPoint(p.t_ms, p.count, p.sum, p.min, p.max, p.last, aggs, &body);
    if (local) {
      body.append(",\"sum\":");
      AppendNumber(p.sum, &body);
      body.append(",\"last_at\":{\"ts\":" + std::to_string(p.last_ts_ms) + ",\"topic\":");
      wire::AppendJsonString(
          backend.store->TopicName(p.last_topic).value_or(std::to_string(p.last_topic)), &body);
      body.append(",\"partition\":" + std::to_string(p.last_partition) +
                  ",\"offset\":" + std::to_string(p.last_offset) + "}");
    }
    body.push_back('}');
  }
  body.append("],\"skipped\":{\"absent\":" + std::to_string(series.absent) +
              ",\"not_number\":" + std::to_string(series.not_number) + "}");
  if (local) {
    cluster::LocalHead head = backend.cluster->Head(*view.ownership);
    head.unindexed = std::move(answer->unindexed);
    cluster::AppendLocalHead(head, &body);
  } else {
    cluster::AppendUnindexedJson(answer->unindexed, &body);
  }
  body.push_back('}');
  return body;
}

void HttpServer::Impl::Series(const SeriesSubject& subject, std::string_view raw_query,
                              bool local, Response& res) {
  const auto start = HttpClock::now();
  Result<SeriesParams> params = ParseSeriesParams(raw_query);
  if (!params.ok()) return Fail(res, QueryKind::kSeries, params.status());
  if (!subject.by_index()) {
    if (Status st = CheckQueryId(subject.id); !st.ok()) return Fail(res, QueryKind::kSeries, st);
  }
  QuerySlot slot(this, /*peer=*/local);
  if (!slot.acquired()) return Busy(res, QueryKind::kSeries, "too many queries at once");
  Result<std::string> body =
      GroupWide(local) ? SeriesForGroup(subject, *params) : SeriesBody(subject, *params, local);
  if (!body.ok()) return Fail(res, QueryKind::kSeries, body.status());
  SetJson(res, 200, std::move(body).value());
  backend.metrics->RecordQuery(QueryKind::kSeries, QueryOutcome::kOk, SecondsSince(start));
}

bool HttpServer::Impl::GroupWide(bool local) const {
  return !local && backend.cluster != nullptr && backend.cluster->enabled();
}

}  // namespace hotrow::http
