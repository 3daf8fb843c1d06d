// Three `hotrow serve` processes in one consumer group with cluster.peers (CONTRACT.md), through
// the real binary: `hotrow embedded-kafka` with 16 partitions as the broker, `hotrow produce` as
// the source. Every instance answers for the whole group; one is killed with SIGKILL while records
// keep coming: answers say "complete": false (never a silently short answer) until its partitions
// have moved and been rebuilt from Kafka, then match the oracle again.
//
// The oracle: every produced record is stored once per owner, so a complete scan holds each
// (partition, offset) of the topic exactly once, [0, high) per partition, high summing to what
// was produced; the per-id answers are checked against the brute-force Oracle fed with it.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/time_format.h"
#include "query/query_engine.h"
#include "tests/support/oracle.h"
#include "tests/support/process.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"
#include "wire/event_json.h"

namespace hotrow::cluster {
namespace {

using nlohmann::json;
using query::Event;
using testing::ChildProcess;
using testing::ReadFile;
using testing::WaitFor;
using namespace std::chrono_literals;

constexpr int kPartitions = 16;
constexpr int kInstances = 3;
constexpr int kDevices = 40;

// One answer of the cluster: its events, and what it says of its completeness.
struct Answer {
  int status = -1;
  std::vector<Event> events;
  bool has_complete = false;
  bool complete = false;
  json missing;
  json stale;
  std::string body;
};

Event FromJson(const json& j) {
  Result<Event> e = wire::ParseEventJson(j.dump());
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? e.value() : Event{};
}

class ClusterE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = testing::StartEmbeddedKafka(kPartitions, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    std::string peers;
    for (int i = 0; i < kInstances; ++i) {
      ports_.push_back(testing::FreePort());
      peers += (i == 0 ? "" : ", ") + std::string("127.0.0.1:") + std::to_string(ports_[i]);
    }
    for (int i = 0; i < kInstances; ++i) {
      std::ofstream config(dir_.Sub("hotrow-" + std::to_string(i) + ".yaml"));
      config << "kafka:\n  brokers: " << bootstrap_
             << "\n  topics: [events]\n  group_id: cluster-e2e\n"
             << "store:\n  path: " << dir_.Sub("store-" + std::to_string(i)) << "\n"
             << "keying:\n  salts: 4\n"
             << "index:\n  fields: [event_id]\n"
             << "http:\n  listen: 127.0.0.1:" << ports_[i] << "\n"
             << "query:\n  threads: 1\n"
             << "cluster:\n  peers: [" << peers << "]\n";
    }
    serves_.resize(kInstances);
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

  void StartServe(int i) {
    serves_[i] = std::make_unique<ChildProcess>(
        std::vector<std::string>{testing::HotrowBinary(), "serve", "--config",
                                 dir_.Sub("hotrow-" + std::to_string(i) + ".yaml")},
        dir_.Sub("serve-" + std::to_string(i) + ".log"));
  }

  void Produce(int64_t count, uint64_t seed) {
    const std::string log = dir_.Sub("produce-" + std::to_string(seed) + ".log");
    ChildProcess produce({testing::HotrowBinary(), "produce", "--brokers", bootstrap_, "--topic",
                          "events", "--count", std::to_string(count), "--rate", "0", "--devices",
                          std::to_string(kDevices), "--seed", std::to_string(seed)},
                         log);
    ASSERT_EQ(produce.Wait(60s), 0) << ReadFile(log);
  }

  std::pair<int, std::string> Get(int instance, const std::string& target) {
    httplib::Client client("127.0.0.1", ports_[instance]);
    client.set_connection_timeout(2s);
    client.set_read_timeout(30s);
    httplib::Result res = client.Get(target);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  }

  // A latest or range answer (JSON object), or a scan (NDJSON ending with {"complete": ...}).
  Answer Ask(int instance, const std::string& target) {
    Answer a;
    auto [status, body] = Get(instance, target);
    a.status = status;
    a.body = body;
    if (status != 200) return a;
    auto read_completeness = [&](const json& j) {
      a.has_complete = j.contains("complete");
      a.complete = j.value("complete", false);
      if (j.contains("missing")) a.missing = j.at("missing");
      if (j.contains("stale")) a.stale = j.at("stale");
    };
    if (target.rfind("/v1/scan", 0) == 0) {
      std::istringstream lines(body);
      for (std::string line; std::getline(lines, line);) {
        const json j = json::parse(line);
        if (j.contains("complete")) {
          read_completeness(j);
        } else {
          a.events.push_back(FromJson(j));
        }
      }
    } else {
      const json j = json::parse(body);
      for (const auto& e : j.at("events")) a.events.push_back(FromJson(e));
      read_completeness(j);
    }
    return a;
  }

  Answer ScanAll(int instance) {
    return Ask(instance, "/v1/scan?from=0&to=" + std::to_string(kMaxTimeMs));
  }

  // Empty when `scan` holds every (partition, offset) below the broker's end exactly once and
  // `total` events in all; else what is wrong.
  static std::string CheckWhole(const std::vector<Event>& scan, size_t total) {
    std::map<int32_t, std::set<int64_t>> offsets;
    for (const Event& e : scan) {
      if (!offsets[e.partition].insert(e.offset).second) {
        return "partition " + std::to_string(e.partition) + " offset " + std::to_string(e.offset) +
               " twice";
      }
    }
    for (const auto& [partition, set] : offsets) {
      if (*set.rbegin() + 1 != static_cast<int64_t>(set.size())) {
        return "partition " + std::to_string(partition) + " has a gap";
      }
    }
    if (scan.size() != total) {
      return std::to_string(scan.size()) + " events, expected " + std::to_string(total);
    }
    return "";
  }

  // The partitions of topic "events" in a {"events": [..]} object ("partitions", "stale").
  static std::set<int32_t> PartitionsOf(const json& j) {
    std::set<int32_t> out;
    if (j.contains("events")) {
      for (const json& p : j.at("events")) out.insert(p.get<int32_t>());
    }
    return out;
  }

  // The partitions `instance` owns, as its /v1/cluster?local=true says, checked against its
  // /metrics: it serves each of them and nothing else, each with its rebuild done, none stale.
  void ExpectServesAllItOwns(int instance, std::set<int32_t>* owned) {
    auto [status, body] = Get(instance, "/v1/cluster?local=true");
    ASSERT_EQ(status, 200) << body;
    const json local = json::parse(body);
    *owned = PartitionsOf(local.at("partitions"));
    EXPECT_FALSE(owned->empty()) << "instance " << instance << " owns nothing: " << body;
    EXPECT_EQ(PartitionsOf(local.at("stale")), std::set<int32_t>{}) << body;
    EXPECT_TRUE(local.at("complete").get<bool>()) << body;
    std::set<int32_t> listed;
    for (const json& p : local.at("owned")) {
      listed.insert(p.at("partition").get<int32_t>());
      EXPECT_TRUE(p.at("serving").get<bool>()) << p.dump();
      EXPECT_EQ(p.at("progress").get<double>(), 1.0) << p.dump();
    }
    EXPECT_EQ(listed, *owned) << body;

    auto [metrics_status, text] = Get(instance, "/metrics");
    ASSERT_EQ(metrics_status, 200);
    std::vector<std::string> bad;
    const std::vector<testing::MetricSample> metrics = testing::ParsePrometheusText(text, &bad);
    EXPECT_EQ(bad, std::vector<std::string>{});
    std::set<int32_t> serving;
    for (const testing::MetricSample& s :
         testing::FindSamples(metrics, "hotrow_partition_serving", {{"topic", "events"}})) {
      EXPECT_EQ(s.value, 1.0) << "instance " << instance << " partition "
                              << s.labels.at("partition") << " not serving";
      serving.insert(std::stoi(s.labels.at("partition")));
    }
    EXPECT_EQ(serving, *owned) << "instance " << instance;
    std::set<int32_t> rebuilt;
    for (const testing::MetricSample& s : testing::FindSamples(
             metrics, "hotrow_partition_rebuild_progress", {{"topic", "events"}})) {
      EXPECT_EQ(s.value, 1.0) << "instance " << instance << " partition "
                              << s.labels.at("partition") << " rebuild progress";
      rebuilt.insert(std::stoi(s.labels.at("partition")));
    }
    EXPECT_EQ(rebuilt, *owned) << "instance " << instance;
    EXPECT_EQ(testing::MetricValue(metrics, "hotrow_rebuilding_partitions"), 0.0);
    EXPECT_EQ(testing::MetricValue(metrics, "hotrow_stale_partitions"), 0.0);
    EXPECT_EQ(testing::MetricValue(metrics, "hotrow_assigned_partitions"),
              static_cast<double>(owned->size()));
  }

  // The instances in `alive` own every partition of the topic between them, each once.
  void ExpectOwnershipSplitsTheTopic(const std::vector<int>& alive,
                                     std::map<int, std::set<int32_t>>* owned) {
    std::multiset<int32_t> all;
    for (int i : alive) {
      ASSERT_NO_FATAL_FAILURE(ExpectServesAllItOwns(i, &(*owned)[i]));
      all.insert((*owned)[i].begin(), (*owned)[i].end());
    }
    std::multiset<int32_t> expected;
    for (int32_t p = 0; p < kPartitions; ++p) expected.insert(p);
    EXPECT_EQ(all, expected) << "the partitions owned, over every instance";
  }

  // Every instance in `alive` answers a complete scan holding exactly `total` records.
  bool AllComplete(const std::vector<int>& alive, size_t total) {
    for (int i : alive) {
      const Answer a = ScanAll(i);
      if (a.status != 200 || !a.complete || CheckWhole(a.events, total) != "") return false;
    }
    return true;
  }

  // The per-id answers of `instance` equal the oracle's (from a verified complete scan).
  void ExpectMatchesOracle(int instance, const std::vector<Event>& scan) {
    testing::Oracle oracle;
    std::set<std::string> ids;
    for (const Event& e : scan) {
      oracle.Add(e, 0);
      ids.insert(e.id);
    }
    int checked = 0;
    for (const std::string& id : ids) {
      if (++checked > 8) break;
      for (int n : {1, 10}) {
        const Answer a = Ask(instance, "/v1/events/" + id + "/latest?n=" + std::to_string(n));
        ASSERT_EQ(a.status, 200) << a.body;
        EXPECT_TRUE(a.has_complete && a.complete) << a.body;
        EXPECT_EQ(testing::DiffEvents(oracle.Latest(id, n, 0), a.events), "")
            << "instance " << instance << " latest " << id;
      }
      // The index fans out like the id queries: indexed by the id field itself, its answer is the
      // id's.
      const Answer x = Ask(instance, "/v1/index/event_id/" + id + "/latest?n=10");
      ASSERT_EQ(x.status, 200) << x.body;
      EXPECT_TRUE(x.has_complete && x.complete) << x.body;
      EXPECT_EQ(testing::DiffEvents(oracle.Latest(id, 10, 0), x.events), "")
          << "instance " << instance << " index latest " << id;
      const Answer r =
          Ask(instance, "/v1/events/" + id + "?from=0&to=" + std::to_string(kMaxTimeMs) +
                            "&limit=50&order=asc");
      ASSERT_EQ(r.status, 200) << r.body;
      EXPECT_TRUE(r.complete) << r.body;
      EXPECT_EQ(
          testing::DiffEvents(oracle.Range(id, 0, kMaxTimeMs, 50, query::Order::kAsc, 0), r.events),
          "")
          << "instance " << instance << " range " << id;
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<ChildProcess> kafka_;
  std::string bootstrap_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<ChildProcess>> serves_;
};

TEST_F(ClusterE2ETest, EveryInstanceAnswersForTheGroupAndAKilledOnesPartitionsAreRebuilt) {
  constexpr int64_t kFirst = 3000, kSecond = 1500;
  ASSERT_NO_FATAL_FAILURE(Produce(kFirst, 1));
  for (int i = 0; i < kInstances; ++i) StartServe(i);

  // 1. Every instance owns some partitions, and answers for all of them, like the oracle.
  const std::vector<int> all = {0, 1, 2};
  ASSERT_TRUE(WaitFor([&] { return AllComplete(all, kFirst); }, 90s, 200ms)) << Logs();
  std::map<int, std::set<int32_t>> owned;
  ASSERT_NO_FATAL_FAILURE(ExpectOwnershipSplitsTheTopic(all, &owned));
  const Answer before = ScanAll(0);
  ASSERT_EQ(CheckWhole(before.events, kFirst), "");
  for (int i = 0; i < kInstances; ++i)
    ASSERT_NO_FATAL_FAILURE(ExpectMatchesOracle(i, before.events));
  // A local answer covers only the instance's partitions, says which, and holds every record of
  // them.
  for (int i = 0; i < kInstances; ++i) {
    auto [status, body] =
        Get(i, "/v1/scan?from=0&to=" + std::to_string(kMaxTimeMs) + "&local=true");
    ASSERT_EQ(status, 200);
    std::set<std::pair<int32_t, int64_t>> got, expected;
    json last;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      const json j = json::parse(line);
      if (j.contains("complete")) {
        last = j;
        continue;
      }
      ASSERT_TRUE(last.is_null()) << "an event after the last line: " << line;
      const Event e = FromJson(j);
      EXPECT_TRUE(got.insert({e.partition, e.offset}).second) << "twice: " << line;
    }
    ASSERT_TRUE(last.is_object()) << "no last line";
    EXPECT_EQ(PartitionsOf(last.at("partitions")), owned[i]) << last.dump();
    EXPECT_EQ(PartitionsOf(last.at("stale")), std::set<int32_t>{}) << last.dump();
    EXPECT_TRUE(last.at("complete").get<bool>()) << last.dump();
    for (const Event& e : before.events) {
      if (owned[i].count(e.partition) != 0) expected.insert({e.partition, e.offset});
    }
    EXPECT_EQ(got, expected) << "instance " << i << "'s local scan";
  }

  // 2. Kill one; records keep coming. No answer is ever silently short: either it says
  // complete:false and names what is missing (no answering owner) or stale (an owner still
  // rebuilding it), or it holds every record produced before the kill.
  serves_[2]->Signal(SIGKILL);
  ASSERT_EQ(serves_[2]->Wait(10s), 128 + SIGKILL);
  ASSERT_NO_FATAL_FAILURE(Produce(kSecond, 2));
  std::set<std::pair<int32_t, int64_t>> produced_before;
  for (const Event& e : before.events) produced_before.insert({e.partition, e.offset});
  int incomplete = 0;
  const std::vector<int> alive = {0, 1};
  std::string short_answer;  // the first answer that said complete but lacked a record
  bool rebuilt = WaitFor(
      [&] {
        bool done = true;
        for (int i : alive) {
          const Answer a = ScanAll(i);
          if (a.status != 200) return false;
          EXPECT_TRUE(a.has_complete) << a.body.substr(0, 300);
          if (!a.complete) {
            ++incomplete;
            EXPECT_FALSE(a.missing.empty() && a.stale.empty())
                << "incomplete without missing or stale partitions: " << a.body.substr(0, 300);
            done = false;
            continue;
          }
          std::set<std::pair<int32_t, int64_t>> got;
          for (const Event& e : a.events) got.insert({e.partition, e.offset});
          size_t lacking = 0;
          for (const auto& po : produced_before) {
            if (got.count(po) != 0) continue;
            if (lacking++ == 0) {
              short_answer = "instance " + std::to_string(i) +
                             " answered complete without partition " + std::to_string(po.first) +
                             " offset " + std::to_string(po.second);
            }
          }
          if (lacking > 0) {
            short_answer += " (and " + std::to_string(lacking - 1) + " more records)";
            return true;  // stop waiting: the answer was silently short
          }
          if (CheckWhole(a.events, kFirst + kSecond) != "") done = false;
        }
        return done || ::testing::Test::HasFailure();
      },
      90s, 100ms);
  EXPECT_EQ(short_answer, "");
  ASSERT_FALSE(HasFailure()) << Logs();
  ASSERT_TRUE(rebuilt) << Logs();
  EXPECT_GT(incomplete, 0) << "the kill was never seen: the test did not exercise the handoff";

  // 3. The survivors answer for everything again, like the oracle, and /v1/cluster says who did
  // not answer.
  const Answer after = ScanAll(0);
  ASSERT_EQ(CheckWhole(after.events, kFirst + kSecond), "");
  for (int i : alive) ASSERT_NO_FATAL_FAILURE(ExpectMatchesOracle(i, after.events));
  auto [status, body] = Get(1, "/v1/cluster");
  ASSERT_EQ(status, 200) << body;
  const json cluster = json::parse(body);
  EXPECT_TRUE(cluster.at("complete").get<bool>()) << body;
  int answered = 0;
  for (const auto& instance : cluster.at("instances"))
    answered += instance.at("answered").get<bool>();
  EXPECT_EQ(answered, 2) << body;
  for (const auto& instance : cluster.at("instances")) {
    if (instance.at("address") == "127.0.0.1:" + std::to_string(ports_[2])) {
      EXPECT_FALSE(instance.at("answered").get<bool>()) << body;
    }
  }
  // The survivors own the killed one's partitions now, each serving with its rebuild done.
  std::map<int, std::set<int32_t>> owned_after;
  ASSERT_NO_FATAL_FAILURE(ExpectOwnershipSplitsTheTopic(alive, &owned_after));
}

}  // namespace
}  // namespace hotrow::cluster
