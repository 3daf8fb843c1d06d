// The HTTP transport on Boost.Beast and Asio (http/transport.h). The only file of hotrow that
// includes them.

#include "http/transport.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/host_port.h"
#include "http/peer_transport.h"
#include "http/worker_pool.h"

namespace hotrow::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kAwait = net::as_tuple(net::use_awaitable);
// The whole request head a parser takes before it gives up (the request line and the header
// lines are each bounded below it by TransportOptions).
constexpr uint32_t kHeadLimit = 64 << 10;
// The methods a request may name: RFC 9110's and PATCH. Another is a malformed request (400); one
// of these on a path that does not take it is the handler's 405.
bool KnownMethod(std::string_view m) {
  for (std::string_view k :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}) {
    if (m == k) return true;
  }
  return false;
}

// A request target in origin form ("/path?query"): visible ASCII, one '?' at most.
bool WellFormedTarget(std::string_view t) {
  if (t.empty() || t[0] != '/') return false;
  bool query = false;
  for (char c : t) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
    if (c == '?') {
      if (query) return false;
      query = true;
    }
  }
  return true;
}

// What the connection's coroutine and the workers share about one request: both keep it alive,
// so a worker never outlives what it reads or writes.
struct Exchange {
  Request request;
  Response response;
  unsigned version = 11;  // 10 or 11
  bool keep_alive = true;
};

// The state of a deferred job: who gets to run it, the worker or the deadline.
enum class JobPhase : int { kQueued, kRunning, kDone, kAbandoned };

}  // namespace

struct Transport::Impl {
  explicit Impl(const TransportOptions& o, RequestHandler* h)
      : options(o),
        handler(h),
        io(o.io_threads),
        acceptor(io),
        client("http-query", o.client_workers),
        peer("http-peer", o.peer_workers),
        other("http-work", o.other_workers) {}

  // Declared in the order that lets io's destructor (which destroys the connections' coroutine
  // frames) find everything they touch still alive.
  const TransportOptions options;
  RequestHandler* const handler;
  std::atomic<size_t> connections{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<bool> stopping{false};
  // Set once the I/O threads will run nothing more (and, with io_joined, have been joined): a
  // worker waiting on a write gives up.
  std::atomic<bool> halted{false};
  std::atomic<bool> io_joined{false};
  std::mutex stop_mu;
  bool stopped = false;  // guarded by stop_mu

  // The open connections, so that Stop can close the idle ones. Each entry's members are used
  // on its connection's strand only.
  struct Connection {
    net::any_io_executor executor;
    std::function<void()> close;  // closes the socket
    bool busy = false;            // a request is being read or answered
  };
  std::mutex conns_mu;
  std::unordered_set<std::shared_ptr<Connection>> conns;  // guarded by conns_mu

  std::optional<net::ssl::context> tls;
  net::io_context io;
  tcp::acceptor acceptor;
  int port = 0;
  std::vector<std::thread> io_threads;
  WorkerPool client, peer, other;
  // The peers' clients made on this io_context (guarded by stop_mu): shut down by Stop while it
  // still runs.
  std::vector<std::shared_ptr<AsioPeerTransport>> peer_transports;

  WorkerPool& Pool(WorkLane lane) {
    switch (lane) {
      case WorkLane::kClient:
        return client;
      case WorkLane::kPeer:
        return peer;
      default:
        return other;
    }
  }

  net::awaitable<void> Accept();
  net::awaitable<void> Serve(tcp::socket socket);
  template <class Stream>
  net::awaitable<void> Session(Stream& stream, const std::shared_ptr<Connection>& conn,
                               const std::string& remote_addr, int remote_port);
  template <class Stream>
  net::awaitable<void> Answer(Stream& stream, std::shared_ptr<Exchange> ex, bool* keep);
  template <class Stream>
  net::awaitable<bool> WriteWhole(Stream& stream, Exchange& ex);
  template <class Stream>
  net::awaitable<bool> WriteEvents(Stream& stream, Exchange& ex);
  template <class Stream>
  net::awaitable<void> Refuse(Stream& stream, int status, unsigned version);
};

namespace {

template <class Body>
void FillHead(bhttp::response<Body>& r, const Exchange& ex, bool keep_alive) {
  r.version(ex.version);
  r.result(static_cast<unsigned>(ex.response.status));
  for (const auto& [name, value] : ex.response.headers) {
    if (HeaderNameIs(name, "Connection") || HeaderNameIs(name, "Content-Length") ||
        HeaderNameIs(name, "Transfer-Encoding")) {
      continue;  // the transport's to say
    }
    r.insert(name, value);
  }
  if (!ex.response.content_type.empty())
    r.set(bhttp::field::content_type, ex.response.content_type);
  r.keep_alive(keep_alive);
}

// A streamed body's producer, on a worker, writing through the connection's strand: each write is
// posted there and waited for, so that at most one chunk is in flight and a slow client slows the
// producer.
template <class Stream>
class BridgeSink final : public DataSink {
 public:
  BridgeSink(Transport::Impl* impl, Stream& stream, net::any_io_executor executor, bool chunked)
      : impl_(impl), stream_(stream), executor_(std::move(executor)), chunked_(chunked) {}

  bool Head(const Exchange& ex) {
    auto head = std::make_shared<bhttp::response<bhttp::empty_body>>();
    FillHead(*head, ex, chunked_ && ex.keep_alive);
    if (chunked_) head->chunked(true);
    auto sr = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*head);
    return Run([this, head, sr](auto done) {
      bhttp::async_write_header(stream_, *sr,
                                [head, sr, done](beast::error_code ec, size_t) { done(ec); });
    });
  }

  bool write(const char* data, size_t size) override {
    if (failed_ || size == 0) return !failed_;
    const net::const_buffer bytes(data, size);
    if (!chunked_) {
      return Run([this, bytes](auto done) {
        net::async_write(stream_, bytes, [done](beast::error_code ec, size_t) { done(ec); });
      });
    }
    auto chunk = std::make_shared<decltype(bhttp::make_chunk(bytes))>(bhttp::make_chunk(bytes));
    return Run([this, chunk](auto done) {
      net::async_write(stream_, *chunk, [chunk, done](beast::error_code ec, size_t) { done(ec); });
    });
  }

  void done() override { done_ = true; }

  // After the producer: the last chunk when the answer is whole. False: the connection must close
  // (a cut answer, a failed write, or no chunking to delimit the body).
  bool Finish() {
    if (failed_ || !done_) return false;
    if (!chunked_) return false;
    auto last = std::make_shared<decltype(bhttp::make_chunk_last())>(bhttp::make_chunk_last());
    return Run([this, last](auto done) {
      net::async_write(stream_, *last, [last, done](beast::error_code ec, size_t) { done(ec); });
    });
  }

 private:
  template <class Op>
  bool Run(Op op) {
    if (failed_) return false;
    auto result = std::make_shared<std::promise<bool>>();
    std::future<bool> answer = result->get_future();
    const int64_t timeout_ms = impl_->options.write_timeout_ms;
    net::post(executor_, [this, op, result, timeout_ms] {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::milliseconds(timeout_ms));
      op([result](beast::error_code ec) { result->set_value(!ec); });
    });
    while (answer.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (impl_->halted.load()) {
        // The I/O threads stop: once they are joined, nothing touches the bytes any more.
        while (!impl_->io_joined.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        failed_ = true;
        return false;
      }
    }
    failed_ = !answer.get();
    return !failed_;
  }

  Transport::Impl* const impl_;
  Stream& stream_;
  const net::any_io_executor executor_;
  const bool chunked_;
  bool failed_ = false;
  bool done_ = false;
};

}  // namespace

net::awaitable<void> Transport::Impl::Accept() {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(net::make_strand(io), kAwait);
    if (stopping.load()) co_return;
    if (ec) {
      if (ec == net::error::operation_aborted) co_return;
      // Out of file descriptors (or another passing failure): try again in a moment rather than
      // spin; the kernel's backlog holds the connections meanwhile.
      spdlog::warn("http: accept failed: {}", ec.message());
      net::steady_timer pause(co_await net::this_coro::executor, std::chrono::milliseconds(50));
      co_await pause.async_wait(kAwait);
      continue;
    }
    if (connections.load() >= options.max_connections) {
      refused.fetch_add(1);
      beast::error_code ignored;
      socket.close(ignored);
      continue;
    }
    connections.fetch_add(1);
    net::co_spawn(socket.get_executor(), Serve(std::move(socket)), net::detached);
  }
}

net::awaitable<void> Transport::Impl::Serve(tcp::socket socket) {
  struct Count {
    std::atomic<size_t>* n;
    ~Count() { n->fetch_sub(1); }
  } count{&connections};
  beast::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  const std::string remote_addr = ec ? std::string() : remote.address().to_string();
  const int remote_port = ec ? 0 : remote.port();

  auto conn = std::make_shared<Connection>();
  conn->executor = socket.get_executor();
  {
    std::lock_guard lock(conns_mu);
    conns.insert(conn);
  }
  struct Unregister {
    Impl* impl;
    std::shared_ptr<Connection> conn;
    ~Unregister() {
      conn->close = nullptr;
      std::lock_guard lock(impl->conns_mu);
      impl->conns.erase(conn);
    }
  } unregister{this, conn};
  try {
    if (tls) {
      beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
      conn->close = [&stream] { beast::get_lowest_layer(stream).close(); };
      beast::get_lowest_layer(stream).expires_after(
          std::chrono::milliseconds(options.header_timeout_ms));
      auto [hs] = co_await stream.async_handshake(net::ssl::stream_base::server, kAwait);
      if (!hs) co_await Session(stream, conn, remote_addr, remote_port);
    } else {
      beast::tcp_stream stream(std::move(socket));
      conn->close = [&stream] { stream.close(); };
      co_await Session(stream, conn, remote_addr, remote_port);
      stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  } catch (const std::exception& e) {
    spdlog::warn("http: a connection from {} failed: {}", remote_addr, e.what());
  }
}

template <class Stream>
net::awaitable<void> Transport::Impl::Refuse(Stream& stream, int status, unsigned version) {
  auto ex = std::make_shared<Exchange>();
  ex->version = version;
  handler->Refuse(status, ex->response);
  ex->response.status = status;
  ex->keep_alive = false;
  co_await WriteWhole(stream, *ex);
}

template <class Stream>
net::awaitable<void> Transport::Impl::Session(Stream& stream,
                                              const std::shared_ptr<Connection>& conn,
                                              const std::string& remote_addr, int remote_port) {
  auto& socket = beast::get_lowest_layer(stream);
  beast::flat_buffer buffer;
  size_t served = 0;
  for (;;) {
    conn->busy = false;
    if (stopping.load()) co_return;
    if (buffer.size() == 0) {
      // Waiting for the next request: the connection holds this buffer and nothing else.
      socket.expires_after(std::chrono::milliseconds(options.idle_timeout_ms));
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kAwait);
      if (ec) co_return;
      buffer.commit(n);
    }
    conn->busy = true;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(kHeadLimit);
    parser.body_limit(options.max_body_bytes);
    parser.eager(false);
    socket.expires_after(std::chrono::milliseconds(options.header_timeout_ms));
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, kAwait);
    if (hec) {
      if (hec == beast::error::timeout || hec == net::error::operation_aborted ||
          hec == bhttp::error::end_of_stream || hec == net::error::eof ||
          hec == net::error::connection_reset) {
        co_return;
      }
      int status = 400;
      if (hec == bhttp::error::body_limit) status = 413;  // a Content-Length past the limit
      if (hec == bhttp::error::header_limit) {
        // A request line longer than the URI limit is a 414; a long header is a 400.
        const auto* data = static_cast<const char*>(buffer.data().data());
        const std::string_view head(data, buffer.size());
        const size_t eol = head.find("\r\n");
        if (eol == std::string_view::npos || eol > options.max_uri_bytes) status = 414;
      }
      co_await Refuse(stream, status, 11);
      co_return;
    }
    auto& head = parser.get();
    const unsigned version = head.version();
    if ((version != 10 && version != 11) || !KnownMethod(head.method_string())) {
      co_await Refuse(stream, 400, 11);
      co_return;
    }
    if (head.target().size() > options.max_uri_bytes) {
      co_await Refuse(stream, 414, version);
      co_return;
    }
    if (!WellFormedTarget(head.target())) {
      co_await Refuse(stream, 400, version);
      co_return;
    }
    bool long_line = false;
    for (const auto& field : head) {
      if (field.name_string().size() + field.value().size() + 2 > options.max_header_line_bytes) {
        long_line = true;
      }
    }
    if (long_line) {
      co_await Refuse(stream, 400, version);
      co_return;
    }
    if (!parser.is_done()) {
      if (beast::iequals(head[bhttp::field::expect], "100-continue")) {
        bhttp::response<bhttp::empty_body> go{bhttp::status::continue_, version};
        socket.expires_after(std::chrono::milliseconds(options.write_timeout_ms));
        auto [wec, wn] = co_await bhttp::async_write(stream, go, kAwait);
        if (wec) co_return;
      }
      socket.expires_after(std::chrono::milliseconds(options.read_timeout_ms));
      auto [bec, bn] = co_await bhttp::async_read(stream, buffer, parser, kAwait);
      if (bec) {
        if (bec == bhttp::error::body_limit) {
          co_await Refuse(stream, 413, version);
        } else if (bec != beast::error::timeout && bec != bhttp::error::end_of_stream &&
                   bec != net::error::eof) {
          co_await Refuse(stream, 400, version);
        }
        co_return;
      }
    }
    auto ex = std::make_shared<Exchange>();
    ex->version = version;
    Request& req = ex->request;
    auto& msg = parser.get();
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.path = req.target.substr(0, req.target.find('?'));
    req.headers.reserve(8);
    for (const auto& field : msg) {
      req.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    req.body = std::move(msg.body());
    req.remote_addr = remote_addr;
    req.remote_port = remote_port;
    ++served;
    ex->keep_alive =
        msg.keep_alive() && !stopping.load() &&
        (options.keep_alive_max_requests == 0 || served < options.keep_alive_max_requests);
    bool keep = false;
    co_await Answer(stream, ex, &keep);
    if (!keep) co_return;
  }
}

template <class Stream>
net::awaitable<void> Transport::Impl::Answer(Stream& stream, std::shared_ptr<Exchange> ex,
                                             bool* keep) {
  *keep = false;
  const auto executor = co_await net::this_coro::executor;
  Request& req = ex->request;
  Response& res = ex->response;
  req.context = RunContext::kIoThread;
  handler->Handle(req, res);
  if (res.defer != WorkLane::kNone || res.chunked_provider != nullptr) {
    // The handler blocks (or streams a body): on a worker of its lane, while this coroutine waits
    // on a timer that the worker cancels when done (or that ends the wait of a shed query).
    const WorkLane lane = res.defer != WorkLane::kNone ? res.defer : WorkLane::kOther;
    const bool rerun = res.defer != WorkLane::kNone;
    if (rerun) res = Response();
    const bool chunked = ex->version == 11;
    const bool head_only = req.method == "HEAD";
    auto timer = std::make_shared<net::steady_timer>(executor);
    auto phase = std::make_shared<std::atomic<JobPhase>>(JobPhase::kQueued);
    auto finished_whole = std::make_shared<bool>(false);
    // Whether it found no worker idle (it waits for a query slot: SlotOutcome::kQueued).
    auto behind_busy = std::make_shared<std::atomic<bool>>(false);
    const Clock::time_point submitted = Clock::now();
    auto job = [this, ex, timer, phase, finished_whole, behind_busy, executor, rerun, chunked,
                head_only, &stream] {
      JobPhase queued = JobPhase::kQueued;
      if (!phase->compare_exchange_strong(queued, JobPhase::kRunning)) return;
      if (rerun) {
        ex->request.context = RunContext::kWorker;
        ex->request.queued = behind_busy->load();
        handler->Handle(ex->request, ex->response);
      }
      Response& r = ex->response;
      if (r.chunked_provider != nullptr) {
        BridgeSink<Stream> sink(this, stream, executor, chunked);
        bool whole = false;
        if (sink.Head(*ex)) {
          handler->Answered(r.status);
          if (!head_only) {
            bool produced = false;
            try {
              produced = r.chunked_provider(sink);
            } catch (const std::exception& e) {
              spdlog::warn("http: a streamed answer failed: {}", e.what());
            }
            whole = produced && sink.Finish();
          } else {
            whole = true;
          }
        }
        if (r.chunked_releaser) r.chunked_releaser(whole);
        r.chunked_provider = nullptr;
        r.chunked_releaser = nullptr;
        *finished_whole = whole;
        r.status = 0;  // written: nothing more for the coroutine to write
      }
      phase->store(JobPhase::kDone);
      net::post(executor, [timer] { timer->cancel(); });
    };
    WorkerPool& pool = Pool(lane);
    bool submitted_ok = true;
    if (lane == WorkLane::kPeer && rerun) {
      submitted_ok = pool.TrySubmitNow(job);
    } else {
      behind_busy->store(pool.Submit(job));
    }
    if (!submitted_ok) {
      phase->store(JobPhase::kAbandoned);
    } else {
      const bool bounded = lane == WorkLane::kClient && rerun;
      timer->expires_at(bounded
                            ? submitted + std::chrono::milliseconds(options.client_queue_wait_ms)
                            : Clock::time_point::max());
      for (;;) {
        co_await timer->async_wait(kAwait);
        const JobPhase now = phase->load();
        if (now == JobPhase::kDone) break;
        if (now == JobPhase::kQueued && Clock::now() >= timer->expiry()) {
          JobPhase queued = JobPhase::kQueued;
          if (phase->compare_exchange_strong(queued, JobPhase::kAbandoned)) break;
          continue;
        }
        timer->expires_at(Clock::time_point::max());
      }
    }
    if (phase->load() == JobPhase::kAbandoned) {
      // No worker in time: the handler refuses its slot and answers 503, here.
      req.context = RunContext::kShed;
      res = Response();
      handler->Handle(req, res);
      if (res.chunked_provider != nullptr || res.defer != WorkLane::kNone) {
        res = Response();
        handler->Refuse(503, res);
        res.status = 503;
      }
    } else if (res.status == 0) {
      *keep = *finished_whole && ex->keep_alive;
      co_return;
    }
  }
  if (res.event_stream != nullptr) {
    co_await WriteEvents(stream, *ex);
    co_return;
  }
  *keep = co_await WriteWhole(stream, *ex) && ex->keep_alive;
}

template <class Stream>
net::awaitable<bool> Transport::Impl::WriteWhole(Stream& stream, Exchange& ex) {
  Response& res = ex.response;
  if (res.status < 100) {
    res = Response();
    handler->Refuse(500, res);
    res.status = 500;
  }
  handler->Answered(res.status);
  beast::get_lowest_layer(stream).expires_after(
      std::chrono::milliseconds(options.write_timeout_ms));
  if (ex.request.method == "HEAD") {
    bhttp::response<bhttp::empty_body> r;
    FillHead(r, ex, ex.keep_alive);
    r.content_length(res.body.size());
    auto [ec, n] = co_await bhttp::async_write(stream, r, kAwait);
    co_return !ec;
  }
  bhttp::response<bhttp::string_body> r;
  FillHead(r, ex, ex.keep_alive);
  r.body() = std::move(res.body);
  r.prepare_payload();
  auto [ec, n] = co_await bhttp::async_write(stream, r, kAwait);
  co_return !ec;
}

template <class Stream>
net::awaitable<bool> Transport::Impl::WriteEvents(Stream& stream, Exchange& ex) {
  const std::shared_ptr<EventStream> source = ex.response.event_stream;
  const auto executor = co_await net::this_coro::executor;
  auto& socket = beast::get_lowest_layer(stream);
  auto timer = std::make_shared<net::steady_timer>(executor);
  std::weak_ptr<net::steady_timer> weak = timer;
  source->SetWaker([executor, weak] {
    net::post(executor, [weak] {
      if (auto t = weak.lock()) t->cancel();
    });
  });
  struct Closed {
    EventStream* s;
    ~Closed() { s->Closed(); }
  } closed{source.get()};
  handler->Answered(ex.response.status);
  const bool chunked = ex.version == 11;
  {
    bhttp::response<bhttp::empty_body> head;
    FillHead(head, ex, false);
    if (chunked) head.chunked(true);
    bhttp::response_serializer<bhttp::empty_body> sr(head);
    socket.expires_after(std::chrono::milliseconds(options.write_timeout_ms));
    auto [ec, n] = co_await bhttp::async_write_header(stream, sr, kAwait);
    if (ec) co_return false;
  }
  auto write = [&](const std::string& text) -> net::awaitable<bool> {
    socket.expires_after(std::chrono::milliseconds(options.write_timeout_ms));
    if (!chunked) {
      auto [ec, n] = co_await net::async_write(stream, net::buffer(text), kAwait);
      co_return !ec;
    }
    auto [ec, n] = co_await net::async_write(stream, bhttp::make_chunk(net::buffer(text)), kAwait);
    co_return !ec;
  };
  std::string text;
  for (;;) {
    text.clear();
    const bool more = source->Next(&text);
    if (!text.empty() && !co_await write(text)) co_return false;
    if (!more) break;
    if (!text.empty()) continue;  // more may be ready already
    timer->expires_after(std::chrono::milliseconds(source->keepalive_ms()));
    auto [ec] = co_await timer->async_wait(kAwait);
    if (!ec) {  // nothing to send for the keep-alive interval
      text.clear();
      source->KeepAlive(&text);
      if (!co_await write(text)) co_return false;
    }
  }
  if (chunked) {
    socket.expires_after(std::chrono::milliseconds(options.write_timeout_ms));
    auto [ec, n] = co_await net::async_write(stream, bhttp::make_chunk_last(), kAwait);
    if (ec) co_return false;
  }
  co_return true;
}

Result<std::unique_ptr<Transport>> Transport::Start(const TransportOptions& options,
                                                    RequestHandler* handler,
                                                    access::ServerTlsContext tls) {
  if (options.io_threads < 1 || options.client_workers < 1 || options.peer_workers < 1 ||
      options.other_workers < 1) {
    return Status::InvalidArgument("http: io_threads and every lane's workers must be at least 1");
  }
  auto impl = std::make_unique<Impl>(options, handler);
  if (tls != nullptr) impl->tls.emplace(tls.release());
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(options.host, ec);
  if (ec) {
    return Status::InvalidArgument("http: cannot listen on " +
                                   HostPort{options.host, options.port}.ToString() + ": " +
                                   ec.message());
  }
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(options.port));
  const std::string where = HostPort{options.host, options.port}.ToString();
  auto fail = [&](const char* step) {
    return Status::IOError("http: cannot listen on " + where + " (" + step + ": " + ec.message() +
                           "; address in use, or not an address of this machine)");
  };
  impl->acceptor.open(endpoint.protocol(), ec);
  if (ec) return fail("open");
  // SO_REUSEADDR alone: a restart binds while old connections are in TIME_WAIT, and a port in
  // use is an error (SO_REUSEPORT would let a second instance silently take half the
  // connections).
  impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (address.is_v6()) impl->acceptor.set_option(net::ip::v6_only(true), ec);
  impl->acceptor.bind(endpoint, ec);
  if (ec) return fail("bind");
  // The kernel's largest backlog (net.core.somaxconn): a burst of connections waits there.
  impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  impl->port = impl->acceptor.local_endpoint(ec).port();
  Impl* self = impl.get();
  net::co_spawn(impl->io, self->Accept(), net::detached);
  for (int i = 0; i < options.io_threads; ++i) {
    impl->io_threads.emplace_back([self, i] {
      const std::string name = "http-io-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      for (;;) {
        try {
          self->io.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("http: an I/O thread caught: {}", e.what());
        }
      }
    });
  }
  return std::unique_ptr<Transport>(new Transport(std::move(impl)));
}

Transport::Transport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::shared_ptr<cluster::PeerTransport> Transport::StartPeerTransport(
    const cluster::PeerTransportOptions& options) {
  auto peers = std::make_shared<AsioPeerTransport>(impl_->io, options);
  std::lock_guard lock(impl_->stop_mu);
  if (impl_->stopped) {
    peers->Shutdown(0);
  } else {
    impl_->peer_transports.push_back(peers);
  }
  return peers;
}

Transport::~Transport() { Stop(); }

int Transport::port() const { return impl_->port; }

size_t Transport::open_connections() const { return impl_->connections.load(); }

uint64_t Transport::refused_connections() const { return impl_->refused.load(); }

void Transport::Stop(int64_t drain_ms) {
  std::lock_guard lock(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  Impl* self = impl_.get();
  self->stopping.store(true);
  net::post(self->io, [self] {
    beast::error_code ignored;
    self->acceptor.close(ignored);
  });
  {
    std::lock_guard conns_lock(self->conns_mu);
    for (const std::shared_ptr<Impl::Connection>& c : self->conns) {
      net::post(c->executor, [c] {
        if (!c->busy && c->close) c->close();
      });
    }
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(drain_ms);
  while (self->connections.load() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The answers in flight have finished (a fan-out among them waited on its peers here); what
  // else asks peers (the route map's reads) is cut now, while the I/O threads still run.
  for (const std::shared_ptr<AsioPeerTransport>& peers : self->peer_transports) {
    peers->Shutdown(1000);
  }
  self->halted.store(true);
  self->io.stop();
  for (std::thread& t : self->io_threads) t.join();
  self->io_joined.store(true);
  self->client.Stop();
  self->peer.Stop();
  self->other.Stop();
}

}  // namespace hotrow::http
