// The HTTP API in process against bad requests and hostile clients: every bad request of the table
// gets its status and a JSON error naming the problem; huge URLs, garbage, idle connections, more
// queries than slots and clients that go away mid-scan do not stop the server.

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/http/http_api_test_base.h"

namespace hotrow::http {
namespace {

TEST_F(HttpApiTest, EveryBadRequestGetsItsStatusAndAJsonErrorNamingTheProblem) {
  OpenStore();
  Fill({"dev"}, 10, 16);
  StartServer();
  struct Case {
    std::string method;
    std::string target;
    int status;
    std::string fragment;
  };
  const std::string range = "/v1/events/dev?from=1000&to=2000";
  const std::vector<Case> cases = {
      {"GET", "/v1/events/dev/latest?n=0", 400, "n must be an integer from 1 to 10000"},
      {"GET", "/v1/events/dev/latest?n=10001", 400, "n must be"},
      {"GET", "/v1/events/dev/latest?n=-1", 400, "n must be"},
      {"GET", "/v1/events/dev/latest?n=abc", 400, "n must be"},
      {"GET", "/v1/events/dev/latest?n=", 400, "n must be"},
      {"GET", "/v1/events/dev/latest?n=5x", 400, "n must be"},
      {"GET", "/v1/events/dev/latest?n=99999999999999999999999", 400, "n must be"},
      {"GET", "/v1/events/dev/latest?n=5&n=6", 400, "\"n\" is given more than once"},
      {"GET", "/v1/events/dev/latest?limit=5", 400, "unknown parameter \"limit\""},
      {"GET", "/v1/events//latest", 400, "event id is empty"},
      {"GET", "/v1/events/?from=1&to=2", 400, "event id is empty"},
      {"GET", "/v1/events/a%zz/latest", 400, "percent-encoding"},
      {"GET", "/v1/events/" + std::string(257, 'a') + "/latest", 400,
       "257 bytes; ids are at most 256"},
      {"GET", "/v1/events/" + std::string(5000, 'a') + "?from=1&to=2", 400, "5000 bytes"},
      {"GET", "/v1/events/%FF/latest", 400, "not valid UTF-8"},
      {"GET", "/v1/events/dev%C3?from=1000&to=2000", 400, "not valid UTF-8"},
      {"GET", "/v1/events/a/latest?n=%G1", 400, "percent-encoding"},
      {"GET", "/v1/events/dev", 400, "missing parameter \"from\""},
      {"GET", "/v1/events/dev?from=1000", 400, "missing parameter \"to\""},
      {"GET", "/v1/events/dev?from=yesterday&to=2000", 400, "from:"},
      {"GET", "/v1/events/dev?from=1000&to=2023-13-01T00:00:00Z", 400, "to:"},
      {"GET", "/v1/events/dev?from=1000&to=-5", 400, "to:"},
      {"GET", "/v1/events/dev?from=2000&to=2000", 400, "from must be before to"},
      {"GET", "/v1/events/dev?from=3000&to=2000", 400, "from must be before to"},
      {"GET", range + "&limit=0", 400, "limit must be an integer from 1 to 100000"},
      {"GET", range + "&limit=100001", 400, "limit must be"},
      {"GET", range + "&order=up", 400, "order must be asc or desc"},
      {"GET", range + "&order=ASC", 400, "order must be asc or desc"},
      {"GET", range + "&from=1", 400, "\"from\" is given more than once"},
      {"GET", range + "&n=3", 400, "unknown parameter \"n\""},
      {"GET", "/v1/scan", 400, "missing parameter \"from\""},
      {"GET", "/v1/scan?from=1&to=2&limit=0", 400, "limit must be a positive integer"},
      {"GET", "/v1/scan?from=1&to=2&limit=-3", 400, "limit must be a positive integer"},
      {"GET", "/v1/scan?from=1&to=2&order=asc", 400, "unknown parameter \"order\""},
      {"GET", "/v1/scan?from=5&to=1", 400, "from must be before to"},
      {"GET", "/healthz?verbose=1", 400, "unknown parameter \"verbose\""},
      {"GET", "/v1/stats?x", 400, "unknown parameter \"x\""},
      {"GET", "/index.html", 404, "unknown path"},  // GET / is the status page
      {"GET", "/v1", 404, "unknown path"},
      {"GET", "/v1/event/dev/latest", 404, "unknown path"},
      {"GET", "/v1/events/dev/oldest", 404, "unknown path"},
      {"GET", "/v1/events/a/b/latest", 404, "unknown path"},
      {"GET", "/v1/scan/", 404, "unknown path"},
      {"GET", "/healthz/", 404, "unknown path"},
      {"GET", "/V1/SCAN?from=1&to=2", 404, "unknown path"},
      {"POST", "/v1/scan?from=1&to=2", 405, "method \"POST\" is not allowed"},
      {"PUT", "/v1/events/dev/latest", 405, "method \"PUT\" is not allowed"},
      {"DELETE", "/v1/events/dev", 405, "not allowed"},
      {"PATCH", "/healthz", 405, "not allowed"},
      {"OPTIONS", "/metrics", 405, "not allowed"},
      {"POST", "/nothing", 404, "unknown path"},
      {"POST", "/", 405, "method \"POST\" is not allowed"},
  };
  for (const Case& c : cases) {
    RawConnection conn(http_->port());
    ASSERT_TRUE(conn.connected());
    std::string request =
        c.method + " " + c.target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    if (c.method == "POST" || c.method == "PUT" || c.method == "PATCH") {
      request += "Content-Length: 5\r\n\r\nhello";
    } else {
      request += "\r\n";
    }
    ASSERT_TRUE(conn.Send(request));
    const std::string response = conn.Read(1 << 20);
    EXPECT_EQ(StatusOfRawResponse(response), c.status) << c.method << " " << c.target << "\n"
                                                       << response;
    EXPECT_NE(response.find("Content-Type: application/json"), std::string::npos) << c.target;
    nlohmann::json body = nlohmann::json::parse(BodyOfRawResponse(response), nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << c.target << ": " << response;
    EXPECT_NE(body["error"].get<std::string>().find(c.fragment), std::string::npos)
        << c.method << " " << c.target << ": " << body["error"];
    if (c.status == 405) {
      EXPECT_NE(response.find("Allow: GET, HEAD"), std::string::npos);
    }
  }
  // None of it hurt: the server still answers.
  EXPECT_EQ(GetEvents("/v1/events/dev/latest?n=1", "dev").size(), 1u);
}

TEST_F(HttpApiTest, MalformedAndOversizedRequestsGetJsonErrorsAndTheServerCarriesOn) {
  OpenStore();
  Fill({"dev"}, 10, 16);
  StartServer();
  struct Case {
    std::string request;
    int status;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"GET /v1/events/" + std::string(9000, 'a') + "/latest HTTP/1.1\r\nHost: x\r\n\r\n", 414,
       "URI over"},
      {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'b') + "\r\n\r\n", 400,
       "malformed"},
      {"HELLO\r\n\r\n", 400, "malformed"},
      {"GET /healthz HTTP/9.9\r\n\r\n", 400, "malformed"},
      {"BREW /healthz HTTP/1.1\r\n\r\n", 400, "malformed"},
      {"GET /healthz?a?b HTTP/1.1\r\n\r\n", 400, "malformed"},
      // Over the 1 MiB that POST /v1/latest may send (HttpServerOptions::max_body_bytes).
      {"POST /v1/scan HTTP/1.1\r\nHost: x\r\nContent-Length: 1100000\r\n\r\n" +
           std::string(1100000, 'x'),
       413, "request body over"},
  };
  for (const Case& c : cases) {
    RawConnection conn(http_->port());
    ASSERT_TRUE(conn.Send(c.request));
    const std::string response = conn.Read(1 << 20);
    EXPECT_EQ(StatusOfRawResponse(response), c.status) << c.request.substr(0, 60) << "\n"
                                                       << response.substr(0, 300);
    nlohmann::json body = nlohmann::json::parse(BodyOfRawResponse(response), nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << response.substr(0, 300);
    EXPECT_NE(body["error"].get<std::string>().find(c.fragment), std::string::npos)
        << body["error"];
  }
  // Pure garbage, NUL bytes, and a connection closed mid-request.
  {
    RawConnection conn(http_->port());
    std::string garbage(4096, '\0');
    std::mt19937 rng(3);
    for (char& ch : garbage) ch = static_cast<char>(rng());
    conn.Send(garbage);
    conn.ShutdownWrite();
    conn.Read(1 << 16, std::chrono::seconds(10));
  }
  {
    RawConnection conn(http_->port());
    conn.Send("GET /v1/events/dev/lat");
  }
  EXPECT_EQ(GetEvents("/v1/events/dev/latest?n=2", "dev").size(), 2u);
}

TEST_F(HttpApiTest, IdleConnectionsBeyondTheThreadCountDoNotStopTheServer) {
  OpenStore();
  Fill({"dev"}, 10, 16);
  HttpServerOptions options;
  options.io_threads = 1;
  options.max_queries = 1;
  options.read_timeout_ms = 300;
  options.idle_timeout_ms = 1000;
  StartServer(options);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 6; ++i) {
    idle.push_back(std::make_unique<RawConnection>(http_->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  // The idle connections hold both threads for a while; they time out, and the server answers.
  httplib::Client client = Client();
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        httplib::Result res = client.Get("/healthz");
        return res && res->status == 200;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(100)));
}

// cpp-httplib holds a thread per open connection: with the default thread count, 40 idle
// keep-alive connections (a fan-out's peers keep theirs open) leave threads for the next one, so
// it is answered at once, not after the idle ones time out (120 s here; the client gives up at 30).
TEST_F(HttpApiTest, ConnectionsBeyondTheOldThreadCountAreAnsweredWhileOthersStayOpen) {
  OpenStore();
  HttpServerOptions options;
  options.read_timeout_ms = 120000;
  options.idle_timeout_ms = 120000;
  StartServer(options);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 40; ++i) {
    idle.push_back(std::make_unique<RawConnection>(http_->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  httplib::Client client = Client();
  client.set_read_timeout(std::chrono::seconds(30));
  httplib::Result res = client.Get("/healthz");
  ASSERT_TRUE(res) << "no answer while 40 idle connections are open: "
                   << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

// A burst of connections (a dashboard fleet reconnecting, a group's peers after a restart) while
// the acceptor is busy or off the CPU waits in the kernel's listen backlog. cpp-httplib listens
// with a backlog of 5: a burst overflowed it and each dropped SYN cost its client a 1 s retransmit.
// The backlog a socket listens with is its Send-Q in `ss -ltn` (iproute2).
TEST_F(HttpApiTest, TheListenBacklogHoldsABurstOfConnections) {
  OpenStore();
  StartServer();
  const std::string command = "ss -ltnH 'sport = :" + std::to_string(http_->port()) + "' 2>&1";
  FILE* out = popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  char line[512] = {};
  std::string text;
  while (std::fgets(line, sizeof(line), out) != nullptr) text += line;
  ASSERT_EQ(pclose(out), 0) << "ss (Debian package iproute2) failed: " << text;
  char state[32] = {};
  long recv_q = -1, send_q = -1;
  ASSERT_EQ(std::sscanf(text.c_str(), "%31s %ld %ld", state, &recv_q, &send_q), 3) << text;
  EXPECT_STREQ(state, "LISTEN");
  EXPECT_GE(send_q, 128) << "the listen backlog: " << text;
}

// A scan over ~34 MB, far more than a small receive buffer and the server's send buffer (at most
// 4 MiB) hold, so that the server is still writing when the client acts.
class HttpApiBigScanTest : public HttpApiTest {
 protected:
  void SetUp() override {
    HttpApiTest::SetUp();
    OpenStore();
    std::vector<std::string> ids;
    for (int i = 0; i < 200; ++i) ids.push_back("dev-" + std::to_string(i));
    Fill(ids, 20000, 240);
  }
  std::string ScanRequest() const {
    return "GET /v1/scan?from=" + std::to_string(kFirstBucket) + "&to=" + std::to_string(kNow) +
           " HTTP/1.1\r\nHost: x\r\n\r\n";
  }
  static constexpr int kSmallReceiveBuffer = 64 << 10;
};

TEST_F(HttpApiBigScanTest, AClientThatGoesAwayStopsItsScan) {
  StartServer();
  {
    RawConnection conn(http_->port(), kSmallReceiveBuffer);
    ASSERT_TRUE(conn.Send(ScanRequest()));
    const std::string start = conn.Read(64 << 10);
    ASSERT_EQ(StatusOfRawResponse(start), 200) << start.substr(0, 200);
  }  // closed with most of the scan unread
  EXPECT_TRUE(testing::WaitFor([&] {
    return Metric("hotrow_queries_total{kind=\"scan\",outcome=\"cancelled\"} ") == "1";
  })) << Metric("hotrow_queries_total{kind=\"scan\",outcome=\"cancelled\"} ");
  EXPECT_EQ(Metric("hotrow_queries_total{kind=\"scan\",outcome=\"ok\"} "), "0");
}

TEST_F(HttpApiBigScanTest, QueriesBeyondTheSlotsAre503WhileHealthIsStillAnswered) {
  HttpServerOptions options;
  options.max_queries = 1;
  options.write_timeout_ms = 60000;
  StartServer(options);
  RawConnection slow(http_->port(), kSmallReceiveBuffer);
  ASSERT_TRUE(slow.Send(ScanRequest()));
  // Await the scan's first bytes: only then does it surely hold the only slot (a probe sent
  // earlier could take the slot first and get the scan refused). Then read no more.
  const std::string start = slow.Read(1024);
  ASSERT_EQ(StatusOfRawResponse(start), 200) << start.substr(0, 200);
  httplib::Client client = Client();
  int status = 0;
  std::string body;
  std::string retry_after;
  auto get = [&](const std::string& target) {
    httplib::Result res = client.Get(target);
    status = res ? res->status : -1;
    body = res ? res->body : "";
    retry_after = res ? res->get_header_value("Retry-After") : "";
    return status;
  };
  // A latest-N the last-N cache holds (n up to its depth, 16) is answered on the I/O thread and
  // takes no slot; one past the cache's depth reads the store and needs the slot.
  ASSERT_TRUE(testing::WaitFor([&] { return get("/v1/events/dev-1/latest?n=100") == 503; }))
      << "scan outcomes: ok=" << Metric("hotrow_queries_total{kind=\"scan\",outcome=\"ok\"} ")
      << " cancelled=" << Metric("hotrow_queries_total{kind=\"scan\",outcome=\"cancelled\"} ")
      << " error=" << Metric("hotrow_queries_total{kind=\"scan\",outcome=\"error\"} ")
      << " busy=" << Metric("hotrow_queries_total{kind=\"scan\",outcome=\"busy\"} ")
      << " bad=" << Metric("hotrow_queries_total{kind=\"scan\",outcome=\"bad_request\"} ");
  EXPECT_EQ(retry_after, "1");
  EXPECT_NE(nlohmann::json::parse(body)["error"].get<std::string>().find("too many queries"),
            std::string::npos);
  EXPECT_EQ(get("/v1/scan?from=1&to=2"), 503);
  EXPECT_EQ(get("/v1/events/dev-1?from=1&to=2"), 503);
  EXPECT_EQ(get("/healthz"), 200);
  EXPECT_EQ(get("/v1/stats"), 200);
  EXPECT_EQ(get("/metrics"), 200);

  EXPECT_EQ(get("/v1/events/dev-1/latest?n=1"), 200);  // from the cache, beside the scan

  slow.Close();
  EXPECT_TRUE(testing::WaitFor([&] { return get("/v1/events/dev-1/latest?n=100") == 200; }));
}

TEST_F(HttpApiBigScanTest, StopCutsARunningScanShort) {
  StartServer();
  RawConnection conn(http_->port(), kSmallReceiveBuffer);
  ASSERT_TRUE(conn.Send(ScanRequest()));
  std::string response = conn.Read(16 << 10);
  ASSERT_EQ(StatusOfRawResponse(response), 200);
  // Stop while the scan waits for this client to read; Stop returns once the scan has stopped
  // and every thread is joined.
  std::thread stopper([&] { http_->Stop(); });
  const int port = http_->port();
  EXPECT_TRUE(testing::WaitFor([&] { return !RawConnection(port).connected(); }));
  response += conn.Read(size_t{1} << 30, std::chrono::seconds(60));
  stopper.join();
  // The answer ends with an error line and without the final zero-length chunk.
  EXPECT_NE(response.find("{\"error\":\"the server is shutting down\"}"), std::string::npos)
      << response.substr(response.size() > 300 ? response.size() - 300 : 0);
  EXPECT_NE(response.substr(response.size() - 7), "\r\n0\r\n\r\n");
  EXPECT_LT(response.size(), size_t{30} << 20);  // well short of the whole scan
}

}  // namespace
}  // namespace hotrow::http
