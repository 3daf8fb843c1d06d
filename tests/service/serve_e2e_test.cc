// `hotrow serve` end to end, through the real binary: `hotrow embedded-kafka` as the broker,
// `hotrow produce` as the source, every HTTP endpoint and `hotrow query` compared with an oracle
// built from what the producer emitted; SIGTERM exits 0 and loses nothing, across a restart.
//
// The oracle: the synthetic producer is a pure function of its seed except for the event times,
// so SyntheticEvents regenerates exactly which readings of which device were produced. A full
// scan must hold each of them exactly once (nothing lost, nothing doubled, payloads intact); the
// per-id answers are then checked against the brute-force Oracle fed with that verified scan.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/time_format.h"
#include "ingest/synthetic_producer.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/oracle.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::service {
namespace {

using nlohmann::ordered_json;
using query::Event;
using testing::ChildProcess;
using testing::FreePort;
using testing::ReadFile;
using testing::WaitFor;

constexpr int kPartitions = 4;
constexpr int kDevices = 300;

// What identifies one produced reading whatever its time: the device and the payload minus "ts".
using Signature = std::pair<std::string, std::string>;

Signature SignatureOf(const std::string& device, const ordered_json& payload) {
  ordered_json copy = payload;
  copy.erase("ts");
  return {device, copy.dump()};
}

// The readings `hotrow produce --count N --devices D --seed S --skew K` emits, as a multiset.
std::multiset<Signature> ProducedReadings(int64_t count, uint64_t seed) {
  ingest::SyntheticEvents events(kDevices, 1.1, seed);
  std::multiset<Signature> out;
  std::string device, json;
  for (int64_t i = 0; i < count; ++i) {
    events.Next(0, &device, &json);
    out.insert(SignatureOf(device, ordered_json::parse(json)));
  }
  return out;
}

// One event of an answer, through the API's own inverse of its event JSON.
Event FromJson(const ordered_json& j) {
  Result<Event> event = wire::ParseEventJson(j.dump());
  EXPECT_TRUE(event.ok()) << event.status().ToString();
  return event.ok() ? *event : Event{};
}

class ServeE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = testing::StartEmbeddedKafka(kPartitions, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    port_ = FreePort();
    std::ofstream config(dir_.Sub("hotrow.yaml"));
    // A short session timeout: a restarted serve rejoins the group without waiting out the
    // default 45 s for the member that left.
    config << "kafka:\n  brokers: " << bootstrap_ << "\n  topics: [events]\n  group_id: e2e\n"
           << "  properties: {session.timeout.ms: 6000, heartbeat.interval.ms: 500}\n"
           << "store:\n  path: " << dir_.Sub("store") << "\n"
           << "keying:\n  salts: 8\n"
           << "http:\n  listen: 127.0.0.1:" << port_ << "\n"
           << "query:\n  threads: 2\n";
  }

  void TearDown() override {
    if (serve_ && serve_->Running()) {
      serve_->Signal(SIGTERM);
      serve_->Wait(std::chrono::seconds(15));
    }
    serve_.reset();
    if (kafka_) {
      kafka_->Signal(SIGTERM);
      kafka_->Wait(std::chrono::seconds(15));
    }
  }

  std::string ServeLog() { return ReadFile(dir_.Sub("serve.log")); }

  // Starts serve and waits until it is ready (partitions assigned).
  void StartServe(const std::vector<std::string>& sets = {}) {
    std::vector<std::string> argv = {testing::HotrowBinary(), "serve", "--config",
                                     dir_.Sub("hotrow.yaml")};
    for (const auto& s : sets) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    serve_ = std::make_unique<ChildProcess>(argv, dir_.Sub("serve.log"));
    ASSERT_TRUE(WaitFor([&] { return Get("/readyz").first == 200 || !serve_->Running(); },
                        std::chrono::seconds(60), std::chrono::milliseconds(100)))
        << ServeLog();
    ASSERT_TRUE(serve_->Running()) << ServeLog();
  }

  int StopServe() {
    serve_->Signal(SIGTERM);
    const int rc = serve_->Wait(std::chrono::seconds(15));
    serve_.reset();
    return rc;
  }

  void Produce(int64_t count, uint64_t seed) {
    ChildProcess produce(
        {testing::HotrowBinary(), "produce", "--brokers", bootstrap_, "--topic", "events",
         "--count", std::to_string(count), "--rate", "0", "--devices", std::to_string(kDevices),
         "--seed", std::to_string(seed), "--skew", "1.1"},
        dir_.Sub("produce.log"));
    ASSERT_EQ(produce.Wait(std::chrono::seconds(60)), 0) << ReadFile(dir_.Sub("produce.log"));
  }

  std::pair<int, std::string> Get(const std::string& target) {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(std::chrono::seconds(2));
    client.set_read_timeout(std::chrono::seconds(30));
    httplib::Result res = client.Get(target);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  }

  ordered_json Stats() {
    auto [status, body] = Get("/v1/stats");
    if (status != 200) return ordered_json::object();
    return ordered_json::parse(body);
  }

  bool AwaitIngested(uint64_t n) {
    return WaitFor([&] { return Stats().value("ingested", uint64_t{0}) >= n; },
                   std::chrono::seconds(60), std::chrono::milliseconds(100));
  }

  std::vector<Event> ScanAll() {
    auto [status, body] = Get("/v1/scan?from=0&to=" + std::to_string(kMaxTimeMs));
    EXPECT_EQ(status, 200) << body;
    std::vector<Event> events;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      events.push_back(FromJson(ordered_json::parse(line)));
    }
    return events;
  }

  std::vector<Event> GetEvents(const std::string& target) {
    auto [status, body] = Get(target);
    EXPECT_EQ(status, 200) << target << ": " << body;
    std::vector<Event> events;
    if (status != 200) return events;
    const ordered_json answer = ordered_json::parse(body);
    for (const auto& e : answer.at("events")) events.push_back(FromJson(e));
    return events;
  }

  // Runs `hotrow query ...` against serve; returns its exit code, stdout lines and stderr.
  int Query(std::vector<std::string> args, std::vector<std::string>* lines, std::string* err) {
    std::vector<std::string> argv = {testing::HotrowBinary(), "query"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string err_path = dir_.Sub("query-" + std::to_string(++queries_) + ".err");
    ChildProcess query(argv, err_path);
    std::string line;
    while (query.ReadLine(&line)) lines->push_back(line);
    const int rc = query.Wait();
    *err = ReadFile(err_path);
    return rc;
  }

  std::string server() const { return "http://127.0.0.1:" + std::to_string(port_); }

  testing::TempDir dir_;
  std::unique_ptr<ChildProcess> kafka_;
  std::unique_ptr<ChildProcess> serve_;
  std::string bootstrap_;
  int port_ = 0;
  int queries_ = 0;
};

// Checks that `scanned` holds exactly the readings produced, each once, with consistent fields.
void ExpectExactlyTheProduced(const std::vector<Event>& scanned,
                              const std::multiset<Signature>& produced) {
  std::multiset<Signature> got;
  std::set<std::tuple<std::string, int32_t, int64_t>> records;
  for (const Event& e : scanned) {
    const ordered_json payload = ordered_json::parse(e.payload);
    EXPECT_EQ(payload.at("event_id").get<std::string>(), e.id);
    EXPECT_EQ(payload.at("ts").get<int64_t>(), e.ts_ms);
    EXPECT_EQ(e.topic, "events");
    EXPECT_TRUE(e.partition >= 0 && e.partition < kPartitions) << e.partition;
    EXPECT_TRUE(records.emplace(e.topic, e.partition, e.offset).second)
        << "record stored twice: " << testing::Describe(e);
    got.insert(SignatureOf(e.id, payload));
  }
  EXPECT_EQ(got.size(), produced.size());
  EXPECT_TRUE(got == produced) << "the stored readings differ from the produced ones";
}

TEST_F(ServeE2ETest, EveryEndpointAnswersWhatWasProducedAndSigtermLosesNothing) {
  constexpr int64_t kFirst = 20000;
  constexpr int64_t kSecond = 5000;
  StartServe();
  Produce(kFirst, 5);
  ASSERT_TRUE(AwaitIngested(kFirst)) << Stats().dump();

  // scan: exactly what was produced.
  const std::vector<Event> scanned = ScanAll();
  ExpectExactlyTheProduced(scanned, ProducedReadings(kFirst, 5));
  testing::Oracle oracle;
  int64_t min_ts = INT64_MAX, max_ts = 0;
  for (const Event& e : scanned) {
    oracle.Add(e, 0);  // one topic: its number ties nothing
    min_ts = std::min(min_ts, e.ts_ms);
    max_ts = std::max(max_ts, e.ts_ms);
  }
  const int64_t window_start = 0;  // every produced event is minutes young

  // latest and range, for chatty, quiet and absent devices.
  for (const std::string id : {"dev-000000", "dev-000001", "dev-000017", "dev-000299", "nobody"}) {
    for (int n : {1, 10, 500}) {
      std::vector<Event> got = GetEvents("/v1/events/" + id + "/latest?n=" + std::to_string(n));
      EXPECT_TRUE(testing::DiffEvents(oracle.Latest(id, n, window_start), got).empty())
          << id << " n=" << n << ": "
          << testing::DiffEvents(oracle.Latest(id, n, window_start), got);
    }
    const int64_t mid = min_ts + (max_ts - min_ts) / 2;
    for (auto [from, to] :
         {std::pair{min_ts, max_ts + 1}, std::pair{mid, max_ts + 1}, std::pair{min_ts, mid}}) {
      for (auto [order, name] :
           {std::pair{query::Order::kDesc, "desc"}, std::pair{query::Order::kAsc, "asc"}}) {
        const std::string target = "/v1/events/" + id + "?from=" + std::to_string(from) +
                                   "&to=" + std::to_string(to) + "&order=" + name + "&limit=100";
        std::vector<Event> want = oracle.Range(id, from, to, 100, order, window_start);
        std::vector<Event> got = GetEvents(target);
        EXPECT_TRUE(testing::DiffEvents(want, got).empty())
            << target << ": " << testing::DiffEvents(want, got);
      }
    }
  }

  // `hotrow query` prints the same events, one per line; and its errors.
  {
    std::vector<std::string> lines;
    std::string err;
    ASSERT_EQ(Query({"latest", "dev-000000", "-n", "7", "--server", server()}, &lines, &err), 0)
        << err;
    std::vector<Event> got;
    for (const auto& l : lines) got.push_back(FromJson(ordered_json::parse(l)));
    EXPECT_TRUE(testing::DiffEvents(oracle.Latest("dev-000000", 7, 0), got).empty());

    lines.clear();
    ASSERT_EQ(Query({"range", "dev-000001", "--from", std::to_string(min_ts), "--to",
                     FormatRfc3339Ms(max_ts + 1), "--order", "asc", "--limit", "50", "--server",
                     server()},
                    &lines, &err),
              0)
        << err;
    got.clear();
    for (const auto& l : lines) got.push_back(FromJson(ordered_json::parse(l)));
    EXPECT_TRUE(testing::DiffEvents(
                    oracle.Range("dev-000001", min_ts, max_ts + 1, 50, query::Order::kAsc, 0), got)
                    .empty());

    lines.clear();
    ASSERT_EQ(
        Query({"scan", "--from", "0", "--to", std::to_string(max_ts + 1), "--server", server()},
              &lines, &err),
        0)
        << err;
    EXPECT_EQ(lines.size(), static_cast<size_t>(kFirst));

    lines.clear();
    EXPECT_EQ(Query({"latest", "dev-000000", "-n", "0", "--server", server()}, &lines, &err), 2);
    EXPECT_NE(err.find("n must be an integer from 1 to 10000"), std::string::npos) << err;
    EXPECT_TRUE(lines.empty());
    EXPECT_EQ(Query({"range", "dev-000000", "--from", "5", "--to", "1", "--server", server()},
                    &lines, &err),
              2);
    EXPECT_NE(err.find("from must be before to"), std::string::npos) << err;
    EXPECT_EQ(Query({"latest", "dev-000000", "--server",
                     "http://127.0.0.1:" + std::to_string(FreePort())},
                    &lines, &err),
              1);
    EXPECT_NE(err.find("cannot connect"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }

  // stats and metrics agree with what was produced.
  const ordered_json stats = Stats();
  EXPECT_EQ(stats["ingested"], kFirst);
  EXPECT_EQ(stats["records_consumed"], kFirst);
  for (const auto& [reason, count] : stats["rejected"].items()) EXPECT_EQ(count, 0) << reason;
  EXPECT_EQ(stats["lag"].size(), static_cast<size_t>(kPartitions)) << stats["lag"];
  uint64_t in_buckets = 0, in_salts = 0;
  for (const auto& b : stats["buckets"]) in_buckets += b["events"].get<uint64_t>();
  for (const auto& s : stats["salts"]) in_salts += s["events"].get<uint64_t>();
  EXPECT_EQ(in_buckets, static_cast<uint64_t>(kFirst));
  EXPECT_EQ(in_salts, static_cast<uint64_t>(kFirst));
  EXPECT_EQ(stats["salts"].size(), 8u);
  auto [metrics_status, metrics] = Get("/metrics");
  ASSERT_EQ(metrics_status, 200);
  for (const std::string& needle :
       {"hotrow_events_stored_total " + std::to_string(kFirst),
        "hotrow_records_consumed_total " + std::to_string(kFirst),
        std::string("hotrow_rejected_total{reason=\"not_json\"} 0"),
        std::string("hotrow_consumer_lag{partition=\"0\",topic=\"events\"}"),
        std::string("hotrow_batches_written_total"), std::string("hotrow_buckets"),
        std::string("hotrow_queries_total{kind=\"scan\",outcome=\"ok\"}")}) {
    EXPECT_NE(metrics.find(needle), std::string::npos) << needle;
  }

  // SIGTERM: exit 0; a restart finds everything and stores nothing twice.
  ASSERT_EQ(StopServe(), 0) << ServeLog();
  StartServe();
  EXPECT_EQ(Stats()["store"]["events"], kFirst);
  Produce(kSecond, 6);
  ASSERT_TRUE(AwaitIngested(kSecond)) << Stats().dump();
  std::multiset<Signature> all = ProducedReadings(kFirst, 5);
  for (const auto& s : ProducedReadings(kSecond, 6)) all.insert(s);
  ExpectExactlyTheProduced(ScanAll(), all);
  EXPECT_EQ(Stats()["ingested"], kSecond);
  ASSERT_EQ(StopServe(), 0) << ServeLog();
}

TEST_F(ServeE2ETest, SigtermWritesTheOpenBatchAndItsOffsets) {
  constexpr int64_t kCount = 3000;
  // Batches that never close by themselves: only the shutdown writes them.
  StartServe({"ingest.batch_max_ms=1h", "ingest.batch_max_events=1000000"});
  Produce(kCount, 9);
  ASSERT_TRUE(WaitFor([&] { return Stats().value("records_consumed", uint64_t{0}) >= kCount; },
                      std::chrono::seconds(60), std::chrono::milliseconds(100)))
      << Stats().dump();
  EXPECT_EQ(Stats()["ingested"], 0);
  ASSERT_EQ(StopServe(), 0) << ServeLog();

  store::StoreOptions options;
  options.path = dir_.Sub("store");
  options.salts = 8;
  options.read_only = true;
  Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Stats().events, static_cast<uint64_t>(kCount));
  int64_t next_offsets = 0;
  for (const auto& [tp, next] : (*store)->StoredOffsets()) next_offsets += next;
  EXPECT_EQ(next_offsets, kCount);
}

TEST_F(ServeE2ETest, HostileClientsNeitherStopServingNorStarveIngestion) {
  StartServe();
  std::atomic<bool> stop{false};
  // Idle connections, garbage, oversized requests and a flood of bad and good queries.
  std::vector<int> idle;
  for (int i = 0; i < 24; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      if (i % 2 == 0) send(fd, "GET /v1/scan?from=0&to=9 HTTP/1.1\r\nX: ", 38, MSG_NOSIGNAL);
      idle.push_back(fd);
    } else {
      close(fd);
    }
  }
  std::vector<std::thread> flood;
  for (int t = 0; t < 4; ++t) {
    flood.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", port_);
      client.set_connection_timeout(std::chrono::seconds(1));
      client.set_read_timeout(std::chrono::seconds(5));
      client.set_url_encode(false);
      const std::string targets[] = {
          "/v1/events/dev-000000/latest?n=0", "/v1/scan?from=0&to=" + std::to_string(kMaxTimeMs),
          "/" + std::string(9000, 'x'), "/v1/events/%zz", "/v1/events/dev-000001/latest"};
      for (int i = t; !stop.load(); ++i) client.Get(targets[i % 5]);
    });
  }
  Produce(10000, 11);
  const bool ingested = AwaitIngested(10000);
  stop.store(true);
  for (auto& t : flood) t.join();
  for (int fd : idle) close(fd);
  EXPECT_TRUE(ingested) << Stats().dump();
  EXPECT_TRUE(serve_->Running()) << ServeLog();
  EXPECT_TRUE(WaitFor([&] { return Get("/healthz").first == 200; }, std::chrono::seconds(30)));
  EXPECT_EQ(Stats()["ingested"], 10000);
  ASSERT_EQ(StopServe(), 0) << ServeLog();
}

TEST(ServeCommandTest, BadConfigurationExitsTwoWithOneLineNamingTheKey) {
  testing::TempDir dir;
  {
    std::ofstream config(dir.Sub("hotrow.yaml"));
    config << "store:\n  path: " << dir.Sub("store") << "\n";
  }
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  } cases[] = {
      {{"--set", "store.ttl=ten"}, "store.ttl"},
      {{"--set", "http.lisen=127.0.0.1:1"}, "http.lisen"},
      {{"--set", "http.listen=nowhere"}, "http.listen"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {testing::HotrowBinary(), "serve", "--config",
                                     dir.Sub("hotrow.yaml")};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    ChildProcess serve(argv, dir.Sub("err"));
    EXPECT_EQ(serve.Wait(), 2) << c.fragment;
    const std::string err = ReadFile(dir.Sub("err"));
    EXPECT_EQ(err.rfind("hotrow: ", 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(c.fragment), std::string::npos) << err;
    std::remove(dir.Sub("err").c_str());
  }
  // Without --config, serve runs with the defaults: tests/config/serve_defaults_test.cc.
}

TEST(ServeCommandTest, AStoreOfOtherSaltsIsRefusedWithExitTwo) {
  testing::TempDir dir;
  {
    store::StoreOptions options;
    options.path = dir.Sub("store");
    options.salts = 16;
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
  std::ofstream(dir.Sub("hotrow.yaml"))
      << "store:\n  path: " << dir.Sub("store") << "\nkeying:\n  salts: 8\n"
      << "kafka:\n  brokers: 127.0.0.1:1\n";
  ChildProcess serve({testing::HotrowBinary(), "serve", "--config", dir.Sub("hotrow.yaml")},
                     dir.Sub("err"));
  EXPECT_EQ(serve.Wait(), 2);
  const std::string err = ReadFile(dir.Sub("err"));
  EXPECT_NE(err.find("salts"), std::string::npos) << err;
}

TEST(ServeCommandTest, AnAddressInUseExitsOneAndSaysWhich) {
  testing::TempDir dir;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string listen_at = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  std::ofstream(dir.Sub("hotrow.yaml"))
      << "store:\n  path: " << dir.Sub("store") << "\nkafka:\n  brokers: 127.0.0.1:1\n"
      << "http:\n  listen: " << listen_at << "\n";
  ChildProcess serve({testing::HotrowBinary(), "serve", "--config", dir.Sub("hotrow.yaml")},
                     dir.Sub("err"));
  EXPECT_EQ(serve.Wait(std::chrono::seconds(30)), 1);
  const std::string err = ReadFile(dir.Sub("err"));
  EXPECT_NE(err.find(listen_at), std::string::npos) << err;
  close(fd);
}

}  // namespace
}  // namespace hotrow::service
