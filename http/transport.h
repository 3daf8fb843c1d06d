#pragma once

// The HTTP transport: Boost.Beast on Asio, with C++20 coroutines on a few I/O threads (DESIGN.md,
// "No thread waits on a socket"). This header and http/exchange.h are all the rest of hotrow sees
// of it: no Beast or Asio type crosses it, and only transport*.cc include them.
//
// Operation:
// - One coroutine per connection, on a strand of the I/O threads' io_context: it reads a request
//   head (within header_timeout of its first byte), its body (within read_timeout, chunked bodies
//   and `Expect: 100-continue` included), answers it, and reads the next. Pipelined requests wait
//   in the connection's read buffer and are answered in order. An idle connection holds its
//   buffer and nothing else (no thread), and is closed after idle_timeout.
// - Each request is handed to the RequestHandler on the I/O thread first (RunContext::kIoThread);
//   a handler that would block defers it to a lane (exchange.h, WorkLane), whose fixed workers run
//   it again while the coroutine waits without a thread. A client query that finds no worker free
//   within `client_queue_wait_ms` is answered as shed (RunContext::kShed); a peer query that finds
//   none free is shed at once.
// - A streamed body (scan, large range) is produced on the worker that ran its handler, which
//   writes each chunk through the connection's strand and waits for it (so a slow client slows
//   the scan, never the I/O thread); an event stream (SSE) is written by the connection's
//   coroutine whenever its source wakes it, holding no thread in between.
// - Connections past max_connections are accepted and closed at once, and counted; a failed
//   accept for want of file descriptors waits a moment instead of spinning.
// - Stop: the listener closes, idle connections are closed, answers in flight finish (streams are
//   ended by their sources: HttpServer::Stop closes the subscriptions first), then the I/O
//   threads and the workers are joined.
//
// Thread-safety: Stop and the accessors from any thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "access/tls.h"
#include "common/status.h"
#include "http/exchange.h"

namespace hotrow::cluster {
class PeerTransport;
struct PeerTransportOptions;
}  // namespace hotrow::cluster

namespace hotrow::http {

struct TransportOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: a free port (Transport::port())
  // I/O threads (http.io_threads). Default: 2.
  int io_threads = 2;
  // Open connections at most (http.max_connections); more are closed as accepted. Default: 10000.
  size_t max_connections = 10000;
  // A connection waiting for its next request this long is closed (http.idle_timeout).
  int64_t idle_timeout_ms = 60000;
  // A request head not whole this long after its first byte closes the connection
  // (http.header_timeout), as does a TLS handshake not done in that time.
  int64_t header_timeout_ms = 10000;
  // A request body that makes no progress for this long closes the connection.
  int64_t read_timeout_ms = 5000;
  // A write that makes no progress for this long closes the connection (an answer, a chunk, a
  // stream's message: a client that takes nothing for this long is gone).
  int64_t write_timeout_ms = 5000;
  // Largest request body; a larger one is answered 413.
  size_t max_body_bytes = 1 << 20;
  // Longest request target (414 past it) and header line (400 past it).
  size_t max_uri_bytes = 8192;
  size_t max_header_line_bytes = 8192;
  // Requests answered on one connection before it is closed; 0: no limit.
  size_t keep_alive_max_requests = 0;
  // Workers of each lane (exchange.h, WorkLane), started at Start and kept.
  int client_workers = 12;
  int peer_workers = 48;
  int other_workers = 2;
  // How long a client query may wait for a worker before it is shed.
  int64_t client_queue_wait_ms = 1000;
};

// What the transport asks of the API. Not owned; must outlive the Transport.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Answers `req` into `res` (or defers it: Response::Defer, from RunContext::kIoThread only).
  // Must not throw.
  virtual void Handle(Request& req, Response& res) = 0;
  // An answer the transport makes itself, before any handler saw the request: a malformed
  // request (400), a URI too long (414), a body too large (413). `res` gets its body.
  virtual void Refuse(int status, Response& res) = 0;
  // Every answer, once its head is written (for the metrics).
  virtual void Answered(int status) = 0;
};

class Transport {
 public:
  // Binds host:port (SO_REUSEADDR, the kernel's largest backlog) and starts the I/O threads and
  // the workers. `tls` (may be null: plain HTTP) serves HTTPS. IOError when the address cannot be
  // bound.
  static Result<std::unique_ptr<Transport>> Start(const TransportOptions& options,
                                                  RequestHandler* handler,
                                                  access::ServerTlsContext tls);
  ~Transport();  // Stop()s
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int port() const;
  // Connections open now, and those refused past max_connections since the start.
  size_t open_connections() const;
  uint64_t refused_connections() const;

  // Stops as the header says; waits up to `drain_ms` for answers in flight. Idempotent.
  void Stop(int64_t drain_ms = 10000);

  // A client of the group's other instances on these I/O threads (http/peer_transport.h): a
  // request to a peer holds no thread while it waits. It stops with the transport, after the
  // answers in flight (which may be waiting on peers) have finished: later requests fail at once.
  std::shared_ptr<cluster::PeerTransport> StartPeerTransport(
      const cluster::PeerTransportOptions& options);

  struct Impl;

 private:
  explicit Transport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotrow::http
