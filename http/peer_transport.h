#pragma once

// The peers' client on the HTTP server's own runtime (cluster/peer_transport.h): Boost.Beast on
// the I/O threads of http::Transport, so that a request to a peer holds no thread while the peer
// answers. Made by Transport::StartPeerTransport; internal to http/.
//
// Operation:
// - Each request is a coroutine on a strand of the io_context. It takes an idle keep-alive
//   connection to its peer made with the current credentials' generation (at most
//   kMaxIdlePerPeer are kept per peer), or opens one: resolve (an IP address as it is; a name
//   through Asio's resolver, one thread of its own, unbounded by the timeout), connect, and over
//   HTTPS a handshake that verifies the peer's certificate against cluster.peer_ca (the system's
//   CAs when unset) and that it names the host asked. A connection made with an older generation is
//   closed instead of reused, so a SIGHUP's new token and CAs apply to the next request.
// - Every step (connect, handshake, write, each read) must make progress within
//   cluster.peer_timeout_ms. A kept connection that the peer closed meanwhile (its idle timeout)
//   fails before any byte of the answer: the request is sent once more on a new connection.
// - A failure that a peer serving the other scheme causes (a handshake that fails over HTTPS, an
//   answer that is not HTTP over plain HTTP) asks that peer's /healthz in the other scheme: the
//   error then says the setup is mixed.
// - Shutdown (Transport::Stop, before the I/O threads stop): requests in flight are cut and
//   answered as failed, later ones are refused at once on the calling thread.
//
// Thread-safety: every method may be called from any thread.

#include <cstdint>
#include <memory>
#include <string>

#include "cluster/peer_transport.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace hotrow::http {

class AsioPeerTransport final : public cluster::PeerTransport {
 public:
  // Idle keep-alive connections kept per peer.
  static constexpr size_t kMaxIdlePerPeer = 16;

  // `io` must run until Shutdown has returned.
  AsioPeerTransport(boost::asio::io_context& io, cluster::PeerTransportOptions options);
  ~AsioPeerTransport() override;
  AsioPeerTransport(const AsioPeerTransport&) = delete;
  AsioPeerTransport& operator=(const AsioPeerTransport&) = delete;

  void Ask(const std::string& peer, const std::string& target, const std::string* post_json,
           std::function<void(cluster::PeerReply)> done) override;
  void Stream(const std::string& peer, const std::string& target, OnData on_data,
              std::function<void(bool ok, std::string error)> done) override;

  // Refuses new requests, cuts those in flight and waits up to `wait_ms` for them to end; any
  // still running then (a stream whose reader holds a piece) is answered as failed, and its
  // coroutine ends with the io_context. Idempotent.
  void Shutdown(int64_t wait_ms);

  // Connections opened since the start (a test's count of reuse).
  uint64_t connections_opened() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace hotrow::http
