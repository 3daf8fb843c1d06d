// The device-state queries merged over the group (CONTRACT.md "Device state and series": "In
// cluster mode each of these merges over the group and carries `complete` like the other
// queries"). Every instance's `?local=true` answer (device_handlers.cc writes them, this
// instance's own in process) is read back, judged by the coverage decision as latest, range and
// index are (cluster/group_query.h), and merged by cluster/device_merge.h.

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster/device_merge.h"
#include "cluster/group_query.h"
#include "cluster/local_answer.h"
#include "http/server_impl.h"
#include "query/index_query.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

void AppendPeerEvents(const std::vector<cluster::PeerEvent>& events, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < events.size(); ++i) {
    if (i != 0) out->push_back(',');
    out->append(events[i].json);  // byte for byte as the instance wrote it
  }
  out->push_back(']');
}

template <typename T>
std::vector<const T*> Accepted(const std::vector<T>& parts, const std::vector<bool>& accepted) {
  std::vector<const T*> out(parts.size(), nullptr);
  for (size_t i = 0; i < parts.size() && i < accepted.size(); ++i) {
    if (accepted[i]) out[i] = &parts[i];
  }
  return out;
}

}  // namespace

Result<std::string> HttpServer::Impl::LatestAllForGroup(const LatestAllParams& params,
                                                        const std::string& raw_query) {
  std::vector<cluster::PeerLatestAll> parts(cluster::AnswerSlots(backend.cluster));
  cluster::GroupAsk ask;
  ask.peer_target = "/v1/latest" + (raw_query.empty() ? "" : "?" + raw_query);
  ask.local = [&] { return LatestAllBody(params, true); };
  ask.parse = [&](size_t index, std::string_view body, cluster::LocalHead* head) {
    parts[index] = {};
    return cluster::ParseLocalLatestAll(body, &parts[index], head);
  };
  const cluster::GroupAskAnswer answer = cluster::AskGroup(backend.cluster, ask);
  if (!answer.status.ok()) return answer.status;
  const cluster::MergedLatestAll merged =
      cluster::MergeLatestAll(Accepted(parts, answer.accepted), answer.coverage, params.limit);
  std::string body = "{\"events\":";
  AppendPeerEvents(merged.events, &body);
  body.append(",\"next\":");
  if (merged.next) {
    wire::AppendJsonString(*merged.next, &body);
  } else {
    body.append("null");
  }
  cluster::AppendCoverageJson(answer.coverage, &body);
  body.push_back('}');
  return body;
}

Result<std::string> HttpServer::Impl::LatestIdsForGroup(const LatestIdsParams& params) {
  using PerId = std::map<std::string, std::vector<cluster::PeerEvent>>;
  std::vector<PerId> parts(cluster::AnswerSlots(backend.cluster));
  cluster::GroupAsk ask;
  // POSTed: up to query::kMaxLatestIds ids do not fit every URL.
  ask.peer_target = "/v1/latest";
  ask.post_body = "{\"ids\":[";
  for (size_t i = 0; i < params.ids.size(); ++i) {
    if (i != 0) ask.post_body.push_back(',');
    wire::AppendJsonString(params.ids[i], &ask.post_body);
  }
  ask.post_body.append("],\"n\":" + std::to_string(params.n) + "}");
  ask.local = [&] { return LatestIdsBody(params, true); };
  ask.route_ids = params.ids;
  ask.parse = [&](size_t index, std::string_view body, cluster::LocalHead* head) {
    parts[index].clear();
    return cluster::ParseLocalLatestIds(body, &parts[index], head);
  };
  const cluster::GroupAskAnswer answer = cluster::AskGroup(backend.cluster, ask);
  if (!answer.status.ok()) return answer.status;
  const std::vector<std::vector<cluster::PeerEvent>> merged = cluster::MergeLatestIds(
      params.ids, Accepted(parts, answer.accepted), answer.coverage, params.n);
  std::string body = "{\"ids\":{";
  for (size_t i = 0; i < params.ids.size(); ++i) {
    if (i != 0) body.push_back(',');
    wire::AppendJsonString(params.ids[i], &body);
    body.push_back(':');
    AppendPeerEvents(merged[i], &body);
  }
  body.push_back('}');
  cluster::AppendCoverageJson(answer.coverage, &body);
  body.push_back('}');
  return body;
}

Result<std::string> HttpServer::Impl::SeriesForGroup(const SeriesSubject& subject,
                                                     const SeriesParams& params) {
  std::vector<cluster::PeerSeries> parts(cluster::AnswerSlots(backend.cluster));
  std::vector<std::vector<query::UnindexedSpan>> unindexed(parts.size());
  cluster::GroupAsk ask;
  // The step is the one this instance resolved (max_points included): every instance cuts the
  // same steps.
  ask.peer_target = subject.Path() + "?field=" + wire::PercentEncode(params.field) +
                    "&from=" + std::to_string(params.from_ms) +
                    "&to=" + std::to_string(params.to_ms) +
                    "&step=" + std::to_string(params.step_ms);
  ask.local = [&] { return SeriesBody(subject, params, true); };
  if (!subject.by_index()) ask.route_ids = {subject.id};
  ask.parse = [&](size_t index, std::string_view body, cluster::LocalHead* head) {
    parts[index] = {};
    HOTROW_RETURN_IF_ERROR(cluster::ParseLocalSeries(body, &parts[index], head));
    unindexed[index] = head->unindexed;
    if (parts[index].step_ms != params.step_ms) {
      return Status::InvalidArgument("its series has steps of " +
                                     std::to_string(parts[index].step_ms) + " ms, not " +
                                     std::to_string(params.step_ms));
    }
    return Status::Ok();
  };
  cluster::GroupAskAnswer answer = cluster::AskGroup(backend.cluster, ask);
  if (!answer.status.ok()) return answer.status;
  const cluster::PeerSeries merged = cluster::MergeSeries(
      Accepted(parts, answer.accepted), answer.covered, params.step_ms, &answer.coverage);
  std::string body = "{";
  subject.AppendJson(&body);
  body.append(",\"field\":");
  wire::AppendJsonString(params.field, &body);
  body.append(",\"step_ms\":" + std::to_string(params.step_ms) + ",\"points\":[");
  for (size_t i = 0; i < merged.points.size(); ++i) {
    const cluster::PeerSeriesPoint& p = merged.points[i];
    if (i != 0) body.push_back(',');
    AppendSeriesPoint(p.t_ms, p.count, p.sum, p.min, p.max, p.last, params.aggs, &body);
    body.push_back('}');
  }
  body.append("],\"skipped\":{\"absent\":" + std::to_string(merged.absent) +
              ",\"not_number\":" + std::to_string(merged.not_number) + "}");
  // Every answering instance's buckets made before the field was indexed, each span once.
  std::vector<query::UnindexedSpan> spans;
  for (size_t i = 0; i < unindexed.size(); ++i) {
    if (i < answer.accepted.size() && answer.accepted[i]) {
      spans.insert(spans.end(), unindexed[i].begin(), unindexed[i].end());
    }
  }
  std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
    return std::tie(a.start_ms, a.end_ms) < std::tie(b.start_ms, b.end_ms);
  });
  spans.erase(std::unique(spans.begin(), spans.end()), spans.end());
  cluster::AppendUnindexedJson(spans, &body);
  cluster::AppendCoverageJson(answer.coverage, &body);
  body.push_back('}');
  return body;
}

}  // namespace hotrow::http
