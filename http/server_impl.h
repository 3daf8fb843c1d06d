#pragma once

// The state of one HttpServer and its handlers, shared by the files that implement it:
// server.cc (routing, error pages, lifecycle), query_handlers.cc (latest, range, scan),
// admin_handlers.cc (readyz, metrics, stats), and the other *_handlers.cc. Internal to http/.
// Nothing here sees the transport's library (http/transport.h).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cluster/group_query.h"
#include "common/logging.h"
#include "http/auth.h"
#include "http/query_params.h"
#include "http/query_slots.h"
#include "http/response.h"
#include "http/server.h"
#include "http/stream_tokens.h"
#include "http/transport.h"
#include "live/subscription.h"
#include "query/query_engine.h"

namespace hotrow::http {

// What a series is of: the events of one id (/v1/events/{id}/series), or those whose indexed
// field has one value (/v1/index/{field}/{value}/series).
struct SeriesSubject {
  static SeriesSubject OfId(std::string id) {
    SeriesSubject s;
    s.id = std::move(id);
    return s;
  }
  static SeriesSubject OfIndex(std::string field, std::string value) {
    SeriesSubject s;
    s.index_field = std::move(field);
    s.index_value = std::move(value);
    return s;
  }
  std::string id;           // when index_field is empty
  std::string index_field;  // else the indexed field and its value
  std::string index_value;
  bool by_index() const { return !index_field.empty(); }
  // The path of its series, percent-encoded, as peers are asked it.
  std::string Path() const;
  // The answer's members that name it: "event_id":ID or "index":{"field":F,"value":V}.
  void AppendJson(std::string* out) const;
};

// Where the handler of this thread's request runs (http/exchange.h, RunContext): set by
// HttpServer::Impl::Handle for the length of the call.
RunContext CurrentRunContext();
bool CurrentRequestQueued();
inline bool OnIoThread() { return CurrentRunContext() == RunContext::kIoThread; }

struct HttpServer::Impl final : RequestHandler {
  Impl(const HttpServerOptions& o, const HttpBackend& b)
      : options(o),
        backend(b),
        slots(o.max_queries, o.max_peer_queries, std::chrono::milliseconds(o.queue_wait_ms)),
        stream_tokens(StreamTokens::Options{o.stream_token_ttl_ms, 10'000, o.stream_token_clock}) {}

  const HttpServerOptions options;
  const HttpBackend backend;
  std::string host;
  int port = 0;
  std::unique_ptr<Transport> transport;
  std::atomic<bool> stopping{false};
  std::mutex stop_mu;
  bool stopped = false;  // guarded by stop_mu
  RateLimiter warn_limiter{10, 10000};
  // The live streams being written, closed by Stop so that their threads end at once.
  std::mutex streams_mu;
  std::set<std::shared_ptr<live::Subscription>> streams;  // guarded by streams_mu

  // The query slots of both lanes (http/query_slots.h): `max_queries` for clients, who wait up to
  // `queue_wait_ms` for one, and `max_peer_queries` for peers' `?local=true` requests, which never
  // wait behind client queries.
  QuerySlots slots;
  // Browsers' stream tokens (POST /v1/stream-tokens, `?access_token=` on streams).
  StreamTokens stream_tokens;

  // One query slot, held for the life of a query (a scan: until its last byte). `peer` (a
  // `?local=true` request) takes it in the peers' lane when the request proves it comes from a
  // peer (PeerProven: cluster.peer_token_file), else in the clients'. Counts how it was got in
  // /metrics.
  //
  // The transport runs client queries on as many workers as there are client slots (and peers'
  // on as many as theirs), so on a worker a slot is always free: the wait for one is the wait for
  // a worker, which holds no thread, and a query that waited too long is run as shed
  // (RunContext::kShed) and refused here.
  class QuerySlot {
   public:
    explicit QuerySlot(Impl* impl, bool peer = false)
        : impl_(impl), lane_(peer && PeerProven() ? QueryLane::kPeer : QueryLane::kClient) {
      SlotOutcome outcome = SlotOutcome::kShed;
      if (CurrentRunContext() != RunContext::kShed) {
        outcome = impl_->slots.Acquire(lane_);
        if (outcome == SlotOutcome::kImmediate && CurrentRequestQueued()) {
          outcome = SlotOutcome::kQueued;
        }
      }
      impl_->backend.metrics->RecordQuerySlot(lane_ == QueryLane::kPeer, outcome);
      if (outcome == SlotOutcome::kShed) impl_ = nullptr;
    }
    ~QuerySlot() {
      if (impl_ != nullptr) impl_->slots.Release(lane_);
    }
    QuerySlot(const QuerySlot&) = delete;
    QuerySlot& operator=(const QuerySlot&) = delete;
    bool acquired() const { return impl_ != nullptr; }

   private:
    Impl* impl_;
    const QueryLane lane_;
  };

  // Logs a warning, at most 10 per 10 s.
  void Warn(const std::string& message);

  // The transport's questions (http/transport.h): every request, the answers it makes itself,
  // and every answer's status.
  void Handle(Request& req, Response& res) override;
  void Refuse(int status, Response& res) override;
  void Answered(int status) override;

  // Routing and lifecycle (server.cc). Dispatch answers a GET or HEAD (or the POST of
  // /v1/latest); Disallowed any other method.
  void Dispatch(const Request& req, Response& res);
  void Disallowed(const Request& req, Response& res);
  // The lane a request that cannot be answered on the I/O thread runs on.
  WorkLane LaneOf(std::string_view raw_query) const;
  // Answers the request for the path `segments` with the query string `raw_query` (without
  // `format`, which Dispatch has taken out).
  void Route(const Request& req, const std::vector<std::string>& segments,
             std::string_view raw_query, Response& res);
  bool NoParams(std::string_view raw_query, Response& res);

  // /healthz is answered in Dispatch; /readyz, /metrics, /v1/stats (http_admin_handlers.cc).
  void Readyz(Response& res);
  void MetricsText(Response& res);
  void Stats(Response& res);

  // The queries (http_query_handlers.cc).
  void Busy(Response& res, QueryKind kind, const std::string& why);
  // Answers a bad parameter, or a query's failure.
  void Fail(Response& res, QueryKind kind, const Status& st);
  void Latest(const std::string& id, std::string_view raw_query, Response& res);
  void Range(const std::string& id, std::string_view raw_query, Response& res);
  // A range over query::kSmallQueryLimit events, streamed in chunks as it is produced.
  void StreamRange(const std::string& id, const RangeParams& params, Response& res);
  static std::string OpenEventsBody(const std::string& id);
  // What one streamed scan needs after the handler has returned. Records a cancelled query if the
  // provider never finished (the client went away before the first byte).
  struct ScanJob {
    ScanJob(Impl* i, int64_t f, int64_t t, int64_t l)
        : impl(i), slot(i), from_ms(f), to_ms(t), limit(l) {}
    ~ScanJob() {
      if (!recorded)
        impl->backend.metrics->RecordQuery(QueryKind::kScan, QueryOutcome::kCancelled, 0);
    }
    Impl* const impl;
    QuerySlot slot;
    const int64_t from_ms, to_ms, limit;
    const HttpClock::time_point start = HttpClock::now();
    bool started = false;
    bool recorded = false;
  };

  void Scan(std::string_view raw_query, Response& res);

  // Cluster mode (http_cluster_handlers.cc): GET /v1/cluster, `?local=true` queries and the
  // fan-out of latest, range and scan to the peers. True when it answered the request.
  bool ClusterRoute(const std::vector<std::string>& segments, Endpoint endpoint,
                    const std::string& id, std::string_view raw_query, Response& res);
  // A latest or range query in cluster mode, per id or per index value.
  struct ClusterQuery {
    QueryKind kind = QueryKind::kLatest;
    std::string open_body;  // the answer object up to and including "events":[
    cluster::GroupQuery group;
  };
  // `?local=true`: this instance's serving partitions only, saying which.
  void LocalClusterQuery(const ClusterQuery& q, Response& res);
  // Every instance asked (this one in process), merged, "complete" or not with "missing".
  void FanOutClusterQuery(const ClusterQuery& q, Response& res);
  // Takes `local` out of `raw_query` into `local` and `rest`; false after answering a 400.
  bool TakeClusterLocal(std::string_view raw_query, QueryKind kind, bool* local, std::string* rest,
                        Response& res);
  // Runs the whole scan on the first call of the content provider, writing as it goes. Returns
  // false (no final chunk) when the answer is cut short.
  bool StreamScan(ScanJob& job, DataSink& sink);

  // /v1/latest (GET, POST) and /v1/events/{id}/series (device_handlers.cc): answers and returns
  // true when `segments` is one of them, else returns false and leaves `res` alone.
  bool DeviceRoute(const Request& req, const std::vector<std::string>& segments,
                   std::string_view raw_query, Response& res);
  void LatestAll(std::string_view raw_query, bool local, Response& res);
  void LatestIds(const Request& req, std::string_view raw_query, bool local, Response& res);
  void Series(const SeriesSubject& subject, std::string_view raw_query, bool local, Response& res);
  // In cluster mode without `local`: the query is merged over the group.
  bool GroupWide(bool local) const;
  // One instance's answer body (device_handlers.cc); with `local`, of its serving partitions only
  // and with its head (cluster/local_answer.h).
  Result<std::string> LatestAllBody(const LatestAllParams& params, bool local);
  Result<std::string> LatestIdsBody(const LatestIdsParams& params, bool local);
  Result<std::string> SeriesBody(const SeriesSubject& subject, const SeriesParams& params,
                                 bool local);
  // The same merged over the group (device_fanout.cc). `raw_query` is the query string without
  // `local`, which the peers are asked with.
  Result<std::string> LatestAllForGroup(const LatestAllParams& params,
                                        const std::string& raw_query);
  Result<std::string> LatestIdsForGroup(const LatestIdsParams& params);
  Result<std::string> SeriesForGroup(const SeriesSubject& subject, const SeriesParams& params);

  // The live streams (stream_handlers.cc): answers and returns true when `segments` ends in
  // /stream on one of the stream routes, else returns false and leaves `res` alone.
  bool StreamRoute(const Request& req, const std::vector<std::string>& segments,
                   std::string_view raw_query, Response& res);
  // Closes every stream being written, telling its client `reason`.
  void CloseStreams(const std::string& reason);
  // After a reload of the credentials: ends the streams opened with a token no longer accepted.
  void EndStreamsOfRetiredTokens();
  static std::string StreamTag(const std::string& authorization);
  // The stream tag of the bearer token accepted now ("" without one).
  std::string CurrentStreamTag() const;
  // The admission of a stream by `?access_token=` (no Authorization header, GET of a stream
  // path): nullopt when the request presents no stream token that way (Authenticator::Admit
  // judges it); true when the token opens it; false with `res` the 401 when it does not.
  std::optional<bool> AdmitByStreamToken(const Request& req, Response& res);
  // POST /v1/stream-tokens (stream_handlers.cc): returns true when `segments` is that path.
  bool StreamTokenRoute(const Request& req, const std::vector<std::string>& segments,
                        Response& res);

  // /v1/index/{field}/{value}[/latest|/series] (index_handlers.cc): answers and returns true when
  // `segments` is an index route, else returns false and leaves `res` alone.
  bool IndexRoute(const std::vector<std::string>& segments, std::string_view raw_query,
                  Response& res);
};

// A series point's members as the device queries write them (device_handlers.cc): {"t":MS and
// the aggregates `aggs` names (the object is left open); a number JSON cannot hold is null.
void AppendSeriesPoint(int64_t t_ms, uint64_t count, double sum, double min, double max,
                       double last, uint32_t aggs, std::string* out);

}  // namespace hotrow::http
