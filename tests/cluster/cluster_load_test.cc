// A group under a dashboard fleet's load (CONTRACT.md, "Group answers"): three `hotrow serve` in
// one consumer group with cluster.peers on the embedded broker, records at rest, and at once
// - `wrk` with 32 keep-alive connections per instance asking latest-10 of random ids (a Lua
//   script counts the 2xx answers that say "complete": true, the other 2xx and the rest), and
// - checking clients, one per instance, comparing every answer with the oracle (the events
//   produced, read back from a complete scan proven whole: every offset of every partition once).
// It asserts correctness only, never a rate: no answer says complete while it differs from the
// oracle, at least 99 % of the answers are complete and exact, at most 1 % are not 2xx. A group
// that starves itself (a fan-out holding a slot and a connection thread while its peers' requests
// wait for the same) answers most of them 503 or incomplete here.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/time_format.h"
#include "query/query_engine.h"
#include "tests/support/oracle.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "wire/event_json.h"

namespace hotrow::cluster {
namespace cluster_load_test {
namespace {

using hotrow::testing::ChildProcess;
using hotrow::testing::ReadFile;
using hotrow::testing::WaitFor;
using nlohmann::json;
using query::Event;
using namespace std::chrono_literals;

constexpr int kPartitions = 16;
constexpr int kInstances = 3;
constexpr int kDevices = 2000;
constexpr int64_t kRecords = 20000;
constexpr int kConnectionsPerInstance = 32;
constexpr int kLoadSeconds = 10;

// The wrk script: latest-10 of a random id of dev-000000..dev-(kDevices-1); counts answers as
// complete (2xx saying "complete":true), incomplete (other 2xx) and bad (not 2xx), printed by
// done() on one line "COUNTS complete=C incomplete=I bad=B".
std::string WrkScript() {
  return R"lua(
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  math.randomseed(tonumber(args[1] or "1"))
  complete = 0; incomplete = 0; bad = 0
end
request = function()
  return wrk.format("GET", string.format("/v1/events/dev-%06d/latest?n=10",
                                         math.random(0, )lua" +
         std::to_string(kDevices - 1) + R"lua()))
end
response = function(status, headers, body)
  if status < 200 or status > 299 then bad = bad + 1
  elseif body:find('"complete":true', 1, true) then complete = complete + 1
  else incomplete = incomplete + 1 end
end
done = function(summary, latency, requests)
  local c, i, b = 0, 0, 0
  for _, t in ipairs(threads) do
    c = c + t:get("complete"); i = i + t:get("incomplete"); b = b + t:get("bad")
  end
  io.write(string.format("COUNTS complete=%d incomplete=%d bad=%d\n", c, i, b))
end
)lua";
}

// What a set of answers held.
struct Tally {
  int64_t exact = 0;       // 2xx, complete, equal to the oracle
  int64_t short_ = 0;      // 2xx, complete, and NOT equal to the oracle: never allowed
  int64_t incomplete = 0;  // 2xx saying complete: false
  int64_t bad = 0;         // not 2xx, or no answer
  int64_t total() const { return exact + short_ + incomplete + bad; }
};

std::string Path(const std::string& file) {
  for (const char* dir : {"/usr/bin/", "/usr/local/bin/"}) {
    const std::string path = std::string(dir) + file;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

class ClusterLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = hotrow::testing::StartEmbeddedKafka(kPartitions, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    std::string peers;
    for (int i = 0; i < kInstances; ++i) {
      ports_.push_back(hotrow::testing::FreePort());
      peers += (i == 0 ? "" : ", ") + std::string("127.0.0.1:") + std::to_string(ports_[i]);
    }
    for (int i = 0; i < kInstances; ++i) {
      std::ofstream config(dir_.Sub("hotrow-" + std::to_string(i) + ".yaml"));
      config << "kafka:\n  brokers: " << bootstrap_
             << "\n  topics: [events]\n  group_id: cluster-load\n"
             << "store:\n  path: " << dir_.Sub("store-" + std::to_string(i)) << "\n"
             << "http:\n  listen: 127.0.0.1:" << ports_[i] << "\n"
             << "cluster:\n  peers: [" << peers << "]\n";
    }
  }

  void TearDown() override {
    for (auto& serve : serves_) {
      if (serve && serve->Running()) serve->Signal(SIGTERM);
    }
    for (auto& serve : serves_) {
      if (serve) serve->Wait(15s);
    }
    serves_.clear();
    if (kafka_) {
      kafka_->Signal(SIGTERM);
      kafka_->Wait(15s);
    }
  }

  std::string Logs() {
    std::string out;
    for (int i = 0; i < kInstances; ++i) {
      const std::string log = ReadFile(dir_.Sub("serve-" + std::to_string(i) + ".log"));
      out += "--- serve " + std::to_string(i) + " (last 3000 bytes)\n" +
             log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
    }
    return out;
  }

  std::pair<int, std::string> Get(int instance, const std::string& target) {
    httplib::Client client("127.0.0.1", ports_[instance]);
    client.set_connection_timeout(2s);
    client.set_read_timeout(30s);
    httplib::Result res = client.Get(target);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  }

  // The scan of `instance` when it says complete and holds every (partition, offset) below the
  // broker's end exactly once, kRecords in all; else empty.
  std::vector<Event> WholeScan(int instance) {
    auto [status, body] = Get(instance, "/v1/scan?from=0&to=" + std::to_string(kMaxTimeMs));
    if (status != 200) return {};
    std::vector<Event> events;
    bool complete = false;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      const json j = json::parse(line, nullptr, false);
      if (j.is_discarded()) return {};
      if (j.contains("complete")) {
        complete = j.value("complete", false);
        continue;
      }
      // Through nlohmann like the checkers' answers, so that payloads compare in one key order.
      Result<Event> e = wire::ParseEventJson(j.dump());
      if (!e.ok()) return {};
      events.push_back(std::move(e).value());
    }
    if (!complete || static_cast<int64_t>(events.size()) != kRecords) return {};
    std::map<int32_t, std::set<int64_t>> offsets;
    for (const Event& e : events) {
      if (!offsets[e.partition].insert(e.offset).second) return {};
    }
    for (const auto& [partition, set] : offsets) {
      if (*set.rbegin() + 1 != static_cast<int64_t>(set.size())) return {};
    }
    return events;
  }

  hotrow::testing::TempDir dir_;
  std::unique_ptr<ChildProcess> kafka_;
  std::string bootstrap_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<ChildProcess>> serves_;
};

// One checking client: latest-10 of random ids on `port`, one keep-alive connection, until `stop`;
// every answer compared with the oracle.
void Check(int port, const hotrow::testing::Oracle& oracle, uint64_t seed,
           const std::atomic<bool>& stop, Tally* tally, std::string* first_short) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_connection_timeout(5s);
  client.set_read_timeout(10s);
  std::mt19937_64 rng(seed);
  while (!stop.load()) {
    char id[16];
    std::snprintf(id, sizeof(id), "dev-%06d", static_cast<int>(rng() % kDevices));
    httplib::Result res = client.Get(std::string("/v1/events/") + id + "/latest?n=10");
    if (!res || res->status < 200 || res->status > 299) {
      ++tally->bad;
      continue;
    }
    const json j = json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.value("complete", false)) {
      ++tally->incomplete;
      continue;
    }
    std::vector<Event> events;
    for (const auto& e : j.at("events")) {
      Result<Event> parsed = wire::ParseEventJson(e.dump());
      if (parsed.ok()) events.push_back(std::move(parsed).value());
    }
    const std::string diff = hotrow::testing::DiffEvents(oracle.Latest(id, 10, 0), events);
    if (diff.empty()) {
      ++tally->exact;
    } else {
      if (tally->short_++ == 0) *first_short = std::string(id) + ": " + diff;
    }
  }
}

TEST_F(ClusterLoadTest, AGroupUnder32ConnectionsPerInstanceStaysCompleteAndExact) {
  const std::string wrk = Path("wrk");
  ASSERT_FALSE(wrk.empty())
      << "wrk is needed (Debian package wrk: bash scripts/install-deps.sh installs it)";
  {
    ChildProcess produce({hotrow::testing::HotrowBinary(), "produce", "--brokers", bootstrap_,
                          "--topic", "events", "--count", std::to_string(kRecords), "--rate", "0",
                          "--devices", std::to_string(kDevices), "--seed", "1"},
                         dir_.Sub("produce.log"));
    ASSERT_EQ(produce.Wait(60s), 0) << ReadFile(dir_.Sub("produce.log"));
  }
  for (int i = 0; i < kInstances; ++i) {
    serves_.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{hotrow::testing::HotrowBinary(), "serve", "--config",
                                 dir_.Sub("hotrow-" + std::to_string(i) + ".yaml")},
        dir_.Sub("serve-" + std::to_string(i) + ".log")));
  }
  // Settled: every instance answers a complete scan holding every record produced.
  std::vector<Event> scan;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < kInstances; ++i) {
          std::vector<Event> whole = WholeScan(i);
          if (whole.empty()) return false;
          if (i == 0) scan = std::move(whole);
        }
        return true;
      },
      90s, 200ms))
      << Logs();
  hotrow::testing::Oracle oracle;
  for (const Event& e : scan) oracle.Add(e, 0);

  std::ofstream(dir_.Sub("latest.lua")) << WrkScript();
  std::vector<std::unique_ptr<ChildProcess>> loads;
  for (int i = 0; i < kInstances; ++i) {
    const std::string out = dir_.Sub("wrk-" + std::to_string(i) + ".txt");
    // wrk prints its summary on stdout: sh sends it to a file (ChildProcess keeps stdout a pipe).
    loads.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        "/bin/sh", "-c",
        wrk + " -t1 -c" + std::to_string(kConnectionsPerInstance) + " -d" +
            std::to_string(kLoadSeconds) + "s --timeout 10s -s " + dir_.Sub("latest.lua") +
            " http://127.0.0.1:" + std::to_string(ports_[i]) + " -- " + std::to_string(i + 1) +
            " > " + out + " 2>&1"}));
  }
  std::atomic<bool> stop{false};
  std::vector<Tally> checked(kInstances);
  std::vector<std::string> first_short(kInstances);
  std::vector<std::thread> checkers;
  for (int i = 0; i < kInstances; ++i) {
    checkers.emplace_back(
        [&, i] { Check(ports_[i], oracle, 100 + i, stop, &checked[i], &first_short[i]); });
  }
  for (auto& load : loads) EXPECT_EQ(load->Wait(60s), 0);
  stop.store(true);
  for (auto& t : checkers) t.join();

  Tally wrk_total, checked_total;
  for (int i = 0; i < kInstances; ++i) {
    const std::string out = ReadFile(dir_.Sub("wrk-" + std::to_string(i) + ".txt"));
    long long complete = -1, incomplete = -1, bad = -1;
    const size_t at = out.find("COUNTS ");
    ASSERT_NE(at, std::string::npos) << out;
    ASSERT_EQ(std::sscanf(out.c_str() + at, "COUNTS complete=%lld incomplete=%lld bad=%lld",
                          &complete, &incomplete, &bad),
              3)
        << out;
    wrk_total.exact += complete;  // complete, not checked for exactness: the checkers do that
    wrk_total.incomplete += incomplete;
    wrk_total.bad += bad;
    checked_total.exact += checked[i].exact;
    checked_total.short_ += checked[i].short_;
    checked_total.incomplete += checked[i].incomplete;
    checked_total.bad += checked[i].bad;
    EXPECT_EQ(checked[i].short_, 0) << "instance " << i << " said complete, but " << first_short[i];
  }
  std::printf(
      "cluster load: wrk %lld answers (%lld complete, %lld incomplete, %lld not 2xx); checkers "
      "%lld answers (%lld complete and exact, %lld incomplete, %lld not 2xx)\n",
      static_cast<long long>(wrk_total.total()), static_cast<long long>(wrk_total.exact),
      static_cast<long long>(wrk_total.incomplete), static_cast<long long>(wrk_total.bad),
      static_cast<long long>(checked_total.total()), static_cast<long long>(checked_total.exact),
      static_cast<long long>(checked_total.incomplete), static_cast<long long>(checked_total.bad));
  ASSERT_GT(wrk_total.total(), 0);
  ASSERT_GT(checked_total.total(), 0);
  const auto share = [](int64_t part, int64_t whole) {
    return static_cast<double>(part) / static_cast<double>(whole);
  };
  EXPECT_GE(share(checked_total.exact, checked_total.total()), 0.99) << Logs();
  EXPECT_GE(share(wrk_total.exact, wrk_total.total()), 0.99);
  EXPECT_LE(share(checked_total.bad, checked_total.total()), 0.01);
  EXPECT_LE(share(wrk_total.bad, wrk_total.total()), 0.01);
}

}  // namespace
}  // namespace cluster_load_test
}  // namespace hotrow::cluster
