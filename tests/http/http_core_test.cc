// The event-driven transport (http/transport.h) through a real server on loopback: what no
// connection may hold (a thread), pipelining, the header timeout, the connection limit.

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/http/http_api_test_base.h"
#include "tests/support/process.h"

namespace hotrow::http {
namespace http_core_test {

// The threads of this process now (/proc/self/task).
size_t ThreadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// Splits the HTTP/1.1 responses of one connection (each with a Content-Length body) in order;
// returns the bodies, and the statuses in *statuses.
std::vector<std::string> SplitResponses(const std::string& bytes, std::vector<int>* statuses) {
  std::vector<std::string> bodies;
  size_t at = 0;
  for (;;) {
    const size_t head_end = bytes.find("\r\n\r\n", at);
    if (head_end == std::string::npos) break;
    const std::string head = bytes.substr(at, head_end - at);
    const size_t cl = head.find("Content-Length: ");
    if (cl == std::string::npos) break;
    const size_t length = std::stoul(head.substr(cl + 16));
    if (bytes.size() < head_end + 4 + length) break;
    statuses->push_back(std::stoi(head.substr(9, 3)));
    bodies.push_back(bytes.substr(head_end + 4, length));
    at = head_end + 4 + length;
  }
  return bodies;
}

// True once the server closed `conn` (a read returns end of stream), within `timeout`.
bool ClosedByServer(int fd, std::chrono::milliseconds timeout) {
  return testing::WaitFor(
      [&] {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) return false;
        char c;
        return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
      },
      timeout, std::chrono::milliseconds(20));
}

// 16 requests written at once, of kinds answered on the I/O thread (health, a cached latest-N)
// and of kinds run on workers (a range, stats), are answered in the order they were sent.
TEST_F(HttpApiTest, PipelinedRequestsAreAnsweredInOrder) {
  OpenStore();
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) ids.push_back("dev-" + std::to_string(i));
  Fill(ids, 20, 16);
  StartServer();
  std::string requests;
  std::vector<std::string> expect;  // what each answer names
  for (int i = 0; i < 16; ++i) {
    const std::string id = ids[static_cast<size_t>(i / 2)];
    std::string target;
    switch (i % 4) {
      case 0:
        target = "/v1/events/" + id + "/latest?n=2";  // the cache, on the I/O thread
        expect.push_back(id);
        break;
      case 1:
        target = "/v1/events/" + id + "?from=0&to=" + std::to_string(kNow) + "&limit=3";
        expect.push_back(id);  // a worker
        break;
      case 2:
        target = "/healthz";
        expect.push_back("ok");
        break;
      default:
        target = "/v1/events/" + id + "/latest?n=50";  // past the cache's depth: a worker
        expect.push_back(id);
        break;
    }
    requests += "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  }
  RawConnection conn(http_->port());
  ASSERT_TRUE(conn.connected());
  ASSERT_TRUE(conn.Send(requests));
  std::string bytes;
  std::vector<int> statuses;
  std::vector<std::string> bodies;
  ASSERT_TRUE(testing::WaitFor([&] {
    bytes += conn.Read(1 << 20, std::chrono::milliseconds(200));
    statuses.clear();
    bodies = SplitResponses(bytes, &statuses);
    return bodies.size() >= 16;
  })) << bodies.size()
      << " answers";
  ASSERT_EQ(bodies.size(), 16u);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(statuses[i], 200) << i << ": " << bodies[i];
    const nlohmann::json j = nlohmann::json::parse(bodies[i]);
    const std::string named =
        j.contains("event_id") ? j["event_id"].get<std::string>() : j["status"].get<std::string>();
    EXPECT_EQ(named, expect[i]) << "answer " << i << " out of order";
  }
}

// A client that trickles its request head (slowloris) holds its buffer and no thread, and is cut
// at http.header_timeout; the server answers others meanwhile.
TEST_F(HttpApiTest, ATricklingClientHoldsNoThreadAndIsCutAtTheHeaderTimeout) {
  OpenStore();
  HttpServerOptions options;
  options.header_timeout_ms = 500;
  StartServer(options);
  const size_t threads = ThreadCount();
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 64; ++i) {
    slow.push_back(std::make_unique<RawConnection>(http_->port()));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->Send("GET /hea"));
  }
  httplib::Client client = Client();
  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // At most as many: a thread of the setup may end meanwhile (one fewer was seen on a loaded
  // machine); a thread per connection would add 64.
  EXPECT_LE(ThreadCount(), threads) << "the trickling clients took threads";
  for (auto& c : slow) {
    EXPECT_TRUE(ClosedByServer(c->fd(), std::chrono::seconds(30)))
        << "a client that never finished its head was not cut";
  }
}

// An idle keep-alive connection is closed after http.idle_timeout; while it is open it holds no
// thread.
TEST_F(HttpApiTest, IdleConnectionsHoldNoThreadAndCloseAtTheIdleTimeout) {
  OpenStore();
  HttpServerOptions options;
  options.idle_timeout_ms = 700;
  StartServer(options);
  const size_t threads = ThreadCount();
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 300; ++i) {
    idle.push_back(std::make_unique<RawConnection>(http_->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  ASSERT_TRUE(testing::WaitFor([&] { return http_->open_connections() >= 300; }));
  EXPECT_LE(ThreadCount(), threads);  // a thread per connection would add 300
  for (auto& c : idle) EXPECT_TRUE(ClosedByServer(c->fd(), std::chrono::seconds(30)));
  EXPECT_TRUE(testing::WaitFor([&] { return http_->open_connections() == 0; }));
}

// Past http.max_connections a new connection is closed as it is accepted, and counted; the
// connections already open are served as usual.
TEST_F(HttpApiTest, ConnectionsPastTheLimitAreClosedAndCounted) {
  OpenStore();
  HttpServerOptions options;
  options.max_connections = 4;
  StartServer(options);
  std::vector<std::unique_ptr<RawConnection>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(std::make_unique<RawConnection>(http_->port()));
    ASSERT_TRUE(open.back()->connected());
  }
  ASSERT_TRUE(testing::WaitFor([&] { return http_->open_connections() == 4; }));
  RawConnection extra(http_->port());
  ASSERT_TRUE(extra.connected());  // the kernel accepts; the server closes it at once
  EXPECT_TRUE(ClosedByServer(extra.fd(), std::chrono::seconds(30)));
  EXPECT_EQ(http_->refused_connections(), 1u);
  ASSERT_TRUE(open[0]->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(StatusOfRawResponse(open[0]->Read(4096)), 200);
  open.pop_back();  // room for the client that reads the metrics
  ASSERT_TRUE(testing::WaitFor([&] { return http_->open_connections() == 3; }));
  EXPECT_EQ(Metric("hotrow_http_connections_refused_total "), "1");
}

// A request with `Expect: 100-continue` is told to go on before it sends its body; a chunked
// request body is read whole.
TEST_F(HttpApiTest, ExpectContinueAndChunkedBodies) {
  OpenStore();
  Fill({"dev-1", "dev-2"}, 5, 8);
  StartServer();
  RawConnection conn(http_->port());
  const std::string body = R"({"ids":["dev-1","dev-2"],"n":1})";
  ASSERT_TRUE(
      conn.Send("POST /v1/latest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Expect: 100-continue\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n"));
  const std::string go = conn.Read(25, std::chrono::seconds(10));
  EXPECT_EQ(go.substr(0, 25), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(conn.Send(body));
  const std::string answer = conn.Read(1 << 16);
  EXPECT_EQ(StatusOfRawResponse(answer), 200) << answer;
  EXPECT_NE(answer.find("\"dev-2\""), std::string::npos) << answer;

  RawConnection chunked(http_->port());
  ASSERT_TRUE(
      chunked.Send("POST /v1/latest HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                   "Content-Type: application/json\r\n\r\n" +
                   [&] {
                     char size[16];
                     std::snprintf(size, sizeof(size), "%zx", body.size());
                     return std::string(size);
                   }() +
                   "\r\n" + body + "\r\n0\r\n\r\n"));
  const std::string second = chunked.Read(1 << 16);
  EXPECT_EQ(StatusOfRawResponse(second), 200) << second;
  EXPECT_NE(second.find("\"dev-1\""), std::string::npos) << second;
}

}  // namespace http_core_test
}  // namespace hotrow::http
