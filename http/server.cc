#include "http/server.h"

#include <httplib.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include "access/credentials.h"
#include "access/tls.h"
#include "common/host_port.h"
#include "http/auth.h"
#include "http/query_params.h"
#include "http/rows_format.h"
#include "http/server_impl.h"
#include "http/status_page.h"
#include "http/task_queue.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

// httplib's compiled-in limit on the request line (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH).
constexpr size_t kMaxUriBytes = 8192;

}  // namespace

void HttpServer::Impl::Warn(const std::string& message) {
  uint64_t suppressed = 0;
  if (!warn_limiter.Allow(&suppressed)) return;
  if (suppressed > 0) {
    spdlog::warn("http: {} ({} similar warnings suppressed)", message, suppressed);
  } else {
    spdlog::warn("http: {}", message);
  }
}

// Answers a GET or HEAD. Never throws.
void HttpServer::Impl::Handle(const httplib::Request& req, httplib::Response& res) {
  // A standby request names its partitions for this request only (TakeLocalFlag sets them).
  cluster::SetStandbyRequest({});
  SetPeerProven(ProvesPeer(req, backend.credentials));
  try {
    Dispatch(req, res);
  } catch (const std::exception& e) {
    Warn("request " + QuoteClientText(req.target) + " failed: " + e.what());
    SetError(res, 500, std::string("internal error: ") + e.what());
  } catch (...) {
    Warn("request " + QuoteClientText(req.target) + " failed with an unknown exception");
    SetError(res, 500, "internal error");
  }
}

namespace {

// The routes whose answers `format=rows` rewrites (http/rows_format.h), with the kind of query a
// bad `format` is counted under; nullopt for every other route, where `format` stays an unknown
// parameter.
std::optional<QueryKind> RowsRouteKind(const httplib::Request& req,
                                       const std::vector<std::string>& s,
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

void HttpServer::Impl::Dispatch(const httplib::Request& req, httplib::Response& res) {
  Result<wire::RequestTarget> target = wire::SplitRequestTarget(req.target);
  if (!target.ok()) {
    SetError(res, 400, "bad request path: " + target.status().message());
    return;
  }
  if (IsStatusPagePath(target->segments)) return ServeStatusPage(&res);  // GET /: the page
  if (StreamRoute(req, target->segments, target->raw_query, res)) return;
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
    Warn("request " + QuoteClientText(req.target) + ": " + rows.status().ToString());
    return SetError(res, 500, "internal error: " + rows.status().ToString());
  }
  SetJson(res, 200, std::move(rows).value());
}

void HttpServer::Impl::Route(const httplib::Request& req, const std::vector<std::string>& segments,
                             std::string_view raw_query, httplib::Response& res) {
  std::string id;
  if (IndexRoute(segments, raw_query, res)) return;
  const Endpoint endpoint = MatchRoute(segments, &id);
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

bool HttpServer::Impl::NoParams(std::string_view raw_query, httplib::Response& res) {
  Status params = CheckNoParams(raw_query);
  if (params.ok()) return true;
  SetError(res, 400, params.message());
  return false;
}

// Called by httplib for every answer with status >= 400. Gives a JSON body to the ones httplib
// made itself (it routes nothing but GET/HEAD to us) and turns its 404 for another method on a
// known path into 405.
httplib::Server::HandlerResponse HttpServer::Impl::ErrorPage(const httplib::Request& req,
                                                             httplib::Response& res) {
  if (!res.body.empty() || res.is_chunked_content_provider_)
    return httplib::Server::HandlerResponse::Unhandled;
  try {
    std::string message;
    switch (res.status) {
      case 404: {
        Result<wire::RequestTarget> target = wire::SplitRequestTarget(req.target);
        std::string id;
        if (!target.ok()) {
          res.status = 400;
          message = "bad request path: " + target.status().message();
        } else if (const Endpoint endpoint = MatchRoute(target->segments, &id);
                   endpoint != Endpoint::kNone || IsStatusPagePath(target->segments)) {
          const bool post = endpoint == Endpoint::kLatestAll;
          res.status = 405;
          res.set_header("Allow", post ? "GET, HEAD, POST" : "GET, HEAD");
          message = "method " + QuoteClientText(req.method) + " is not allowed on " +
                    QuoteClientText(req.path) + (post ? "; use GET or POST" : "; use GET");
        } else {
          message = "unknown path " + QuoteClientText(req.path);
        }
        break;
      }
      case 400:
        message = "malformed HTTP request (request line, method or headers)";
        break;
      case 413:
        message = "request body over " + std::to_string(options.max_body_bytes) + " bytes";
        break;
      case 414:
        message = "request URI over " + std::to_string(kMaxUriBytes) + " bytes";
        break;
      default:
        message = "request refused with HTTP status " + std::to_string(res.status);
        break;
    }
    res.set_content(ErrorBody(message) + "\n", "application/json");
  } catch (...) {
    res.set_content("{\"error\":\"bad request\"}\n", "application/json");
  }
  return httplib::Server::HandlerResponse::Handled;
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
  if (options.threads < 1 || options.max_queries < 1 || options.max_peer_queries < 1) {
    return Status::InvalidArgument(
        "http: threads, max_queries and max_peer_queries must be at least 1");
  }
  auto impl = std::make_unique<Impl>(options, backend);
  int port = 0;
  HOTROW_RETURN_IF_ERROR(ParseListenAddress(options.listen, &impl->host, &port));

  Result<std::unique_ptr<httplib::Server>> made =
      backend.credentials != nullptr
          ? access::NewHttplibServer(backend.credentials)
          : access::NewHttplibServer(options.tls_cert_file, options.tls_key_file);
  if (!made.ok()) return made.status();
  impl->server = std::move(made).value();

  Impl* self = impl.get();
  httplib::Server& server = *impl->server;
  const int threads = options.threads;
  const size_t queued = options.queued_connections;
  server.new_task_queue = [self, threads, queued] {
    auto* queue = new BoundedTaskQueue(threads, queued);
    self->task_queue.store(queue);
    return queue;
  };
  server.set_read_timeout(std::chrono::milliseconds(options.read_timeout_ms));
  server.set_write_timeout(std::chrono::milliseconds(options.write_timeout_ms));
  // cpp-httplib writes headers and body in separate sends; with Nagle on, every answer after the
  // first on a keep-alive connection waited ~40 ms for the client's delayed ACK.
  server.set_tcp_nodelay(true);
  // cpp-httplib's default sets SO_REUSEPORT, with which a second server on a port already served
  // (a second instance given the same http.listen) binds too and silently takes half of the
  // connections. SO_REUSEADDR alone still allows a restart while old connections are in
  // TIME_WAIT, and makes a port in use an error.
  server.set_socket_options([self](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    self->listen_socket = sock;  // the last one made is the one bound (see below)
  });
  server.set_keep_alive_max_count(options.keep_alive_max_requests);
  server.set_keep_alive_timeout(std::max<int64_t>(1, options.keep_alive_timeout_ms / 1000));
  server.set_payload_max_length(options.max_body_bytes);
  server.set_pre_routing_handler([self](const httplib::Request& req, httplib::Response& res) {
    if (self->backend.auth != nullptr && !self->backend.auth->Admit(req, res)) {
      return httplib::Server::HandlerResponse::Handled;
    }
    // A POST's body is read after this handler: POST /v1/latest, the one route that takes a
    // body, is answered by the handler registered below; any other method or path gets httplib's
    // 404, which ErrorPage turns into 405 on a known path.
    if (req.method != "GET" && req.method != "HEAD")
      return httplib::Server::HandlerResponse::Unhandled;
    self->Handle(req, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Post("/v1/latest", [self](const httplib::Request& req, httplib::Response& res) {
    self->Handle(req, res);
  });
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [self](const httplib::Request& req, httplib::Response& res) {
        return self->ErrorPage(req, res);
      }));
  server.set_exception_handler(
      [self](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        self->Warn("request " + QuoteClientText(req.target) + " failed: " + what);
        SetError(res, 500, "internal error: " + what);
      });
  server.set_logger([self](const httplib::Request& req, const httplib::Response& res) {
    self->backend.metrics->RecordHttpResponse(res.status);
    if (spdlog::should_log(spdlog::level::debug)) {
      spdlog::debug("http: {} {} {} from {}:{}", res.status, req.method,
                    QuoteClientText(req.target), req.remote_addr, req.remote_port);
    }
  });

  if (port == 0) {
    port = server.bind_to_any_port(impl->host);
    if (port < 0) port = -1;
  } else if (!server.bind_to_port(impl->host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return Status::IOError("http: cannot listen on " + options.listen +
                           " (address in use, or not an address of this machine)");
  }
  // cpp-httplib listens with a backlog of 5 (compiled into the library): a burst of connections
  // (a dashboard fleet reconnecting, a load generator, a group's peers after a restart) while the
  // acceptor is busy or off the CPU overflowed it, and each dropped SYN cost its client a 1 s
  // (then 3 s) retransmit. listen() again raises it to the kernel's maximum (net.core.somaxconn).
  if (impl->listen_socket >= 0 && ::listen(impl->listen_socket, SOMAXCONN) != 0) {
    spdlog::warn("http: cannot raise the listen backlog on {}: {}", options.listen,
                 std::strerror(errno));
  }
  impl->port = port;
  impl->listen_thread = std::thread([self] {
    pthread_setname_np(pthread_self(), "http-listen");
    if (!self->server->listen_after_bind()) {
      if (!self->stopping.load())
        spdlog::error("http: the listener on {} stopped", self->options.listen);
    }
  });
  // Stop() can only stop a server that is running: wait for the listener to start. On failure
  // listen_after_bind returns at once and is_running() never turns true.
  const auto deadline = HttpClock::now() + std::chrono::seconds(5);
  while (!server.is_running() && HttpClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server.is_running()) {
    self->stopping.store(true);
    server.stop();
    impl->listen_thread.join();
    return Status::IOError("http: the listener on " + options.listen + " did not start");
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
  impl_->server->stop();
  if (impl_->listen_thread.joinable()) impl_->listen_thread.join();
}

}  // namespace hotrow::http
