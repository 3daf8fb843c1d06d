#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "http/metrics.h"
#include "ingest/ingestor.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::live {
class StreamHub;
}  // namespace hotrow::live

namespace hotrow::access {
class Credentials;
}  // namespace hotrow::access

namespace hotrow::cluster {
class Cluster;
}  // namespace hotrow::cluster

namespace hotrow::http {

class Authenticator;

// The number of cores (at least 1): http.io_threads' default. Inline: config/ reads it, and the
// fuzz targets link config/ without http/.
inline int DefaultIoThreads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

struct HttpServerOptions {
  // "host:port" to listen on ("[::1]:8080" for IPv6). Port 0 picks a free port: see port().
  // Default: loopback only, "127.0.0.1:8080".
  std::string listen = "127.0.0.1:8080";
  // I/O threads (http.io_threads): they read requests, answer health checks and cached latest-N,
  // and write every answer and stream; nothing on them waits. Default: the number of cores.
  int io_threads = DefaultIoThreads();
  // Open connections at most, streams included (http.max_connections); more are closed as they
  // are accepted, and counted. Default: 10000.
  size_t max_connections = 10000;
  // A connection that sends no request for this long is closed (http.idle_timeout). Default: 60 s.
  int64_t idle_timeout_ms = 60000;
  // A request head that is not whole this long after its first byte, or a TLS handshake not done
  // in that time, closes the connection (http.header_timeout): a client that trickles its head
  // holds its buffer and nothing else. Default: 10 s.
  int64_t header_timeout_ms = 10000;
  // Client queries (latest, range, scan, ...) worked on at once; one more waits up to
  // `queue_wait_ms` for a slot, then is answered 503. Each has a worker of its own (the client
  // lane), so /healthz, /readyz and /metrics are answered however many queries arrive. Default: 12.
  int max_queries = 12;
  // How long a client query beyond `max_queries` waits for a slot; 0: refused at once.
  // Default: 1 s.
  int64_t queue_wait_ms = 1000;
  // Peers' `?local=true` queries worked on at once, apart from the client queries' slots (they
  // never wait behind them); one more is answered 503 at once. Default: 48.
  int max_peer_queries = 48;
  // A request body, or a write (an answer, a chunk, a stream's message), that makes no progress
  // for this long closes the connection. Default: 5 s.
  int64_t read_timeout_ms = 5000;
  int64_t write_timeout_ms = 5000;
  // Requests served on one keep-alive connection before it is closed; 0: no limit. Default: 1000.
  size_t keep_alive_max_requests = 1000;
  // Largest request body read: POST /v1/latest takes up to 1000 ids of up to 256 bytes as JSON
  // strings; elsewhere this bounds what a client can make us read before it gets its 405.
  // Default: 1 MiB.
  size_t max_body_bytes = 1 << 20;
  // Live streams: a comment line is sent on a stream that had nothing to send for this long, so
  // that proxies keep it and a client that went away is found. Default: 15 s.
  int64_t stream_keepalive_ms = 15000;
  // Browsers' streams (http/stream_tokens.h): how long a token of POST /v1/stream-tokens opens
  // streams, and the monotonic clock that counts it (not owned; tests: a ManualClock).
  // Defaults: 60 s, MonotonicClock::Default().
  int64_t stream_token_ttl_ms = 60'000;
  const Clock* stream_token_clock = MonotonicClock::Default();
  // HTTPS: PEM files of the server's certificate (chain) and its private key
  // (access/tls.h), read once at Start. Both set: HTTPS only; both empty: plain HTTP. Ignored when
  // HttpBackend::credentials is set (a service's certificate is rotated there). Default: "".
  std::string tls_cert_file;
  std::string tls_key_file;
};

// What the HTTP API answers from. Nothing is owned; everything must outlive the HttpServer.
struct HttpBackend {
  store::EventStore* store = nullptr;          // required
  query::QueryEngine* engine = nullptr;        // required
  const ingest::Ingestor* ingestor = nullptr;  // null when this process does not ingest
  Metrics* metrics = nullptr;                  // required
  // The bearer-token gate (http/auth.h), asked before routing; null: no token needed.
  const Authenticator* auth = nullptr;
  // The certificate served over HTTPS, asked at each handshake (access/credentials.h: a reload
  // reaches new connections). Null: HttpServerOptions' TLS files, read once.
  const access::Credentials* credentials = nullptr;
  // The group's instances (cluster/cluster.h): GET /v1/cluster, ?local=true, and the fan-out of
  // every query when peers are configured. Null: none of these (404 and 400).
  cluster::Cluster* cluster = nullptr;
  // The live streams' hub (live/stream_hub.h), fed by the store. Null: the stream routes are 404.
  live::StreamHub* hub = nullptr;
};

// The HTTP API of CONTRACT.md, on the event-driven transport of http/transport.h (Boost.Beast),
// over HTTPS when TLS files are given:
//   GET /v1/events/{id}/latest?n=N        GET /v1/events/{id}?from=T&to=T[&limit=L][&order=O]
//   GET /v1/scan?from=T&to=T[&limit=L]    (NDJSON, chunked, streamed)
//   GET /v1/latest[?prefix=P&limit=L&after=C]   GET /v1/latest?ids=A,B[&n=N]   POST /v1/latest
//   GET /v1/events/{id}/series?field=F&from=T&to=T&(step=S|max_points=K)[&agg=...]
//   GET /healthz   GET /readyz   GET /metrics   GET /v1/stats
//   GET /v1/events/{id}/stream   GET /v1/latest/stream   GET /v1/index/{f}/{v}/stream   (SSE)
//
// Operation: every request is routed from its raw target (never from a decoded path), so
// an id segment is percent-decoded exactly once and may hold any byte, '/' included as %2F.
// Every answer that is not a success carries {"error": "..."} naming what was wrong: 400 for a bad
// parameter (unknown, repeated, missing, out of range, not a time), 404 for an unknown path, 405
// for a method other than GET (or POST on /v1/latest) on a known path, 414/413/400 for what the
// transport refuses before routing (URI over 8 KiB, body too large, malformed request line or
// headers), 503 when the query slots are taken or the engine is busy. Exceptions stop at this
// boundary: no bad input yields 500.
//
// A range with a limit over query::kSmallQueryLimit is streamed the same way (chunked, flushed
// every ~32 KiB); smaller ones, and latest-N, are answered whole. Scans stream from a worker
// while the engine produces them, through a buffer of at most about 32 KiB that is flushed as it
// fills or every 50 ms; a client that goes away or stops reading stops the scan. A scan that fails
// after its first byte ends with an
// {"error": ...} line and no final chunk, so a client can tell a cut answer from a whole one.
//
// Resources: `io_threads` I/O threads (http-io-N) that hold every connection and stream; workers
// for what blocks: `max_queries` for client queries (http-query-N), `max_peer_queries` for peers'
// (http-peer-N) and 2 for the rest (http-work-N). No thread per connection, stream or request;
// ingestion runs on its own threads and never waits for HTTP.
//
// Thread-safety: Stop() may be called from any one thread; the rest is internal.
class HttpServer {
 public:
  // Binds `options.listen` and starts serving. Fails with InvalidArgument for a malformed listen
  // address or a TLS file that cannot be used (naming it), and IOError when the address cannot be
  // bound (in use, not local).
  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                   const HttpBackend& backend);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port bound (the one chosen when the configured port was 0), "host:port", and the URL
  // clients use: "https://host:port" with TLS files, else "http://host:port".
  int port() const;
  std::string address() const;
  std::string url() const;

  // Refuses new connections, makes running scans stop at their next event, ends every stream
  // (`event: closed`), and joins every thread once the requests in progress are answered.
  // Idempotent.
  void Stop();

  // After access::Credentials::Reload (SIGHUP): every stream opened with a token that is no longer
  // the token is told why (`event: closed`) and ends.
  void AccessReloaded();

  // Connections open now, and those refused past max_connections since the start.
  size_t open_connections() const;
  uint64_t refused_connections() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Asks `server`'s own GET /healthz over loopback (127.0.0.1 or ::1 when it listens on every
// address), in its scheme; a TLS probe does not verify the certificate, since it is this process
// talking to itself. Ok when the answer is 200 within `timeout_ms` to connect and as much to read;
// else IOError naming what failed. Proves that the listener accepts and a connection thread
// answers (a thread is always kept free for /healthz: Config's query.max_concurrent check), which
// a bound socket alone does not. Used by the service manager's watchdog (service/watchdog.h).
Status ProbeHealthz(const HttpServer& server, int timeout_ms);

// Splits "host:port" or "[v6]:port". Port must be 0..65535. On error returns InvalidArgument
// naming what was expected.
Status ParseListenAddress(const std::string& listen, std::string* host, int* port);

}  // namespace hotrow::http
