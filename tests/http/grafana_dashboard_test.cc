// The Grafana dashboard of docs/GRAFANA.md, against a real HTTP server on loopback over a real
// store with known events (CONTRACT.md "Grafana"). The dashboard JSON is read from the document
// itself, each query is turned into the request Infinity sends (Grafana's variables filled in as
// Grafana fills them, the parameters added to the URL as Infinity's Go backend encodes them), the
// request is compared with its golden URL, sent, and its rows with their golden text; every
// column the dashboard names must be in the rows, and the document's table of queries must list
// the dashboard's queries as they are written in it.

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "http/metrics.h"
#include "http/server.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/temp_dir.h"

namespace hotrow::http {
// Named, not anonymous: the test sources of a directory compile as unity batches
// (cmake/unity.cmake).
namespace grafana_dashboard_test {

using Json = nlohmann::ordered_json;

constexpr int64_t kBucketMs = 60'000;
constexpr int64_t kT0 = 1'700'000'040'000;  // a bucket's start
constexpr int64_t kNow = kT0 + 3 * kBucketMs;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The JSON between the document's "dashboard.json begins" and "ends" marks, without the fence.
Json DashboardOf(const std::string& doc) {
  const size_t begin = doc.find("<!-- dashboard.json begins -->\n```json\n");
  const size_t end = doc.find("```\n<!-- dashboard.json ends -->");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return Json();
  const size_t from = doc.find('\n', doc.find("```json", begin)) + 1;
  return Json::parse(doc.substr(from, end - from), nullptr, /*allow_exceptions=*/false);
}

// encodeURIComponent, which Grafana's `${var:percentencode}` applies.
std::string UriComponent(const std::string& text) {
  static const std::string kKept = "-_.!~*'()";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || kKept.find(static_cast<char>(c)) != std::string::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// Go's url.QueryEscape, which Infinity's backend applies to every parameter (url.Values.Encode).
std::string GoQueryEscape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// Grafana's interpolation of `$name`, `${name}` and `${name:percentencode}`; a variable the test
// does not know fails the test (the dashboard uses something nobody checked).
std::string Interpolate(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '$') {
      out.push_back(text[i++]);
      continue;
    }
    std::string name, format;
    size_t next = i + 1;
    if (next < text.size() && text[next] == '{') {
      const size_t close = text.find('}', next);
      if (close == std::string::npos) {
        ADD_FAILURE() << "unclosed ${ in " << text;
        return out;
      }
      name = text.substr(next + 1, close - next - 1);
      if (const size_t colon = name.find(':'); colon != std::string::npos) {
        format = name.substr(colon + 1);
        name.resize(colon);
      }
      next = close + 1;
    } else {
      while (next < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[next])) || text[next] == '_')) {
        name.push_back(text[next++]);
      }
    }
    const auto it = vars.find(name);
    if (it == vars.end()) {
      ADD_FAILURE() << "the dashboard uses a variable the test does not fill: $" << name;
    } else if (format.empty()) {
      out += it->second;
    } else if (format == "percentencode") {
      out += UriComponent(it->second);
    } else {
      ADD_FAILURE() << "unexpected variable format " << format << " in " << text;
    }
    i = next;
  }
  return out;
}

// What Infinity's backend asks for a query (pkg/infinity/request.go GetQueryURL): the URL with its
// parameters added, sorted by name and escaped by Go's url.Values.Encode; here without the base
// URL.
std::string InfinityTarget(const Json& query, const std::map<std::string, std::string>& vars) {
  std::vector<std::pair<std::string, std::string>> params;
  for (const Json& p : query.at("url_options").at("params")) {
    params.emplace_back(p.at("key").get<std::string>(),
                        Interpolate(p.at("value").get<std::string>(), vars));
  }
  std::stable_sort(params.begin(), params.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string target = Interpolate(query.at("url").get<std::string>(), vars);
  for (size_t i = 0; i < params.size(); ++i) {
    target += (i == 0 ? "?" : "&") + GoQueryEscape(params[i].first) + "=" +
              GoQueryEscape(params[i].second);
  }
  return target;
}

// A query as the document's table writes it: the URL and its parameters in the dashboard's order.
std::string AsWritten(const Json& query) {
  std::string text = "`GET " + query.at("url").get<std::string>();
  bool first = true;
  for (const Json& p : query.at("url_options").at("params")) {
    text += (first ? "?" : "&") + p.at("key").get<std::string>() + "=" +
            p.at("value").get<std::string>();
    first = false;
  }
  return text + "`";
}

class GrafanaDashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = 10 * kBucketMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    options.index_fields = {"battery"};
    auto store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    // The known events: three devices, one of them with a '/' in its id and a nested payload.
    ASSERT_NO_FATAL_FAILURE(Write("dev-1", 1000, 0, R"({"temp":20.5,"humidity":40,"battery":50})"));
    ASSERT_NO_FATAL_FAILURE(Write("dev-2", 5000, 1, R"({"temp":18,"humidity":55.5,"battery":50})"));
    ASSERT_NO_FATAL_FAILURE(
        Write("dev-1", 20000, 0, R"({"temp":21.5,"humidity":41,"battery":50})"));
    ASSERT_NO_FATAL_FAILURE(
        Write("room/1", 30000, 0, R"({"temp":25,"battery":10,"meta":{"floor":2}})"));
    ASSERT_NO_FATAL_FAILURE(Write("dev-1", 45000, 0, R"({"temp":23,"humidity":42,"battery":49})"));
    ASSERT_NO_FATAL_FAILURE(Write("dev-2", 70000, 1, R"({"temp":19,"humidity":56,"battery":80})"));
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), query::QueryOptions{});
    engine_->WaitForCacheRebuild();
    HttpServerOptions http;
    http.listen = "127.0.0.1:0";
    auto server =
        HttpServer::Start(http, HttpBackend{store_.get(), engine_.get(), nullptr, &metrics_});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    http_ = std::move(server).value();

    doc_ = ReadFile(std::string(HOTROW_SOURCE_DIR) + "/docs/GRAFANA.md");
    ASSERT_FALSE(doc_.empty()) << "docs/GRAFANA.md not found under " << HOTROW_SOURCE_DIR;
    dashboard_ = DashboardOf(doc_);
    ASSERT_TRUE(dashboard_.is_object()) << "docs/GRAFANA.md holds no valid dashboard JSON";
  }

  void TearDown() override {
    if (http_) http_->Stop();
  }

  // One event at kT0 + `at_ms`, its battery indexed as text.
  void Write(const std::string& id, int64_t at_ms, int32_t partition, const std::string& payload) {
    testing::TestEvent e{id, kT0 + at_ms, "events", partition, offsets_[partition]++, payload};
    auto row = testing::MakeRow(store_.get(), e);
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    const Json j = Json::parse(payload);
    row->index.push_back({"battery", j.at("battery").dump()});
    store::WriteBatchInput batch;
    batch.rows.push_back(std::move(row).value());
    batch.next_offsets[{"events", partition}] = offsets_[partition];
    store::WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
    ASSERT_EQ(outcome.stored, 1u);
  }

  // The dashboard's query of the panel titled `title` (or of the variable `name`).
  Json PanelQuery(const std::string& title) {
    for (const Json& panel : dashboard_.at("panels")) {
      if (panel.at("title") == title) return panel.at("targets").at(0);
    }
    ADD_FAILURE() << "no panel titled " << title;
    return Json();
  }
  Json VariableQuery(const std::string& name) {
    for (const Json& v : dashboard_.at("templating").at("list")) {
      if (v.at("name") == name) return v.at("query").at("infinityQuery");
    }
    ADD_FAILURE() << "no variable " << name;
    return Json();
  }

  // Sends `query` with `vars` filled in: the target must be `golden_target` and the answer, less
  // its final newline, `golden_rows`. Every column of the query must be in at least one row.
  void Check(const Json& query, const std::map<std::string, std::string>& vars,
             const std::string& golden_target, const std::string& golden_rows) {
    ASSERT_TRUE(query.is_object());
    const std::string target = InfinityTarget(query, vars);
    EXPECT_EQ(target, golden_target);
    httplib::Client client("127.0.0.1", http_->port());
    client.set_url_encode(false);  // as Infinity sent it
    httplib::Result res = client.Get(target);
    ASSERT_TRUE(res) << target;
    ASSERT_EQ(res->status, 200) << target << " -> " << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    ASSERT_FALSE(res->body.empty());
    EXPECT_EQ(res->body.substr(0, res->body.size() - 1), golden_rows) << target;
    // What Infinity's backend parser does: the root selector, then each column by its selector.
    const Json answer = Json::parse(res->body, nullptr, false);
    ASSERT_TRUE(answer.is_object()) << res->body;
    const Json& rows = answer.at(query.at("root_selector").get<std::string>());
    ASSERT_TRUE(rows.is_array());
    for (const Json& column : query.at("columns")) {
      const std::string selector = column.at("selector").get<std::string>();
      const std::string type = column.at("type").get<std::string>();
      bool found = false;
      for (const Json& row : rows) {
        if (!row.contains(selector)) continue;
        found = true;
        const Json& v = row.at(selector);
        if (type == "number" || type == "timestamp_epoch") {
          EXPECT_TRUE(v.is_number()) << selector << ": " << v;
        }
        if (type == "string") {
          EXPECT_TRUE(v.is_string()) << selector << ": " << v;
        }
      }
      EXPECT_TRUE(found || rows.empty()) << "column " << selector << " is in no row of " << target;
    }
  }

  ManualClock clock_{kNow};
  testing::TempDir dir_;
  Metrics metrics_;
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  std::unique_ptr<HttpServer> http_;
  int64_t offsets_[2] = {0, 0};
  std::string doc_;
  Json dashboard_;
};

// Grafana's values for a 3-minute range ending now, 30 s per point, and the variables' choices.
const std::map<std::string, std::string> kVars = {{"__from", std::to_string(kT0)},
                                                  {"__to", std::to_string(kNow)},
                                                  {"__interval", "30s"},
                                                  {"__interval_ms", "30000"},
                                                  {"prefix", ""},
                                                  {"device", "dev-1"},
                                                  {"field", "temp"},
                                                  {"index_field", "battery"},
                                                  {"index_value", "50"}};

std::map<std::string, std::string> With(std::string name, std::string value) {
  std::map<std::string, std::string> vars = kVars;
  vars[name] = std::move(value);
  return vars;
}

TEST_F(GrafanaDashboardTest, EveryQueryIsAnInfinityBackendQueryOfRowsWithTypedColumns) {
  std::vector<Json> queries;
  for (const Json& panel : dashboard_.at("panels")) {
    ASSERT_EQ(panel.at("datasource").at("type"), "yesoreyeram-infinity-datasource");
    ASSERT_EQ(panel.at("targets").size(), 1u) << panel.at("title");
    queries.push_back(panel.at("targets").at(0));
  }
  queries.push_back(VariableQuery("device"));
  ASSERT_EQ(queries.size(), 5u);
  for (const Json& q : queries) {
    EXPECT_EQ(q.at("type"), "json");
    EXPECT_EQ(q.at("source"), "url");
    EXPECT_EQ(q.at("parser"), "backend");
    EXPECT_EQ(q.at("format"), "table");
    EXPECT_EQ(q.at("root_selector"), "rows");
    EXPECT_EQ(q.at("url_options").at("method"), "GET");
    EXPECT_TRUE(q.at("url").get<std::string>().starts_with("/v1/")) << q.at("url");
    ASSERT_FALSE(q.at("columns").empty());
    for (const Json& c : q.at("columns")) {
      const std::string type = c.at("type").get<std::string>();
      EXPECT_TRUE(type == "string" || type == "number" || type == "timestamp_epoch") << type;
      EXPECT_FALSE(c.at("text").get<std::string>().empty());
    }
    bool rows = false;
    for (const Json& p : q.at("url_options").at("params"))
      rows |= p.at("key") == "format" && p.at("value") == "rows";
    EXPECT_TRUE(rows) << q.at("url");
    // The document's table lists the query as the dashboard writes it.
    EXPECT_NE(doc_.find(AsWritten(q)), std::string::npos)
        << "docs/GRAFANA.md does not list " << AsWritten(q);
  }
  // A series panel per device: repeated over the multi-valued $device.
  EXPECT_EQ(dashboard_.at("panels").at(1).at("repeat"), "device");
  EXPECT_EQ(dashboard_.at("templating").at("list").at(1).at("multi"), true);
}

const char kLatestOfEvery[] =
    R"({"next":null,"rows":[)"
    R"({"time":1700000085000,"event_id":"dev-1","topic":"events","partition":0,"offset":3,)"
    R"("payload_temp":23,"payload_humidity":42,"payload_battery":49},)"
    R"({"time":1700000110000,"event_id":"dev-2","topic":"events","partition":1,"offset":1,)"
    R"("payload_temp":19,"payload_humidity":56,"payload_battery":80},)"
    R"({"time":1700000070000,"event_id":"room/1","topic":"events","partition":0,"offset":2,)"
    R"("payload_temp":25,"payload_battery":10,"payload_meta_floor":2}]})";

TEST_F(GrafanaDashboardTest, TheDeviceVariableAndTheDevicesTableGetTheNewestEventOfEachId) {
  Check(VariableQuery("device"), kVars,
        "/v1/latest?format=rows&limit=1000&prefix=", kLatestOfEvery);
  Check(PanelQuery("Devices: the newest event of each id"), kVars,
        "/v1/latest?format=rows&limit=1000&prefix=", kLatestOfEvery);
  Check(PanelQuery("Devices: the newest event of each id"), With("prefix", "dev-2"),
        "/v1/latest?format=rows&limit=1000&prefix=dev-2",
        R"({"next":null,"rows":[)"
        R"({"time":1700000110000,"event_id":"dev-2","topic":"events","partition":1,"offset":1,)"
        R"("payload_temp":19,"payload_humidity":56,"payload_battery":80}]})");
}

TEST_F(GrafanaDashboardTest, TheSeriesPanelOfEachDeviceGetsItsStepsAsRows) {
  Check(PanelQuery("$field of $device"), kVars,
        "/v1/events/dev-1/series?agg=avg%2Cmin%2Cmax&field=temp&format=rows&from=1700000040000"
        "&step=30s&to=1700000220000",
        R"({"event_id":"dev-1","field":"temp","step_ms":30000,)"
        R"("skipped":{"absent":0,"not_number":0},"rows":[)"
        R"({"time":1700000040000,"event_id":"dev-1","avg":21,"min":20.5,"max":21.5},)"
        R"({"time":1700000070000,"event_id":"dev-1","avg":23,"min":23,"max":23}]})");
  // An id with a '/' travels percent-encoded in the path; a 1-minute interval.
  std::map<std::string, std::string> vars = With("device", "room/1");
  vars["__interval"] = "1m";
  Check(PanelQuery("$field of $device"), vars,
        "/v1/events/room%2F1/series?agg=avg%2Cmin%2Cmax&field=temp&format=rows&from=1700000040000"
        "&step=1m&to=1700000220000",
        R"({"event_id":"room/1","field":"temp","step_ms":60000,)"
        R"("skipped":{"absent":0,"not_number":0},"rows":[)"
        R"({"time":1700000040000,"event_id":"room/1","avg":25,"min":25,"max":25}]})");
  // ${__from:date}-style times are RFC 3339: the same answer as epoch ms.
  vars = With("__from", "2023-11-14T22:14:00.000Z");
  vars["__to"] = "2023-11-14T22:17:00Z";
  Check(PanelQuery("$field of $device"), vars,
        "/v1/events/dev-1/series?agg=avg%2Cmin%2Cmax&field=temp&format=rows"
        "&from=2023-11-14T22%3A14%3A00.000Z&step=30s&to=2023-11-14T22%3A17%3A00Z",
        R"({"event_id":"dev-1","field":"temp","step_ms":30000,)"
        R"("skipped":{"absent":0,"not_number":0},"rows":[)"
        R"({"time":1700000040000,"event_id":"dev-1","avg":21,"min":20.5,"max":21.5},)"
        R"({"time":1700000070000,"event_id":"dev-1","avg":23,"min":23,"max":23}]})");
}

TEST_F(GrafanaDashboardTest, TheIndexPanelsGetTheEventsAndTheSeriesOfTheValue) {
  Check(PanelQuery("Index: newest events where $index_field = $index_value"), kVars,
        "/v1/index/battery/50/latest?format=rows&n=100",
        R"({"field":"battery","value":"50","rows":[)"
        R"({"time":1700000060000,"event_id":"dev-1","topic":"events","partition":0,"offset":1,)"
        R"("payload_temp":21.5,"payload_humidity":41,"payload_battery":50},)"
        R"({"time":1700000045000,"event_id":"dev-2","topic":"events","partition":1,"offset":0,)"
        R"("payload_temp":18,"payload_humidity":55.5,"payload_battery":50},)"
        R"({"time":1700000041000,"event_id":"dev-1","topic":"events","partition":0,"offset":0,)"
        R"("payload_temp":20.5,"payload_humidity":40,"payload_battery":50}]})");
  Check(
      PanelQuery("$field where $index_field = $index_value"), kVars,
      "/v1/index/battery/50/series?agg=avg%2Ccount&field=temp&format=rows&from=1700000040000"
      "&step=30000&to=1700000220000",
      R"({"index":{"field":"battery","value":"50"},"field":"temp","step_ms":30000,)"
      R"("skipped":{"absent":0,"not_number":0},"rows":[)"
      R"({"time":1700000040000,"index_field":"battery","index_value":"50","avg":20,"count":3}]})");
}

// The rows' head keeps what the JSON answer says beside its events: here the cursor of a page.
TEST_F(GrafanaDashboardTest, ARowsAnswerKeepsTheHeadOfTheJsonAnswer) {
  httplib::Client client("127.0.0.1", http_->port());
  httplib::Result rows = client.Get("/v1/latest?limit=1&format=rows");
  httplib::Result json = client.Get("/v1/latest?limit=1&format=json");
  ASSERT_TRUE(rows && json);
  ASSERT_EQ(rows->status, 200);
  ASSERT_EQ(json->status, 200);
  EXPECT_EQ(Json::parse(rows->body).at("next"), "dev-1");
  EXPECT_EQ(Json::parse(json->body).at("next"), "dev-1");
  EXPECT_EQ(Json::parse(json->body).at("events").size(), 1u);
  // The latest of many ids, POSTed, as rows.
  httplib::Result post = client.Post("/v1/latest?format=rows",
                                     R"({"ids":["dev-2","nobody"],"n":1})", "application/json");
  ASSERT_TRUE(post);
  ASSERT_EQ(post->status, 200) << post->body;
  EXPECT_EQ(post->body,
            R"({"rows":[{"time":1700000110000,"event_id":"dev-2","topic":"events","partition":1,)"
            R"("offset":1,"payload_temp":19,"payload_humidity":56,"payload_battery":80}]})"
            "\n");
}

std::string MetricLine(httplib::Client& client, const std::string& labels) {
  httplib::Result res = client.Get("/metrics");
  if (!res) return "";
  const std::string prefix = "hotrow_queries_total{" + labels + "} ";
  const size_t at = res->body.find(prefix);
  if (at == std::string::npos) return "";
  return res->body.substr(at + prefix.size(), res->body.find('\n', at) - at - prefix.size());
}

TEST_F(GrafanaDashboardTest, AnUnknownFormatIsA400NamingItAndCountedAsABadRequest) {
  httplib::Client client("127.0.0.1", http_->port());
  const std::string series_before = MetricLine(client, R"(kind="series",outcome="bad_request")");
  const std::string latest_before =
      MetricLine(client, R"(kind="latest_all",outcome="bad_request")");
  ASSERT_EQ(series_before, "0");
  ASSERT_EQ(latest_before, "0");
  for (const std::string target :
       {"/v1/events/dev-1/series?field=temp&from=1&to=2&step=1&format=csv",
        "/v1/events/dev-1/series?field=temp&from=1&to=2&step=1&format=rows&format=rows",
        "/v1/latest?format=table"}) {
    httplib::Result res = client.Get(target);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << target;
    const Json body = Json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << res->body;
    EXPECT_NE(body.at("error").get<std::string>().find("format"), std::string::npos) << res->body;
  }
  EXPECT_EQ(MetricLine(client, R"(kind="series",outcome="bad_request")"), "2");
  EXPECT_EQ(MetricLine(client, R"(kind="latest_all",outcome="bad_request")"), "1");
  // Routes without rows keep refusing `format` as the unknown parameter it is there.
  for (const std::string target : {"/v1/events/dev-1?from=1&to=2&format=rows",
                                   "/v1/scan?from=1&to=2&format=rows", "/v1/stats?format=rows"}) {
    httplib::Result res = client.Get(target);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << target;
    EXPECT_NE(res->body.find("unknown parameter \\\"format\\\""), std::string::npos) << res->body;
  }
}

}  // namespace grafana_dashboard_test
}  // namespace hotrow::http
