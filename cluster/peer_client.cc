#include "cluster/peer_client.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>

#include "query/thread_pool.h"

namespace hotrow::cluster {

namespace {

// httplib's timeouts as (seconds, microseconds).
void SetTimeouts(httplib::Client* client, int64_t ms) {
  const time_t sec = static_cast<time_t>(ms / 1000);
  const time_t usec = static_cast<time_t>((ms % 1000) * 1000);
  client->set_connection_timeout(sec, usec);
  client->set_read_timeout(sec, usec);
  client->set_write_timeout(sec, usec);
}

// Idle keep-alive clients kept per peer.
constexpr size_t kMaxIdlePerPeer = 16;

}  // namespace

PeerClients::PeerClients(PeerClientOptions options) : options_(std::move(options)) {
  if (!options_.peers.empty()) {
    const int threads = static_cast<int>(std::min<size_t>(64, 4 * options_.peers.size()));
    pool_ = std::make_unique<query::ThreadPool>(threads, "hotrow-peer");
  }
}

PeerClients::~PeerClients() = default;

PeerClients::Pooled PeerClients::Take(const std::string& peer) {
  const uint64_t generation = options_.credentials->generation();
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Pooled>& idle = idle_[peer];
    while (!idle.empty()) {
      Pooled pooled = std::move(idle.back());
      idle.pop_back();
      // Made with older credentials: dropped, so that the new token and CAs are used.
      if (pooled.generation == generation) return pooled;
    }
  }
  const std::shared_ptr<const access::CredentialsSnapshot> now = options_.credentials->Current();
  Pooled pooled;
  pooled.generation = now->generation;
  pooled.client =
      std::make_unique<httplib::Client>(std::string(options_.credentials->scheme()) + "://" + peer);
  pooled.client->set_keep_alive(true);
  SetTimeouts(pooled.client.get(), options_.timeout_ms);
  pooled.configured = options_.credentials->ConfigurePeerClient(*now, pooled.client.get());
  return pooled;
}

void PeerClients::Return(const std::string& peer, Pooled pooled) {
  if (pooled.generation != options_.credentials->generation()) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Pooled>& idle = idle_[peer];
  if (idle.size() < kMaxIdlePerPeer) idle.push_back(std::move(pooled));
}

std::string PeerClients::Explain(const std::string& peer, const Pooled& pooled, int error) {
  const auto e = static_cast<httplib::Error>(error);
  std::string why = httplib::to_string(e);
  const bool tls = options_.credentials->tls();
  if (tls && e == httplib::Error::SSLServerVerification) {
    const long verify = pooled.client->get_openssl_verify_result();
    return why + ": the peer's certificate " +
           (verify != 0 ? "failed verification (error " + std::to_string(verify) + ")"
                        : std::string("does not name ") + peer) +
           " against cluster.peer_ca (or the system's CAs when unset)";
  }
  // A TLS handshake that fails, or a plain request that gets no HTTP answer back, is what a peer
  // serving the other scheme causes: ask its open /healthz that way, once, without a token.
  const bool maybe_mixed = tls ? e == httplib::Error::SSLConnection
                               : e == httplib::Error::Read || e == httplib::Error::Unknown;
  if (!maybe_mixed) return why;
  httplib::Client probe(std::string(tls ? "http" : "https") + "://" + peer);
  SetTimeouts(&probe, std::min<int64_t>(options_.timeout_ms, 1000));
  probe.enable_server_certificate_verification(false);  // only to learn the scheme
  httplib::Result res = probe.Get("/healthz");
  if (res && res->status == 200) {
    return why + ": mixed setup: " + peer + " serves " + (tls ? "plain HTTP" : "HTTPS") +
           " while this instance serves " + (tls ? "HTTPS" : "plain HTTP") +
           "; every instance of a group must set http.tls_cert and http.tls_key alike";
  }
  return why;
}

PeerReply PeerClients::Ask(const std::string& peer, const std::string& target,
                           const std::string* post_json) {
  PeerReply reply;
  reply.peer = peer;
  try {
    Pooled pooled = Take(peer);
    if (!pooled.configured.ok()) {
      reply.error = pooled.configured.message();
      return reply;
    }
    httplib::Result res = post_json != nullptr
                              ? pooled.client->Post(target, *post_json, "application/json")
                              : pooled.client->Get(target);
    if (!res) {
      reply.error = Explain(peer, pooled, static_cast<int>(res.error()));
      return reply;
    }
    reply.status = res->status;
    reply.body = std::move(res->body);
    reply.answered = res->status == 200;
    if (!reply.answered) {
      reply.error = "HTTP " + std::to_string(res->status);
      if (res->status == 401) reply.error += ": the peer refused this instance's token";
    }
    Return(peer, std::move(pooled));
  } catch (const std::exception& e) {
    reply.error = e.what();
  }
  return reply;
}

std::vector<PeerReply> PeerClients::AskAll(const std::string& target,
                                           const std::function<void()>& meanwhile,
                                           const std::string* post_json,
                                           const std::vector<bool>* only) {
  std::vector<PeerReply> replies(options_.peers.size());
  if (only != nullptr) {
    // The peers left out, and the others asked as a smaller group.
    std::vector<std::string> asked;
    std::vector<size_t> where;
    for (size_t i = 0; i < replies.size(); ++i) {
      replies[i].peer = options_.peers[i];
      if (i < only->size() && (*only)[i]) {
        asked.push_back(options_.peers[i]);
        where.push_back(i);
      } else {
        replies[i].asked = false;
        replies[i].error = "not asked";
      }
    }
    std::vector<PeerReply> got = AskPeers(asked, target, meanwhile, post_json);
    for (size_t k = 0; k < got.size(); ++k) replies[where[k]] = std::move(got[k]);
    return replies;
  }
  return AskPeers(options_.peers, target, meanwhile, post_json);
}

std::vector<PeerReply> PeerClients::AskEach(const std::vector<std::string>& targets,
                                            const std::function<void()>& meanwhile,
                                            const std::string* post_json) {
  std::vector<PeerReply> replies(options_.peers.size());
  std::vector<std::string> asked, asked_targets;
  std::vector<size_t> where;
  for (size_t i = 0; i < replies.size(); ++i) {
    replies[i].peer = options_.peers[i];
    if (i < targets.size() && !targets[i].empty()) {
      asked.push_back(options_.peers[i]);
      asked_targets.push_back(targets[i]);
      where.push_back(i);
    } else {
      replies[i].asked = false;
      replies[i].error = "not asked";
    }
  }
  std::vector<PeerReply> got = AskPeers(asked, asked_targets, meanwhile, post_json);
  for (size_t k = 0; k < got.size(); ++k) replies[where[k]] = std::move(got[k]);
  return replies;
}

std::vector<PeerReply> PeerClients::AskPeers(const std::vector<std::string>& peers,
                                             const std::string& target,
                                             const std::function<void()>& meanwhile,
                                             const std::string* post_json) {
  return AskPeers(peers, std::vector<std::string>(peers.size(), target), meanwhile, post_json);
}

std::vector<PeerReply> PeerClients::AskPeers(const std::vector<std::string>& peers,
                                             const std::vector<std::string>& targets,
                                             const std::function<void()>& meanwhile,
                                             const std::string* post_json) {
  std::vector<PeerReply> replies(peers.size());
  if (replies.empty()) {
    if (meanwhile) meanwhile();
    return replies;
  }
  // The work: one request per peer, then `meanwhile` (task n). Each task is run by whoever claims
  // it first. This thread sends the last request itself at once, while pool threads take the
  // rest; then it takes whatever no pool thread has started yet. On a busy machine a pool thread
  // may be woken long after it was asked (DESIGN.md, "Queries": thread hops are expensive here),
  // so no task waits for one when this thread is free.
  const size_t n = replies.size();
  const size_t tasks = n + (meanwhile ? 1 : 0);
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
    std::vector<std::atomic<bool>> claimed;
    explicit Shared(size_t count) : left(count), claimed(count) {}
  };
  auto shared = std::make_shared<Shared>(tasks);
  auto run = [this, shared, n, &peers, &replies, &targets, &meanwhile, post_json](size_t i) {
    if (shared->claimed[i].exchange(true)) return;
    if (i < n) {
      replies[i] = Ask(peers[i], targets[i], post_json);
    } else {
      meanwhile();
    }
    std::lock_guard<std::mutex> lock(shared->mu);
    if (--shared->left == 0) shared->cv.notify_all();
  };
  for (size_t i = 0; i < tasks; ++i) {
    if (i != n - 1) pool_->Submit([run, i] { run(i); });
  }
  run(n - 1);
  for (size_t i = tasks; i-- > 0;) run(i);  // the ones no pool thread has started
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->left == 0; });  // each request has its timeouts
  return replies;
}

bool PeerClients::Stream(const std::string& peer, const std::string& target,
                         const std::function<bool(const char*, size_t)>& on_data,
                         std::string* error) {
  Pooled pooled = Take(peer);
  if (!pooled.configured.ok()) {
    *error = pooled.configured.message();
    return false;
  }
  int status = 0;
  bool stopped = false;
  httplib::Result res = pooled.client->Get(
      target,
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t length) {
        if (!on_data(data, length)) stopped = true;
        return !stopped;
      });
  if (!res) {
    if (stopped) return true;
    *error = status != 0 && status != 200 ? "HTTP " + std::to_string(status)
                                          : Explain(peer, pooled, static_cast<int>(res.error()));
    return false;
  }
  if (res->status != 200) {
    *error = "HTTP " + std::to_string(res->status);
    return false;
  }
  Return(peer, std::move(pooled));
  return true;
}

}  // namespace hotrow::cluster
