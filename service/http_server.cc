#include "service/http_server.h"

#include <httplib.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "common/time_format.h"
#include "service/event_json.h"
#include "service/query_params.h"
#include "service/stats_json.h"
#include "service/url_codec.h"

namespace hotrow::service {
namespace {

using Clock = std::chrono::steady_clock;
using HandlerResponse = httplib::Server::HandlerResponse;

constexpr size_t kScanFlushBytes = 32 << 10;
constexpr auto kScanFlushInterval = std::chrono::milliseconds(50);
// httplib's compiled-in limit on the request line (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH).
constexpr size_t kMaxUriBytes = 8192;

// Connection threads for httplib: a fixed number of named workers and a bounded queue. httplib's
// own ThreadPool queues without bound, so a flood of connections would pile up in memory; here the
// acceptor waits instead, and the kernel's backlog absorbs (then refuses) the rest.
class BoundedTaskQueue final : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(int threads, size_t capacity) : capacity_(capacity) {
    for (int i = 0; i < threads; ++i) {
      workers_.emplace_back([this, i] {
        const std::string name = "http-" + std::to_string(i);
        pthread_setname_np(pthread_self(), name.c_str());
        Work();
      });
    }
  }
  ~BoundedTaskQueue() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    // Even during shutdown the task must run: it is what closes the accepted socket.
    space_.wait(lock, [&] { return tasks_.size() < capacity_ || shutdown_; });
    tasks_.push_back(std::move(fn));
    ready_.notify_one();
  }

  // Runs what is queued, then joins the workers. httplib calls it once its acceptor has stopped;
  // the destructor calls it again, which then finds nothing to join.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
    for (auto& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [&] { return !tasks_.empty() || shutdown_; });
        if (tasks_.empty()) return;  // shut down and drained
        task = std::move(tasks_.front());
        tasks_.pop_front();
        space_.notify_one();
      }
      try {
        task();
      } catch (const std::exception& e) {
        spdlog::error("http: connection task failed: {}", e.what());
      } catch (...) {
        spdlog::error("http: connection task failed with an unknown exception");
      }
    }
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable space_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool shutdown_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

enum class Endpoint { kNone, kHealthz, kReadyz, kMetrics, kStats, kScan, kLatest, kRange };

// Matches decoded path segments; `*id` is set for the two per-id routes.
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
  if (s[1] != "events") return Endpoint::kNone;
  if (s.size() == 3) {
    *id = s[2];
    return Endpoint::kRange;
  }
  if (s.size() == 4 && s[3] == "latest") {
    *id = s[2];
    return Endpoint::kLatest;
  }
  return Endpoint::kNone;
}

std::string ErrorBody(std::string_view message) {
  std::string body = "{\"error\":";
  AppendJsonString(message, &body);
  body.push_back('}');
  return body;
}

// Every JSON answer ends with a newline, so that a curl in a terminal leaves the prompt on a line
// of its own.
void SetJson(httplib::Response& res, int status, std::string body) {
  res.status = status;
  body.push_back('\n');
  res.set_content(std::move(body), "application/json");
}

void SetError(httplib::Response& res, int status, std::string_view message) {
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

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

struct HttpServer::Impl {
  Impl(const HttpServerOptions& o, const HttpBackend& b) : options(o), backend(b) {}

  const HttpServerOptions options;
  const HttpBackend backend;
  std::string host;
  int port = 0;
  httplib::Server server;
  std::thread listen_thread;
  std::atomic<bool> stopping{false};
  std::atomic<int> queries_running{0};
  std::mutex stop_mu;
  bool stopped = false;  // guarded by stop_mu
  RateLimiter warn_limiter{10, 10000};

  // One of the `max_queries` slots, held for the life of a query (a scan: until its last byte).
  class QuerySlot {
   public:
    explicit QuerySlot(Impl* impl) : impl_(impl) {
      if (impl_->queries_running.fetch_add(1) >= impl_->options.max_queries) {
        impl_->queries_running.fetch_sub(1);
        impl_ = nullptr;
      }
    }
    ~QuerySlot() {
      if (impl_ != nullptr) impl_->queries_running.fetch_sub(1);
    }
    QuerySlot(const QuerySlot&) = delete;
    QuerySlot& operator=(const QuerySlot&) = delete;
    bool acquired() const { return impl_ != nullptr; }

   private:
    Impl* impl_;
  };

  void Warn(const std::string& message) {
    uint64_t suppressed = 0;
    if (!warn_limiter.Allow(&suppressed)) return;
    if (suppressed > 0) {
      spdlog::warn("http: {} ({} similar warnings suppressed)", message, suppressed);
    } else {
      spdlog::warn("http: {}", message);
    }
  }

  void Busy(httplib::Response& res, QueryKind kind, const std::string& why) {
    backend.metrics->RecordQuery(kind, QueryOutcome::kBusy, 0);
    res.set_header("Retry-After", "1");
    SetError(res, 503, why);
  }

  // Answers a GET or HEAD. Never throws.
  void Handle(const httplib::Request& req, httplib::Response& res) {
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

  void Dispatch(const httplib::Request& req, httplib::Response& res) {
    Result<RequestTarget> target = SplitRequestTarget(req.target);
    if (!target.ok()) {
      SetError(res, 400, "bad request path: " + target.status().message());
      return;
    }
    std::string id;
    const Endpoint endpoint = MatchRoute(target->segments, &id);
    const std::string_view raw_query = target->raw_query;
    switch (endpoint) {
      case Endpoint::kNone:
        SetError(res, 404,
                 "unknown path " + QuoteClientText(req.path) +
                     "; the API is /v1/events/{id}/latest, /v1/events/{id}, /v1/scan, /v1/stats, "
                     "/healthz, /readyz, /metrics");
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

  bool NoParams(std::string_view raw_query, httplib::Response& res) {
    Status params = CheckNoParams(raw_query);
    if (params.ok()) return true;
    SetError(res, 400, params.message());
    return false;
  }

  void Readyz(httplib::Response& res) {
    std::string reason;
    if (stopping.load()) {
      reason = "shutting down";
    } else if (backend.ingestor == nullptr) {
      reason = "not ingesting";
    } else {
      Status st = backend.ingestor->Ready();
      if (!st.ok()) reason = st.message().empty() ? st.ToString() : st.message();
    }
    if (reason.empty()) {
      SetJson(res, 200, "{\"ready\":true}");
      return;
    }
    std::string body = "{\"ready\":false,\"reason\":";
    AppendJsonString(reason, &body);
    body.push_back('}');
    SetJson(res, 503, std::move(body));
  }

  void MetricsText(httplib::Response& res) {
    std::optional<ingest::IngestStats> ingest;
    if (backend.ingestor != nullptr) ingest = backend.ingestor->Stats();
    res.status = 200;
    const query::QueryWorkStats work = backend.engine->Work();
    res.set_content(backend.metrics->Render(ingest ? &*ingest : nullptr, backend.store->Stats(),
                                            backend.store->options(), &work),
                    "text/plain; version=0.0.4; charset=utf-8");
  }

  void Stats(httplib::Response& res) {
    std::optional<ingest::IngestStats> ingest;
    if (backend.ingestor != nullptr) ingest = backend.ingestor->Stats();
    SetJson(res, 200,
            RenderStatsJson(ingest ? &*ingest : nullptr, backend.store->Stats(),
                            backend.store->options()));
  }

  // Answers a bad parameter, or a query's failure.
  void Fail(httplib::Response& res, QueryKind kind, const Status& st) {
    backend.metrics->RecordQuery(kind, OutcomeOf(st), 0);
    const int status = HttpStatusOf(st);
    if (status == 503) res.set_header("Retry-After", "1");
    if (status >= 500) Warn(std::string(QueryKindName(kind)) + " query failed: " + st.ToString());
    SetError(res, status, status == 500 ? "query failed: " + st.ToString() : st.message());
  }

  void Latest(const std::string& id, std::string_view raw_query, httplib::Response& res) {
    const auto start = Clock::now();
    Result<LatestParams> params = ParseLatestParams(raw_query);
    if (!params.ok()) return Fail(res, QueryKind::kLatest, params.status());
    if (Status st = CheckQueryId(id); !st.ok()) return Fail(res, QueryKind::kLatest, st);
    QuerySlot slot(this);
    if (!slot.acquired())
      return Busy(res, QueryKind::kLatest, "too many queries at once; retry later");
    Result<std::vector<query::Event>> events = backend.engine->Latest(id, params->n);
    if (!events.ok()) return Fail(res, QueryKind::kLatest, events.status());
    std::string body = OpenEventsBody(id);
    bool first = true;
    for (const auto& e : events.value()) {
      if (!first) body.push_back(',');
      first = false;
      AppendEventJson(e, &body);
    }
    body.append("]}");
    SetJson(res, 200, std::move(body));
    backend.metrics->RecordQuery(QueryKind::kLatest, QueryOutcome::kOk, SecondsSince(start));
  }

  void Range(const std::string& id, std::string_view raw_query, httplib::Response& res) {
    const auto start = Clock::now();
    Result<RangeParams> params = ParseRangeParams(raw_query);
    if (!params.ok()) return Fail(res, QueryKind::kRange, params.status());
    if (Status st = CheckQueryId(id); !st.ok()) return Fail(res, QueryKind::kRange, st);
    if (params->limit > query::kSmallQueryLimit) return StreamRange(id, *params, res);
    QuerySlot slot(this);
    if (!slot.acquired())
      return Busy(res, QueryKind::kRange, "too many queries at once; retry later");
    std::string body = OpenEventsBody(id);
    bool first = true;
    Status st =
        backend.engine->RangeTo(id, params->from_ms, params->to_ms, params->limit, params->order,
                                [&](const query::Event& e) {
          if (!first) body.push_back(',');
          first = false;
          AppendEventJson(e, &body);
          return !stopping.load(std::memory_order_relaxed);
        });
    if (!st.ok()) return Fail(res, QueryKind::kRange, st);
    if (stopping.load()) {
      return Fail(res, QueryKind::kRange, Status::Busy("the server is shutting down"));
    }
    body.append("]}");
    SetJson(res, 200, std::move(body));
    backend.metrics->RecordQuery(QueryKind::kRange, QueryOutcome::kOk, SecondsSince(start));
  }

  // A range that may be large is streamed in chunks (about kScanFlushBytes each) as the engine
  // produces it, rather than built whole: the answer starts at once and memory stays bounded. An
  // error after the first byte ends the answer without its final chunk, as for scans.
  void StreamRange(const std::string& id, const RangeParams& params, httplib::Response& res) {
    auto slot = std::make_shared<QuerySlot>(this);
    if (!slot->acquired()) {
      return Busy(res, QueryKind::kRange, "too many queries at once; retry later");
    }
    auto start = Clock::now();
    auto recorded = std::make_shared<bool>(false);
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json",
        [this, slot, id, params, start, recorded](size_t /*offset*/, httplib::DataSink& sink) {
          if (*recorded) return false;
          *recorded = true;
          std::string buffer = OpenEventsBody(id);
          buffer.reserve(kScanFlushBytes + 4096);
          bool first = true, write_failed = false;
          Status st = backend.engine->RangeTo(
              id, params.from_ms, params.to_ms, params.limit, params.order,
              [&](const query::Event& e) {
                if (stopping.load(std::memory_order_relaxed)) return false;
                if (!first) buffer.push_back(',');
                first = false;
                AppendEventJson(e, &buffer);
                if (buffer.size() < kScanFlushBytes) return true;
                write_failed = !sink.write(buffer.data(), buffer.size());
                buffer.clear();
                return !write_failed;
              });
          if (write_failed || stopping.load()) {
            backend.metrics->RecordQuery(QueryKind::kRange, QueryOutcome::kCancelled, 0);
            return false;
          }
          if (!st.ok()) {
            backend.metrics->RecordQuery(QueryKind::kRange, OutcomeOf(st), 0);
            Warn("range failed after its first byte: " + st.ToString());
            return false;
          }
          buffer.append("]}\n");
          if (!sink.write(buffer.data(), buffer.size())) return false;
          sink.done();
          backend.metrics->RecordQuery(QueryKind::kRange, QueryOutcome::kOk, SecondsSince(start));
          return true;
        });
  }

  static std::string OpenEventsBody(const std::string& id) {
    std::string body = "{\"event_id\":";
    AppendJsonString(id, &body);
    body.append(",\"events\":[");
    return body;
  }

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
    const Clock::time_point start = Clock::now();
    bool started = false;
    bool recorded = false;
  };

  void Scan(std::string_view raw_query, httplib::Response& res) {
    Result<ScanParams> params = ParseScanParams(raw_query);
    if (!params.ok()) return Fail(res, QueryKind::kScan, params.status());
    auto job = std::make_shared<ScanJob>(this, params->from_ms, params->to_ms, params->limit);
    if (!job->slot.acquired()) {
      job->recorded = true;
      return Busy(res, QueryKind::kScan, "too many queries at once; retry later");
    }
    res.status = 200;
    res.set_chunked_content_provider("application/x-ndjson",
                                     [job](size_t /*offset*/, httplib::DataSink& sink) {
                                       return job->impl->StreamScan(*job, sink);
                                     });
  }

  // Runs the whole scan on the first call of the content provider, writing as it goes. Returns
  // false (no final chunk) when the answer is cut short.
  bool StreamScan(ScanJob& job, httplib::DataSink& sink) {
    if (job.started) return false;  // never expected: the first call ends with done() or false
    job.started = true;
    std::string buffer;
    buffer.reserve(kScanFlushBytes + 4096);
    auto last_flush = Clock::now();
    bool write_failed = false;
    auto flush = [&] {
      if (buffer.empty() || write_failed) return !write_failed;
      if (!sink.write(buffer.data(), buffer.size())) write_failed = true;
      buffer.clear();
      last_flush = Clock::now();
      return !write_failed;
    };
    auto finish = [&](QueryOutcome outcome, const std::string& error) {
      job.recorded = true;
      backend.metrics->RecordQuery(QueryKind::kScan, outcome, SecondsSince(job.start));
      if (error.empty()) {
        if (!flush()) return false;
        sink.done();
        return true;
      }
      buffer.append(ErrorBody(error));
      buffer.push_back('\n');
      flush();
      return false;
    };
    try {
      Status st =
          backend.engine->Scan(job.from_ms, job.to_ms, job.limit, [&](const query::Event& e) {
            if (stopping.load(std::memory_order_relaxed)) return false;
            AppendEventJson(e, &buffer);
            buffer.push_back('\n');
            if (buffer.size() >= kScanFlushBytes ||
                Clock::now() - last_flush >= kScanFlushInterval) {
              return flush();
            }
            return true;
          });
      if (write_failed) {
        job.recorded = true;
        backend.metrics->RecordQuery(QueryKind::kScan, QueryOutcome::kCancelled, 0);
        return false;
      }
      if (stopping.load()) return finish(QueryOutcome::kCancelled, "the server is shutting down");
      if (!st.ok()) {
        if (!st.IsBusy()) Warn("scan failed: " + st.ToString());
        return finish(OutcomeOf(st), "scan failed: " + st.ToString());
      }
      return finish(QueryOutcome::kOk, "");
    } catch (const std::exception& e) {
      Warn(std::string("scan failed: ") + e.what());
      return finish(QueryOutcome::kError, std::string("scan failed: ") + e.what());
    }
  }

  // Called by httplib for every answer with status >= 400. Gives a JSON body to the ones httplib
  // made itself (it routes nothing but GET/HEAD to us) and turns its 404 for another method on a
  // known path into 405.
  HandlerResponse ErrorPage(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return HandlerResponse::Unhandled;
    try {
      std::string message;
      switch (res.status) {
        case 404: {
          Result<RequestTarget> target = SplitRequestTarget(req.target);
          std::string id;
          if (!target.ok()) {
            res.status = 400;
            message = "bad request path: " + target.status().message();
          } else if (MatchRoute(target->segments, &id) != Endpoint::kNone) {
            res.status = 405;
            res.set_header("Allow", "GET, HEAD");
            message = "method " + QuoteClientText(req.method) + " is not allowed on " + QuoteClientText(req.path) +
                      "; use GET";
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
    return HandlerResponse::Handled;
  }
};

Status ParseListenAddress(const std::string& listen, std::string* host, int* port) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("listen address " + QuoteClientText(listen) + ": " + why +
                                   "; expected host:port such as 127.0.0.1:8080");
  };
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("no host:port");
  std::string h = listen.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) return bad("empty host");
  const std::string p = listen.substr(colon + 1);
  int value = -1;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || value < 0 || value > 65535) {
    return bad("port must be 0..65535");
  }
  *host = h;
  *port = value;
  return Status::Ok();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::address() const {
  const bool v6 = impl_->host.find(':') != std::string::npos;
  return (v6 ? "[" + impl_->host + "]" : impl_->host) + ":" + std::to_string(impl_->port);
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                      const HttpBackend& backend) {
  if (backend.store == nullptr || backend.engine == nullptr || backend.metrics == nullptr) {
    return Status::InvalidArgument(
        "http: the store, the query engine and the metrics are required");
  }
  if (options.threads < 1 || options.max_queries < 1) {
    return Status::InvalidArgument("http: threads and max_queries must be at least 1");
  }
  auto impl = std::make_unique<Impl>(options, backend);
  int port = 0;
  HOTROW_RETURN_IF_ERROR(ParseListenAddress(options.listen, &impl->host, &port));

  Impl* self = impl.get();
  httplib::Server& server = impl->server;
  const int threads = options.threads;
  const size_t queued = options.queued_connections;
  server.new_task_queue = [threads, queued] { return new BoundedTaskQueue(threads, queued); };
  server.set_read_timeout(std::chrono::milliseconds(options.read_timeout_ms));
  server.set_write_timeout(std::chrono::milliseconds(options.write_timeout_ms));
  // cpp-httplib writes headers and body in separate sends; with Nagle on, every answer after the
  // first on a keep-alive connection waited ~40 ms for the client's delayed ACK.
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(options.keep_alive_max_requests);
  server.set_keep_alive_timeout(std::max<int64_t>(1, options.keep_alive_timeout_ms / 1000));
  server.set_payload_max_length(options.max_body_bytes);
  server.set_pre_routing_handler([self](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") return HandlerResponse::Unhandled;
    self->Handle(req, res);
    return HandlerResponse::Handled;
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
      spdlog::debug("http: {} {} {} from {}:{}", res.status, req.method, QuoteClientText(req.target),
                    req.remote_addr, req.remote_port);
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
  impl->port = port;
  impl->listen_thread = std::thread([self] {
    pthread_setname_np(pthread_self(), "http-listen");
    if (!self->server.listen_after_bind()) {
      if (!self->stopping.load())
        spdlog::error("http: the listener on {} stopped", self->options.listen);
    }
  });
  // Stop() can only stop a server that is running: wait for the listener to start. On failure
  // listen_after_bind returns at once and is_running() never turns true.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!server.is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server.is_running()) {
    self->stopping.store(true);
    server.stop();
    impl->listen_thread.join();
    return Status::IOError("http: the listener on " + options.listen + " did not start");
  }
  std::unique_ptr<HttpServer> http(new HttpServer(std::move(impl)));
  spdlog::info("http: listening on http://{}", http->address());
  return http;
}

void HttpServer::Stop() {
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->stopping.store(true);
  impl_->server.stop();
  if (impl_->listen_thread.joinable()) impl_->listen_thread.join();
}

}  // namespace hotrow::service
