// The fault run: while records flow and queries run, the mock cluster's brokers go down and come
// back, requests fail and slow down, and `hotrow serve` (the real binary) is killed with SIGKILL
// and restarted. At the end every produced good record is stored exactly once, every bad one was
// rejected and counted, and queries for many ids match the brute-force oracle exactly.
//
// Operation:
// - In this process: the embedded broker (3 brokers, so metadata still answers while one is down;
//   the group coordinator pinned to broker 3), a producer thread writing records with known ids,
//   times and payloads at a steady pace into a ProducedLog, and query threads that check every
//   answer against the invariants that hold at any moment (fault_oracle.h).
// - The fault schedule is driven by the number of acknowledged records, so that faults land at the
//   same points of the stream on a fast and on a slow (ASan, loaded) machine. How long a fault
//   lasts is a fixed wall-clock hold: that is the fault itself, never a synchronisation.
// - Connection errors while serve is down and 503 (busy) are expected and counted; any other
//   status, a wrong event, a duplicate, a broken order or a limit overrun is a failure.
//
// Why one file of ~840 lines: it is one scenario, a single timeline in which the producer, the
// queriers, the fault schedule and the kills act on the same fixture state; its parts that stand
// alone are already elsewhere (fault_oracle.h checks the answers, tests/support runs the
// processes). Split further, a reader would follow one run across files.

// clang-format off
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
// clang-format on

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "common/time_format.h"
#include "ingest/embedded_kafka.h"
#include "ingest/ingestor.h"
#include "store/event_store.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/reliability/fault_oracle.h"
#include "tests/reliability/fault_producer.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::testing::fault {
namespace {

using ingest::testing::CheckExactlyOnce;
using ingest::testing::HighWatermarks;
using ingest::testing::OffsetCounts;
using ingest::testing::StoredEvent;
using nlohmann::ordered_json;
using namespace std::chrono_literals;

constexpr char kTopic[] = "events";
constexpr char kGroup[] = "fault-run";
constexpr int kBrokers = 3;
constexpr int32_t kCoordinator = 3;  // the broker that coordinates kGroup
constexpr int kPartitions = 8;
constexpr int kIds = 200;
constexpr int64_t kRecords = 24000;  // produced by the steady producer, bad ones included
constexpr int64_t kRatePerSecond = 500;
constexpr int kBadEvery = 400;  // one record in kBadEvery is bad, the reasons in turn
constexpr int kSalts = 8;
constexpr int64_t kTtlMs = 10 * 60 * 1000;  // nothing expires during the run
constexpr int64_t kBucketMs = 15 * 1000;    // a few buckets (column families) in play
constexpr int kQueryThreads = 2;

// Mock API keys (Kafka protocol numbers).
constexpr int16_t kFetch = 1;
constexpr int16_t kOffsetCommit = 8;
constexpr int16_t kJoinGroup = 11;
constexpr int16_t kHeartbeat = 12;
constexpr int16_t kSyncGroup = 14;

int64_t WallNowMs() { return WallClock::Default()->NowMs(); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& path) {
  const std::string text = ReadFile(path);
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

// The port in serve's "hotrow started: HTTP on http://127.0.0.1:PORT, ..." log line; 0 when the
// line is not there yet.
int BoundPort(const std::string& log) {
  const std::string marker = "HTTP on http://127.0.0.1:";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return 0;
  return std::atoi(log.c_str() + at + marker.size());
}

// The record value of a bad record with `reason`; all but not_json carry their seq.
std::string BadValue(const std::string& reason, int64_t seq, int64_t now_ms) {
  ordered_json j;
  j["seq"] = seq;
  if (reason == ingest::kRejectNotJson) return "not json, seq " + std::to_string(seq);
  if (reason == ingest::kRejectNoId) {
    j["ts"] = now_ms;  // and no key: no id at all
  } else if (reason == ingest::kRejectIdTooLong) {
    j["event_id"] = std::string(300, 'x');
    j["ts"] = now_ms;
  } else if (reason == ingest::kRejectIdNotUtf8) {
    j["ts"] = now_ms;  // no event_id: the id is the key, which KeyOf makes invalid UTF-8
  } else if (reason == ingest::kRejectBadTime) {
    j["event_id"] = "dev-bad";
    j["ts"] = "yesterday at noon";
  } else if (reason == ingest::kRejectExpired) {
    j["event_id"] = "dev-bad";
    j["ts"] = now_ms - 6 * kTtlMs;
  } else {  // kRejectFuture
    j["event_id"] = "dev-bad";
    j["ts"] = now_ms + 60 * 60 * 1000;
  }
  return j.dump();
}

std::string IdOf(int i) {
  char id[16];
  std::snprintf(id, sizeof(id), "dev-%04d", i);
  return id;
}

// A 503 (or a scan's error line) for load or shutdown, the only server errors the contract allows:
// "too many queries at once; retry later", "busy: ...", "the server is shutting down".
bool IsBusyMessage(const std::string& text) {
  for (const char* word : {"retry", "busy", "shutting down"}) {
    if (text.find(word) != std::string::npos) return true;
  }
  return false;
}

// Counts of what the query threads saw, for the summary line.
struct QueryCounts {
  std::atomic<uint64_t> checked{0};      // 200 answers checked against the invariants
  std::atomic<uint64_t> events{0};       // events in them
  std::atomic<uint64_t> unavailable{0};  // connection errors, and serve known to be down
  std::atomic<uint64_t> busy{0};         // 503
  std::atomic<uint64_t> interrupted{0};  // cut short by a kill
};

// The parameter: ingest.writers of the hotrow serve under test.
class FaultRunTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    static std::once_flag logging;  // once per process: both writer counts may run in one
    std::call_once(logging, [] {
      InitLogging(getenv("HOTROW_TEST_LOG") != nullptr ? getenv("HOTROW_TEST_LOG") : "warn");
    });
    ingest::EmbeddedKafkaOptions options;
    options.brokers = kBrokers;
    auto kafka = ingest::EmbeddedKafka::Start(kTopic, kPartitions, options);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
    mock_ = kafka_->cluster();
    ASSERT_EQ(rd_kafka_mock_coordinator_set(mock_, "group", kGroup, kCoordinator),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    WriteConfig();
  }

  void TearDown() override {
    StopThreads();
    if (serve_ && serve_->Running()) {
      serve_->Signal(SIGTERM);
      serve_->Wait(20s);
    }
    serve_.reset();
  }

  // A short session and heartbeat: after a SIGKILL the group notices the dead member within
  // seconds, not librdkafka's default 45 s.
  void WriteConfig() {
    std::ofstream config(dir_.Sub("hotrow.yaml"));
    config << "kafka:\n  brokers: " << kafka_->bootstrap() << "\n  topics: [" << kTopic
           << "]\n  group_id: " << kGroup << "\n"
           << "  properties: {session.timeout.ms: 3000, heartbeat.interval.ms: 200, "
              "max.poll.interval.ms: 20000, topic.metadata.refresh.interval.ms: 1000}\n"
           << "store:\n  path: " << dir_.Sub("store") << "\n  ttl: " << kTtlMs / 1000
           << "s\n  bucket: " << kBucketMs / 1000 << "s\n"
           << "keying:\n  salts: " << kSalts << "\n"
           << "ingest:\n  batch_max_ms: 100ms\n  writers: " << GetParam() << "\n"
           << "http:\n  listen: 127.0.0.1:0\n"
           << "query:\n  threads: 2\n";
  }

  // One progress line per phase, so that a CI log shows where a run stopped.
  void Phase(const std::string& what) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - started_at_)
                             .count();
    std::printf("[fault run +%.1fs] %s (acknowledged %zu)\n", static_cast<double>(elapsed) / 1000,
                what.c_str(), log_.acked_good());
    std::fflush(stdout);
  }

  // --- serve -----------------------------------------------------------------------------------

  std::string ServeLog() const { return dir_.Sub("serve-" + std::to_string(starts_) + ".log"); }

  // Starts serve (a fresh log per incarnation) and waits for the port it bound.
  void StartServe() {
    ++starts_;
    serve_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{HotrowBinary(), "serve", "--config", dir_.Sub("hotrow.yaml")},
        ServeLog());
    int port = 0;
    ASSERT_TRUE(WaitFor(
        [&] {
          port = BoundPort(ReadFile(ServeLog()));
          return port != 0 || !serve_->Running();
        },
        90s, 20ms))
        << "serve did not start\n"
        << Tail(ServeLog());
    ASSERT_NE(port, 0) << "serve exited at start\n" << Tail(ServeLog());
    port_.store(port);
  }

  // Kills serve with SIGKILL once it has stored something, so that the kill lands mid-stream.
  void KillServe() {
    ASSERT_TRUE(WaitFor([&] { return Stats().value("ingested", uint64_t{0}) > 0; }, 90s, 50ms))
        << "serve stores nothing\n"
        << Tail(ServeLog());
    ASSERT_TRUE(serve_->Running()) << "serve died by itself\n" << Tail(ServeLog());
    port_.store(0);  // before the kill: the port may be someone else's right after it
    generation_.fetch_add(1);
    serve_->Signal(SIGKILL);
    EXPECT_EQ(serve_->Wait(), 128 + SIGKILL);
    ++kills_;
  }

  // SIGTERM; returns the exit code.
  int StopServe() {
    port_.store(0);
    generation_.fetch_add(1);
    serve_->Signal(SIGTERM);
    const int code = serve_->Wait(20s);
    return code;
  }

  void AwaitReady() {
    ASSERT_TRUE(
        WaitFor([&] { return Get("/readyz").first == 200 || !serve_->Running(); }, 120s, 50ms))
        << "serve never became ready\n"
        << Tail(ServeLog());
    ASSERT_TRUE(serve_->Running()) << Tail(ServeLog());
  }

  std::pair<int, std::string> Get(const std::string& target, int port = 0) {
    if (port == 0) port = port_.load();
    if (port == 0) return {-1, ""};
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(2s);
    client.set_read_timeout(60s);
    httplib::Result res = client.Get(target);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  }

  ordered_json Stats() {
    auto [status, body] = Get("/v1/stats");
    if (status != 200) return ordered_json::object();
    return ordered_json::parse(body);
  }

  // --- the producer ----------------------------------------------------------------------------

  // The next record: a good one of a random id, or every kBadEvery-th a bad one.
  ProducedRecord NextRecord(std::mt19937_64* rng) {
    ProducedRecord r;
    r.seq = next_seq_++;
    r.partition = static_cast<int32_t>((*rng)() % kPartitions);
    r.ts_ms = WallNowMs();
    if (r.seq % kBadEvery == kBadEvery / 2) {
      const size_t reasons = std::size(ingest::kJsonRejectReasons);
      r.reject_reason = ingest::kJsonRejectReasons[(r.seq / kBadEvery) % reasons];
      r.value = BadValue(r.reject_reason, r.seq, r.ts_ms);
      return r;
    }
    r.id = IdOf(static_cast<int>((*rng)() % kIds));
    ordered_json j;
    j["event_id"] = r.id;
    j["ts"] = r.ts_ms;
    j["seq"] = r.seq;
    j["reading"] = static_cast<int64_t>((*rng)() % 100000);
    j["tags"] = {{"site", "s" + std::to_string(r.seq % 7)}, {"note", "quote \" and \u00e9"}};
    r.value = j.dump();
    return r;
  }

  // The key of `record`: its id, a fixed one for bad records, none when it must have no id.
  static std::optional<std::string> KeyOf(const ProducedRecord& record) {
    if (record.reject_reason == ingest::kRejectNoId) return std::nullopt;
    if (record.reject_reason == ingest::kRejectIdNotUtf8) return std::string("bad\xff");
    return record.id.empty() ? "bad" : record.id;
  }

  // Produces kRecords at kRatePerSecond. Records to a downed broker wait in librdkafka while the
  // others flow on; acknowledgements land in log_ as they come.
  void ProduceSteadily() {
    LedgerProducer producer(kafka_->bootstrap(), kTopic, &log_);
    std::mt19937_64 rng(seed_);
    const auto start = std::chrono::steady_clock::now();
    std::string error;
    while (!stop_.load() && next_seq_ < kRecords) {
      const int64_t elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count();
      const int64_t due = std::min(kRecords, elapsed_ms * kRatePerSecond / 1000);
      while (next_seq_ < due) {
        const ProducedRecord r = NextRecord(&rng);
        if (!producer.Produce(r, KeyOf(r), &error)) {
          NoteFailure(error);
          return;
        }
      }
      producer.Poll(20ms);  // serves delivery reports; also the pace
    }
    if (!producer.Flush(180s)) NoteFailure("records still undelivered after 180 s");
    if (producer.failed() > 0) {
      NoteFailure(std::to_string(producer.failed()) + " records failed delivery, first " +
                  producer.first_error());
    }
  }

  bool AwaitAcked(size_t n) {
    return WaitFor([&] { return log_.acked_good() >= n || producer_done_.load(); }, 120s, 20ms);
  }

  // --- the query threads -----------------------------------------------------------------------

  void NoteFailure(const std::string& what) {
    std::lock_guard<std::mutex> lock(failures_mu_);
    if (failures_.size() < 20) failures_.push_back(what);
    ++failure_count_;
  }

  // Runs one random query against `port` and checks its answer; returns the problem, or "".
  std::string QueryOnce(int port, std::mt19937_64* rng) {
    const int kind = static_cast<int>((*rng)() % 3);
    // Mostly produced ids, sometimes one that never was.
    const std::string id = (*rng)() % 10 == 0 ? "dev-absent-" + std::to_string((*rng)() % 5)
                                              : IdOf(static_cast<int>((*rng)() % kIds));
    const int64_t now = WallNowMs();
    const int64_t from = now - static_cast<int64_t>((*rng)() % 90000);
    std::string target;
    if (kind == 0) {
      const int n = std::vector<int>{1, 5, 50, 1000}[(*rng)() % 4];
      target = "/v1/events/" + id + "/latest?n=" + std::to_string(n);
      return CheckAnswer(port, target, [&](const std::vector<query::Event>& events) {
        return CheckLatestAnswer(id, n, events, &log_);
      });
    }
    if (kind == 1) {
      const int64_t to = from + 1 + static_cast<int64_t>((*rng)() % 30000);
      const int64_t limit = std::vector<int64_t>{3, 100, 100000}[(*rng)() % 3];
      const query::Order order = (*rng)() % 2 == 0 ? query::Order::kDesc : query::Order::kAsc;
      target = "/v1/events/" + id + "?from=" + std::to_string(from) + "&to=" + std::to_string(to) +
               "&limit=" + std::to_string(limit) +
               (order == query::Order::kAsc ? "&order=asc" : "&order=desc");
      return CheckAnswer(port, target, [&](const std::vector<query::Event>& events) {
        return CheckRangeAnswer(id, from, to, limit, order, events, &log_);
      });
    }
    const int64_t to = from + 1 + static_cast<int64_t>((*rng)() % 3000);
    const int64_t limit = std::vector<int64_t>{0, 20, 2000}[(*rng)() % 3];
    target = "/v1/scan?from=" + std::to_string(from) + "&to=" + std::to_string(to) +
             (limit > 0 ? "&limit=" + std::to_string(limit) : "");
    return CheckAnswer(port, target, [&](const std::vector<query::Event>& events) {
      return CheckScanAnswer(from, to, limit, events, &log_);
    });
  }

  // GETs `target`, classifies the outcome and applies `check` to a complete answer.
  std::string CheckAnswer(
      int port, const std::string& target,
      const std::function<std::string(const std::vector<query::Event>&)>& check) {
    const int generation = generation_.load();
    auto [status, body] = Get(target, port);
    const bool killed_meanwhile = generation != generation_.load();
    if (status == -1) {
      ++counts_.unavailable;
      return "";
    }
    if (status == 503) {
      if (!IsBusyMessage(body)) return target + ": HTTP 503 that is not busy: " + body;
      ++counts_.busy;
      return "";
    }
    if (status != 200) return target + ": HTTP " + std::to_string(status) + " " + body;
    std::vector<query::Event> events;
    std::string error;
    bool complete = true;
    if (target.rfind("/v1/scan", 0) == 0) {
      std::istringstream lines(body);
      for (std::string line; complete && std::getline(lines, line);) {
        query::Event e;
        if (ParseScanLine(line, &e, &error)) {
          events.push_back(std::move(e));
        } else {
          complete = false;
        }
      }
    } else {
      std::string answered_id;
      complete = ParseEventsAnswer(body, &answered_id, &events, &error);
    }
    // Even a cut answer holds only right events: check what arrived either way.
    std::string problem = check(events);
    if (!problem.empty()) return target + ": " + problem;
    if (!complete) {
      if (killed_meanwhile) {
        ++counts_.interrupted;
        return "";
      }
      if (IsBusyMessage(error)) {
        ++counts_.busy;
        return "";
      }
      return target + ": " + error;
    }
    ++counts_.checked;
    counts_.events += events.size();
    return "";
  }

  void QueryContinuously(int index) {
    std::mt19937_64 rng(seed_ + 1 + static_cast<uint64_t>(index));
    while (!stop_.load()) {
      const int port = port_.load();
      if (port == 0) {
        ++counts_.unavailable;
      } else {
        std::string problem = QueryOnce(port, &rng);
        if (!problem.empty()) NoteFailure(problem);
      }
      std::this_thread::sleep_for(10ms);  // the pace, not a synchronisation
    }
  }

  void StartThreads() {
    producer_ = std::thread([this] {
      ProduceSteadily();
      producer_done_.store(true);
    });
    for (int i = 0; i < kQueryThreads; ++i) {
      queriers_.emplace_back([this, i] { QueryContinuously(i); });
    }
  }

  void StopThreads() {
    stop_.store(true);
    if (producer_.joinable()) producer_.join();
    for (auto& t : queriers_) t.join();
    queriers_.clear();
  }

  // --- the end ---------------------------------------------------------------------------------

  // Waits until serve's stored offsets reach the broker's high watermarks on every partition.
  bool AwaitCaughtUp(const std::map<int32_t, int64_t>& high) {
    return WaitFor(
        [&] {
          const ordered_json stats = Stats();
          if (!stats.contains("partitions")) return false;
          std::map<int32_t, int64_t> next;
          for (const auto& p : stats["partitions"]) {
            next[p["partition"].get<int32_t>()] = p["next_offset"].get<int64_t>();
          }
          return next == high;
        },
        180s, 100ms);
  }

  std::map<std::string, uint64_t> Rejected() {
    std::map<std::string, uint64_t> out;
    const ordered_json stats = Stats();  // a local: items() refers into it
    if (!stats.contains("rejected")) return out;
    for (const auto& [reason, count] : stats["rejected"].items()) {
      out[reason] = count.get<uint64_t>();
    }
    return out;
  }

  // Every record as the broker holds it: each produced record at its acknowledged offset, and
  // again at each offset where the broker holds a copy (ProducedLog::AddBrokerCopy).
  std::vector<ProducedRecord> BrokerRecords() const {
    std::vector<ProducedRecord> out = log_.Snapshot();
    std::map<int64_t, ProducedRecord> by_seq;
    for (const ProducedRecord& r : out) by_seq[r.seq] = r;
    for (const auto& [seq, partition, offset] : log_.BrokerCopies()) {
      ProducedRecord copy = by_seq.at(seq);
      copy.partition = partition;
      copy.offset = offset;
      out.push_back(std::move(copy));
    }
    return out;
  }

  // Reads the topic back and notes every record the broker holds at an offset other than the one
  // its producer was acknowledged with. Anything there that was never produced is a failure.
  void LearnBrokerCopies(const std::map<int32_t, int64_t>& high) {
    size_t total = 0;
    for (const auto& [p, hw] : high) total += static_cast<size_t>(hw);
    std::map<std::string, ProducedRecord> by_value;
    for (const ProducedRecord& r : log_.Snapshot()) by_value[r.value] = r;
    const std::vector<ingest::testing::KafkaRecord> records =
        ingest::testing::ConsumeAll(kafka_->bootstrap(), kTopic, kPartitions, total, 60000);
    ASSERT_EQ(records.size(), total) << "the topic could not be read back";
    for (const ingest::testing::KafkaRecord& k : records) {
      auto it = by_value.find(k.value.value_or(""));
      ASSERT_NE(it, by_value.end()) << "the broker holds a record never produced at "
                                    << k.partition << "@" << k.offset;
      const ProducedRecord& r = it->second;
      if (r.partition == k.partition && r.offset == k.offset) continue;
      std::printf("[fault run] the broker holds seq %lld at %d@%lld and again at %d@%lld\n",
                  static_cast<long long>(r.seq), r.partition, static_cast<long long>(r.offset),
                  k.partition, static_cast<long long>(k.offset));
      log_.AddBrokerCopy(r.seq, k.partition, k.offset);
    }
  }

  // (partition, offset) of every bad record.
  std::set<std::pair<int32_t, int64_t>> BadOffsets() const {
    std::set<std::pair<int32_t, int64_t>> out;
    for (const ProducedRecord& r : BrokerRecords()) {
      if (!r.reject_reason.empty()) out.emplace(r.partition, r.offset);
    }
    return out;
  }

  // The oracle of every good record the broker holds.
  Oracle BuildOracle(int64_t* min_ts, int64_t* max_ts) const {
    Oracle oracle;
    *min_ts = INT64_MAX;
    *max_ts = 0;
    for (const ProducedRecord& r : BrokerRecords()) {
      if (!r.reject_reason.empty()) continue;
      oracle.Add(query::Event{r.id, r.ts_ms, kTopic, r.partition, r.offset, r.value}, 0);
      *min_ts = std::min(*min_ts, r.ts_ms);
      *max_ts = std::max(*max_ts, r.ts_ms);
    }
    return oracle;
  }

  // GETs an /v1/events answer that must be a 200.
  std::vector<query::Event> GetEvents(const std::string& target) {
    auto [status, body] = Get(target);
    EXPECT_EQ(status, 200) << target << ": " << body;
    std::vector<query::Event> events;
    std::string id, error;
    if (status == 200) {
      EXPECT_TRUE(ParseEventsAnswer(body, &id, &events, &error)) << error;
    }
    return events;
  }

  // latest and range for every third id and two absent ones, compared with the oracle exactly.
  int CompareQueriesWithOracle() {
    int64_t min_ts = 0, max_ts = 0;
    const Oracle oracle = BuildOracle(&min_ts, &max_ts);
    const int64_t mid = min_ts + (max_ts - min_ts) / 2;
    std::vector<std::string> ids = {"dev-absent-0", "dev-00"};
    for (int i = 0; i < kIds; i += 3) ids.push_back(IdOf(i));
    int compared = 0;
    for (const std::string& id : ids) {
      for (int n : {1, 10, 1000}) {
        const std::string target = "/v1/events/" + id + "/latest?n=" + std::to_string(n);
        const std::string diff = DiffEvents(oracle.Latest(id, n, 0), GetEvents(target));
        EXPECT_TRUE(diff.empty()) << target << ": " << diff;
        ++compared;
      }
      for (auto [from, to] : {std::pair{min_ts, max_ts + 1}, std::pair{mid, max_ts + 1}}) {
        for (auto order : {query::Order::kDesc, query::Order::kAsc}) {
          const std::string target =
              "/v1/events/" + id + "?from=" + std::to_string(from) + "&to=" + std::to_string(to) +
              "&limit=40&order=" + (order == query::Order::kAsc ? "asc" : "desc");
          const std::string diff =
              DiffEvents(oracle.Range(id, from, to, 40, order, 0), GetEvents(target));
          EXPECT_TRUE(diff.empty()) << target << ": " << diff;
          ++compared;
        }
      }
    }
    return compared;
  }

  // A full scan holds every good record once, each as produced, and no bad one.
  void ExpectFullScanExactlyOnce(const std::map<int32_t, int64_t>& high) {
    auto [status, body] = Get("/v1/scan?from=0&to=" + std::to_string(kMaxTimeMs));
    ASSERT_EQ(status, 200) << body.substr(0, 300);
    std::vector<StoredEvent> stored;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      query::Event e;
      std::string error;
      ASSERT_TRUE(ParseScanLine(line, &e, &error)) << error;
      const std::string problem = log_.CheckEvent(e);
      EXPECT_TRUE(problem.empty()) << problem;
      StoredEvent s;
      s.topic = e.topic;
      s.partition = e.partition;
      s.offset = e.offset;
      s.id = e.id;
      s.ts_ms = e.ts_ms;
      s.payload = e.payload;
      stored.push_back(std::move(s));
    }
    EXPECT_EQ(CheckExactlyOnce(OffsetCounts(stored, kTopic), high, BadOffsets()), "");
    EXPECT_EQ(stored.size(), log_.stored_good());
  }

  // The store, opened after serve stopped, holds every good record once with its payload.
  void ExpectStoreExactlyOnce(const std::map<int32_t, int64_t>& high) {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.salts = kSalts;
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.read_only = true;
    auto store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const std::vector<StoredEvent> stored = ingest::testing::ReadStore(**store);
    EXPECT_EQ(CheckExactlyOnce(OffsetCounts(stored, kTopic), high, BadOffsets()), "");
    std::map<std::pair<int32_t, int64_t>, const ProducedRecord*> by_offset;
    const std::vector<ProducedRecord> produced = BrokerRecords();
    for (const ProducedRecord& r : produced) by_offset[{r.partition, r.offset}] = &r;
    int mismatched = 0;
    for (const StoredEvent& e : stored) {
      auto it = by_offset.find({e.partition, e.offset});
      const bool same = it != by_offset.end() && it->second->id == e.id &&
                        it->second->ts_ms == e.ts_ms && it->second->value == e.payload;
      if (!same && mismatched++ < 5) {
        ADD_FAILURE() << "stored row differs from its record: " << e.partition << "@" << e.offset;
      }
    }
    EXPECT_EQ(mismatched, 0);
    EXPECT_EQ((*store)->Stats().events, log_.stored_good());
    for (const auto& [tp, next] : (*store)->StoredOffsets()) {
      EXPECT_EQ(next, high.at(tp.partition)) << "stored offset of partition " << tp.partition;
    }
  }

  TempDir dir_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  rd_kafka_mock_cluster_t* mock_ = nullptr;
  std::unique_ptr<ChildProcess> serve_;
  int starts_ = 0;
  int kills_ = 0;
  int faults_ = 0;
  const uint64_t seed_ = TestSeed(20240612);
  const std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();

  ProducedLog log_{kTopic};
  std::atomic<int64_t> next_seq_{0};  // written by one producer at a time
  std::atomic<int> port_{0};          // serve's HTTP port; 0 while it is down
  std::atomic<int> generation_{0};    // bumped at every kill or stop
  std::atomic<bool> stop_{false};
  std::atomic<bool> producer_done_{false};
  std::thread producer_;
  std::vector<std::thread> queriers_;
  QueryCounts counts_;
  std::mutex failures_mu_;
  std::vector<std::string> failures_;  // the first few; guarded by failures_mu_
  uint64_t failure_count_ = 0;         // guarded by failures_mu_
};

TEST_P(FaultRunTest, EveryRecordStoredOnceAndEveryAnswerRightThroughFaultsAndKills) {
  SCOPED_TRACE("HOTROW_TEST_SEED=" + std::to_string(seed_));
  StartServe();
  ASSERT_NO_FATAL_FAILURE(AwaitReady());
  StartThreads();

  Phase("serve ready; producing and querying");
  // Fetch and commit errors: retried by librdkafka; commits only mirror the store.
  ASSERT_TRUE(AwaitAcked(1500));
  rd_kafka_mock_push_request_errors(
      mock_, kFetch, 6, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR__TRANSPORT,
      RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
      RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
  rd_kafka_mock_push_request_errors(
      mock_, kOffsetCommit, 4, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
      RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR__TRANSPORT,
      RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
  faults_ += 2;
  Phase("fetch and commit errors");

  // Kill 1, while broker 1 is slow and the rejoin meets JoinGroup and SyncGroup errors.
  ASSERT_TRUE(AwaitAcked(3500));
  rd_kafka_mock_broker_set_rtt(mock_, 1, 400);
  rd_kafka_mock_push_request_errors(mock_, kJoinGroup, 2,
                                    RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
                                    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
  rd_kafka_mock_push_request_errors(mock_, kSyncGroup, 1,
                                    RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE);
  faults_ += 3;
  Phase("broker 1 slow, join errors; kill 1");
  ASSERT_NO_FATAL_FAILURE(KillServe());
  ASSERT_NO_FATAL_FAILURE(StartServe());
  ASSERT_NO_FATAL_FAILURE(AwaitReady());
  rd_kafka_mock_broker_set_rtt(mock_, 1, 0);

  // Broker 2 (partition leader, not the coordinator) goes away and comes back.
  ASSERT_TRUE(AwaitAcked(7000));
  rd_kafka_mock_broker_set_down(mock_, 2);
  ++faults_;
  Phase("broker 2 down");
  std::this_thread::sleep_for(3s);  // the outage itself, not a synchronisation
  rd_kafka_mock_broker_set_up(mock_, 2);

  // Heartbeat errors: the member must rejoin; the partitions come back through a rebalance.
  ASSERT_TRUE(AwaitAcked(10000));
  rd_kafka_mock_push_request_errors(mock_, kHeartbeat, 3, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                    RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
                                    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
  ++faults_;
  Phase("heartbeat errors");

  // Kill 2, in plain flow.
  ASSERT_TRUE(AwaitAcked(12500));
  Phase("kill 2");
  ASSERT_NO_FATAL_FAILURE(KillServe());
  ASSERT_NO_FATAL_FAILURE(StartServe());
  ASSERT_NO_FATAL_FAILURE(AwaitReady());

  // Kill 3, while the group coordinator is down: the restart must wait for it, then rejoin.
  ASSERT_TRUE(AwaitAcked(16000));
  Phase("kill 3, coordinator down");
  ASSERT_NO_FATAL_FAILURE(KillServe());
  rd_kafka_mock_broker_set_down(mock_, kCoordinator);
  ++faults_;
  ASSERT_NO_FATAL_FAILURE(StartServe());
  std::this_thread::sleep_for(3s);  // the outage itself, not a synchronisation
  rd_kafka_mock_broker_set_up(mock_, kCoordinator);
  ASSERT_NO_FATAL_FAILURE(AwaitReady());

  // Every broker slow, and fetches failing, for a while.
  ASSERT_TRUE(AwaitAcked(19500));
  rd_kafka_mock_broker_set_rtt(mock_, -1, 150);
  rd_kafka_mock_push_request_errors(
      mock_, kFetch, 4, RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
      RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
  faults_ += 2;
  Phase("every broker slow, fetch errors");
  std::this_thread::sleep_for(2s);  // the slowness itself, not a synchronisation
  rd_kafka_mock_broker_set_rtt(mock_, -1, 0);

  // The producer finishes; serve catches up.
  producer_.join();
  Phase("producer done");
  ASSERT_TRUE(producer_done_.load());
  std::map<int32_t, int64_t> high = HighWatermarks(kafka_->bootstrap(), kTopic, kPartitions);
  ASSERT_TRUE(AwaitCaughtUp(high)) << Stats().dump() << "\n" << Tail(ServeLog());
  ASSERT_TRUE(serve_->Running()) << Tail(ServeLog());

  Phase("caught up");
  // One bad record of each reason more, into a caught-up serve: each is counted exactly once.
  std::map<std::string, uint64_t> rejected_before = Rejected();
  {
    LedgerProducer producer(kafka_->bootstrap(), kTopic, &log_);
    std::string error;
    for (const char* reason : ingest::kJsonRejectReasons) {
      ProducedRecord r;
      r.seq = next_seq_++;
      r.partition = static_cast<int32_t>(r.seq % kPartitions);
      r.ts_ms = WallNowMs();
      r.reject_reason = reason;
      r.value = BadValue(reason, r.seq, r.ts_ms);
      ASSERT_TRUE(producer.Produce(r, KeyOf(r), &error)) << error;
    }
    ASSERT_TRUE(producer.Flush(60s));
    ASSERT_EQ(producer.failed(), 0u) << producer.first_error();
  }
  high = HighWatermarks(kafka_->bootstrap(), kTopic, kPartitions);
  ASSERT_TRUE(AwaitCaughtUp(high)) << Stats().dump() << "\n" << Tail(ServeLog());
  std::map<std::string, uint64_t> rejected_after = Rejected();
  for (const char* reason : ingest::kJsonRejectReasons) {
    EXPECT_EQ(rejected_after[reason], rejected_before[reason] + 1) << reason;
  }
  EXPECT_EQ(Stats()["lost_to_retention"], 0);

  StopThreads();
  Phase("final checks");
  LearnBrokerCopies(high);
  {
    std::lock_guard<std::mutex> lock(failures_mu_);
    std::string all;
    for (const auto& f : failures_) all += f + "\n";
    EXPECT_EQ(failure_count_, 0u) << all;
  }
  EXPECT_EQ(log_.CheckDeferred(), "");

  ExpectFullScanExactlyOnce(high);
  const int compared = CompareQueriesWithOracle();
  ASSERT_EQ(StopServe(), 0) << Tail(ServeLog());
  ExpectStoreExactlyOnce(high);

  int64_t total = 0;
  for (const auto& [p, hw] : high) total += hw;
  std::printf(
      "fault run: %lld records (%zu good, %zu bad) over %d partitions, %d faults, %d kills, "
      "%d starts; queries checked live %llu (%llu events), unavailable %llu, busy %llu, "
      "interrupted %llu; %d compared with the oracle at the end\n",
      static_cast<long long>(total), log_.acked_good(), BadOffsets().size(), kPartitions, faults_,
      kills_, starts_, static_cast<unsigned long long>(counts_.checked.load()),
      static_cast<unsigned long long>(counts_.events.load()),
      static_cast<unsigned long long>(counts_.unavailable.load()),
      static_cast<unsigned long long>(counts_.busy.load()),
      static_cast<unsigned long long>(counts_.interrupted.load()), compared);
}

INSTANTIATE_TEST_SUITE_P(, FaultRunTest, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "Writers" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace hotrow::testing::fault
