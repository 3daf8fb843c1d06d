// Many connections against the real `hotrow serve` (DESIGN.md, "No thread waits on a socket";
// CONTRACT.md "Live streams"): 10,000 idle keep-alive connections, 10,000 open streams, TLS
// handshakes that never finish, and a stop with streams and queries in flight. The server and the
// client (tests/support/hold_connections.py, one process holding every connection on one epoll
// selector) run in separate processes: each needs its own open-file limit (this machine's hard
// limit is 20,000). What is checked is what holds whatever the machine's speed: every connection
// answered or held, the server's thread count the same as before them, what each stream received.
// Each test prints its numbers (threads, RSS per connection or stream, how long each step took)
// for the record; none of them is a wall-clock gate.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "ingest/synthetic_producer.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ChildProcess;
using testing::ReadFile;
using testing::WaitFor;

constexpr int kPartitions = 4;
using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// The threads of process `pid` (/proc/PID/task).
size_t Threads(pid_t pid) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// The resident set of process `pid` in KiB (/proc/PID/status, VmRSS).
int64_t RssKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

class ManyConnectionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = testing::StartEmbeddedKafka(kPartitions, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    port_ = testing::FreePort();
    // Limits above the 10,000 connections or streams a test holds: the client and the peer
    // asking beside them are within http.max_connections (one more would be refused, as the
    // contract says).
    std::ofstream config(dir_.Sub("hotrow.yaml"));
    config << "kafka:\n  brokers: " << bootstrap_ << "\n  topics: [events]\n  group_id: many\n"
           << "store:\n  path: " << dir_.Sub("store") << "\n"
           << "http:\n  listen: 127.0.0.1:" << port_ << "\n"
           << "  max_connections: 10600\n  max_streams: 10500\n"
           << "query:\n  threads: 2\n";
  }

  void TearDown() override {
    clients_.clear();
    if (serve_ && serve_->Running()) {
      serve_->Signal(SIGTERM);
      serve_->Wait(seconds(30));
    }
    serve_.reset();
    if (kafka_) {
      kafka_->Signal(SIGTERM);
      kafka_->Wait(seconds(15));
    }
  }

  std::string ServeLog() { return ReadFile(dir_.Sub("serve.log")); }

  // Starts serve and waits until it answers /readyz (over HTTPS with `tls`).
  void StartServe(const std::vector<std::string>& sets = {}, bool tls = false) {
    std::vector<std::string> argv = {testing::HotrowBinary(), "serve", "--config",
                                     dir_.Sub("hotrow.yaml")};
    for (const auto& s : sets) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    tls_ = tls;
    serve_ = std::make_unique<ChildProcess>(argv, dir_.Sub("serve.log"));
    ASSERT_TRUE(WaitFor([&] { return Get("/readyz").first == 200 || !serve_->Running(); },
                        seconds(60), milliseconds(100)))
        << ServeLog();
    ASSERT_TRUE(serve_->Running()) << ServeLog();
  }

  // hotrow_http_connections from /metrics (this request's own connection included); -1 when
  // unreadable.
  int64_t OpenConnections() {
    auto [status, body] = Get("/metrics");
    const std::string name = "\nhotrow_http_connections ";
    const size_t at = body.find(name);
    if (status != 200 || at == std::string::npos) return -1;
    return static_cast<int64_t>(std::stod(body.substr(at + name.size())));
  }

  std::pair<int, std::string> Get(const std::string& target, const httplib::Headers& headers = {}) {
    std::unique_ptr<httplib::Client> client;
    if (tls_) {
      client = std::make_unique<httplib::Client>("https://127.0.0.1:" + std::to_string(port_));
      client->enable_server_certificate_verification(false);
    } else {
      client = std::make_unique<httplib::Client>("127.0.0.1", port_);
    }
    client->set_connection_timeout(seconds(5));
    client->set_read_timeout(seconds(30));
    httplib::Result res = client->Get(target, headers);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  }

  void Produce(int64_t count, int devices, uint64_t seed) {
    ChildProcess produce({testing::HotrowBinary(), "produce", "--brokers", bootstrap_, "--topic",
                          "events", "--count", std::to_string(count), "--rate", "0", "--devices",
                          std::to_string(devices), "--seed", std::to_string(seed), "--skew", "0"},
                         dir_.Sub("produce.log"));
    ASSERT_EQ(produce.Wait(seconds(60)), 0) << ReadFile(dir_.Sub("produce.log"));
  }

  // Starts tests/support/hold_connections.py with `args` (its lines on its stdout).
  ChildProcess* Client(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = {"python3",
                                     testing::SourceDir() + "/tests/support/hold_connections.py",
                                     "--port", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    clients_.push_back(std::make_unique<ChildProcess>(argv, dir_.Sub(name + ".err")));
    return clients_.back().get();
  }

  // The client's next line that starts with `word`; fails the test (and returns "") on a
  // `failed` line, its end, or `timeout`.
  std::string Await(ChildProcess* client, const std::string& word, milliseconds timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    std::string line;
    while (SteadyClock::now() < deadline) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
      if (!client->ReadLine(&line, left)) break;
      if (line.rfind(word + " ", 0) == 0) return line.substr(word.size() + 1);
      if (line.rfind("failed", 0) == 0) {
        ADD_FAILURE() << "the client: " << line;
        return "";
      }
    }
    ADD_FAILURE() << "no `" << word << "` line from the client";
    return "";
  }

  testing::TempDir dir_;
  std::unique_ptr<ChildProcess> kafka_;
  std::string bootstrap_;
  int port_ = 0;
  bool tls_ = false;
  std::unique_ptr<ChildProcess> serve_;
  std::vector<std::unique_ptr<ChildProcess>> clients_;
};

// 10,000 idle keep-alive connections (each sent one request and read its answer) hold no thread:
// with them open, a client's query and a peer's `?local=true` request are answered as usual, and
// the server has the threads it had before them.
TEST_F(ManyConnectionsTest, TenThousandIdleKeepAliveConnectionsHoldNoThread) {
  { std::ofstream(dir_.Sub("peer-token")) << "peer-secret\n"; }
  // A group of one (itself), so that a peer's `?local=true` request is one.
  ASSERT_NO_FATAL_FAILURE(StartServe({"cluster.peers=[127.0.0.1:" + std::to_string(port_) + "]",
                                      "cluster.peer_token_file=" + dir_.Sub("peer-token")}));
  ASSERT_NO_FATAL_FAILURE(Produce(2000, 100, 7));
  ASSERT_TRUE(WaitFor(
      [&] {
        return Get("/v1/events/dev-000001/latest?n=1").second.find("dev-000001") !=
               std::string::npos;
      },
      seconds(60), milliseconds(100)));
  const pid_t pid = serve_->pid();
  const size_t threads_before = Threads(pid);
  const int64_t rss_before = RssKiB(pid);
  const auto start = SteadyClock::now();
  ChildProcess* idle =
      Client("idle", {"--mode", "request", "--count", "10000", "--target", "/healthz"});
  EXPECT_EQ(Await(idle, "ready", seconds(120)), "10000 10000 0");
  const double open_s = SecondsSince(start);
  const size_t threads_with = Threads(pid);
  const int64_t rss_with = RssKiB(pid);
  EXPECT_EQ(threads_with, threads_before) << "idle connections took threads";

  // A client's query (the store, on a worker) and a peer's (its own lane), beside them.
  auto [status, body] = Get("/v1/events/dev-000001/latest?n=10");
  EXPECT_EQ(status, 200) << body;
  EXPECT_NE(body.find("dev-000001"), std::string::npos);
  auto [peer_status, peer_body] =
      Get("/v1/events/dev-000002/latest?n=10&local=true", {{"X-Hotrow-Peer-Token", "peer-secret"}});
  EXPECT_EQ(peer_status, 200) << peer_body;
  EXPECT_NE(peer_body.find("dev-000002"), std::string::npos);
  EXPECT_EQ(Get("/healthz").first, 200);
  EXPECT_EQ(Threads(pid), threads_before);

  // Every one of them is still open.
  idle->Signal(SIGTERM);
  EXPECT_EQ(Await(idle, "open", seconds(30)), "10000");
  std::printf(
      "[ record ] 10000 idle keep-alive connections: server threads %zu before, %zu with them; "
      "RSS %lld KiB before, %lld with them (%.2f KiB per connection); opened and answered in "
      "%.1f s\n",
      threads_before, threads_with, static_cast<long long>(rss_before),
      static_cast<long long>(rss_with), static_cast<double>(rss_with - rss_before) / 10000.0,
      open_s);
}

// 10,000 open streams, each on its own id, hold no thread, and each receives its id's events
// (produced after all are open); the RSS per stream is printed for the record.
TEST_F(ManyConnectionsTest, TenThousandOpenStreamsEachReceiveTheirIdsEvents) {
  constexpr int kStreams = 10000;
  constexpr int64_t kEvents = 30000;
  constexpr uint64_t kSeed = 11;
  ASSERT_NO_FATAL_FAILURE(StartServe());
  // What each id gets: the producer's choice of device is a pure function of its seed.
  std::vector<int> expected(kStreams, 0);
  {
    ingest::SyntheticEvents events(kStreams, 0.0, kSeed);
    std::string device, json;
    for (int64_t i = 0; i < kEvents; ++i) {
      events.Next(0, &device, &json);
      ++expected[static_cast<size_t>(std::stoi(device.substr(4)))];
    }
    std::ofstream out(dir_.Sub("expected"));
    for (int n : expected) out << n << "\n";
  }
  const pid_t pid = serve_->pid();
  EXPECT_EQ(Get("/v1/events/dev-000001/latest?n=1").first, 200);  // the query path warmed
  const size_t threads_before = Threads(pid);
  const int64_t rss_before = RssKiB(pid);
  const auto start = SteadyClock::now();
  ChildProcess* streams = Client(
      "streams", {"--mode", "stream", "--count", std::to_string(kStreams), "--target",
                  "/v1/events/dev-{i}/stream", "--expect-events-file", dir_.Sub("expected")});
  EXPECT_EQ(Await(streams, "ready", seconds(120)), "10000 10000 0");
  const double open_s = SecondsSince(start);
  const size_t threads_with = Threads(pid);
  const int64_t rss_with = RssKiB(pid);
  EXPECT_EQ(threads_with, threads_before) << "open streams took threads";
  EXPECT_EQ(Get("/healthz").first, 200);

  const auto produced = SteadyClock::now();
  ASSERT_NO_FATAL_FAILURE(Produce(kEvents, kStreams, kSeed));
  EXPECT_EQ(Await(streams, "events", seconds(120)), std::to_string(kEvents));
  const double delivered_s = SecondsSince(produced);
  EXPECT_EQ(Threads(pid), threads_before);
  const double per_stream_kib = static_cast<double>(rss_with - rss_before) / kStreams;
  std::printf(
      "[ record ] %d open streams: server threads %zu before, %zu with them; RSS %lld KiB "
      "before, %lld with them: %.2f KiB per stream; opened in %.1f s; %lld events produced and "
      "delivered in %.1f s\n",
      kStreams, threads_before, threads_with, static_cast<long long>(rss_before),
      static_cast<long long>(rss_with), per_stream_kib, open_s, static_cast<long long>(kEvents),
      delivered_s);
  // What a stream may cost with no thread of its own: at most 16 KiB (plain HTTP).
  EXPECT_LE(per_stream_kib, 16.0);
}

// A TLS handshake that never finishes (nothing sent, or half a ClientHello) holds no thread and is
// cut at http.header_timeout; HTTPS is served beside them.
TEST_F(ManyConnectionsTest, ATlsHandshakeThatNeverFinishesIsCutAtTheHeaderTimeout) {
  ChildProcess openssl(
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
       "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
       "-keyout", dir_.Sub("tls.key"), "-out", dir_.Sub("tls.crt")},
      dir_.Sub("openssl.log"));
  ASSERT_EQ(openssl.Wait(), 0) << ReadFile(dir_.Sub("openssl.log"));
  ASSERT_NO_FATAL_FAILURE(
      StartServe({"http.tls_cert=" + dir_.Sub("tls.crt"), "http.tls_key=" + dir_.Sub("tls.key"),
                  "http.header_timeout=3s"},
                 /*tls=*/true));
  const pid_t pid = serve_->pid();
  const size_t threads_before = Threads(pid);
  // A TLS record header announcing a 512-byte ClientHello, and its first 43 bytes.
  std::string half_hello = "160301020001";
  half_hello += "0001fc0303";
  for (int i = 0; i < 32; ++i) half_hello += "ab";
  half_hello += "00";
  const auto start = SteadyClock::now();
  ChildProcess* silent = Client("silent", {"--mode", "raw", "--count", "1000"});
  ChildProcess* half =
      Client("half", {"--mode", "raw", "--count", "1000", "--send-hex", half_hello});
  EXPECT_EQ(Await(silent, "ready", seconds(60)), "1000 1000 0");
  EXPECT_EQ(Await(half, "ready", seconds(60)), "1000 1000 0");
  const size_t threads_with = Threads(pid);
  EXPECT_EQ(threads_with, threads_before) << "unfinished handshakes took threads";
  EXPECT_EQ(Get("/healthz").first, 200);  // HTTPS beside them
  // Each is cut by the server (not by the client, which waits for the end): `ended N 0 0`.
  EXPECT_EQ(Await(silent, "ended", seconds(60)), "1000 0 0");
  EXPECT_EQ(Await(half, "ended", seconds(60)), "1000 0 0");
  const double cut_s = SecondsSince(start);
  EXPECT_EQ(Threads(pid), threads_before);
  std::printf(
      "[ record ] 2000 unfinished TLS handshakes (header_timeout 3 s): server threads %zu "
      "before, %zu with them; all cut %.1f s after the first connected\n",
      threads_before, threads_with, cut_s);
}

// A graceful stop (SIGTERM) with 1,000 streams open and 100 queries in flight: every query is
// answered (a scan under way ends with its error line and no last chunk, a query waiting for a
// slot is 503, one done is whole), every stream gets `event: closed`, and the process exits 0.
TEST_F(ManyConnectionsTest, AStopWithStreamsAndQueriesInFlightAnswersAndClosesEveryOne) {
  // Queries that take a while (a scan of the whole store) and wait for a worker as long as they
  // need, so that most are still in flight when the stop begins.
  ASSERT_NO_FATAL_FAILURE(
      StartServe({"query.max_concurrent=2", "query.queue_wait=60s", "http.max_streams=2000"}));
  ASSERT_NO_FATAL_FAILURE(Produce(5000, 1000, 5));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto [status, body] = Get("/v1/stats");
        if (status != 200) return false;
        return nlohmann::json::parse(body).value("ingested", uint64_t{0}) >= 5000;
      },
      seconds(60), milliseconds(100)))
      << Get("/v1/stats").second;
  ChildProcess* streams = Client(
      "streams", {"--mode", "stream", "--count", "1000", "--target", "/v1/events/dev-{i}/stream"});
  EXPECT_EQ(Await(streams, "ready", seconds(60)), "1000 1000 0");
  ChildProcess* queries = Client("queries", {"--mode", "request", "--count", "100", "--target",
                                             "/v1/scan?from=0&to=9999999999999"});
  EXPECT_EQ(Await(queries, "sent", seconds(60)), "100");
  // Every query's connection accepted (its request was sent before): the streams', the
  // queries' and the one asking.
  EXPECT_TRUE(WaitFor([&] { return OpenConnections() >= 1000 + 100 + 1; }, seconds(30)));
  const auto stop = SteadyClock::now();
  serve_->Signal(SIGTERM);
  EXPECT_EQ(serve_->Wait(seconds(60)), 0) << ServeLog();
  const double exited_s = SecondsSince(stop);
  const std::string answered = Await(queries, "ready", seconds(60));
  EXPECT_EQ(answered.substr(0, answered.find(' ')), "100") << answered;
  EXPECT_EQ(Await(streams, "ended", seconds(60)), "1000 1000 0");
  std::printf(
      "[ record ] stop with 1000 streams and 100 scans in flight: exited in %.2f s; the scans' "
      "answers (answered, whole 2xx, cut with an error line): %s\n",
      exited_s, answered.c_str());
  serve_.reset();
}

}  // namespace
}  // namespace hotrow::http
