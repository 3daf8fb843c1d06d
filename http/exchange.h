#pragma once

// One HTTP exchange as the handlers see it: the request read and the response to write. This is
// the seam between the transport (http/transport.h: Boost.Beast on Asio, which no handler
// includes) and the handlers of the API (query, device, index, admin, cluster, stream).
//
// An answer is one of three kinds:
// - a whole body (`body`, set by SetContent): the common case;
// - a streamed body (SetChunkedProvider): a producer that runs on a worker thread and writes
//   chunks through a DataSink as it reads them (a scan, a large range). A write returns once the
//   bytes are on their way; false means the client is gone and the producer should stop;
// - an event stream (SetEventStream): a live stream written by the transport's I/O thread as the
//   source has messages, holding no thread while it waits (http/stream_handlers.cc).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotrow::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Where the transport runs a handler. It first runs every request on the I/O thread that read it
// (kIoThread), where a handler must not block: it answers what takes microseconds (health, a
// cached latest-N) and otherwise defers (Response::Defer) to the workers of a lane, where it is run
// again (kWorker). A client query that waits for a worker longer than its queue wait is run once
// more on the I/O thread as kShed: its query slot is refused, and it answers 503 as any refused
// query does.
enum class RunContext { kWorker, kIoThread, kShed };

// The workers a deferred request runs on (http/transport.h): client queries (as many as their
// query slots, waiting up to query.queue_wait for one), peers' `?local=true` queries (their own
// slots, refused at once when none is free), and the rest that may block (metrics, stats, the
// opening of a stream).
enum class WorkLane { kNone, kClient, kPeer, kOther };

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // the raw request target: path and query string, not decoded
  std::string path;    // the target up to '?'
  Headers headers;     // as received
  std::string body;
  std::string remote_addr;
  int remote_port = 0;
  RunContext context = RunContext::kWorker;
  // A deferred request that waited in its lane's queue for a worker (kWorker only).
  bool queued = false;

  // Header names are compared without case (RFC 9110). The first one of that name.
  bool has_header(std::string_view name) const;
  std::string get_header_value(std::string_view name) const;
};

// Where a streamed body's producer writes. Not thread-safe: one producer writes.
class DataSink {
 public:
  virtual ~DataSink() = default;
  // Sends `size` bytes as a chunk; returns once the transport holds them (they may still be in
  // flight). False when the client is gone or the server stops: nothing more can be written.
  virtual bool write(const char* data, size_t size) = 0;
  // The answer is whole: the transport writes the last chunk. Without it the answer ends cut
  // (no last chunk, the connection closed), which a client tells from a whole one.
  virtual void done() = 0;
};

// Runs once, on a worker thread, after the handler returned. False: the answer was cut.
using ChunkedProvider = std::function<bool(DataSink& sink)>;
// Runs once when the answer is over, whatever happened; `whole` when the provider returned true.
using ChunkedReleaser = std::function<void(bool whole)>;

// A live stream's messages, pulled by the transport on its I/O thread (never blocking).
//
// Operation: the transport calls Next to take what is ready, writes it, and once Next returned
// nothing waits until the source calls the waker given to SetWaker, or until `keepalive` has
// passed (then it asks KeepAlive for a comment to send). Next returning false ends the stream
// after what it appended is written.
//
// Thread-safety: Next, KeepAlive and Closed run on one I/O thread at a time; the waker may be
// called from any thread, any number of times.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Installs the waker, once, before the first Next.
  virtual void SetWaker(std::function<void()> wake) = 0;
  // Appends what is ready to *out (possibly nothing). False: this is the end of the stream.
  virtual bool Next(std::string* out) = 0;
  // A comment line that keeps proxies and the client's connection alive.
  virtual void KeepAlive(std::string* out) = 0;
  // The stream is over (its end written, the client gone, or the server stopping); called once.
  virtual void Closed() = 0;
  // How long the stream may stay silent before KeepAlive. Default 15 s.
  virtual int64_t keepalive_ms() const { return 15000; }
};

struct Response {
  int status = -1;  // -1: no handler answered
  Headers headers;
  std::string body;
  std::string content_type;
  ChunkedProvider chunked_provider;
  ChunkedReleaser chunked_releaser;
  std::shared_ptr<EventStream> event_stream;
  // Set by a handler on the I/O thread that cannot answer there: run again on that lane.
  WorkLane defer = WorkLane::kNone;

  void Defer(WorkLane lane) { defer = lane; }

  // Sets (replaces) a header. Content-Type is given with the body, not here.
  void set_header(std::string_view name, std::string_view value);
  bool has_header(std::string_view name) const;
  std::string get_header_value(std::string_view name) const;
  void set_content(std::string content, std::string_view type);
  void set_chunked_content_provider(std::string_view type, ChunkedProvider provider,
                                    ChunkedReleaser releaser = nullptr);
  void set_event_stream(std::shared_ptr<EventStream> stream);
  bool streamed() const { return chunked_provider != nullptr || event_stream != nullptr; }
};

// Compares header names without case.
bool HeaderNameIs(std::string_view a, std::string_view b);

}  // namespace hotrow::http
