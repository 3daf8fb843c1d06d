// Cluster mode over HTTP (CONTRACT.md "cluster.peers", "Cluster mode in production settings"):
// GET /v1/cluster, `?local=true` queries and the fan-out of latest, range and scan. The work
// (this instance's part, asking the peers, coverage, merge) is cluster/group_query.h's; this
// file reads the requests and writes the answers.

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
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {

namespace {

constexpr size_t kFlushBytes = 32 << 10;

// A per-id query (latest or range) as a ClusterQuery, read through the query's view.
Status IdClusterQuery(HttpServer::Impl& impl, Endpoint endpoint, const std::string& id,
                      const std::string& rest, HttpServer::Impl::ClusterQuery* cq) {
  const bool latest = endpoint == Endpoint::kLatest;
  LatestParams latest_params;
  RangeParams range_params;
  if (latest) {
    Result<LatestParams> p = ParseLatestParams(rest);
    if (!p.ok()) return p.status();
    latest_params = p.value();
  } else {
    Result<RangeParams> p = ParseRangeParams(rest);
    if (!p.ok()) return p.status();
    range_params = p.value();
  }
  HOTROW_RETURN_IF_ERROR(CheckQueryId(id));
  cq->kind = latest ? QueryKind::kLatest : QueryKind::kRange;
  cq->open_body = HttpServer::Impl::OpenEventsBody(id);
  cq->group.peer_target = "/v1/events/" + wire::PercentEncode(id) + (latest ? "/latest" : "") +
                          (rest.empty() ? "" : "?" + rest);
  cq->group.route_ids = {id};
  cq->group.limit = latest ? latest_params.n : range_params.limit;
  cq->group.order = latest ? query::Order::kDesc : range_params.order;
  query::QueryEngine* engine = impl.backend.engine;
  cq->group.run = [engine, id, latest, latest_params, range_params](
                      const query::PartitionFilter& filter, std::vector<query::Event>* events,
                      std::vector<query::UnindexedSpan>*) {
    Result<std::vector<query::Event>> got =
        latest ? engine->Latest(id, latest_params.n, &filter)
               : engine->Range(id, range_params.from_ms, range_params.to_ms, range_params.limit,
                               range_params.order, &filter);
    if (!got.ok()) return got.status();
    *events = std::move(got).value();
    return Status::Ok();
  };
  return Status::Ok();
}

// Buffers NDJSON lines and writes them in chunks of about kFlushBytes.
class LineWriter {
 public:
  explicit LineWriter(DataSink* sink) : sink_(sink) {
    buffer_.reserve(kFlushBytes + 4096);
  }
  bool Line(std::string_view line) {
    buffer_.append(line);
    buffer_.push_back('\n');
    return buffer_.size() < kFlushBytes || Flush();
  }
  bool Flush() {
    if (failed_ || buffer_.empty()) return !failed_;
    failed_ = !sink_->write(buffer_.data(), buffer_.size());
    buffer_.clear();
    return !failed_;
  }

 private:
  DataSink* sink_;
  std::string buffer_;
  bool failed_ = false;
};

// A scan's state after the handler returned.
struct ClusterScanJob {
  ClusterScanJob(HttpServer::Impl* i, bool l) : impl(i), slot(i, l), local(l) {}
  HttpServer::Impl* const impl;
  HttpServer::Impl::QuerySlot slot;
  cluster::GroupScan scan;
  const bool local;
  bool started = false;
  const HttpClock::time_point start = HttpClock::now();
};

bool StreamClusterScan(ClusterScanJob& job, DataSink& sink) {
  if (job.started) return false;
  job.started = true;
  HttpServer::Impl& impl = *job.impl;
  LineWriter out(&sink);
  auto line = [&out](std::string_view text) { return out.Line(text); };
  const cluster::ScanEnd end = job.local
                                   ? cluster::ScanLocally(impl.backend.cluster, job.scan, line)
                                   : cluster::ScanGroup(impl.backend.cluster, job.scan, line);
  if (end.cut) {
    impl.backend.metrics->RecordQuery(QueryKind::kScan, QueryOutcome::kCancelled,
                                      SecondsSince(job.start));
    return false;
  }
  const QueryOutcome outcome = end.status.ok() ? QueryOutcome::kOk : OutcomeOf(end.status);
  impl.backend.metrics->RecordQuery(QueryKind::kScan, outcome, SecondsSince(job.start));
  const std::string last =
      end.status.ok() ? end.last_line : ErrorBody("scan failed: " + end.status.ToString());
  if (!out.Line(last) || !out.Flush()) return false;
  if (!end.status.ok()) return false;  // no final chunk: a cut answer
  sink.done();
  return true;
}

void ClusterScan(HttpServer::Impl& impl, const std::string& rest, bool local,
                 Response& res) {
  Result<ScanParams> params = ParseScanParams(rest);
  if (!params.ok()) return impl.Fail(res, QueryKind::kScan, params.status());
  auto job = std::make_shared<ClusterScanJob>(&impl, local);
  if (!job->slot.acquired()) return impl.Busy(res, QueryKind::kScan, "too many queries at once");
  job->scan.from_ms = params->from_ms;
  job->scan.to_ms = params->to_ms;
  job->scan.limit = params->limit;
  HttpServer::Impl* self = &impl;
  job->scan.stopping = [self] { return self->stopping.load(std::memory_order_relaxed); };
  res.status = 200;
  res.set_chunked_content_provider("application/x-ndjson",
                                   [job](DataSink& sink) {
                                     try {
                                       return StreamClusterScan(*job, sink);
                                     } catch (const std::exception& e) {
                                       job->impl->Warn(std::string("scan failed: ") + e.what());
                                       return false;
                                     }
                                   });
}

void ClusterInfo(HttpServer::Impl& impl, std::string_view raw_query, Response& res) {
  bool local = false;
  std::string rest;
  if (Status st = TakeLocalFlag(raw_query, &local, &rest); !st.ok()) {
    return SetError(res, 400, st.message());
  }
  if (Status st = CheckNoParams(rest); !st.ok()) return SetError(res, 400, st.message());
  cluster::Cluster* cluster = impl.backend.cluster;
  if (local || !cluster->enabled()) return SetJson(res, 200, cluster::LocalStatusJson(cluster));
  SetJson(res, 200, cluster::GroupStatusJson(cluster));
}

}  // namespace

void HttpServer::Impl::LocalClusterQuery(const ClusterQuery& q, Response& res) {
  const auto start = HttpClock::now();
  QuerySlot slot(this, /*peer=*/true);
  if (!slot.acquired()) return Busy(res, q.kind, "too many queries at once; retry later");
  const cluster::LocalPart part = cluster::AnswerLocally(backend.cluster, q.group);
  if (!part.status.ok()) return Fail(res, q.kind, part.status);
  std::string body = q.open_body;
  for (size_t i = 0; i < part.events.size(); ++i) {
    if (i != 0) body.push_back(',');
    wire::AppendEventJson(part.events[i], &body);
  }
  body.push_back(']');
  cluster::AppendLocalHead(part.head, &body);
  body.push_back('}');
  SetJson(res, 200, std::move(body));
  backend.metrics->RecordQuery(q.kind, QueryOutcome::kOk, SecondsSince(start));
}

void HttpServer::Impl::FanOutClusterQuery(const ClusterQuery& q, Response& res) {
  const auto start = HttpClock::now();
  QuerySlot slot(this);
  if (!slot.acquired()) return Busy(res, q.kind, "too many queries at once; retry later");
  const cluster::GroupAnswer answer = cluster::AnswerForGroup(backend.cluster, q.group);
  if (!answer.status.ok()) return Fail(res, q.kind, answer.status);
  std::string body = q.open_body;
  for (size_t i = 0; i < answer.events.size(); ++i) {
    if (i != 0) body.push_back(',');
    body.append(answer.events[i].json);
  }
  body.push_back(']');
  cluster::AppendUnindexedJson(answer.unindexed, &body);
  cluster::AppendCoverageJson(answer.coverage, &body);
  body.push_back('}');
  SetJson(res, 200, std::move(body));
  backend.metrics->RecordQuery(q.kind, QueryOutcome::kOk, SecondsSince(start));
}

bool HttpServer::Impl::TakeClusterLocal(std::string_view raw_query, QueryKind kind, bool* local,
                                        std::string* rest, Response& res) {
  if (Status st = TakeLocalFlag(raw_query, local, rest); !st.ok()) {
    Fail(res, kind, st);
    return false;
  }
  return true;
}

bool HttpServer::Impl::ClusterRoute(const std::vector<std::string>& segments, Endpoint endpoint,
                                    const std::string& id, std::string_view raw_query,
                                    Response& res) {
  if (segments.size() == 2 && segments[0] == "v1" && segments[1] == "cluster") {
    ClusterInfo(*this, raw_query, res);
    return true;
  }
  if (endpoint != Endpoint::kLatest && endpoint != Endpoint::kRange &&
      endpoint != Endpoint::kScan) {
    return false;
  }
  // Without peers, queries are answered as before (and `local` is an unknown parameter).
  if (!backend.cluster->enabled()) return false;
  const QueryKind kind = endpoint == Endpoint::kScan     ? QueryKind::kScan
                         : endpoint == Endpoint::kLatest ? QueryKind::kLatest
                                                         : QueryKind::kRange;
  bool local = false;
  std::string rest;
  if (!TakeClusterLocal(raw_query, kind, &local, &rest, res)) return true;
  if (endpoint == Endpoint::kScan) {
    ClusterScan(*this, rest, local, res);
    return true;
  }
  ClusterQuery q;
  if (Status st = IdClusterQuery(*this, endpoint, id, rest, &q); !st.ok()) {
    Fail(res, kind, st);
  } else if (local) {
    LocalClusterQuery(q, res);
  } else {
    FanOutClusterQuery(q, res);
  }
  return true;
}

}  // namespace hotrow::http
