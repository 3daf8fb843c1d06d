#include "http/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include "access/credentials.h"
#include "access/tls.h"
#include "cluster/peer_transport.h"
#include "common/host_port.h"
#include "http/auth.h"
#include "http/query_params.h"
#include "http/rows_format.h"
#include "http/server_impl.h"
#include "http/status_page.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

// The longest request target (414 past it), as cpp-httplib allowed before.
constexpr size_t kMaxUriBytes = 8192;

thread_local RunContext tl_context = RunContext::kWorker;
thread_local bool tl_queued = false;

}  // namespace

RunContext CurrentRunContext() { return tl_context; }
bool CurrentRequestQueued() { return tl_queued; }

void HttpServer::Impl::Warn(const std::string& message) {
  uint64_t suppressed = 0;
  if (!warn_limiter.Allow(&suppressed)) return;
  if (suppressed > 0) {
    spdlog::warn("http: {} ({} similar warnings suppressed)", message, suppressed);
  } else {
    spdlog::warn("http: {}", message);
  }
}

// Every request, from the transport: on its I/O thread first, then again on a worker when it was
// deferred (or as shed). Never throws.
void HttpServer::Impl::Handle(Request& req, Response& res) {
  // A standby request names its partitions for this request only (TakeLocalFlag sets them).
  cluster::SetStandbyRequest({});
  struct Context {
    Context(RunContext c, bool q) {
      tl_context = c;
      tl_queued = q;
    }
    ~Context() {
      tl_context = RunContext::kWorker;
      tl_queued = false;
    }
  } context(req.context, req.queued);
  SetPeerProven(ProvesPeer(req, backend.credentials));
  try {
    // The token is judged once, where the request first arrives.
    if (req.context == RunContext::kIoThread && backend.auth != nullptr) {
      // A browser's stream presents a stream token in its address (EventSource sends no
      // Authorization header); everything else the bearer token.
      const std::optional<bool> by_stream_token = AdmitByStreamToken(req, res);
      if (by_stream_token.has_value() ? !*by_stream_token : !backend.auth->Admit(req, res)) return;
    }
    const bool post_latest = req.method == "POST" && req.path == "/v1/latest";
    const bool post_stream_token = req.method == "POST" && req.path == "/v1/stream-tokens";
    if (req.method != "GET" && req.method != "HEAD" && !post_latest && !post_stream_token) {
      return Disallowed(req, res);
    }
    Dispatch(req, res);
  } catch (const std::exception& e) {
    res = Response();
    Warn("request " + QuoteClientText(RedactedTarget(req.target)) + " failed: " + e.what());
    SetError(res, 500, std::string("internal error: ") + e.what());
  } catch (...) {
    res = Response();
    Warn("request " + QuoteClientText(RedactedTarget(req.target)) +
         " failed with an unknown exception");
    SetError(res, 500, "internal error");
  }
}

void HttpServer::Impl::Answered(int status) { backend.metrics->RecordHttpResponse(status); }

WorkLane HttpServer::Impl::LaneOf(std::string_view raw_query) const {
  bool local = false;
  std::string rest;
  // A `?local=true` request runs in the peers' lane only when it proves it comes from a peer
  // (cluster.peer_token_file); else it is a client's.
  if (TakeLocalFlag(raw_query, &local, &rest).ok() && local && PeerProven()) {
    return WorkLane::kPeer;
  }
  return WorkLane::kClient;
}

namespace {

// The routes whose answers `format=rows` rewrites (http/rows_format.h), with the kind of query a
// bad `format` is counted under; nullopt for every other route, where `format` stays an unknown
// parameter.
std::optional<QueryKind> RowsRouteKind(const Request& req, const std::vector<std::string>& s,
                                       std::string_view raw_query) {
  if (s.size() < 2 || s[0] != "v1") return std::nullopt;
  if (s.size() == 2 && s[1] == "latest") {
    return req.method == "POST" || HasIdsParam(raw_query) ? QueryKind::kLatestIds
                                                          : QueryKind::kLatestAll;
  }
  const bool per_id = s.size() == 4 && s[1] == "events";
  const bool per_value = s.size() == 5 && s[1] == "index";
  if (!per_id && !per_value) return std::nullopt;
  if (s.back() == "latest") return QueryKind::kLatest;
  if (s.back() == "series") return QueryKind::kSeries;
  return std::nullopt;
}

}  // namespace

void HttpServer::Impl::Dispatch(const Request& req, Response& res) {
  Result<wire::RequestTarget> target = wire::SplitRequestTarget(req.target);
  if (!target.ok()) {
    SetError(res, 400, "bad request path: " + target.status().message());
    return;
  }
  if (IsStatusPagePath(target->segments)) return ServeStatusPage(&res);  // GET /: the page
  const std::vector<std::string>& s = target->segments;
  if (OnIoThread() && !s.empty() && s.back() == "stream") {
    return res.Defer(WorkLane::kOther);  // a resume reads the store
  }
  if (StreamRoute(req, target->segments, target->raw_query, res)) return;
  if (StreamTokenRoute(req, target->segments, res)) return;
  // `format` is taken out here, so that the route parses the rest as it always has (and peers are
  // asked without it); its whole answer is then rewritten as rows.
  std::string_view raw_query = target->raw_query;
  std::string rest;
  AnswerFormat format = AnswerFormat::kJson;
  if (const std::optional<QueryKind> kind = RowsRouteKind(req, target->segments, raw_query)) {
    if (Status st = TakeFormatParam(raw_query, &format, &rest); !st.ok()) {
      return Fail(res, *kind, st);
    }
    raw_query = rest;
  }
  Route(req, target->segments, raw_query, res);
  if (format != AnswerFormat::kRows || res.status != 200) return;
  Result<std::string> rows = AnswerAsRows(res.body);
  if (!rows.ok()) {
    Warn("request " + QuoteClientText(RedactedTarget(req.target)) + ": " +
         rows.status().ToString());
    return SetError(res, 500, "internal error: " + rows.status().ToString());
  }
  SetJson(res, 200, std::move(rows).value());
}

void HttpServer::Impl::Route(const Request& req, const std::vector<std::string>& segments,
                             std::string_view raw_query, Response& res) {
  std::string id;
  const Endpoint endpoint = MatchRoute(segments, &id);
  if (OnIoThread()) {
    // Only health and a latest-N the cache answers are answered here; the rest may block.
    const bool cluster = backend.cluster != nullptr && backend.cluster->enabled();
    const bool cluster_info =
        segments.size() == 2 && segments[0] == "v1" && segments[1] == "cluster";
    switch (endpoint) {
      case Endpoint::kHealthz:
      case Endpoint::kReadyz:
        break;
      case Endpoint::kNone:
        if (cluster_info) return res.Defer(WorkLane::kOther);
        if (segments.size() >= 2 && segments[0] == "v1" && segments[1] == "index") {
          return res.Defer(LaneOf(raw_query));
        }
        break;  // 404 at once
      case Endpoint::kMetrics:
      case Endpoint::kStats:
        return res.Defer(WorkLane::kOther);
      case Endpoint::kLatest:
        if (cluster) return res.Defer(LaneOf(raw_query));
        break;  // Latest tries the cache, and defers on a miss
      default:
        return res.Defer(LaneOf(raw_query));
    }
  }
  if (IndexRoute(segments, raw_query, res)) return;
  if (backend.cluster != nullptr && ClusterRoute(segments, endpoint, id, raw_query, res)) {
    return;
  }
  switch (endpoint) {
    case Endpoint::kNone:
      SetError(res, 404,
               "unknown path " + QuoteClientText(req.path) +
                   "; the API is /v1/events/{id}/latest, /v1/events/{id}, "
                   "/v1/events/{id}/series, /v1/latest, /v1/scan, /v1/index/..., /v1/stats, "
                   "/healthz, /readyz, /metrics");
      return;
    case Endpoint::kLatestAll:
    case Endpoint::kSeries:
      DeviceRoute(req, segments, raw_query, res);
      return;
    case Endpoint::kHealthz:
      if (!NoParams(raw_query, res)) return;
      SetJson(res, 200, "{\"status\":\"ok\"}");
      return;
    case Endpoint::kReadyz:
      if (!NoParams(raw_query, res)) return;
      Readyz(res);
      return;
    case Endpoint::kMetrics:
      if (!NoParams(raw_query, res)) return;
      MetricsText(res);
      return;
    case Endpoint::kStats:
      if (!NoParams(raw_query, res)) return;
      Stats(res);
      return;
    case Endpoint::kLatest:
      Latest(id, raw_query, res);
      return;
    case Endpoint::kRange:
      Range(id, raw_query, res);
      return;
    case Endpoint::kScan:
      Scan(raw_query, res);
      return;
  }
}

bool HttpServer::Impl::NoParams(std::string_view raw_query, Response& res) {
  Status params = CheckNoParams(raw_query);
  if (params.ok()) return true;
  SetError(res, 400, params.message());
  return false;
}

// A method other than GET or HEAD (or POST on /v1/latest): 405 with Allow on a path the API
// serves, 404 on any other.
void HttpServer::Impl::Disallowed(const Request& req, Response& res) {
  Result<wire::RequestTarget> target = wire::SplitRequestTarget(req.target);
  std::string id;
  if (!target.ok()) return SetError(res, 400, "bad request path: " + target.status().message());
  const Endpoint endpoint = MatchRoute(target->segments, &id);
  const bool known = endpoint != Endpoint::kNone || IsStatusPagePath(target->segments) ||
                     (target->segments.size() >= 2 && target->segments[0] == "v1" &&
                      target->segments[1] == "cluster");
  if (!known) return SetError(res, 404, "unknown path " + QuoteClientText(req.path));
  const bool post = endpoint == Endpoint::kLatestAll;
  SetError(res, 405,
           "method " + QuoteClientText(req.method) + " is not allowed on " +
               QuoteClientText(req.path) + (post ? "; use GET or POST" : "; use GET"));
  res.set_header("Allow", post ? "GET, HEAD, POST" : "GET, HEAD");
}

// What the transport answers itself (a request it could not read to the end, or refused).
void HttpServer::Impl::Refuse(int status, Response& res) {
  std::string message;
  switch (status) {
    case 400:
      message = "malformed HTTP request (request line, method or headers)";
      break;
    case 413:
      message = "request body over " + std::to_string(options.max_body_bytes) + " bytes";
      break;
    case 414:
      message = "request URI over " + std::to_string(kMaxUriBytes) + " bytes";
      break;
    case 503:
      message = "too many queries at once; retry later";
      res.set_header("Retry-After", "1");
      break;
    default:
      message = "request refused with HTTP status " + std::to_string(status);
      break;
  }
  SetError(res, status, message);
}

Status ParseListenAddress(const std::string& listen, std::string* host, int* port) {
  Result<HostPort> parsed = ParseHostPort(listen);
  if (!parsed.ok()) {
    return Status::InvalidArgument("listen address " + QuoteClientText(listen) + ": " +
                                   parsed.status().message() +
                                   "; expected host:port such as 127.0.0.1:8080 or [::1]:8080");
  }
  *host = parsed->host;
  *port = parsed->port;
  return Status::Ok();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::address() const { return HostPort{impl_->host, impl_->port}.ToString(); }

std::string HttpServer::url() const {
  const bool tls = impl_->backend.credentials != nullptr ? impl_->backend.credentials->tls()
                                                         : !impl_->options.tls_cert_file.empty();
  return (tls ? "https://" : "http://") + address();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                      const HttpBackend& backend) {
  if (backend.store == nullptr || backend.engine == nullptr || backend.metrics == nullptr) {
    return Status::InvalidArgument(
        "http: the store, the query engine and the metrics are required");
  }
  if (options.io_threads < 1 || options.max_queries < 1 || options.max_peer_queries < 1) {
    return Status::InvalidArgument(
        "http: io_threads, max_queries and max_peer_queries must be at least 1");
  }
  auto impl = std::make_unique<Impl>(options, backend);
  int port = 0;
  HOTROW_RETURN_IF_ERROR(ParseListenAddress(options.listen, &impl->host, &port));
  Result<access::ServerTlsContext> tls =
      backend.credentials != nullptr
          ? access::NewServerTlsContext(backend.credentials)
          : access::NewServerTlsContext(options.tls_cert_file, options.tls_key_file);
  if (!tls.ok()) return tls.status();

  TransportOptions t;
  t.host = impl->host;
  t.port = port;
  t.io_threads = options.io_threads;
  t.max_connections = options.max_connections;
  t.idle_timeout_ms = options.idle_timeout_ms;
  t.header_timeout_ms = options.header_timeout_ms;
  t.read_timeout_ms = options.read_timeout_ms;
  t.write_timeout_ms = options.write_timeout_ms;
  t.max_body_bytes = options.max_body_bytes;
  t.max_uri_bytes = kMaxUriBytes;
  t.keep_alive_max_requests = options.keep_alive_max_requests;
  // As many workers per lane as its query slots: on a worker a slot is always free, and the wait
  // for one is the wait for a worker, which holds no thread (server_impl.h, QuerySlot).
  t.client_workers = options.max_queries;
  t.peer_workers = options.max_peer_queries;
  t.other_workers = 2;
  t.client_queue_wait_ms = options.queue_wait_ms;
  Result<std::unique_ptr<Transport>> transport =
      Transport::Start(t, impl.get(), std::move(tls).value());
  if (!transport.ok()) return transport.status();
  impl->transport = std::move(transport).value();
  impl->port = impl->transport->port();
  if (backend.cluster != nullptr && backend.cluster->enabled()) {
    // The peers are asked on this server's I/O threads from now on (cluster/peer_client.h).
    cluster::PeerTransportOptions peers;
    peers.timeout_ms = backend.cluster->peers().options().timeout_ms;
    peers.credentials = backend.cluster->peers().options().credentials;
    backend.cluster->peers().Attach(impl->transport->StartPeerTransport(peers));
  }
  std::unique_ptr<HttpServer> http(new HttpServer(std::move(impl)));
  spdlog::info("http: listening on {}", http->url());
  return http;
}

void HttpServer::Stop() {
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->stopping.store(true);
  impl_->slots.Close();  // queries waiting for a slot give up now
  impl_->CloseStreams("the server is stopping");
  if (impl_->transport != nullptr) impl_->transport->Stop();
}

void HttpServer::AccessReloaded() { impl_->EndStreamsOfRetiredTokens(); }

size_t HttpServer::open_connections() const { return impl_->transport->open_connections(); }

uint64_t HttpServer::refused_connections() const { return impl_->transport->refused_connections(); }

}  // namespace hotrow::http
