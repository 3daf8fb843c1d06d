// Cluster mode (CONTRACT.md "cluster.peers"): GET /v1/cluster, `?local=true` queries
// (this instance's owned, complete partitions only, saying which), and the fan-out of latest,
// range and scan to every peer, merged and marked "complete" or not.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/coverage.h"
#include "http/query_params.h"
#include "http/server_impl.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {

namespace {

constexpr size_t kFlushBytes = 32 << 10;

// Takes `local=true|false` out of a raw query string; the rest is left for the route's parser.
Status TakeLocalFlag(std::string_view raw, bool* local, std::string* rest) {
  *local = false;
  bool seen = false;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = raw.find('&', start);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view piece = raw.substr(start, end - start);
    if (piece == "local" || piece.starts_with("local=")) {
      if (seen) return Status::InvalidArgument("parameter \"local\" is given more than once");
      seen = true;
      const std::string_view value = piece == "local" ? std::string_view() : piece.substr(6);
      if (value == "true") {
        *local = true;
      } else if (value != "false") {
        return Status::InvalidArgument("local must be true or false, got " +
                                       QuoteClientText(value));
      }
    } else if (!piece.empty()) {
      if (!rest->empty()) rest->push_back('&');
      rest->append(piece);
    }
    start = end + 1;
  }
  return Status::Ok();
}

// The partitions served in both snapshots: a query that ran between them covered them whole.
cluster::Partitions ServingInBoth(const ingest::OwnershipSnapshot& a,
                                  const ingest::OwnershipSnapshot& b) {
  cluster::Partitions out;
  for (const store::TopicPartition& tp : a.Serving()) {
    if (b.IsServing(tp.topic, tp.partition)) out.push_back(tp);
  }
  return out;
}

// Whether every partition this instance owns serves (nothing rebuilding, no incomplete window).
bool AllServing(const ingest::OwnershipSnapshot& s) {
  for (const auto& p : s.partitions) {
    if (!p.serving()) return false;
  }
  return true;
}

std::string WithLocal(const std::string& path, const std::string& rest) {
  return path + "?" + rest + (rest.empty() ? "" : "&") + "local=true";
}

// ,"complete":true  or  ,"complete":false,"missing":{...}
void AppendCompleteness(bool complete, const cluster::Partitions& missing, std::string* out) {
  complete = complete && missing.empty();
  out->append(complete ? ",\"complete\":true" : ",\"complete\":false,\"missing\":");
  if (!complete) cluster::AppendPartitionsJson(missing, out);
}

// One per-id query (latest or range) as parsed.
struct IdQuery {
  bool latest = false;
  LatestParams latest_params;
  RangeParams range_params;
  int64_t limit() const { return latest ? latest_params.n : range_params.limit; }
  query::Order order() const { return latest ? query::Order::kDesc : range_params.order; }
  QueryKind kind() const { return latest ? QueryKind::kLatest : QueryKind::kRange; }
};

Status ParseIdQuery(Endpoint endpoint, const std::string& id, std::string_view rest,
                    IdQuery* q) {
  q->latest = endpoint == Endpoint::kLatest;
  if (q->latest) {
    Result<LatestParams> p = ParseLatestParams(rest);
    if (!p.ok()) return p.status();
    q->latest_params = p.value();
  } else {
    Result<RangeParams> p = ParseRangeParams(rest);
    if (!p.ok()) return p.status();
    q->range_params = p.value();
  }
  return CheckQueryId(id);
}

// This instance's answer to a latest or range query (per id or per index value), from its
// serving partitions only.
struct LocalAnswer {
  Status status;
  std::vector<query::Event> events;
  cluster::Partitions covered;
  bool all_serving = false;
  std::string extra;  // more members of the answer object, from the query (",\"unindexed\":...")
};

LocalAnswer RunLocal(cluster::Cluster* cluster, const HttpServer::Impl::ClusterQuery& q) {
  LocalAnswer out;
  const ingest::OwnershipSnapshot before = cluster->Local();
  Result<std::vector<query::Event>> events = q.run(&out.extra);
  const ingest::OwnershipSnapshot after = cluster->Local();
  if (!events.ok()) {
    out.status = events.status();
    return out;
  }
  out.covered = ServingInBoth(before, after);
  // Rows of a partition that stopped serving during the query are left out: not covered.
  for (query::Event& e : events.value()) {
    for (const store::TopicPartition& tp : out.covered) {
      if (tp.partition == e.partition && tp.topic == e.topic) {
        out.events.push_back(std::move(e));
        break;
      }
    }
  }
  out.all_serving = AllServing(after);
  return out;
}

// A per-id query as a ClusterQuery: the engine applies the cluster's partition filter itself.
Status IdClusterQuery(HttpServer::Impl& impl, Endpoint endpoint, const std::string& id,
                      std::string rest, HttpServer::Impl::ClusterQuery* cq) {
  auto q = std::make_shared<IdQuery>();
  HOTROW_RETURN_IF_ERROR(ParseIdQuery(endpoint, id, rest, q.get()));
  cq->kind = q->kind();
  cq->peer_path = "/v1/events/" + wire::PercentEncode(id) + (q->latest ? "/latest" : "");
  cq->rest = std::move(rest);
  cq->limit = q->limit();
  cq->order = q->order();
  cq->open_body = HttpServer::Impl::OpenEventsBody(id);
  query::QueryEngine* engine = impl.backend.engine;
  cq->run = [engine, id, q](std::string*) {
    return q->latest ? engine->Latest(id, q->latest_params.n)
                     : engine->Range(id, q->range_params.from_ms, q->range_params.to_ms,
                                     q->range_params.limit, q->range_params.order);
  };
  return Status::Ok();
}

}  // namespace

void HttpServer::Impl::LocalClusterQuery(const ClusterQuery& q, httplib::Response& res) {
  const auto start = HttpClock::now();
  QuerySlot slot(this);
  if (!slot.acquired()) return Busy(res, q.kind, "too many queries at once; retry later");
  LocalAnswer answer = RunLocal(backend.cluster, q);
  if (!answer.status.ok()) return Fail(res, q.kind, answer.status);
  std::string body = q.open_body;
  for (size_t i = 0; i < answer.events.size(); ++i) {
    if (i != 0) body.push_back(',');
    wire::AppendEventJson(answer.events[i], &body);
  }
  body.append("],\"partitions\":");
  cluster::AppendPartitionsJson(answer.covered, &body);
  body.append(answer.extra);
  body.append(answer.all_serving ? ",\"complete\":true}" : ",\"complete\":false}");
  SetJson(res, 200, std::move(body));
  backend.metrics->RecordQuery(q.kind, QueryOutcome::kOk, SecondsSince(start));
}

void HttpServer::Impl::FanOutClusterQuery(const ClusterQuery& q, httplib::Response& res) {
  const auto start = HttpClock::now();
  QuerySlot slot(this);
  if (!slot.acquired()) return Busy(res, q.kind, "too many queries at once; retry later");
  cluster::Cluster* cluster = backend.cluster;
  LocalAnswer mine;
  std::vector<cluster::Cluster::Reply> replies =
      cluster->AskPeers(WithLocal(q.peer_path, q.rest), [&] { mine = RunLocal(cluster, q); });
  if (!mine.status.ok() && !mine.status.IsBusy()) return Fail(res, q.kind, mine.status);

  std::vector<cluster::PeerCoverage> coverage(1 + replies.size());
  std::vector<std::vector<cluster::PeerEvent>> events(1 + replies.size());
  if (mine.status.ok()) {
    coverage[0] = {true, mine.covered};
    for (const query::Event& e : mine.events) {
      cluster::PeerEvent pe;
      pe.ts_ms = e.ts_ms;
      pe.topic = e.topic;
      pe.partition = e.partition;
      pe.offset = e.offset;
      wire::AppendEventJson(e, &pe.json);
      events[0].push_back(std::move(pe));
    }
  }
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].answered) {
      Warn("cluster: " + replies[i].peer + " did not answer: " + replies[i].error);
      continue;
    }
    Status st =
        cluster::ParseLocalAnswer(replies[i].body, &events[i + 1], &coverage[i + 1].covered);
    if (!st.ok()) {
      Warn("cluster: " + replies[i].peer + " answered something else: " + st.ToString());
      events[i + 1].clear();
      coverage[i + 1].covered.clear();
      continue;
    }
    coverage[i + 1].answered = true;
  }
  const cluster::CoverageDecision decision =
      cluster::DecideCoverage(cluster->AllPartitions(), coverage);
  const std::vector<cluster::PeerEvent> merged =
      cluster::MergePeerEvents(std::move(events), decision, q.limit, q.order);
  std::string body = q.open_body;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (i != 0) body.push_back(',');
    body.append(merged[i].json);
  }
  body.push_back(']');
  body.append(mine.extra);
  AppendCompleteness(decision.complete, decision.missing, &body);
  body.push_back('}');
  SetJson(res, 200, std::move(body));
  backend.metrics->RecordQuery(q.kind, QueryOutcome::kOk, SecondsSince(start));
}

bool HttpServer::Impl::TakeClusterLocal(std::string_view raw_query, QueryKind kind, bool* local,
                                        std::string* rest, httplib::Response& res) {
  if (Status st = TakeLocalFlag(raw_query, local, rest); !st.ok()) {
    Fail(res, kind, st);
    return false;
  }
  return true;
}

namespace {

// A scan's state after the handler returned.
struct ClusterScanJob {
  explicit ClusterScanJob(HttpServer::Impl* i) : impl(i), slot(i) {}
  HttpServer::Impl* const impl;
  HttpServer::Impl::QuerySlot slot;
  ScanParams params;
  std::string rest;
  bool local = false;
  bool started = false;
  const HttpClock::time_point start = HttpClock::now();
};

// Buffers NDJSON lines and writes them in chunks of about kFlushBytes.
class LineWriter {
 public:
  explicit LineWriter(httplib::DataSink* sink) : sink_(sink) { buffer_.reserve(kFlushBytes + 4096); }
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
  bool failed() const { return failed_; }

 private:
  httplib::DataSink* sink_;
  std::string buffer_;
  bool failed_ = false;
};

// This instance's scan, from its serving partitions; events of partitions `keep` refuses are
// left out. Returns the partitions covered (served before and after), or the failure.
Status LocalScan(HttpServer::Impl& impl, const ScanParams& params, int64_t* remaining,
                 const std::function<bool(const query::Event&)>& keep, LineWriter* out,
                 cluster::Partitions* covered) {
  cluster::Cluster* cluster = impl.backend.cluster;
  const ingest::OwnershipSnapshot before = cluster->Local();
  std::string line;
  Status st = impl.backend.engine->Scan(
      params.from_ms, params.to_ms, params.limit, [&](const query::Event& e) {
        if (impl.stopping.load(std::memory_order_relaxed) || *remaining <= 0) return false;
        if (!keep(e)) return true;
        line.clear();
        wire::AppendEventJson(e, &line);
        --*remaining;
        return out->Line(line);
      });
  const ingest::OwnershipSnapshot after = cluster->Local();
  *covered = ServingInBoth(before, after);
  return st;
}

bool StreamClusterScan(ClusterScanJob& job, httplib::DataSink& sink) {
  if (job.started) return false;
  job.started = true;
  HttpServer::Impl& impl = *job.impl;
  cluster::Cluster* cluster = impl.backend.cluster;
  LineWriter out(&sink);
  int64_t remaining = job.params.limit;
  auto finish = [&](const std::string& last_line, QueryOutcome outcome) {
    impl.backend.metrics->RecordQuery(QueryKind::kScan, outcome, SecondsSince(job.start));
    if (!out.Line(last_line) || !out.Flush()) return false;
    if (outcome != QueryOutcome::kOk) return false;  // no final chunk: a cut answer
    sink.done();
    return true;
  };

  if (job.local) {
    cluster::Partitions covered;
    Status st = LocalScan(impl, job.params, &remaining, [](const query::Event&) { return true; },
                          &out, &covered);
    if (out.failed()) return false;
    if (!st.ok()) return finish(ErrorBody("scan failed: " + st.ToString()), OutcomeOf(st));
    std::string last = std::string("{\"complete\":") +
                       (AllServing(cluster->Local()) ? "true" : "false") + ",\"partitions\":";
    cluster::AppendPartitionsJson(covered, &last);
    last.push_back('}');
    return finish(last, QueryOutcome::kOk);
  }

  // 1. Who serves what: every instance's /v1/cluster?local=true, this one's in process.
  ingest::OwnershipSnapshot mine;
  std::vector<cluster::Cluster::Reply> replies =
      cluster->AskPeers("/v1/cluster?local=true", [&] { mine = cluster->Local(); });
  std::vector<cluster::PeerCoverage> coverage(1 + replies.size());
  coverage[0] = {true, mine.Serving()};
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].answered) continue;
    coverage[i + 1].answered =
        cluster::ParseServingPartitions(replies[i].body, &coverage[i + 1].covered).ok();
  }
  const cluster::CoverageDecision decision =
      cluster::DecideCoverage(cluster->AllPartitions(), coverage);
  cluster::Partitions missing = decision.missing;
  auto owned_by = [&](size_t index, const std::string& topic, int32_t partition) {
    auto it = decision.owner.find(store::TopicPartition{topic, partition});
    return it != decision.owner.end() && it->second == index;
  };
  // Partitions given to `index` that its answer did not cover after all: missing.
  auto check_covered = [&](size_t index, const cluster::Partitions& covered, bool answered) {
    for (const auto& [tp, owner] : decision.owner) {
      if (owner != index) continue;
      bool ok = answered;
      if (ok) {
        ok = false;
        for (const auto& c : covered) ok = ok || c == tp;
      }
      if (!ok) missing.push_back(tp);
    }
  };

  // 2. Each instance's share, one after the other: this one's first.
  {
    cluster::Partitions covered;
    Status st = LocalScan(
        impl, job.params, &remaining,
        [&](const query::Event& e) { return owned_by(0, e.topic, e.partition); }, &out, &covered);
    if (out.failed()) return false;
    if (!st.ok()) impl.Warn("cluster scan: this instance's part failed: " + st.ToString());
    check_covered(0, covered, st.ok());
  }
  for (size_t i = 0; i < replies.size() && remaining > 0; ++i) {
    const size_t index = i + 1;
    bool any = false;
    for (const auto& [tp, owner] : decision.owner) any = any || owner == index;
    if (!any) continue;
    std::string pending, error;
    cluster::Partitions covered;
    bool saw_last = false;
    Status parse_error;
    const bool streamed = cluster->StreamFrom(
        replies[i].peer, WithLocal("/v1/scan", job.rest),
        [&](const char* data, size_t size) {
          pending.append(data, size);
          size_t begin = 0;
          for (size_t nl; (nl = pending.find('\n', begin)) != std::string::npos; begin = nl + 1) {
            const std::string_view line(pending.data() + begin, nl - begin);
            if (line.empty()) continue;
            bool is_event = false;
            cluster::PeerEvent e;
            Status st = cluster::ParseScanLine(line, &is_event, &e, &covered);
            if (!st.ok()) {
              parse_error = st;
              return false;
            }
            if (!is_event) {
              saw_last = true;
              continue;
            }
            if (!owned_by(index, e.topic, e.partition) || remaining <= 0) continue;
            --remaining;
            if (!out.Line(e.json)) return false;
          }
          pending.erase(0, begin);
          return remaining > 0 && !impl.stopping.load(std::memory_order_relaxed);
        },
        &error);
    if (out.failed()) return false;
    const bool whole = streamed && parse_error.ok() && (saw_last || remaining <= 0);
    if (!whole) {
      impl.Warn("cluster scan: " + replies[i].peer + " did not answer whole: " +
                (!parse_error.ok() ? parse_error.ToString() : error));
    }
    check_covered(index, covered, whole && saw_last);
  }
  if (impl.stopping.load()) {
    return finish(ErrorBody("the server is shutting down"), QueryOutcome::kCancelled);
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  // The limit was reached: the answer holds as many records as asked, nothing is missing from it.
  const bool limit_reached = remaining <= 0;
  if (limit_reached) missing.clear();
  std::string last = "{";
  AppendCompleteness(decision.complete || limit_reached, missing, &last);
  last.erase(1, 1);  // the leading comma
  last.push_back('}');
  return finish(last, QueryOutcome::kOk);
}

void ClusterScan(HttpServer::Impl& impl, const std::string& rest, bool local,
                 httplib::Response& res) {
  Result<ScanParams> params = ParseScanParams(rest);
  if (!params.ok()) return impl.Fail(res, QueryKind::kScan, params.status());
  auto job = std::make_shared<ClusterScanJob>(&impl);
  if (!job->slot.acquired()) return impl.Busy(res, QueryKind::kScan, "too many queries at once");
  job->params = params.value();
  job->rest = rest;
  job->local = local;
  res.status = 200;
  res.set_chunked_content_provider("application/x-ndjson",
                                   [job](size_t /*offset*/, httplib::DataSink& sink) {
                                     try {
                                       return StreamClusterScan(*job, sink);
                                     } catch (const std::exception& e) {
                                       job->impl->Warn(std::string("scan failed: ") + e.what());
                                       return false;
                                     }
                                   });
}

void AppendOwnedJson(const ingest::OwnershipSnapshot& s, std::string* out) {
  out->append("\"owned\":[");
  for (size_t i = 0; i < s.partitions.size(); ++i) {
    const ingest::OwnedPartition& p = s.partitions[i];
    if (i != 0) out->push_back(',');
    out->append("{\"topic\":");
    wire::AppendJsonString(p.topic, out);
    out->append(",\"partition\":" + std::to_string(p.partition) +
                ",\"serving\":" + (p.serving() ? "true" : "false") +
                ",\"window_complete\":" + (p.window_complete ? "true" : "false") +
                ",\"rebuilding\":" + (p.rebuilding() ? "true" : "false") +
                ",\"position\":" + std::to_string(p.position) +
                ",\"catch_up_to\":" + std::to_string(p.catch_up_to) +
                ",\"progress\":" + std::to_string(ingest::RebuildProgress(p)) + "}");
  }
  out->push_back(']');
}

// {"address": A, "owned": [...], "partitions": {serving}}
std::string LocalClusterJson(cluster::Cluster* cluster) {
  const ingest::OwnershipSnapshot s = cluster->Local();
  std::string body = "{\"address\":";
  wire::AppendJsonString(cluster->options().self, &body);
  body.push_back(',');
  AppendOwnedJson(s, &body);
  body.append(",\"partitions\":");
  cluster::AppendPartitionsJson(s.Serving(), &body);
  body.push_back('}');
  return body;
}

void ClusterInfo(HttpServer::Impl& impl, std::string_view raw_query, httplib::Response& res) {
  bool local = false;
  std::string rest;
  if (Status st = TakeLocalFlag(raw_query, &local, &rest); !st.ok()) {
    return SetError(res, 400, st.message());
  }
  if (Status st = CheckNoParams(rest); !st.ok()) return SetError(res, 400, st.message());
  cluster::Cluster* cluster = impl.backend.cluster;
  if (local) return SetJson(res, 200, LocalClusterJson(cluster));

  std::string mine;
  std::vector<cluster::Cluster::Reply> replies =
      cluster->AskPeers("/v1/cluster?local=true", [&] { mine = LocalClusterJson(cluster); });
  std::vector<cluster::PeerCoverage> coverage(1 + replies.size());
  coverage[0].answered = cluster::ParseServingPartitions(mine, &coverage[0].covered).ok();
  std::string body = "{\"self\":";
  wire::AppendJsonString(cluster->options().self, &body);
  body.append(",\"instances\":[{\"address\":");
  wire::AppendJsonString(cluster->options().self, &body);
  body.append(",\"self\":true,\"answered\":true,\"status\":" + mine + "}");
  for (size_t i = 0; i < replies.size(); ++i) {
    const cluster::Cluster::Reply& r = replies[i];
    coverage[i + 1].answered =
        r.answered && cluster::ParseServingPartitions(r.body, &coverage[i + 1].covered).ok();
    body.append(",{\"address\":");
    wire::AppendJsonString(r.peer, &body);
    body.append(",\"self\":false,\"answered\":");
    body.append(coverage[i + 1].answered ? "true" : "false");
    if (coverage[i + 1].answered) {
      std::string_view status = r.body;
      while (!status.empty() && (status.back() == '\n' || status.back() == ' ')) {
        status.remove_suffix(1);
      }
      body.append(",\"status\":");
      body.append(status);
    } else {
      body.append(",\"error\":");
      wire::AppendJsonString(r.error.empty() ? "not a hotrow cluster answer" : r.error, &body);
    }
    body.push_back('}');
  }
  body.push_back(']');
  const cluster::CoverageDecision decision =
      cluster::DecideCoverage(cluster->AllPartitions(), coverage);
  AppendCompleteness(decision.complete, decision.missing, &body);
  body.push_back('}');
  SetJson(res, 200, std::move(body));
}

}  // namespace

bool HttpServer::Impl::ClusterRoute(const std::vector<std::string>& segments, Endpoint endpoint,
                                    const std::string& id, std::string_view raw_query,
                                    httplib::Response& res) {
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
  bool local = false;
  std::string rest;
  if (Status st = TakeLocalFlag(raw_query, &local, &rest); !st.ok()) {
    const QueryKind kind = endpoint == Endpoint::kScan     ? QueryKind::kScan
                           : endpoint == Endpoint::kLatest ? QueryKind::kLatest
                                                           : QueryKind::kRange;
    Fail(res, kind, st);
    return true;
  }
  if (endpoint == Endpoint::kScan) {
    ClusterScan(*this, rest, local, res);
    return true;
  }
  ClusterQuery q;
  if (Status st = IdClusterQuery(*this, endpoint, id, std::move(rest), &q); !st.ok()) {
    Fail(res, endpoint == Endpoint::kLatest ? QueryKind::kLatest : QueryKind::kRange, st);
  } else if (local) {
    LocalClusterQuery(q, res);
  } else {
    FanOutClusterQuery(q, res);
  }
  return true;
}

}  // namespace hotrow::http
