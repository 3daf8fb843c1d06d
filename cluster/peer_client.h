#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "access/credentials.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace hotrow::query {
class ThreadPool;
}  // namespace hotrow::query

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

// One peer's answer to a request.
struct PeerReply {
  std::string peer;
  bool asked = true;      // false: left out of the request (PeerClients::AskAll's `only`)
  bool answered = false;  // a 200 within the deadline
  int status = 0;         // HTTP status; 0 when none
  std::string body;
  std::string error;  // why not answered, for /v1/cluster and the log
};

// The HTTP clients an instance asks its peers with (CONTRACT.md, "Cluster mode in production
// settings"): the scheme this instance serves (https:// with http.tls_*, verified against
// cluster.peer_ca and naming the peer's host), the current token, keep-alive connections kept per
// peer. Clients are tied to one generation of the credentials: after a reload, idle clients of an
// older one are dropped instead of reused, so the next request carries the new token and checks
// the new CAs.
//
// A request that fails after the connection was made, in a way that a peer serving the other
// scheme causes, is told apart by asking that peer's /healthz in the other scheme: the error then
// says the setup is mixed (one instance on HTTPS, another on plain HTTP).
//
// Threads: a pool of named threads (hotrow-peer), owned and joined by the destructor.
// Thread-safety: every method may be called from any thread.
class PeerClients {
 public:
  explicit PeerClients(PeerClientOptions options);
  ~PeerClients();
  PeerClients(const PeerClients&) = delete;
  PeerClients& operator=(const PeerClients&) = delete;

  const PeerClientOptions& options() const { return options_; }

  // GETs `target` ("/v1/...?...") on every peer in parallel, each within timeout_ms, and runs
  // `meanwhile` (this instance's own part) meanwhile, on the calling thread or a pool thread,
  // whichever is free first. Returns once all are done; replies in the order of options().peers.
  // With `post_json`, each peer is sent a POST of that JSON body instead (a list of ids too long
  // for a URL).
  // With `only` (one entry per peer), only the peers it marks true are asked; the others'
  // replies say `asked` false.
  std::vector<PeerReply> AskAll(const std::string& target,
                                const std::function<void()>& meanwhile = nullptr,
                                const std::string* post_json = nullptr,
                                const std::vector<bool>* only = nullptr);

  // As AskAll, with a target of its own per peer (`targets[i]` for options().peers[i]); a peer
  // whose target is empty is not asked (its reply says `asked` false).
  std::vector<PeerReply> AskEach(const std::vector<std::string>& targets,
                                 const std::function<void()>& meanwhile,
                                 const std::string* post_json = nullptr);
  // GETs `target` on `peer`, passing the body to `on_data` as it arrives (false from it stops).
  // False with `error` set when the peer did not answer 200 in time or the stream broke.
  bool Stream(const std::string& peer, const std::string& target,
              const std::function<bool(const char*, size_t)>& on_data, std::string* error);

 private:
  struct Pooled {
    uint64_t generation = 0;
    std::unique_ptr<httplib::Client> client;
    Status configured;  // not ok: the client cannot verify as asked and must not be used
  };
  Pooled Take(const std::string& peer);
  void Return(const std::string& peer, Pooled pooled);
  PeerReply Ask(const std::string& peer, const std::string& target, const std::string* post_json);
  // AskAll over `peers` (a subset of options().peers), replies in their order.
  std::vector<PeerReply> AskPeers(const std::vector<std::string>& peers, const std::string& target,
                                  const std::function<void()>& meanwhile,
                                  const std::string* post_json);
  // The same with one target per peer.
  std::vector<PeerReply> AskPeers(const std::vector<std::string>& peers,
                                  const std::vector<std::string>& targets,
                                  const std::function<void()>& meanwhile,
                                  const std::string* post_json);
  // Why a request that failed with httplib error `error` failed, in words; asks the peer in the
  // other scheme when that may be the cause.
  std::string Explain(const std::string& peer, const Pooled& pooled, int error);

  const PeerClientOptions options_;
  std::unique_ptr<query::ThreadPool> pool_;
  std::mutex mu_;
  std::map<std::string, std::vector<Pooled>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace hotrow::cluster
