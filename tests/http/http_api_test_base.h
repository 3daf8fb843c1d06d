#pragma once

// The fixture of the in-process HTTP API tests (http_api_test.cc, http_hostile_test.cc): a real
// store and query engine behind a real HttpServer on a loopback port, asked over real sockets,
// with a brute-force oracle of what was written.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/time_format.h"
#include "http/metrics.h"
#include "http/server.h"
#include "http/status_page.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {

using query::Event;
using query::Order;
using testing::TestEvent;

inline constexpr int64_t kBucketMs = 60'000;
inline constexpr int64_t kFirstBucket = 1'700'000'040'000 / kBucketMs * kBucketMs;
inline constexpr int kBuckets = 5;
// "now": a little after the last bucket, so that every generated event is in the window.
inline constexpr int64_t kNow = kFirstBucket + kBuckets * kBucketMs + 1000;

// A raw TCP connection, for what an HTTP client library would refuse to send.
class RawConnection {
 public:
  // `receive_buffer_bytes` > 0 fixes the socket's receive buffer, so that a client that does not
  // read holds the server up at once (Linux may otherwise grow it to tens of MiB).
  explicit RawConnection(int port, int receive_buffer_bytes = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer_bytes > 0) {
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof(receive_buffer_bytes));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() { Close(); }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes, `max_bytes` arrive, or `timeout` passes.
  std::string Read(size_t max_bytes, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out.size() < max_bytes) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[16384];
      ssize_t n = recv(fd_, buf, std::min(sizeof(buf), max_bytes - out.size()), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (Complete(out)) break;
    }
    return out;
  }
  // True for a whole response with a Content-Length body (the server may keep the connection).
  static bool Complete(const std::string& response) {
    const size_t end = response.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const size_t at = response.find("Content-Length: ");
    if (at == std::string::npos || at > end) return false;
    return response.size() >= end + 4 + std::stoul(response.substr(at + 16));
  }
  // Tells the server that no more bytes will come.
  void ShutdownWrite() { shutdown(fd_, SHUT_WR); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

inline int StatusOfRawResponse(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

inline std::string BodyOfRawResponse(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

// What an id looks like after the JSON round trip: invalid UTF-8 replaced (event_json.h).
inline std::string JsonRoundTrip(const std::string& id) {
  std::string quoted;
  wire::AppendJsonString(id, &quoted);
  return nlohmann::json::parse(quoted).get<std::string>();
}

inline Event ToEvent(const TestEvent& t) {
  return Event{t.id, t.ts_ms, t.topic, t.partition, t.offset, t.payload};
}

// One event of an answer, through the API's own inverse of its event JSON.
inline Event FromJson(const nlohmann::ordered_json& j) {
  Result<Event> event = wire::ParseEventJson(j.dump());
  EXPECT_TRUE(event.ok()) << event.status().ToString();
  return event.ok() ? *event : Event{};
}

// True for ids JSON carries unaltered: valid UTF-8 (told independently of the server's own check,
// by whether nlohmann's replacing dump changes them).
inline bool CarriedUnaltered(const std::string& id) {
  return nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) ==
         nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore);
}

inline std::vector<Event> Normalized(std::vector<Event> events) {
  for (Event& e : events) e.id = JsonRoundTrip(e.id);
  return events;
}

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override { clock_ = std::make_unique<ManualClock>(kNow); }
  void TearDown() override {
    if (http_) http_->Stop();
    http_.reset();
    engine_.reset();
    store_.reset();
  }

  // Opens (or reopens) the store under dir_.
  void OpenStore(keying::SaltBy salt_by = keying::SaltBy::kRecord) {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = 10 * kBucketMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
    options.salt_by = salt_by;
    options.wall_clock = clock_.get();
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 16 << 20;
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  void StartServer(HttpServerOptions options = {}) {
    query::QueryOptions q;
    q.threads = 2;
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), q);
    if (options.listen == HttpServerOptions().listen) options.listen = "127.0.0.1:0";
    HttpBackend backend{store_.get(), engine_.get(), nullptr, &metrics_};
    Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(options, backend);
    ASSERT_TRUE(http.ok()) << http.status().ToString();
    http_ = std::move(http).value();
    ASSERT_GT(http_->port(), 0);
  }

  // Writes generated events (and records them in the oracle).
  void Fill(const std::vector<std::string>& ids, int events_per_bucket, size_t payload_bytes) {
    std::mt19937_64 rng(testing::TestSeed(7));
    testing::EventGenSpec spec;
    spec.ids = ids;
    spec.topics = {"events", "other"};
    spec.partitions = 3;
    spec.bucket_ms = kBucketMs;
    spec.first_bucket_start_ms = kFirstBucket;
    spec.events_per_bucket.assign(kBuckets, events_per_bucket);
    spec.times_per_bucket = 50;
    spec.payload_bytes = payload_bytes;
    std::vector<TestEvent> events = testing::GenerateEvents(spec, &rng, &next_offsets_);
    for (size_t at = 0; at < events.size(); at += 20000) {
      std::vector<TestEvent> batch(
          events.begin() + static_cast<std::ptrdiff_t>(at),
          events.begin() + static_cast<std::ptrdiff_t>(std::min(events.size(), at + 20000)));
      store::WriteOutcome outcome;
      ASSERT_TRUE(testing::WriteEvents(store_.get(), batch, &outcome).ok());
      ASSERT_EQ(outcome.stored, batch.size());
    }
    for (const TestEvent& e : events) {
      Result<uint16_t> number = store_->TopicNumber(e.topic);
      ASSERT_TRUE(number.ok());
      oracle_.Add(ToEvent(e), *number);
    }
  }

  httplib::Client Client() {
    httplib::Client client("127.0.0.1", http_->port());
    client.set_url_encode(false);  // send targets exactly as written
    client.set_read_timeout(std::chrono::seconds(30));
    return client;
  }

  // GETs `target`; expects 200 and a {"event_id", "events"} answer for `id`.
  std::vector<Event> GetEvents(const std::string& target, const std::string& id) {
    httplib::Client client = Client();
    httplib::Result res = client.Get(target);
    EXPECT_TRUE(res) << target;
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << target << " -> " << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(res->body);
    EXPECT_EQ(j.at("event_id").get<std::string>(), JsonRoundTrip(id));
    std::vector<Event> events;
    for (const auto& e : j.at("events")) events.push_back(FromJson(e));
    return events;
  }

  std::vector<Event> GetScan(const std::string& target) {
    httplib::Client client = Client();
    httplib::Result res = client.Get(target);
    EXPECT_TRUE(res) << target;
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << target << " -> " << res->body.substr(0, 300);
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/x-ndjson");
    EXPECT_EQ(res->get_header_value("Transfer-Encoding"), "chunked");
    std::vector<Event> events;
    size_t start = 0;
    for (size_t nl; (nl = res->body.find('\n', start)) != std::string::npos; start = nl + 1) {
      events.push_back(
          FromJson(nlohmann::ordered_json::parse(res->body.substr(start, nl - start))));
    }
    EXPECT_EQ(start, res->body.size()) << "the last line has no newline";
    return events;
  }

  std::string Metric(const std::string& line_prefix) {
    httplib::Client client = Client();
    httplib::Result res = client.Get("/metrics");
    if (!res || res->status != 200) return "";
    size_t at = res->body.find("\n" + line_prefix);
    if (at == std::string::npos) return "";
    const size_t end = res->body.find('\n', at + 1);
    return res->body.substr(at + 1 + line_prefix.size(), end - at - 1 - line_prefix.size());
  }

  testing::TempDir dir_;
  std::unique_ptr<ManualClock> clock_;
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  Metrics metrics_;
  std::unique_ptr<HttpServer> http_;
  testing::Oracle oracle_;
  std::map<store::TopicPartition, int64_t> next_offsets_;
};

}  // namespace hotrow::http
