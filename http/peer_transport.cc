// The peers' client on Boost.Beast (http/peer_transport.h). With transport.cc, the only files of
// hotrow that include Beast and Asio.

#include "http/peer_transport.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "access/credentials.h"
#include "access/tls.h"
#include "common/host_port.h"

namespace hotrow::http {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Strand = net::strand<net::io_context::executor_type>;

constexpr auto kPeerAwait = net::as_tuple(net::use_awaitable);

// The client TLS context of one generation of the credentials: TLS 1.2 or newer, the peer's
// chain verified against cluster.peer_ca as that generation read it (or the system's CAs).
struct ClientTls {
  uint64_t generation = 0;
  std::shared_ptr<net::ssl::context> context;
  std::string error;  // not empty: the CAs were refused, and no peer may be asked
};

// One connection to a peer. Used by one request at a time, on `strand`.
struct PeerConnection {
  explicit PeerConnection(Strand s) : strand(std::move(s)) {}

  Strand strand;
  uint64_t generation = 0;
  std::shared_ptr<net::ssl::context> tls_context;  // outlives `tls`
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  bool reused = false;  // has answered a request before: the peer may have closed it since

  beast::tcp_stream& socket() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  void Close() {
    if (tls || plain) {
      beast::error_code ignored;
      socket().socket().close(ignored);
    }
  }
};

// Why a request failed, as the old client named it (the name first: "Connection", "Read", ...),
// with the system's words.
std::string Why(std::string_view name, const beast::error_code& ec) {
  if (ec == beast::error::timeout) return std::string(name) + ": timed out";
  return std::string(name) + ": " + ec.message();
}

bool IsIpAddress(const std::string& host) {
  beast::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// The addresses of `address`: an IP address as it is, with no resolver (whose first use starts a
// thread of Asio's own for getaddrinfo, and costs a hop to it per connection); a name through it.
net::awaitable<std::pair<beast::error_code, std::vector<tcp::endpoint>>> Endpoints(
    const HostPort& address) {
  std::vector<tcp::endpoint> endpoints;
  beast::error_code ec;
  const net::ip::address ip = net::ip::make_address(address.host, ec);
  if (!ec) {
    endpoints.emplace_back(ip, static_cast<unsigned short>(address.port));
    co_return std::pair(ec, std::move(endpoints));
  }
  tcp::resolver resolver(co_await net::this_coro::executor);
  auto [rec, results] =
      co_await resolver.async_resolve(address.host, std::to_string(address.port), kPeerAwait);
  for (const auto& entry : results) endpoints.push_back(entry.endpoint());
  co_return std::pair(rec, std::move(endpoints));
}

}  // namespace

// One request in flight, from Ask or Stream to its one `done`.
struct PeerCall {
  uint64_t id = 0;
  std::string peer;
  HostPort address;
  std::string target;
  std::optional<std::string> post_json;
  bool stream = false;
  std::function<void(cluster::PeerReply)> done;
  cluster::PeerTransport::OnData on_data;
  std::function<void(bool, std::string)> stream_done;
  std::optional<Strand> strand;
  std::shared_ptr<PeerConnection> conn;  // on `strand` only
  std::atomic<bool> finished{false};

  void Finish(cluster::PeerReply reply) {
    if (finished.exchange(true)) return;
    if (stream) {
      stream_done(reply.answered, std::move(reply.error));
    } else {
      done(std::move(reply));
    }
  }
};

struct AsioPeerTransport::Impl : std::enable_shared_from_this<AsioPeerTransport::Impl> {
  Impl(net::io_context& context, cluster::PeerTransportOptions o)
      : io(context), options(std::move(o)) {}

  net::io_context& io;
  const cluster::PeerTransportOptions options;
  std::atomic<uint64_t> opened{0};

  std::mutex mu;
  std::condition_variable ended;
  bool closed = false;                                                       // guarded by mu
  uint64_t next_id = 0;                                                      // guarded by mu
  std::map<uint64_t, std::shared_ptr<PeerCall>> calls;                       // guarded by mu
  std::map<std::string, std::vector<std::shared_ptr<PeerConnection>>> idle;  // guarded by mu
  ClientTls client_tls;                                                      // guarded by mu

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(options.timeout_ms);
  }
  // Whether Shutdown has begun: a request then opens no connection (nor a second one to retry on).
  bool Closing() {
    std::lock_guard lock(mu);
    return closed;
  }

  void Start(std::shared_ptr<PeerCall> call);
  ClientTls TlsFor(const access::CredentialsSnapshot& credentials);
  // A kept connection to `peer` of the current generation (older ones are closed), or null.
  std::shared_ptr<PeerConnection> TakeIdleLocked(const std::string& peer);
  void Return(const std::string& peer, std::shared_ptr<PeerConnection> conn);
  static net::awaitable<void> Run(std::shared_ptr<Impl> self, std::shared_ptr<PeerCall> call);
  // Opens `conn` to the call's peer; empty, or why not.
  net::awaitable<std::string> Open(PeerCall& call, PeerConnection& conn,
                                   const access::CredentialsSnapshot& credentials);
  // Sends the call's request on `s` and reads the answer into `reply` (or hands a stream's body
  // to the call's reader). `retry`: a kept connection failed before any byte of the answer;
  // `keep`: the connection may serve the next request.
  template <class S>
  net::awaitable<void> Exchange(S& s, PeerCall& call, PeerConnection& conn,
                                const access::CredentialsSnapshot& credentials,
                                cluster::PeerReply* reply, bool* retry, bool* keep);
  // Hands the first `size` bytes of `piece` to the call's reader and waits, without a thread, for
  // it to resume: whether to read on. The reader's Resume holds `piece`, so the bytes stay valid
  // for it even when the call is cut (Shutdown) before it resumed.
  net::awaitable<bool> Deliver(PeerCall& call, PeerConnection& conn,
                               std::shared_ptr<std::vector<char>> piece, size_t size);
  // Asks `address`'s /healthz in the other scheme than this instance's: whether it answers 200.
  net::awaitable<bool> ServesOtherScheme(const HostPort& address, bool tls_now);
  std::string Mixed(const std::string& peer, const std::string& why) const;
};

AsioPeerTransport::AsioPeerTransport(net::io_context& io, cluster::PeerTransportOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(options))) {}

AsioPeerTransport::~AsioPeerTransport() { Shutdown(0); }

uint64_t AsioPeerTransport::connections_opened() const { return impl_->opened.load(); }

void AsioPeerTransport::Ask(const std::string& peer, const std::string& target,
                            const std::string* post_json,
                            std::function<void(cluster::PeerReply)> done) {
  auto call = std::make_shared<PeerCall>();
  call->peer = peer;
  call->target = target;
  if (post_json != nullptr) call->post_json = *post_json;
  call->done = std::move(done);
  impl_->Start(std::move(call));
}

void AsioPeerTransport::Stream(const std::string& peer, const std::string& target, OnData on_data,
                               std::function<void(bool, std::string)> done) {
  auto call = std::make_shared<PeerCall>();
  call->peer = peer;
  call->target = target;
  call->stream = true;
  call->on_data = std::move(on_data);
  call->stream_done = std::move(done);
  impl_->Start(std::move(call));
}

void AsioPeerTransport::Impl::Start(std::shared_ptr<PeerCall> call) {
  cluster::PeerReply reply;
  reply.peer = call->peer;
  Result<HostPort> address = ParseHostPort(call->peer);
  if (!address.ok()) {
    reply.error = "not a peer address: " + address.status().message();
    call->Finish(std::move(reply));
    return;
  }
  call->address = std::move(address).value();
  std::unique_lock lock(mu);
  if (closed) {
    lock.unlock();
    reply.error = "this instance's HTTP server is not running";
    call->Finish(std::move(reply));
    return;
  }
  call->id = ++next_id;
  calls.emplace(call->id, call);
  // On the strand of the connection it uses first (a kept one's), so that the connection's
  // timer and the request never run at once.
  std::shared_ptr<PeerConnection> conn = TakeIdleLocked(call->peer);
  call->strand.emplace(conn ? conn->strand : net::make_strand(io));
  call->conn = std::move(conn);
  net::co_spawn(*call->strand, Run(shared_from_this(), call), net::detached);
}

std::shared_ptr<PeerConnection> AsioPeerTransport::Impl::TakeIdleLocked(const std::string& peer) {
  const uint64_t generation = options.credentials->generation();
  auto it = idle.find(peer);
  if (it == idle.end()) return nullptr;
  std::vector<std::shared_ptr<PeerConnection>>& kept = it->second;
  while (!kept.empty()) {
    std::shared_ptr<PeerConnection> conn = std::move(kept.back());
    kept.pop_back();
    // Made with older credentials: closed (on its strand), so that the new token and CAs apply.
    if (conn->generation == generation) return conn;
    net::post(conn->strand, [conn] { conn->Close(); });
  }
  return nullptr;
}

void AsioPeerTransport::Impl::Return(const std::string& peer,
                                     std::shared_ptr<PeerConnection> conn) {
  conn->reused = true;
  std::lock_guard lock(mu);
  if (closed || conn->generation != options.credentials->generation()) {
    conn->Close();
    return;
  }
  std::vector<std::shared_ptr<PeerConnection>>& kept = idle[peer];
  if (kept.size() < kMaxIdlePerPeer) {
    kept.push_back(std::move(conn));
  } else {
    conn->Close();
  }
}

ClientTls AsioPeerTransport::Impl::TlsFor(const access::CredentialsSnapshot& credentials) {
  std::lock_guard lock(mu);
  if (client_tls.context != nullptr && client_tls.generation == credentials.generation) {
    return client_tls;
  }
  ClientTls made;
  made.generation = credentials.generation;
  made.context = std::make_shared<net::ssl::context>(net::ssl::context::tls_client);
  SSL_CTX* ctx = made.context->native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  made.context->set_verify_mode(net::ssl::verify_peer);
  if (credentials.peer_cas != nullptr) {
    // The CAs read into this generation, never the file (which may have changed since).
    if (!credentials.peer_cas->VerifyWith(ctx)) {
      made.error = "cluster.peer_ca: OpenSSL refused the CAs of " +
                   options.credentials->options().peer_ca_file + " for a peer client";
    }
  } else {
    beast::error_code ignored;
    made.context->set_default_verify_paths(ignored);
  }
  client_tls = made;
  return made;
}

std::string AsioPeerTransport::Impl::Mixed(const std::string& peer, const std::string& why) const {
  const bool tls = options.credentials->tls();
  return why + ": mixed setup: " + peer + " serves " + (tls ? "plain HTTP" : "HTTPS") +
         " while this instance serves " + (tls ? "HTTPS" : "plain HTTP") +
         "; every instance of a group must set http.tls_cert and http.tls_key alike";
}

net::awaitable<void> AsioPeerTransport::Impl::Run(std::shared_ptr<Impl> self,
                                                  std::shared_ptr<PeerCall> call) {
  struct Ended {
    Impl* impl;
    uint64_t id;
    ~Ended() {
      std::lock_guard lock(impl->mu);
      impl->calls.erase(id);
      impl->ended.notify_all();
    }
  } ended{self.get(), call->id};
  cluster::PeerReply reply;
  reply.peer = call->peer;
  try {
    const std::shared_ptr<const access::CredentialsSnapshot> credentials =
        self->options.credentials->Current();
    // A kept connection the peer has closed meanwhile fails before any byte of the answer: the
    // request goes once more on a new one.
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (call->conn == nullptr) {
        call->conn = std::make_shared<PeerConnection>(*call->strand);
        std::string error = co_await self->Open(*call, *call->conn, *credentials);
        if (!error.empty()) {
          call->conn->Close();
          call->conn = nullptr;
          reply.error = std::move(error);
          break;
        }
      }
      reply = cluster::PeerReply();
      reply.peer = call->peer;
      bool retry = false, keep = false;
      std::shared_ptr<PeerConnection> conn = call->conn;
      if (conn->tls) {
        co_await self->Exchange(*conn->tls, *call, *conn, *credentials, &reply, &retry, &keep);
      } else {
        co_await self->Exchange(*conn->plain, *call, *conn, *credentials, &reply, &retry, &keep);
      }
      call->conn = nullptr;
      if (keep) {
        self->Return(call->peer, std::move(conn));
      } else {
        conn->Close();
      }
      if (!retry || self->Closing()) break;
    }
  } catch (const std::exception& e) {
    reply.answered = false;
    reply.error = e.what();
    if (call->conn) call->conn->Close();
    call->conn = nullptr;
  }
  call->Finish(std::move(reply));
}

net::awaitable<std::string> AsioPeerTransport::Impl::Open(
    PeerCall& call, PeerConnection& conn, const access::CredentialsSnapshot& credentials) {
  const std::string& host = call.address.host;
  auto [rec, endpoints] = co_await Endpoints(call.address);
  if (rec) co_return Why("Connection", rec);
  // Cut by Shutdown while resolving: no connection is opened (Close had none to close).
  if (Closing()) co_return std::string("Connection: this instance's HTTP server is stopping");
  conn.generation = credentials.generation;
  const bool tls = options.credentials->tls();
  if (tls) {
    ClientTls client = TlsFor(credentials);
    if (!client.error.empty()) co_return client.error;
    conn.tls_context = client.context;
    conn.tls.emplace(conn.strand, *client.context);
    SSL* ssl = conn.tls->native_handle();
    // The certificate must name the host asked: its IP address or DNS name (subjectAltName).
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (IsIpAddress(host)) {
      X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, host.c_str());
      X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    }
  } else {
    conn.plain.emplace(conn.strand);
  }
  beast::tcp_stream& socket = conn.socket();
  socket.expires_after(timeout());
  auto [cec, endpoint] = co_await socket.async_connect(endpoints, kPeerAwait);
  if (cec) co_return Why("Connection", cec);
  opened.fetch_add(1);
  beast::error_code ignored;
  socket.socket().set_option(tcp::no_delay(true), ignored);
  if (!tls) co_return std::string();
  socket.expires_after(timeout());
  auto [hec] = co_await conn.tls->async_handshake(net::ssl::stream_base::client, kPeerAwait);
  if (!hec) co_return std::string();
  const long verify = SSL_get_verify_result(conn.tls->native_handle());
  if (verify != X509_V_OK) {
    const bool name =
        verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH;
    co_return "SSLServerVerification: the peer's certificate " +
        (name ? "does not name " + call.peer
              : "failed verification (error " + std::to_string(verify) + ": " +
                    access::CertificateVerifyError(verify) + ")") +
        " against cluster.peer_ca (or the system's CAs when unset)";
  }
  // A handshake that fails otherwise, at once, is what a peer serving plain HTTP causes.
  std::string why = Why("SSLConnection", hec);
  if (hec == beast::error::timeout || hec == net::error::operation_aborted || Closing()) {
    co_return why;
  }
  if (co_await ServesOtherScheme(call.address, true)) why = Mixed(call.peer, why);
  co_return why;
}

template <class S>
net::awaitable<void> AsioPeerTransport::Impl::Exchange(
    S& s, PeerCall& call, PeerConnection& conn, const access::CredentialsSnapshot& credentials,
    cluster::PeerReply* reply, bool* retry, bool* keep) {
  *retry = false;
  *keep = false;
  bhttp::request<bhttp::string_body> req{call.post_json ? bhttp::verb::post : bhttp::verb::get,
                                         call.target, 11};
  req.set(bhttp::field::host, call.address.ToString());
  if (!credentials.token.empty())
    req.set(bhttp::field::authorization, "Bearer " + credentials.token);
  if (!credentials.peer_token.empty()) req.set(access::kPeerTokenHeader, credentials.peer_token);
  if (call.post_json) {
    req.set(bhttp::field::content_type, "application/json");
    req.body() = *call.post_json;
  }
  req.keep_alive(true);
  req.prepare_payload();
  beast::tcp_stream& socket = conn.socket();
  socket.expires_after(timeout());
  auto [wec, wn] = co_await bhttp::async_write(s, req, kPeerAwait);
  if (wec) {
    *retry = conn.reused && wec != beast::error::timeout;
    reply->error = Why("Write", wec);
    co_return;
  }
  // A failure before the answer's head was whole. With no byte of it on a kept connection, the
  // peer closed that connection meanwhile: sent again. Over plain HTTP to a peer serving HTTPS,
  // the peer answers no HTTP (nothing, or a TLS alert the parser refuses): asked in HTTPS.
  auto no_answer = [&](const beast::error_code& ec, bool got_some) -> net::awaitable<void> {
    reply->error = Why("Read", ec);
    // Timed out (a peer of the other scheme answers at once), or cut by Shutdown: no probe.
    if (ec == beast::error::timeout || ec == net::error::operation_aborted || Closing()) co_return;
    if (conn.reused && !got_some) {
      *retry = true;
      co_return;
    }
    if (!options.credentials->tls() && co_await ServesOtherScheme(call.address, false)) {
      reply->error = Mixed(call.peer, reply->error);
    }
  };
  auto status_error = [&](int status) {
    reply->error = "HTTP " + std::to_string(status);
    if (status == 401) reply->error += ": the peer refused this instance's token";
  };
  if (!call.stream) {
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit((std::numeric_limits<uint64_t>::max)());
    while (!parser.is_done()) {
      socket.expires_after(timeout());
      auto [ec, n] = co_await bhttp::async_read_some(s, conn.buffer, parser, kPeerAwait);
      if (ec) {
        if (!parser.is_header_done()) {
          co_await no_answer(ec, parser.got_some());
        } else {
          reply->error = Why("Read", ec);
        }
        co_return;
      }
    }
    auto& res = parser.get();
    reply->status = static_cast<int>(res.result_int());
    reply->body = std::move(res.body());
    reply->answered = reply->status == 200;
    if (!reply->answered) status_error(reply->status);
    *keep = res.keep_alive();
    co_return;
  }
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit((std::numeric_limits<uint64_t>::max)());
  socket.expires_after(timeout());
  auto [hec, hn] = co_await bhttp::async_read_header(s, conn.buffer, parser, kPeerAwait);
  if (hec) {
    co_await no_answer(hec, parser.got_some());
    co_return;
  }
  reply->status = static_cast<int>(parser.get().result_int());
  if (reply->status != 200) {
    status_error(reply->status);
    co_return;  // the connection is not kept: its body was not read
  }
  auto piece = std::make_shared<std::vector<char>>(64 << 10);
  while (!parser.is_done()) {
    parser.get().body().data = piece->data();
    parser.get().body().size = piece->size();
    socket.expires_after(timeout());
    auto [ec, n] = co_await bhttp::async_read_some(s, conn.buffer, parser, kPeerAwait);
    if (ec && ec != bhttp::error::need_buffer) {
      reply->error = Why("Read", ec);
      co_return;
    }
    const size_t got = piece->size() - parser.get().body().size;
    if (got == 0) continue;
    if (!co_await Deliver(call, conn, piece, got)) {
      reply->answered = true;  // the reader stopped: the rest is not read, the connection closed
      co_return;
    }
  }
  reply->answered = true;
  *keep = parser.get().keep_alive();
}

net::awaitable<bool> AsioPeerTransport::Impl::Deliver(PeerCall& call, PeerConnection& conn,
                                                      std::shared_ptr<std::vector<char>> piece,
                                                      size_t size) {
  struct Gate {
    explicit Gate(const Strand& strand) : timer(strand) {}
    net::steady_timer timer;
    bool resumed = false;  // on the strand only
    bool more = true;
  };
  auto gate = std::make_shared<Gate>(conn.strand);
  gate->timer.expires_at(net::steady_timer::time_point::max());
  const Strand strand = conn.strand;
  const std::string_view data(piece->data(), size);
  call.on_data(data, [gate, strand, piece = std::move(piece)](bool more) {
    net::post(strand, [gate, more] {
      gate->more = more;
      gate->resumed = true;
      gate->timer.cancel();
    });
  });
  while (!gate->resumed) co_await gate->timer.async_wait(kPeerAwait);
  co_return gate->more;
}

net::awaitable<bool> AsioPeerTransport::Impl::ServesOtherScheme(const HostPort& address,
                                                                bool tls_now) {
  // Once, without a token, only to learn the scheme: a plain GET of /healthz, or over TLS that
  // verifies nothing.
  const auto executor = co_await net::this_coro::executor;
  const auto limit = std::min(timeout(), std::chrono::milliseconds(1000));
  auto [rec, endpoints] = co_await Endpoints(address);
  if (rec) co_return false;
  bhttp::request<bhttp::empty_body> req{bhttp::verb::get, "/healthz", 11};
  req.set(bhttp::field::host, address.ToString());
  req.keep_alive(false);
  bhttp::response<bhttp::string_body> res;
  beast::flat_buffer buffer;
  if (tls_now) {
    beast::tcp_stream s(executor);
    s.expires_after(limit);
    auto [cec, ep] = co_await s.async_connect(endpoints, kPeerAwait);
    if (cec) co_return false;
    auto [wec, wn] = co_await bhttp::async_write(s, req, kPeerAwait);
    if (wec) co_return false;
    auto [ec, n] = co_await bhttp::async_read(s, buffer, res, kPeerAwait);
    co_return !ec && res.result_int() == 200;
  }
  net::ssl::context ctx(net::ssl::context::tls_client);
  ctx.set_verify_mode(net::ssl::verify_none);
  beast::ssl_stream<beast::tcp_stream> s(executor, ctx);
  beast::get_lowest_layer(s).expires_after(limit);
  auto [cec, ep] = co_await beast::get_lowest_layer(s).async_connect(endpoints, kPeerAwait);
  if (cec) co_return false;
  auto [hec] = co_await s.async_handshake(net::ssl::stream_base::client, kPeerAwait);
  if (hec) co_return false;
  auto [wec, wn] = co_await bhttp::async_write(s, req, kPeerAwait);
  if (wec) co_return false;
  auto [ec, n] = co_await bhttp::async_read(s, buffer, res, kPeerAwait);
  co_return !ec && res.result_int() == 200;
}

void AsioPeerTransport::Shutdown(int64_t wait_ms) {
  Impl& s = *impl_;
  std::map<std::string, std::vector<std::shared_ptr<PeerConnection>>> idle;
  std::vector<std::shared_ptr<PeerCall>> running;
  {
    std::lock_guard lock(s.mu);
    if (s.closed) return;
    s.closed = true;
    idle.swap(s.idle);
    for (const auto& [id, call] : s.calls) running.push_back(call);
  }
  // Kept connections close now, while the io_context they belong to still runs.
  for (auto& [peer, conns] : idle) {
    for (std::shared_ptr<PeerConnection>& conn : conns) {
      net::post(conn->strand, [conn] { conn->Close(); });
    }
  }
  for (const std::shared_ptr<PeerCall>& call : running) {
    net::post(*call->strand, [call] {
      if (call->conn) call->conn->Close();
    });
  }
  std::unique_lock lock(s.mu);
  s.ended.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return s.calls.empty(); });
  running.clear();
  for (const auto& [id, call] : s.calls) running.push_back(call);
  lock.unlock();
  // Still running (a stream's reader that has not resumed): answered here; its coroutine ends
  // with the io_context.
  for (const std::shared_ptr<PeerCall>& call : running) {
    cluster::PeerReply reply;
    reply.peer = call->peer;
    reply.error = "this instance's HTTP server is stopping";
    call->Finish(std::move(reply));
  }
}

}  // namespace hotrow::http
