// The index routes of the HTTP API (http/index_handlers.cc) in process: a real store with
// index.fields, a real HttpServer on a loopback port, real sockets. Answers must equal
// query::IndexQuery's (itself checked against an oracle in tests/query/index_oracle_test.cc),
// values travel percent-encoded, bad requests get 400 with a JSON error, and buckets made before a
// field was indexed are named in "unindexed".

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "http/metrics.h"
#include "http/server.h"
#include "keying/index_key.h"
#include "query/index_query.h"
#include "query/index_series.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/temp_dir.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

constexpr int64_t kBucketMs = 60'000;
constexpr int64_t kT0 = 1'700'000'040'000 / kBucketMs * kBucketMs;
constexpr int64_t kNow = kT0 + 3 * kBucketMs;

class HttpIndexTest : public ::testing::Test {
 protected:
  void TearDown() override { Stop(); }

  void Stop() {
    if (http_) http_->Stop();
    http_.reset();
    engine_.reset();
    store_.reset();
  }

  void Start(std::vector<std::string> fields) {
    Stop();
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = 10 * kBucketMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    options.index_fields = std::move(fields);
    auto store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), query::QueryOptions{});
    HttpServerOptions http;
    http.listen = "127.0.0.1:0";
    auto server =
        HttpServer::Start(http, HttpBackend{store_.get(), engine_.get(), nullptr, &metrics_});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    http_ = std::move(server).value();
  }

  // Writes `n` events at `first_ts`, `first_ts` + 1 ms, ... with site values cycling over `sites`.
  void Write(int64_t first_ts, int n, const std::vector<std::string>& sites, bool extra) {
    store::WriteBatchInput batch;
    for (int i = 0; i < n; ++i) {
      testing::TestEvent e{
          "dev-" + std::to_string(i % 7),     first_ts + i, "events", i % 2, offset_[i % 2]++,
          "{\"i\":" + std::to_string(i) + "}"};
      auto row = testing::MakeRow(store_.get(), e);
      ASSERT_TRUE(row.ok());
      row->index.push_back({"site", sites[static_cast<size_t>(i) % sites.size()]});
      if (extra) row->index.push_back({"extra", "x"});
      batch.rows.push_back(std::move(row).value());
      batch.next_offsets[{"events", i % 2}] = offset_[i % 2];
    }
    store::WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
    ASSERT_EQ(outcome.stored, static_cast<size_t>(n));
  }

  nlohmann::json Get(const std::string& target, int want_status) {
    httplib::Client client("127.0.0.1", http_->port());
    client.set_url_encode(false);
    httplib::Result res = client.Get(target);
    EXPECT_TRUE(res) << target;
    if (!res) return {};
    EXPECT_EQ(res->status, want_status) << target << " -> " << res->body;
    return nlohmann::json::parse(res->body);
  }

  std::vector<query::Event> Events(const nlohmann::json& answer) {
    std::vector<query::Event> out;
    for (const auto& e : answer.at("events")) {
      Result<query::Event> event = wire::ParseEventJson(e.dump());
      EXPECT_TRUE(event.ok());
      if (event.ok()) out.push_back(*event);
    }
    return out;
  }

  ManualClock clock_{kNow};
  testing::TempDir dir_;
  Metrics metrics_;
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  std::unique_ptr<HttpServer> http_;
  int64_t offset_[2] = {0, 0};
};

TEST_F(HttpIndexTest, AnswersEqualTheIndexQueryWithEncodedValues) {
  ASSERT_NO_FATAL_FAILURE(Start({"site", "meta.type"}));
  const std::vector<std::string> sites = {"a/b c", "\xc3\xa9t\xc3\xa9", "", "42"};
  ASSERT_NO_FATAL_FAILURE(Write(kT0 + 10, 200, sites, false));
  const query::IndexQuery direct(store_.get(), nullptr);
  for (const std::string& site : sites) {
    if (site.empty()) continue;  // an empty path segment is not a value the route can carry
    const std::string base = "/v1/index/site/" + wire::PercentEncode(site);
    nlohmann::json latest = Get(base + "/latest?n=5", 200);
    EXPECT_EQ(latest.at("field"), "site");
    EXPECT_EQ(latest.at("value"), site);
    EXPECT_FALSE(latest.contains("unindexed"));
    auto want = direct.Latest("site", site, 5);
    ASSERT_TRUE(want.ok());
    ASSERT_EQ(want->events.size(), 5u);
    EXPECT_EQ(Events(latest), want->events) << site;

    const std::string span =
        "?from=" + std::to_string(kT0 + 50) + "&to=" + std::to_string(kT0 + 150);
    nlohmann::json range = Get(base + span + "&order=asc&limit=7", 200);
    auto want_range = direct.Range("site", site, kT0 + 50, kT0 + 150, 7, query::Order::kAsc);
    ASSERT_TRUE(want_range.ok());
    EXPECT_EQ(Events(range), want_range->events) << site;
    EXPECT_EQ(Events(range).size(), 7u);
  }
  // A value nobody has: 200, no events.
  EXPECT_TRUE(Get("/v1/index/site/nobody/latest", 200).at("events").empty());
}

TEST_F(HttpIndexTest, BadRequestsAre400WithAJsonError) {
  ASSERT_NO_FATAL_FAILURE(Start({"site"}));
  for (const std::string& target :
       {std::string("/v1/index/other/x/latest"), std::string("/v1/index/site/x/latest?n=0"),
        std::string("/v1/index/site/x/latest?n=10001"), std::string("/v1/index/site/x?from=5&to=5"),
        std::string("/v1/index/site/x?from=1"),
        std::string("/v1/index/site/x?order=up&from=1&to=2"),
        "/v1/index/site/" + std::string(257, 'v') + "/latest",
        std::string("/v1/index/site/%FF/latest"), std::string("/v1/index/site/x/latest?bogus=1")}) {
    nlohmann::json answer = Get(target, 400);
    EXPECT_TRUE(answer.contains("error")) << target;
  }
  EXPECT_NE(
      Get("/v1/index/other/x/latest", 400).at("error").get<std::string>().find("index.fields"),
      std::string::npos);
}

TEST_F(HttpIndexTest, BucketsMadeBeforeAFieldWasIndexedAreNamed) {
  ASSERT_NO_FATAL_FAILURE(Start({"site"}));
  ASSERT_NO_FATAL_FAILURE(Write(kT0 + 10, 20, {"s"}, true));  // "extra" is not indexed here
  ASSERT_NO_FATAL_FAILURE(Start({"site", "extra"}));
  ASSERT_NO_FATAL_FAILURE(Write(kT0 + kBucketMs + 10, 20, {"s"}, true));
  nlohmann::json answer = Get("/v1/index/extra/x/latest?n=100", 200);
  EXPECT_EQ(answer.at("events").size(), 20u) << "only the new bucket's events are indexed";
  ASSERT_TRUE(answer.contains("unindexed")) << answer.dump();
  ASSERT_EQ(answer.at("unindexed").size(), 1u);
  EXPECT_EQ(answer.at("unindexed")[0].at("from"), kT0);
  EXPECT_EQ(answer.at("unindexed")[0].at("to"), kT0 + kBucketMs);
  // site was indexed everywhere: nothing unindexed, every event found.
  nlohmann::json site = Get("/v1/index/site/s/latest?n=100", 200);
  EXPECT_EQ(site.at("events").size(), 40u);
  EXPECT_FALSE(site.contains("unindexed"));
}

// The series of an indexed value: the same answer as the id series' shape, named by "index", its
// points the engine's (query/index_series.h, checked against an oracle in index_oracle_test), and
// the buckets made before the field was indexed named as the other index queries name them.
TEST_F(HttpIndexTest, SeriesOfAnIndexedValueIsTheEnginesWithItsUnindexedBuckets) {
  ASSERT_NO_FATAL_FAILURE(Start({"site"}));
  ASSERT_NO_FATAL_FAILURE(Write(kT0 + 10, 30, {"s"}, true));  // "extra" is not indexed here
  ASSERT_NO_FATAL_FAILURE(Start({"site", "extra"}));
  ASSERT_NO_FATAL_FAILURE(Write(kT0 + kBucketMs + 10, 90, {"a/b c", "s"}, true));
  const std::string span = "&from=" + std::to_string(kT0) + "&to=" + std::to_string(kNow);
  nlohmann::json got =
      Get("/v1/index/site/" + wire::PercentEncode("a/b c") + "/series?field=i" + span +
              "&max_points=6&agg=count,min,max,last,avg",
          200);
  EXPECT_EQ(got.at("index").at("field"), "site");
  EXPECT_EQ(got.at("index").at("value"), "a/b c");
  EXPECT_EQ(got.at("field"), "i");
  EXPECT_FALSE(got.contains("unindexed"));
  Result<query::IndexSeriesAnswer> want =
      engine_->IndexSeries("site", "a/b c", "i", kT0, kNow, got.at("step_ms").get<int64_t>());
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_EQ(got.at("points").size(), want->series.points.size());
  uint64_t count = 0;
  for (size_t i = 0; i < want->series.points.size(); ++i) {
    const query::SeriesPoint& p = want->series.points[i];
    const nlohmann::json& q = got.at("points")[i];
    EXPECT_EQ(q.at("t"), p.t_ms);
    EXPECT_EQ(q.at("count"), p.count);
    EXPECT_EQ(q.at("min"), p.min);
    EXPECT_EQ(q.at("max"), p.max);
    EXPECT_EQ(q.at("last"), p.last);
    EXPECT_DOUBLE_EQ(q.at("avg").get<double>(), p.avg());
    count += p.count;
  }
  EXPECT_EQ(count, 45u) << "every other event of the second write has site \"a/b c\"";

  nlohmann::json extra = Get("/v1/index/extra/x/series?field=i" + span + "&step=60000", 200);
  ASSERT_TRUE(extra.contains("unindexed")) << extra.dump();
  ASSERT_EQ(extra.at("unindexed").size(), 1u);
  EXPECT_EQ(extra.at("unindexed")[0].at("from"), kT0);
  ASSERT_EQ(extra.at("points").size(), 1u) << "only the new bucket's events are indexed";
  EXPECT_EQ(extra.at("points")[0].at("count"), 90);

  for (const std::string& target :
       {"/v1/index/other/x/series?field=i" + span + "&step=1000",
        std::string("/v1/index/site/x/series?field=i&from=5&to=5&step=1"),
        std::string("/v1/index/site/x/series?from=1&to=2&step=1"),
        "/v1/index/site/" + std::string(257, 'v') + "/series?field=i&from=1&to=2&step=1",
        std::string("/v1/index/site/%FF/series?field=i&from=1&to=2&step=1")}) {
    EXPECT_TRUE(Get(target, 400).contains("error")) << target;
  }
}

}  // namespace
}  // namespace hotrow::http
