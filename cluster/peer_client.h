#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "access/credentials.h"
#include "cluster/peer_transport.h"

namespace hotrow::cluster {

struct PeerClientOptions {
  // The other instances, "host:port" (cluster.peers without this one). Default: none.
  std::vector<std::string> peers;
  // A peer that has not connected or sent its next bytes within this long has not answered
  // (cluster.peer_timeout_ms). Default: 2 s.
  int64_t timeout_ms = 2000;
  // The scheme, the token and the CAs peers are asked with; asked at every request, never copied
  // (access/credentials.h). Not owned; required.
  const access::Credentials* credentials = nullptr;
};

// How an instance asks its peers (CONTRACT.md, "Cluster mode in production settings"): every peer
// in parallel, through the PeerTransport the HTTP server runs (http/peer_transport.h: the
// server's own I/O threads, keep-alive connections per peer, the scheme this instance serves, the
// current token and CAs at every request, and an error that says when a peer serves the other
// scheme). Nothing here holds a thread while a peer answers: the asynchronous calls return at
// once and call back from the runtime; the blocking ones (AskAll, AskEach, Stream) wait on the
// calling thread alone, which runs `meanwhile` (this instance's own part) while the requests are
// in flight. No request is handed to another thread.
//
// Before a transport is attached (the HTTP server not started yet) and after it stopped, every
// request fails at once, saying so.
//
// Thread-safety: every method may be called from any thread. The blocking calls must not be made
// on the runtime's I/O threads (they would wait on themselves).
class PeerClients {
 public:
  explicit PeerClients(PeerClientOptions options);
  ~PeerClients();
  PeerClients(const PeerClients&) = delete;
  PeerClients& operator=(const PeerClients&) = delete;

  const PeerClientOptions& options() const { return options_; }

  // The runtime requests go through from now on (null: none). Requests in flight keep the one
  // they started on.
  void Attach(std::shared_ptr<PeerTransport> transport);
  bool attached() const;

  // Called once with every peer's reply, in the order of options().peers: on the thread of the
  // last reply (an I/O thread: it must not block), or on the calling thread when none is asked.
  using Replies = std::function<void(std::vector<PeerReply>)>;

  // GETs `target` ("/v1/...?...") on every peer in parallel, each within timeout_ms, and runs
  // `meanwhile` (this instance's own part) on the calling thread while they are in flight.
  // Returns once all are done; replies in the order of options().peers.
  // With `post_json`, each peer is sent a POST of that JSON body instead (a list of ids too long
  // for a URL).
  // With `only` (one entry per peer), only the peers it marks true are asked; the others'
  // replies say `asked` false.
  std::vector<PeerReply> AskAll(const std::string& target,
                                const std::function<void()>& meanwhile = nullptr,
                                const std::string* post_json = nullptr,
                                const std::vector<bool>* only = nullptr);
  // As AskAll without waiting: the replies go to `done`.
  void AskAllAsync(const std::string& target, const std::string* post_json,
                   const std::vector<bool>* only, Replies done);

  // As AskAll, with a target of its own per peer (`targets[i]` for options().peers[i]); a peer
  // whose target is empty is not asked (its reply says `asked` false).
  std::vector<PeerReply> AskEach(const std::vector<std::string>& targets,
                                 const std::function<void()>& meanwhile,
                                 const std::string* post_json = nullptr);
  void AskEachAsync(const std::vector<std::string>& targets, const std::string* post_json,
                    Replies done);

  // GETs `target` on `peer`, passing the body to `on_data` as it arrives (false from it stops),
  // on the calling thread: the runtime reads the next piece once `on_data` has returned. False
  // with `error` set when the peer did not answer 200 in time or the stream broke.
  bool Stream(const std::string& peer, const std::string& target,
              const std::function<bool(const char*, size_t)>& on_data, std::string* error);

 private:
  std::shared_ptr<PeerTransport> transport() const;

  const PeerClientOptions options_;
  mutable std::mutex mu_;
  std::shared_ptr<PeerTransport> transport_;  // GUARDED_BY(mu_)
};

}  // namespace hotrow::cluster
