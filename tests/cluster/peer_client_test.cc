// The peers' client (cluster/peer_client.h) on the HTTP server's runtime
// (http/peer_transport.h), against stand-in peers on loopback: it keeps its connections, a
// request waiting on a peer holds no thread, a silent peer times out, a SIGHUP's token and CAs
// apply to the next request, and a stop with requests in flight answers every one of them.

#include "cluster/peer_client.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "access/credentials.h"
#include "cluster/peer_transport.h"
#include "http/transport.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster {
namespace {

using hotrow::testing::ReadFile;
using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using hotrow::testing::WriteFile;
using namespace std::chrono_literals;

// The process's threads now.
size_t ThreadCount() {
  size_t n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n;
}

// The transport's handler: this test serves nothing through it, it only lends its I/O threads.
class NoHandler final : public http::RequestHandler {
 public:
  void Handle(http::Request&, http::Response& res) override { res.status = 404; }
  void Refuse(int, http::Response&) override {}
  void Answered(int) override {}
};

// A runtime (one I/O thread) and the peers' clients on it, asking `peers`.
class Runtime {
 public:
  explicit Runtime(std::vector<std::string> peers, int64_t timeout_ms = 10000,
                   const access::CredentialsOptions& access = {}) {
    Result<std::unique_ptr<access::Credentials>> credentials = access::Credentials::Open(access);
    EXPECT_TRUE(credentials.ok()) << credentials.status().ToString();
    credentials_ = std::move(credentials).value();
    http::TransportOptions options;
    options.io_threads = 1;
    options.client_workers = 1;
    options.peer_workers = 1;
    options.other_workers = 1;
    Result<std::unique_ptr<http::Transport>> transport =
        http::Transport::Start(options, &handler_, nullptr);
    EXPECT_TRUE(transport.ok()) << transport.status().ToString();
    transport_ = std::move(transport).value();
    PeerClientOptions clients;
    clients.peers = std::move(peers);
    clients.timeout_ms = timeout_ms;
    clients.credentials = credentials_.get();
    peers_ = std::make_unique<PeerClients>(clients);
    PeerTransportOptions on;
    on.timeout_ms = timeout_ms;
    on.credentials = credentials_.get();
    runtime_ = transport_->StartPeerTransport(on);
    peers_->Attach(runtime_);
  }
  ~Runtime() {
    transport_->Stop();
    peers_.reset();
  }
  PeerClients& peers() { return *peers_; }
  PeerTransport& runtime() { return *runtime_; }
  access::Credentials& credentials() { return *credentials_; }
  void Stop() { transport_->Stop(); }

  // One GET of `target` on the only peer.
  PeerReply AskOne(const std::string& target) {
    std::vector<PeerReply> replies = peers_->AskAll(target);
    EXPECT_EQ(replies.size(), 1u);
    return replies.empty() ? PeerReply() : std::move(replies[0]);
  }

 private:
  NoHandler handler_;
  std::unique_ptr<access::Credentials> credentials_;
  std::unique_ptr<http::Transport> transport_;
  std::shared_ptr<PeerTransport> runtime_;
  std::unique_ptr<PeerClients> peers_;
};

// A stand-in peer on cpp-httplib (plain or HTTPS) that answers GET /v1/x with "ok <i>" and
// records, per request, the client's port (a new connection has a port of its own) and the
// tokens it was sent.
class RecordingPeer {
 public:
  struct Seen {
    int port = 0;
    std::string authorization;
    std::string peer_token;
  };

  explicit RecordingPeer(
      std::unique_ptr<httplib::Server> server = std::make_unique<httplib::Server>())
      : server_(std::move(server)) {
    server_->Get("/v1/x", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mu_);
        seen_.push_back({req.remote_port, req.get_header_value("Authorization"),
                         req.get_header_value(access::kPeerTokenHeader)});
      }
      res.set_content("ok " + req.get_param_value("i"), "text/plain");
    });
    server_->set_keep_alive_max_count(1000);  // cpp-httplib's default closes after 5 requests
    port_ = server_->bind_to_any_port("127.0.0.1");
    serving_ = std::thread([this] { server_->listen_after_bind(); });
    EXPECT_TRUE(WaitFor([this] { return server_->is_running(); }));
  }
  ~RecordingPeer() {
    server_->stop();
    serving_.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread serving_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

// 20 asks one after the other go over one kept connection: the stand-in peer sees one client
// port.
TEST(PeerClientTest, SequentialAsksReuseOneConnection) {
  RecordingPeer peer;
  {
    Runtime runtime({peer.address()});
    for (int i = 0; i < 20; ++i) {
      const PeerReply reply = runtime.AskOne("/v1/x?i=" + std::to_string(i));
      ASSERT_TRUE(reply.answered) << reply.error;
      EXPECT_EQ(reply.body, "ok " + std::to_string(i));
    }
  }
  std::set<int> ports;
  for (const RecordingPeer::Seen& s : peer.seen()) ports.insert(s.port);
  EXPECT_EQ(peer.seen().size(), 20u);
  EXPECT_EQ(ports.size(), 1u);
}

// A stand-in peer that accepts every connection and holds it: it answers nothing until told to.
class HoldingPeer {
 public:
  HoldingPeer() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(listener_, 1024), 0);
    socklen_t len = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accepting_ = std::thread([this] {
      for (;;) {
        const int fd = accept(listener_, nullptr, nullptr);
        if (fd < 0) return;
        std::lock_guard lock(mu_);
        held_.push_back(fd);
      }
    });
  }
  ~HoldingPeer() {
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    accepting_.join();
    for (int fd : held_) close(fd);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  size_t held() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  // Reads one request's head on every connection held (each holds one: the client sends one
  // request per connection at a time) and writes `answer` to it.
  void Answer(const std::string& answer) {
    std::lock_guard lock(mu_);
    for (int fd : held_) {
      char buf[4096];
      std::string got;
      while (got.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
      EXPECT_EQ(write(fd, answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
    }
  }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::thread accepting_;
  std::mutex mu_;
  std::vector<int> held_;
};

// 200 asks in flight at once to a peer that holds its answers: the process has no more threads
// than before (each waits as a coroutine on the one I/O thread), and all complete once the peer
// answers.
TEST(PeerClientTest, AsksWaitingOnAPeerHoldNoThread) {
  constexpr size_t kAsks = 200;
  HoldingPeer peer;
  Runtime runtime({peer.address()});
  const size_t before = ThreadCount();
  std::atomic<size_t> answered{0}, done{0};
  for (size_t i = 0; i < kAsks; ++i) {
    runtime.peers().AskAllAsync("/v1/x", nullptr, nullptr, [&](std::vector<PeerReply> replies) {
      if (replies.size() == 1 && replies[0].answered && replies[0].body == "held") ++answered;
      ++done;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return peer.held() == kAsks; })) << peer.held();
  EXPECT_EQ(done.load(), 0u);
  EXPECT_LE(ThreadCount(), before) << "asks waiting on a peer hold threads";
  peer.Answer("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nheld");
  ASSERT_TRUE(WaitFor([&] { return done.load() == kAsks; })) << done.load();
  EXPECT_EQ(answered.load(), kAsks);
}

// A peer that accepts and says nothing has not answered once cluster.peer_timeout_ms passed
// without a byte: an ask, and a stream whose peer stalls after its first piece.
TEST(PeerClientTest, APeerThatSaysNothingTimesOut) {
  HoldingPeer silent;
  Runtime runtime({silent.address()}, /*timeout_ms=*/200);
  std::mutex mu;
  std::optional<PeerReply> reply;
  runtime.peers().AskAllAsync("/v1/x", nullptr, nullptr, [&](std::vector<PeerReply> got) {
    std::lock_guard lock(mu);
    reply = std::move(got.at(0));
  });
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(mu);
    return reply.has_value();
  })) << "no reply from a silent peer";
  EXPECT_FALSE(reply->answered);
  EXPECT_NE(reply->error.find("timed out"), std::string::npos) << reply->error;

  // The stalling peer writes the stream's head and first piece with its answer to an ask, on the
  // connection that the stream then takes: they are there before the stream asks, so nothing but
  // the stall itself runs against the timeout.
  HoldingPeer stalling;
  std::atomic<bool> asked{false};
  runtime.runtime().Ask(stalling.address(), "/v1/x", nullptr, [&](PeerReply got) {
    EXPECT_TRUE(got.answered) << got.error;
    asked = true;
  });
  ASSERT_TRUE(WaitFor([&] { return stalling.held() == 1; }));
  stalling.Answer(
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
  ASSERT_TRUE(WaitFor([&] { return asked.load(); }));
  std::string error, got;
  const bool whole = runtime.peers().Stream(
      stalling.address(), "/v1/scan",
      [&](const char* data, size_t size) {
        got.append(data, size);
        return true;
      },
      &error);
  EXPECT_FALSE(whole);
  EXPECT_EQ(got, "first");
  EXPECT_NE(error.find("timed out"), std::string::npos) << error;
  EXPECT_EQ(stalling.held(), 1u) << "the stream did not take the kept connection";
}

// A streamed body comes whole in pieces, and a reader may stop it early.
TEST(PeerClientTest, AStreamedBodyComesWholeOrAsFarAsTheReaderWants) {
  constexpr size_t kSize = 4 << 20;
  httplib::Server server;
  server.Get("/v1/scan", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [&](size_t offset, httplib::DataSink& sink) {
      const std::string block(64 << 10, static_cast<char>('a' + (offset >> 16) % 26));
      sink.write(block.data(), block.size());
      if (offset + block.size() >= kSize) sink.done();
      return true;
    });
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  ASSERT_TRUE(WaitFor([&] { return server.is_running(); }));
  {
    Runtime runtime({});
    const std::string peer = "127.0.0.1:" + std::to_string(port);
    size_t total = 0;
    bool in_order = true;
    std::string error;
    EXPECT_TRUE(runtime.peers().Stream(
        peer, "/v1/scan",
        [&](const char* data, size_t size) {
          for (size_t k = 0; k < size; ++k) {
            in_order = in_order && data[k] == static_cast<char>('a' + ((total + k) >> 16) % 26);
          }
          total += size;
          return true;
        },
        &error))
        << error;
    EXPECT_EQ(total, kSize);
    EXPECT_TRUE(in_order);
    size_t read = 0;
    EXPECT_TRUE(runtime.peers().Stream(
        peer, "/v1/scan",
        [&](const char*, size_t size) {
          read += size;
          return false;
        },
        &error))
        << error;
    EXPECT_GT(read, 0u);
    EXPECT_LT(read, kSize);
  }
  server.stop();
  serving.join();
}

// A reload's new token is sent with the next request, on a new connection (the kept one was
// made with the old credentials).
TEST(PeerClientTest, AReloadedTokenGoesWithTheNextRequest) {
  TempDir dir;
  WriteFile(dir.Sub("token"), "token-one\n");
  WriteFile(dir.Sub("peer_token"), "peer-one\n");
  access::CredentialsOptions access;
  access.token_file = dir.Sub("token");
  access.peer_token_file = dir.Sub("peer_token");
  RecordingPeer peer;
  Runtime runtime({peer.address()}, 10000, access);
  ASSERT_TRUE(runtime.AskOne("/v1/x").answered);
  ASSERT_TRUE(runtime.AskOne("/v1/x").answered);
  WriteFile(dir.Sub("token"), "token-two\n");
  WriteFile(dir.Sub("peer_token"), "peer-two\n");
  ASSERT_TRUE(runtime.credentials().Reload().ok());
  ASSERT_TRUE(runtime.AskOne("/v1/x").answered);
  ASSERT_TRUE(runtime.AskOne("/v1/x").answered);
  const std::vector<RecordingPeer::Seen> seen = peer.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].authorization, "Bearer token-one");
  EXPECT_EQ(seen[0].peer_token, "peer-one");
  EXPECT_EQ(seen[1].port, seen[0].port) << "the connection was not kept";
  EXPECT_EQ(seen[2].authorization, "Bearer token-two");
  EXPECT_EQ(seen[2].peer_token, "peer-two");
  EXPECT_NE(seen[2].port, seen[1].port) << "a connection of the old credentials was reused";
  EXPECT_EQ(seen[3].port, seen[2].port) << "the new connection was not kept";
}

// Over HTTPS: a reload's new cluster.peer_ca applies to the next request, even with a kept
// connection that the old CA verified; a peer whose certificate names another host is refused.
TEST(PeerClientTest, AReloadedPeerCaAppliesToTheNextRequest) {
  TempDir dir;
  testing::MakeCa(dir, "ca1");
  testing::MakeLeaf(dir, "ca1", "leaf1");
  testing::MakeCa(dir, "ca2");
  WriteFile(dir.Sub("peer_ca.crt"), ReadFile(dir.Sub("ca1.crt")));
  access::CredentialsOptions access;
  access.tls_cert_file = dir.Sub("leaf1.crt");
  access.tls_key_file = dir.Sub("leaf1.key");
  access.peer_ca_file = dir.Sub("peer_ca.crt");
  RecordingPeer peer(std::make_unique<httplib::SSLServer>(dir.Sub("leaf1.crt").c_str(),
                                                          dir.Sub("leaf1.key").c_str()));
  Runtime runtime({peer.address()}, 10000, access);
  const PeerReply first = runtime.AskOne("/v1/x");
  ASSERT_TRUE(first.answered) << first.error;
  ASSERT_TRUE(runtime.AskOne("/v1/x").answered);
  WriteFile(dir.Sub("peer_ca.crt"), ReadFile(dir.Sub("ca2.crt")));
  ASSERT_TRUE(runtime.credentials().Reload().ok());
  const PeerReply refused = runtime.AskOne("/v1/x");
  EXPECT_FALSE(refused.answered);
  EXPECT_NE(refused.error.find("SSLServerVerification"), std::string::npos) << refused.error;
  EXPECT_NE(refused.error.find("failed verification"), std::string::npos) << refused.error;
  EXPECT_EQ(peer.seen().size(), 2u);

  // The certificate names 127.0.0.1, not localhost.
  WriteFile(dir.Sub("peer_ca.crt"), ReadFile(dir.Sub("ca1.crt")));
  ASSERT_TRUE(runtime.credentials().Reload().ok());
  const std::string port = peer.address().substr(peer.address().find(':'));
  std::string error;
  EXPECT_FALSE(runtime.peers().Stream(
      "localhost" + port, "/v1/x", [](const char*, size_t) { return true; }, &error));
  EXPECT_NE(error.find("does not name localhost"), std::string::npos) << error;
}

// A stop with requests in flight: the asks waiting on a peer are cut and answered as failed, a
// stream whose reader holds a piece is answered once the stop stops waiting for it, and a request
// after the stop fails at once on the calling thread.
TEST(PeerClientTest, AStopAnswersEveryRequestInFlight) {
  constexpr size_t kAsks = 20;
  HoldingPeer asked, streaming;
  Runtime runtime({asked.address()});
  std::mutex mu;
  std::vector<PeerReply> replies;
  for (size_t i = 0; i < kAsks; ++i) {
    runtime.peers().AskAllAsync("/v1/x", nullptr, nullptr, [&](std::vector<PeerReply> got) {
      std::lock_guard lock(mu);
      replies.push_back(std::move(got.at(0)));
    });
  }
  std::atomic<bool> piece{false}, stream_done{false};
  std::optional<PeerTransport::Resume> held;  // the reader's: never resumed before the stop
  std::string stream_error;
  runtime.runtime().Stream(
      streaming.address(), "/v1/scan",
      [&](std::string_view data, PeerTransport::Resume resume) {
        EXPECT_EQ(data, "first");
        held = std::move(resume);
        piece = true;
      },
      [&](bool ok, std::string error) {
        EXPECT_FALSE(ok);
        stream_error = std::move(error);
        stream_done = true;
      });
  ASSERT_TRUE(WaitFor([&] { return asked.held() == kAsks && streaming.held() == 1; }));
  streaming.Answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
  ASSERT_TRUE(WaitFor([&] { return piece.load(); }));

  runtime.Stop();
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(replies.size(), kAsks);
    for (const PeerReply& reply : replies) {
      EXPECT_FALSE(reply.answered);
      // Cut when the stop began, not abandoned when it stopped waiting.
      EXPECT_EQ(reply.error.find("stopping"), std::string::npos) << reply.error;
    }
  }
  ASSERT_TRUE(stream_done.load());
  EXPECT_NE(stream_error.find("stopping"), std::string::npos) << stream_error;
  (*held)(true);  // too late: changes nothing

  bool after = false;
  runtime.runtime().Ask(asked.address(), "/v1/x", nullptr, [&](PeerReply reply) {
    EXPECT_FALSE(reply.answered);
    EXPECT_NE(reply.error.find("not running"), std::string::npos) << reply.error;
    after = true;
  });
  EXPECT_TRUE(after) << "a request after the stop was not answered at once";
}

}  // namespace
}  // namespace hotrow::cluster
