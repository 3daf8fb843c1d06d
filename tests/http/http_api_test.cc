// The HTTP API in process: a real store and query engine behind a real HttpServer on a loopback
// port, asked over real sockets. Answers are compared with the brute-force oracle; every bad
// request of the table must get its status and a JSON error naming the problem; hostile clients
// (huge URLs, garbage, idle connections, clients that go away mid-scan) must not stop the server.

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
namespace {

using query::Event;
using query::Order;
using testing::TestEvent;

constexpr int64_t kBucketMs = 60'000;
constexpr int64_t kFirstBucket = 1'700'000'040'000 / kBucketMs * kBucketMs;
constexpr int kBuckets = 5;
// "now": a little after the last bucket, so that every generated event is in the window.
constexpr int64_t kNow = kFirstBucket + kBuckets * kBucketMs + 1000;

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

int StatusOfRawResponse(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

std::string BodyOfRawResponse(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

// What an id looks like after the JSON round trip: invalid UTF-8 replaced (event_json.h).
std::string JsonRoundTrip(const std::string& id) {
  std::string quoted;
  wire::AppendJsonString(id, &quoted);
  return nlohmann::json::parse(quoted).get<std::string>();
}

Event ToEvent(const TestEvent& t) {
  return Event{t.id, t.ts_ms, t.topic, t.partition, t.offset, t.payload};
}

// One event of an answer, through the API's own inverse of its event JSON.
Event FromJson(const nlohmann::ordered_json& j) {
  Result<Event> event = wire::ParseEventJson(j.dump());
  EXPECT_TRUE(event.ok()) << event.status().ToString();
  return event.ok() ? *event : Event{};
}

// True for ids JSON carries unaltered: valid UTF-8 (told independently of the server's own check,
// by whether nlohmann's replacing dump changes them).
bool CarriedUnaltered(const std::string& id) {
  return nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) ==
         nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore);
}

std::vector<Event> Normalized(std::vector<Event> events) {
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

  void OpenStore() {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = 10 * kBucketMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
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

TEST_F(HttpApiTest, LatestAnswersWhatTheOracleSaysForEveryKindOfId) {
  OpenStore();
  std::mt19937_64 rng(1);
  const std::vector<std::string> ids = testing::TrickyIds(&rng);
  Fill(ids, 400, 24);
  StartServer();
  const int64_t window_start = store_->WindowStartMs();
  int refused = 0;
  for (const std::string& id : ids) {
    if (!CarriedUnaltered(id)) {
      // No record can carry it; the query is refused rather than answered for an altered id.
      httplib::Client client = Client();
      httplib::Result res = client.Get("/v1/events/" + wire::PercentEncode(id) + "/latest");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 400) << testing::EscapeBytes(id);
      EXPECT_NE(res->body.find("UTF-8"), std::string::npos) << res->body;
      ++refused;
      continue;
    }
    for (int n : {1, 3, 10, 10000}) {
      const std::string target =
          "/v1/events/" + wire::PercentEncode(id) + "/latest?n=" + std::to_string(n);
      std::vector<Event> got = GetEvents(target, id);
      std::string diff = testing::DiffEvents(Normalized(oracle_.Latest(id, n, window_start)), got);
      EXPECT_TRUE(diff.empty()) << testing::EscapeBytes(id) << " n=" << n << ": " << diff;
    }
  }
  EXPECT_GT(refused, 0) << "TrickyIds has ids that are not UTF-8";
  // n defaults to 10.
  std::vector<Event> got =
      GetEvents("/v1/events/" + wire::PercentEncode(ids[0]) + "/latest", ids[0]);
  EXPECT_TRUE(
      testing::DiffEvents(Normalized(oracle_.Latest(ids[0], 10, window_start)), got).empty());
}

TEST_F(HttpApiTest, RangeHonoursWindowLimitAndOrderInMsAndRfc3339) {
  OpenStore();
  const std::vector<std::string> ids = {"dev-a", "dev/b", "dev b+c", "dev-\xc3\xa9"};
  Fill(ids, 300, 24);
  StartServer();
  const int64_t window_start = store_->WindowStartMs();
  const int64_t from = kFirstBucket + kBucketMs / 2;
  const int64_t to = kFirstBucket + 3 * kBucketMs + 17;
  for (const std::string& id : ids) {
    const std::string base = "/v1/events/" + wire::PercentEncode(id);
    struct Case {
      std::string query;
      int64_t limit;
      Order order;
    } cases[] = {
        {"from=" + std::to_string(from) + "&to=" + std::to_string(to), 1000, Order::kDesc},
        {"from=" + std::to_string(from) + "&to=" + std::to_string(to) + "&order=asc", 1000,
         Order::kAsc},
        {"to=" + std::to_string(to) + "&from=" + std::to_string(from) + "&limit=7&order=desc", 7,
         Order::kDesc},
        {"from=" + std::to_string(from) + "&to=" + std::to_string(to) + "&limit=5&order=asc", 5,
         Order::kAsc},
        // RFC 3339, with a literal '+' offset and with an encoded one.
        {"from=" + wire::PercentEncode(FormatRfc3339Ms(from)) + "&to=" +
             FormatRfc3339Ms(to).substr(0, 19) + "." + FormatRfc3339Ms(to).substr(20, 3) + "+00:00",
         1000, Order::kDesc},
    };
    for (const Case& c : cases) {
      std::vector<Event> got = GetEvents(base + "?" + c.query, id);
      std::string diff = testing::DiffEvents(
          Normalized(oracle_.Range(id, from, to, c.limit, c.order, window_start)), got);
      EXPECT_TRUE(diff.empty()) << testing::EscapeBytes(id) << " " << c.query << ": " << diff;
    }
  }
}

TEST_F(HttpApiTest, LargeRangesAreStreamedInChunksAndSmallOnesAreNot) {
  OpenStore();
  Fill({"dev"}, 3000, 100);
  StartServer();
  const int64_t window_start = store_->WindowStartMs();
  const std::string base = "/v1/events/dev?from=0&to=" + std::to_string(kNow + 1);
  httplib::Client client = Client();
  httplib::Result big = client.Get(base + "&limit=5000");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->get_header_value("Transfer-Encoding"), "chunked");
  EXPECT_GT(big->body.size(), size_t{64} << 10);  // more than one flush
  httplib::Result small = client.Get(base + "&limit=10");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->get_header_value("Transfer-Encoding"), "");
  for (int64_t limit : {10, 5000}) {
    std::vector<Event> got = GetEvents(base + "&limit=" + std::to_string(limit), "dev");
    EXPECT_TRUE(testing::DiffEvents(Normalized(oracle_.Range("dev", 0, kNow + 1, limit,
                                                             Order::kDesc, window_start)),
                                    got)
                    .empty())
        << limit;
  }
}

TEST_F(HttpApiTest, ScanStreamsEveryEventOfTheWindowAsNdjson) {
  OpenStore();
  Fill({"a", "b", "c", "d/e", "\xff\xfe"}, 500, 40);
  StartServer();
  const int64_t window_start = store_->WindowStartMs();
  const int64_t from = kFirstBucket + 1234;
  const int64_t to = kFirstBucket + 4 * kBucketMs - 1;
  std::vector<Event> got =
      GetScan("/v1/scan?from=" + std::to_string(from) + "&to=" + std::to_string(to));
  std::vector<Event> want = Normalized(oracle_.Scan(from, to, window_start));
  testing::Oracle::SortCanonical(&got);
  testing::Oracle::SortCanonical(&want);
  ASSERT_GT(want.size(), 1000u);
  EXPECT_TRUE(testing::DiffEvents(want, got).empty()) << testing::DiffEvents(want, got);

  std::vector<Event> limited =
      GetScan("/v1/scan?from=" + std::to_string(from) + "&to=" + std::to_string(to) + "&limit=17");
  EXPECT_EQ(limited.size(), 17u);
}

TEST_F(HttpApiTest, IdsNoRecordCanCarryAre400NamingTheRule) {
  OpenStore();
  const std::string max_id(256, 'z');
  Fill({"dev", max_id}, 20, 16);
  StartServer();
  struct Case {
    std::string id;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {std::string(257, 'z'), "at most 256 bytes"},
      {std::string(5000, 'z'), "at most 256 bytes"},
      {"\xff", "not valid UTF-8"},
      {"dev\xfe", "not valid UTF-8"},
      {"\xc0\xaf", "not valid UTF-8"},          // overlong '/'
      {"\xed\xa0\x80", "not valid UTF-8"},      // a surrogate
      {"\xe2\x82", "not valid UTF-8"},           // truncated
      {"\xf4\x90\x80\x80", "not valid UTF-8"},  // above U+10FFFF
  };
  for (const Case& c : cases) {
    for (const std::string& target :
         {"/v1/events/" + wire::PercentEncode(c.id) + "/latest?n=3",
          "/v1/events/" + wire::PercentEncode(c.id) + "?from=0&to=" + std::to_string(kNow + 1)}) {
      httplib::Client client = Client();
      httplib::Result res = client.Get(target);
      ASSERT_TRUE(res) << target.substr(0, 80);
      EXPECT_EQ(res->status, 400) << testing::EscapeBytes(c.id).substr(0, 80);
      nlohmann::json body = nlohmann::json::parse(res->body, nullptr, false);
      ASSERT_TRUE(body.is_object() && body.contains("error")) << res->body;
      EXPECT_NE(body["error"].get<std::string>().find(c.fragment), std::string::npos)
          << body["error"];
    }
  }
  // At the limit, and multi-byte UTF-8, are ordinary ids.
  EXPECT_FALSE(GetEvents("/v1/events/" + wire::PercentEncode(max_id) + "/latest", max_id).empty());
  EXPECT_TRUE(
      GetEvents("/v1/events/" + wire::PercentEncode("d\xc3\xa9v-\xf0\x9f\x98\x80") + "/latest",
                "d\xc3\xa9v-\xf0\x9f\x98\x80")
          .empty());
}

TEST_F(HttpApiTest, QueryWorkCountersAreInMetricsAndLatestReadsLittle) {
  OpenStore();
  Fill({"dev"}, 2000, 24);  // one id, every salt of every bucket
  StartServer();
  auto counter = [&](const std::string& name) {
    const std::string text = Metric(name + " ");
    return text.empty() ? -1.0 : std::stod(text);
  };
  const double rows_before = counter("hotrow_query_rows_read_total");
  const double seeks_before = counter("hotrow_query_seeks_total");
  ASSERT_GE(rows_before, 0) << "no hotrow_query_rows_read_total in /metrics";
  ASSERT_GE(counter("hotrow_query_iterators_created_total"), 0);
  EXPECT_EQ(GetEvents("/v1/events/dev/latest?n=10", "dev").size(), 10u);
  // The newest bucket holds far more than 10 events of "dev": one bucket, 4 salts, one seek each,
  // and at most the 10 rows of the answer plus a few per salt.
  EXPECT_EQ(counter("hotrow_query_seeks_total") - seeks_before, 4);
  EXPECT_LE(counter("hotrow_query_rows_read_total") - rows_before, 10 + 4 * 4);
}

TEST_F(HttpApiTest, UnknownIdsAndEmptyWindowsAreEmptySuccesses) {
  OpenStore();
  Fill({"dev-1", "dev-2"}, 50, 16);
  StartServer();
  for (const std::string& id : testing::AbsentIds()) {
    if (!CarriedUnaltered(id)) continue;  // a 400, see IdsNoRecordCanCarryAre400NamingTheRule
    EXPECT_TRUE(GetEvents("/v1/events/" + wire::PercentEncode(id) + "/latest?n=5", id).empty());
    EXPECT_TRUE(
        GetEvents(
            "/v1/events/" + wire::PercentEncode(id) + "?from=0&to=" + std::to_string(kNow + 1), id)
            .empty());
  }
  // Before the hot window: nothing, even for an id that exists.
  EXPECT_TRUE(GetEvents("/v1/events/dev-1?from=0&to=1000", "dev-1").empty());
  EXPECT_TRUE(GetScan("/v1/scan?from=0&to=1000").empty());
}

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
      {"GET", "/v1/events/" + std::string(257, 'a') + "/latest", 400, "257 bytes; ids are at most 256"},
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
      {"POST /v1/scan HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
           std::string(100000, 'x'),
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
  options.threads = 2;
  options.max_queries = 1;
  options.read_timeout_ms = 300;
  options.keep_alive_timeout_ms = 1000;
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

TEST_F(HttpApiTest, TheRootIsTheStatusPage) {
  OpenStore();
  StartServer();
  httplib::Client client = Client();
  httplib::Result page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->body, StatusPageHtml());
  httplib::Result head = client.Head("/");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
}

// http.listen may be an IPv6 literal in brackets; the server's URL is one a client (a peer, the CLI)
// can be built from.
TEST_F(HttpApiTest, ServesOnAnIpv6LoopbackAddress) {
  OpenStore();
  Fill({"dev-1"}, 10, 16);
  HttpServerOptions options;
  options.listen = "[::1]:0";
  StartServer(options);
  const std::string port = std::to_string(http_->port());
  EXPECT_EQ(http_->address(), "[::1]:" + port);
  EXPECT_EQ(http_->url(), "http://[::1]:" + port);
  httplib::Client client(http_->url());
  httplib::Result res = client.Get("/v1/events/dev-1/latest?n=3");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(nlohmann::json::parse(res->body)["events"].size(), 3u);
  // Not on IPv4: the server listens where it was told.
  httplib::Client v4("127.0.0.1", http_->port());
  v4.set_connection_timeout(std::chrono::seconds(2));
  EXPECT_FALSE(v4.Get("/healthz"));
}

TEST_F(HttpApiTest, HealthReadinessStatsAndMetricsAnswer) {
  OpenStore();
  Fill({"dev-1", "dev-2"}, 100, 16);
  StartServer();
  httplib::Client client = Client();

  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  // No ingestor in this process: not ready, and the reason says so.
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  nlohmann::json r = nlohmann::json::parse(ready->body);
  EXPECT_EQ(r["ready"], false);
  EXPECT_EQ(r["reason"], "not ingesting");

  httplib::Result stats = client.Get("/v1/stats");
  ASSERT_TRUE(stats);
  ASSERT_EQ(stats->status, 200);
  nlohmann::json s = nlohmann::json::parse(stats->body);
  EXPECT_EQ(s["ingested"], 0);
  for (const char* reason : ingest::kRejectReasons) EXPECT_EQ(s["rejected"][reason], 0) << reason;
  EXPECT_EQ(s["lost_to_retention"], 0);
  EXPECT_TRUE(s["lag"].is_object());
  ASSERT_TRUE(s["buckets"].is_array());
  EXPECT_EQ(s["buckets"].size(), static_cast<size_t>(kBuckets));
  uint64_t bucket_events = 0;
  for (const auto& b : s["buckets"]) {
    EXPECT_EQ(b["start"].get<int64_t>() % kBucketMs, 0);
    EXPECT_GT(b["bytes"].get<uint64_t>(), 0u);
    EXPECT_GE(b["sorted_runs"].get<int>(), 0);
    bucket_events += b["events"].get<uint64_t>();
  }
  EXPECT_EQ(bucket_events, oracle_.size());
  ASSERT_EQ(s["salts"].size(), 4u);
  uint64_t salt_events = 0;
  for (const auto& salt : s["salts"]) salt_events += salt["events"].get<uint64_t>();
  EXPECT_EQ(salt_events, oracle_.size());
  EXPECT_EQ(s["store"]["events"], oracle_.size());

  GetEvents("/v1/events/dev-1/latest?n=3", "dev-1");
  client.Get("/v1/events/dev-1/latest?n=0");
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string& text = metrics->body;
  for (const char* needle :
       {"# TYPE hotrow_queries_total counter",
        "hotrow_queries_total{kind=\"latest\",outcome=\"ok\"} 1",
        "hotrow_queries_total{kind=\"latest\",outcome=\"bad_request\"} 1",
        "# TYPE hotrow_query_seconds histogram", "hotrow_query_seconds_count{kind=\"latest\"} 1",
        "# TYPE hotrow_buckets gauge", "hotrow_buckets 5", "hotrow_salt_events{salt=\"0\"}",
        "hotrow_store_events 500", "hotrow_resident_bytes"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
  // Responses are counted once written, so the count may trail the client by a moment.
  EXPECT_TRUE(testing::WaitFor(
      [&] { return Metric("hotrow_http_responses_total{code=\"400\"} ") == "1"; }));
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
  ASSERT_TRUE(testing::WaitFor([&] { return get("/v1/events/dev-1/latest?n=1") == 503; }))
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

  slow.Close();
  EXPECT_TRUE(testing::WaitFor([&] { return get("/v1/events/dev-1/latest?n=1") == 200; }));
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
