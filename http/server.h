#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

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

struct HttpServerOptions {
  // "host:port" to listen on ("[::1]:8080" for IPv6). Port 0 picks a free port: see port().
  // Default: loopback only, "127.0.0.1:8080".
  std::string listen = "127.0.0.1:8080";
  // Connection threads at most. A connection holds one for as long as it is open (cpp-httplib
  // serves a keep-alive connection on one thread), so this also bounds the connections served at
  // once; the threads are started as connections need them and kept. Default: 256.
  int threads = 256;
  // Accepted connections waiting for a thread. When full, the acceptor waits and the kernel's
  // listen backlog holds the rest. Default: 256.
  size_t queued_connections = 256;
  // Client queries (latest, range, scan, ...) worked on at once; one more waits up to
  // `queue_wait_ms` for a slot, then is answered 503. Kept below `threads` so that /healthz,
  // /readyz and /metrics are answered however many queries arrive. Default: 12.
  int max_queries = 12;
  // How long a client query beyond `max_queries` waits for a slot; 0: refused at once.
  // Default: 1 s.
  int64_t queue_wait_ms = 1000;
  // Peers' `?local=true` queries worked on at once, apart from the client queries' slots (they
  // never wait behind them); one more is answered 503 at once. Default: 48.
  int max_peer_queries = 48;
  // A read or write on a connection that makes no progress for this long closes it. Default: 5 s.
  int64_t read_timeout_ms = 5000;
  int64_t write_timeout_ms = 5000;
  // Requests served on one keep-alive connection, and how long it may stay idle. Defaults: 100, 5
  // s.
  size_t keep_alive_max_requests = 100;
  int64_t keep_alive_timeout_ms = 5000;
  // Largest request body read: POST /v1/latest takes up to 1000 ids of up to 256 bytes as JSON
  // strings; elsewhere this bounds what a client can make us read before it gets its 405.
  // Default: 1 MiB.
  size_t max_body_bytes = 1 << 20;
  // Live streams: a comment line is sent on a stream that had nothing to send for this long, so
  // that proxies keep it and a client that went away is found. Default: 15 s.
  int64_t stream_keepalive_ms = 15000;
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

// The HTTP API of CONTRACT.md, on cpp-httplib, over HTTPS when TLS files are given:
//   GET /v1/events/{id}/latest?n=N        GET /v1/events/{id}?from=T&to=T[&limit=L][&order=O]
//   GET /v1/scan?from=T&to=T[&limit=L]    (NDJSON, chunked, streamed)
//   GET /v1/latest[?prefix=P&limit=L&after=C]   GET /v1/latest?ids=A,B[&n=N]   POST /v1/latest
//   GET /v1/events/{id}/series?field=F&from=T&to=T&(step=S|max_points=K)[&agg=...]
//   GET /healthz   GET /readyz   GET /metrics   GET /v1/stats
//   GET /v1/events/{id}/stream   GET /v1/latest/stream   GET /v1/index/{f}/{v}/stream   (SSE)
//
// Operation: every request is routed from its raw target (never from a path httplib decoded), so
// an id segment is percent-decoded exactly once and may hold any byte, '/' included as %2F.
// Every answer that is not a success carries {"error": "..."} naming what was wrong: 400 for a bad
// parameter (unknown, repeated, missing, out of range, not a time), 404 for an unknown path, 405
// for a method other than GET (or POST on /v1/latest) on a known path, 414/413/400 for what httplib
// refuses before routing (URI over 8 KiB, body too large, malformed request line or headers), 503
// when the query slots are taken or the engine is busy. Exceptions stop at this boundary: no bad
// input yields 500.
//
// A range with a limit over query::kSmallQueryLimit is streamed the same way (chunked, flushed
// every ~32 KiB); smaller ones, and latest-N, are answered whole. Scans stream from the connection's thread while the engine produces them, through a buffer of
// at most about 32 KiB that is flushed as it fills or every 50 ms; a client that goes away or
// stops reading stops the scan. A scan that fails after its first byte ends with an
// {"error": ...} line and no final chunk, so a client can tell a cut answer from a whole one.
//
// Resources: `threads` connection threads (named http-N), one acceptor (http-listen), and one
// thread per open live stream (the connection's, no longer counted in `threads`; the hub bounds
// them by http.max_streams); nothing else; ingestion runs on its own threads and never waits for HTTP.
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

  // Refuses new connections, makes running scans stop at their next event, and joins every
  // thread once the requests in progress are answered. Idempotent.
  void Stop();

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
