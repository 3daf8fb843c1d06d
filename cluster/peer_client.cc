#include "cluster/peer_client.h"

#include <condition_variable>
#include <optional>
#include <string_view>
#include <utility>

namespace hotrow::cluster {

namespace {

// What the replies of one AskEachAsync gather in until the last comes back.
struct Gathering {
  std::mutex mu;
  std::vector<PeerReply> replies;  // guarded by mu
  size_t left = 0;                 // guarded by mu
  PeerClients::Replies done;
};

// Waits on the calling thread for replies handed to a Replies callback.
struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<std::vector<PeerReply>> replies;  // guarded by mu

  PeerClients::Replies Callback(const std::shared_ptr<Waiter>& self) {
    return [self](std::vector<PeerReply> got) {
      std::lock_guard lock(self->mu);
      self->replies = std::move(got);
      self->cv.notify_all();
    };
  }
  std::vector<PeerReply> Wait() {
    // Each request has its timeouts, and a stopping runtime answers what it cuts.
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return replies.has_value(); });
    return std::move(*replies);
  }
};

constexpr const char* kNotRunning = "this instance's HTTP server is not running";

}  // namespace

PeerClients::PeerClients(PeerClientOptions options) : options_(std::move(options)) {}

PeerClients::~PeerClients() = default;

void PeerClients::Attach(std::shared_ptr<PeerTransport> transport) {
  std::lock_guard lock(mu_);
  transport_ = std::move(transport);
}

bool PeerClients::attached() const { return transport() != nullptr; }

std::shared_ptr<PeerTransport> PeerClients::transport() const {
  std::lock_guard lock(mu_);
  return transport_;
}

void PeerClients::AskAllAsync(const std::string& target, const std::string* post_json,
                              const std::vector<bool>* only, Replies done) {
  std::vector<std::string> targets(options_.peers.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    if (only == nullptr || (i < only->size() && (*only)[i])) targets[i] = target;
  }
  AskEachAsync(targets, post_json, std::move(done));
}

void PeerClients::AskEachAsync(const std::vector<std::string>& targets,
                               const std::string* post_json, Replies done) {
  auto gathering = std::make_shared<Gathering>();
  gathering->replies.resize(options_.peers.size());
  gathering->done = std::move(done);
  std::vector<size_t> asked;
  for (size_t i = 0; i < options_.peers.size(); ++i) {
    PeerReply& reply = gathering->replies[i];
    reply.peer = options_.peers[i];
    if (i < targets.size() && !targets[i].empty()) {
      asked.push_back(i);
    } else {
      reply.asked = false;
      reply.error = "not asked";
    }
  }
  gathering->left = asked.size();
  if (asked.empty()) {
    gathering->done(std::move(gathering->replies));
    return;
  }
  const std::shared_ptr<PeerTransport> runtime = transport();
  for (size_t i : asked) {
    auto arrived = [gathering, i](PeerReply reply) {
      std::unique_lock lock(gathering->mu);
      reply.asked = true;
      gathering->replies[i] = std::move(reply);
      if (--gathering->left > 0) return;
      std::vector<PeerReply> all = std::move(gathering->replies);
      lock.unlock();
      gathering->done(std::move(all));
    };
    if (runtime == nullptr) {
      PeerReply reply;
      reply.peer = options_.peers[i];
      reply.error = kNotRunning;
      arrived(std::move(reply));
      continue;
    }
    runtime->Ask(options_.peers[i], targets[i], post_json, std::move(arrived));
  }
}

std::vector<PeerReply> PeerClients::AskAll(const std::string& target,
                                           const std::function<void()>& meanwhile,
                                           const std::string* post_json,
                                           const std::vector<bool>* only) {
  auto waiter = std::make_shared<Waiter>();
  AskAllAsync(target, post_json, only, waiter->Callback(waiter));
  if (meanwhile) meanwhile();
  return waiter->Wait();
}

std::vector<PeerReply> PeerClients::AskEach(const std::vector<std::string>& targets,
                                            const std::function<void()>& meanwhile,
                                            const std::string* post_json) {
  auto waiter = std::make_shared<Waiter>();
  AskEachAsync(targets, post_json, waiter->Callback(waiter));
  if (meanwhile) meanwhile();
  return waiter->Wait();
}

bool PeerClients::Stream(const std::string& peer, const std::string& target,
                         const std::function<bool(const char*, size_t)>& on_data,
                         std::string* error) {
  const std::shared_ptr<PeerTransport> runtime = transport();
  if (runtime == nullptr) {
    *error = kNotRunning;
    return false;
  }
  // The runtime hands each piece over and reads on once it is resumed: the pieces are read here,
  // on the calling thread, one at a time.
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<std::string_view> piece;  // guarded by mu
    PeerTransport::Resume resume;           // guarded by mu
    bool ended = false;                     // guarded by mu
    bool ok = false;
    std::string error;
  };
  auto box = std::make_shared<Mailbox>();
  runtime->Stream(
      peer, target,
      [box](std::string_view piece, PeerTransport::Resume resume) {
        std::lock_guard lock(box->mu);
        box->piece = piece;
        box->resume = std::move(resume);
        box->cv.notify_all();
      },
      [box](bool ok, std::string why) {
        std::lock_guard lock(box->mu);
        box->ended = true;
        box->ok = ok;
        box->error = std::move(why);
        box->cv.notify_all();
      });
  std::unique_lock lock(box->mu);
  for (;;) {
    box->cv.wait(lock, [&] { return box->piece.has_value() || box->ended; });
    if (!box->piece) break;
    const std::string_view piece = *box->piece;
    PeerTransport::Resume resume = std::move(box->resume);
    box->piece.reset();
    lock.unlock();
    const bool more = on_data(piece.data(), piece.size());
    resume(more);
    lock.lock();
  }
  if (!box->ok) *error = box->error;
  return box->ok;
}

}  // namespace hotrow::cluster
