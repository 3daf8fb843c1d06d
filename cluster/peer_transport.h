#pragma once

// How this instance reaches its peers, as the cluster sees it: an asynchronous request and an
// asynchronous streamed body, implemented by the HTTP runtime (http/peer_transport.h: Boost.Beast
// on the server's own I/O threads). cluster/ knows nothing of sockets: it hands a request over and
// is called back once with the answer, so that no thread of its own waits on a peer.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace hotrow::access {
class Credentials;
}  // namespace hotrow::access

namespace hotrow::cluster {

// One peer's answer to a request.
struct PeerReply {
  std::string peer;
  bool asked = true;      // false: left out of the request (PeerClients::AskAll's `only`)
  bool answered = false;  // a 200 within the deadline
  int status = 0;         // HTTP status; 0 when none
  std::string body;
  std::string error;  // why not answered, for /v1/cluster and the log
};

struct PeerTransportOptions {
  // A peer that has not connected, taken the request or sent its next bytes within this long has
  // not answered (cluster.peer_timeout_ms). Default: 2 s.
  int64_t timeout_ms = 2000;
  // The scheme, the token, the peer token and the CAs peers are asked with; asked at every
  // request, never copied (access/credentials.h), so a SIGHUP reaches the next request. Not owned;
  // required.
  const access::Credentials* credentials = nullptr;
};

// Thread-safety: every method may be called from any thread, any number of times at once.
class PeerTransport {
 public:
  virtual ~PeerTransport() = default;

  // What a streamed body's reader says once it is done with a piece: true to read on, false to
  // stop (the request then ends as whole). May be called from any thread.
  using Resume = std::function<void(bool more)>;
  // One piece of a streamed body; valid until `resume` is called, which must be called once.
  using OnData = std::function<void(std::string_view data, Resume resume)>;

  // Sends `target` ("/v1/...?...") to `peer` ("host:port"): a GET, or a POST of `post_json`
  // (copied) when not null. Calls `done` exactly once with the reply: on one of the runtime's I/O
  // threads, or on the calling thread when the runtime is stopped. `done` must not block.
  virtual void Ask(const std::string& peer, const std::string& target, const std::string* post_json,
                   std::function<void(PeerReply)> done) = 0;

  // GETs `target` on `peer` and hands its body to `on_data` piece by piece (on an I/O thread), the
  // next piece read only once the last one was resumed: a slow reader slows the peer, and holds
  // no thread while it is slow. Then calls `done` once: `ok` when the peer answered 200 and the
  // body ended whole (or the reader stopped it), else `error` says why.
  virtual void Stream(const std::string& peer, const std::string& target, OnData on_data,
                      std::function<void(bool ok, std::string error)> done) = 0;
};

}  // namespace hotrow::cluster
