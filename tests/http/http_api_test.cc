// The HTTP API in process, asked what it is for: latest, range and scan answers compared with the
// brute-force oracle, ids of every kind, the status page, health, readiness, stats and metrics.

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/http/http_api_test_base.h"

namespace hotrow::http {
namespace {

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
    EXPECT_TRUE(
        testing::DiffEvents(
            Normalized(oracle_.Range("dev", 0, kNow + 1, limit, Order::kDesc, window_start)), got)
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
      {"\xe2\x82", "not valid UTF-8"},          // truncated
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

// http.listen may be an IPv6 literal in brackets; the server's URL is one a client (a peer, the
// CLI) can be built from.
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

// A second server on a port already served is refused: it must not share the port and take a
// part of the first one's connections (cpp-httplib's default SO_REUSEPORT allowed that).
TEST_F(HttpApiTest, APortAlreadyServedIsRefused) {
  OpenStore();
  StartServer();
  query::QueryEngine engine(store_.get(), query::QueryOptions{});
  HttpServerOptions options;
  options.listen = "127.0.0.1:" + std::to_string(http_->port());
  HttpBackend backend{store_.get(), &engine, nullptr, &metrics_};
  Result<std::unique_ptr<HttpServer>> second = HttpServer::Start(options, backend);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().ToString().find("cannot listen on " + options.listen),
            std::string::npos)
      << second.status().ToString();
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
    EXPECT_EQ(b["spread_ids"], 0);  // only salt_by adaptive spreads ids
    bucket_events += b["events"].get<uint64_t>();
  }
  EXPECT_EQ(s["salt_by"], "record");
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

// Under salt_by adaptive each bucket says how many ids it spread over every salt. After a reopen a
// bucket's spread ids are exactly the ids with a row outside their home salt (ARCHITECTURE.md,
// "Adaptive salting"), which the rows on disk tell apart from the store's own bookkeeping.
TEST_F(HttpApiTest, StatsCountTheIdsEachBucketSpreadUnderAdaptiveSalting) {
  OpenStore(keying::SaltBy::kAdaptive);
  // 400 events a bucket over 20 ids drawn with a skew: the chattiest few reach the 32 events an id
  // needs before it is hot, the rest stay in their home salt.
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) ids.push_back("dev-" + std::to_string(i));
  Fill(ids, 400, 16);
  store_.reset();
  OpenStore(keying::SaltBy::kAdaptive);
  StartServer();

  Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(*store_);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::map<int64_t, std::set<uint64_t>> off_home;  // bucket start -> ids with a row off home
  for (const testing::StoredRow& row : *rows) {
    if (row.salt != store_->salter().HomeSalt(row.id_hash)) {
      off_home[row.bucket_start_ms].insert(row.id_hash);
    }
  }

  httplib::Result stats = Client().Get("/v1/stats");
  ASSERT_TRUE(stats);
  ASSERT_EQ(stats->status, 200);
  nlohmann::json s = nlohmann::json::parse(stats->body);
  EXPECT_EQ(s["salt_by"], "adaptive");
  ASSERT_EQ(s["buckets"].size(), static_cast<size_t>(kBuckets));
  size_t spread = 0;
  for (const auto& b : s["buckets"]) {
    const size_t expected = off_home[b["start"].get<int64_t>()].size();
    EXPECT_EQ(b["spread_ids"].get<size_t>(), expected) << b.dump();
    spread += expected;
  }
  EXPECT_GT(spread, 0u);                     // some id was hot somewhere
  EXPECT_LT(spread, kBuckets * ids.size());  // and not every id everywhere
}

}  // namespace
}  // namespace hotrow::http
