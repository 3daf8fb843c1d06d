// The group never says more than it read (the issue "The group and its streams never say more than
// they read"), through the real binary, once in Release: three `hotrow serve` with
// `cluster.standby_replicas: 1` and `cluster.route_by_key: murmur2`, `hotrow embedded-kafka`, and a
// producer here that never stops, keys each record by its id with librdkafka's murmur2
// partitioner and now and then keys one by something else (its partition then stops being
// routable at its owner). Members are stopped in turn: SIGTERM and restart, kill -9 and restart,
// SIGTERM and restart. Meanwhile:
// - clients ask per-id ranges of the instances up, routed by key, and compare every complete
//   answer with the producer's ledger: a range that ends 8 s ago (past cluster.max_staleness)
//   holds exactly the ledger's records of the id (none short, none extra);
// - a stream client subscribed to every instance follows CONTRACT.md's rule for streams in a
//   group (dedupe by partition and offset; on an announced partition or a stream that ended,
//   resume there from the last offset seen of each partition), and every event of its id
//   stored after its start arrives.
// Bounded to a few minutes: each restart waits for the group to settle.

#include <gtest/gtest.h>
#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>

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
#include <utility>
#include <vector>

#include "live/position.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::group_truth_test {
namespace {

namespace testing = ::hotrow::testing;

using nlohmann::json;
using testing::ChildProcess;
using testing::ReadFile;
using testing::WaitFor;
using namespace std::chrono_literals;

constexpr int kPartitions = 12;
constexpr int kInstances = 3;
constexpr int kDevices = 30;
constexpr int kCheckedIds = 6;
constexpr int64_t kSealedMs = 8000;  // past cluster.max_staleness (5 s)

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Id(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "dev-%06d", i);
  return buf;
}

using Place = std::pair<int32_t, int64_t>;  // partition, offset

// Every record produced: its id, time and, once acknowledged, its place.
class Ledger {
 public:
  struct Record {
    std::string id;
    int64_t ts = 0;
    Place place{-1, -1};
  };
  size_t Add(std::string id, int64_t ts) {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back({std::move(id), ts, {-1, -1}});
    return records_.size() - 1;
  }
  void Ack(size_t n, Place place) {
    std::lock_guard<std::mutex> lock(mu_);
    records_[n].place = place;
  }
  // The places of `id`'s records with ts < `to`; false when one of them is not acknowledged yet.
  bool Before(const std::string& id, int64_t to, std::set<Place>* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    out->clear();
    for (const Record& r : records_) {
      if (r.id != id || r.ts >= to) continue;
      if (r.place.first < 0) return false;
      out->insert(r.place);
    }
    return true;
  }
  std::vector<Record> All() const {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Record> records_;
};

// A librdkafka producer keyed by id with murmur2 (what cluster.route_by_key: murmur2 checks).
class Producer {
 public:
  Producer(const std::string& bootstrap, Ledger* ledger) : ledger_(ledger) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char errstr[512];
    for (const auto& [name, value] :
         std::map<std::string, std::string>{{"bootstrap.servers", bootstrap},
                                            {"partitioner", "murmur2_random"},
                                            {"enable.idempotence", "true"},
                                            {"linger.ms", "5"},
                                            {"log_level", "3"}}) {
      if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof(errstr)) !=
          RD_KAFKA_CONF_OK) {
        ADD_FAILURE() << name << ": " << errstr;
      }
    }
    rd_kafka_conf_set_dr_msg_cb(conf, &Producer::OnDelivery);
    rd_kafka_conf_set_opaque(conf, this);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    EXPECT_NE(rk_, nullptr) << errstr;
  }
  ~Producer() {
    rd_kafka_flush(rk_, 30000);
    rd_kafka_destroy(rk_);
  }

  // One record of `id`; keyed by `key` (the id, or not).
  void Produce(const std::string& id, const std::string& key, int64_t n) {
    const int64_t ts = NowMs();
    const size_t at = ledger_->Add(id, ts);
    const std::string value = "{\"event_id\":\"" + id + "\",\"ts\":" + std::to_string(ts) +
                              ",\"n\":" + std::to_string(n) + "}";
    while (true) {
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          rk_, RD_KAFKA_V_TOPIC("events"), RD_KAFKA_V_KEY(key.data(), key.size()),
          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<uintptr_t>(at))), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      ASSERT_EQ(err, RD_KAFKA_RESP_ERR__QUEUE_FULL) << rd_kafka_err2str(err);
      rd_kafka_poll(rk_, 50);
    }
    rd_kafka_poll(rk_, 0);
  }
  void Poll(int ms) { rd_kafka_poll(rk_, ms); }
  bool Flush() { return rd_kafka_flush(rk_, 60000) == RD_KAFKA_RESP_ERR_NO_ERROR; }
  uint64_t failed() const { return failed_.load(); }

 private:
  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
    auto* self = static_cast<Producer*>(opaque);
    if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->failed_.fetch_add(1);
      return;
    }
    self->ledger_->Ack(static_cast<size_t>(reinterpret_cast<uintptr_t>(msg->_private)),
                       {msg->partition, msg->offset});
  }
  Ledger* const ledger_;
  rd_kafka_t* rk_ = nullptr;
  std::atomic<uint64_t> failed_{0};
};

// Follows one id's stream on every instance by CONTRACT.md's rule for streams in a group.
class StreamClient {
 public:
  StreamClient(std::vector<int> ports, std::string id)
      : ports_(std::move(ports)), id_(std::move(id)) {}
  ~StreamClient() { Stop(); }

  void Start() {
    for (size_t i = 0; i < ports_.size(); ++i) threads_.emplace_back([this, i] { Follow(i); });
  }
  void Stop() {
    stop_.store(true);
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  // Whether every instance's stream has opened once.
  bool AllOpened() {
    std::lock_guard<std::mutex> lock(mu_);
    return opened_.size() == ports_.size();
  }
  std::set<Place> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  std::map<int32_t, int64_t> first_next() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_next_;
  }
  uint64_t duplicates() const { return duplicates_.load(); }
  uint64_t resumes() const { return resumes_.load(); }

 private:
  // The position of everything seen: per partition the offset after the last event seen (or where
  // the first stream naming it started).
  std::string Position() {
    std::lock_guard<std::mutex> lock(mu_);
    live::StreamPosition p;
    p.made_ms = NowMs();
    for (const auto& [partition, next] : next_) p.next[{"events", partition}] = next;
    return p.ToString();
  }

  void Follow(size_t i) {
    bool first = true;
    while (!stop_.load()) {
      httplib::Client client("127.0.0.1", ports_[i]);
      client.set_connection_timeout(1s);
      client.set_read_timeout(20s);  // keep-alives come every 15 s
      std::string target = "/v1/events/" + id_ + "/stream";
      if (!first) {
        target += "?after=" + Position();
        resumes_.fetch_add(1);
      }
      std::string buffer;
      bool got_open = false;
      client.Get(target, [&](const char* data, size_t n) {
        buffer.append(data, n);
        size_t end;
        while ((end = buffer.find("\n\n")) != std::string::npos) {
          const std::string block = buffer.substr(0, end);
          buffer.erase(0, end + 2);
          std::istringstream lines(block);
          std::string line, event, idline, payload;
          while (std::getline(lines, line)) {
            if (line.rfind("event: ", 0) == 0) event = line.substr(7);
            if (line.rfind("id: ", 0) == 0) idline = line.substr(4);
            if (line.rfind("data: ", 0) == 0) payload = line.substr(6);
          }
          if (event == "open") {
            got_open = true;
            Opened(i, idline);
          } else if (event == "partitions") {
            // A partition arrived or left: resume from what was seen (a new stream here).
            if (payload.find("\"added\":{}") == std::string::npos) return false;
          } else if (event == "closed") {
            return false;
          } else if (event.empty() && !payload.empty()) {
            const json e = json::parse(payload, nullptr, false);
            if (e.is_object()) Saw({e["partition"].get<int32_t>(), e["offset"].get<int64_t>()});
          }
        }
        return !stop_.load();
      });
      if (got_open) first = false;
      if (!stop_.load()) std::this_thread::sleep_for(200ms);  // an instance down: try again
    }
  }

  void Opened(size_t i, const std::string& position) {
    Result<live::StreamPosition> p = live::ParseStreamPosition(position);
    std::lock_guard<std::mutex> lock(mu_);
    opened_.insert(i);
    if (!p.ok()) return;
    for (const auto& [tp, next] : p->next) {
      // The first stream naming a partition says where the client's view of it starts.
      if (first_next_.emplace(tp.partition, next).second) next_.emplace(tp.partition, next);
    }
  }

  void Saw(Place place) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!seen_.insert(place).second) {
      duplicates_.fetch_add(1);
      return;
    }
    int64_t& next = next_[place.first];
    next = std::max(next, place.second + 1);
  }

  const std::vector<int> ports_;
  const std::string id_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::set<size_t> opened_;                // GUARDED_BY(mu_)
  std::set<Place> seen_;                   // GUARDED_BY(mu_)
  std::map<int32_t, int64_t> next_;        // GUARDED_BY(mu_)
  std::map<int32_t, int64_t> first_next_;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> duplicates_{0}, resumes_{0};
};

class GroupTruthTest : public ::testing::Test {
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
      // Eager assignment: the embedded broker settles it through restarts (RELIABILITY.md).
      std::ofstream config(dir_.Sub("hotrow-" + std::to_string(i) + ".yaml"));
      config << "kafka:\n  brokers: " << bootstrap_
             << "\n  topics: [events]\n  group_id: group-truth\n"
             << "  properties: {partition.assignment.strategy: range}\n"
             << "store:\n  path: " << dir_.Sub("store-" + std::to_string(i)) << "\n"
             << "http:\n  listen: 127.0.0.1:" << ports_[i] << "\n"
             << "query:\n  threads: 1\n"
             << "cluster:\n  peers: [" << peers
             << "]\n  standby_replicas: 1\n  route_by_key: murmur2\n";
    }
    serves_.resize(kInstances);
  }

  void TearDown() override {
    stop_.store(true);
    if (asker_.joinable()) asker_.join();
    stop_producing_.store(true);
    if (producing_.joinable()) producing_.join();
    if (stream_) stream_->Stop();
    for (auto& serve : serves_) {
      if (serve && serve->Running()) serve->Signal(SIGTERM);
    }
    for (auto& serve : serves_) {
      if (serve) serve->Wait(15s);
    }
    if (kafka_) {
      kafka_->Signal(SIGTERM);
      kafka_->Wait(15s);
    }
  }

  void StartServe(int i) {
    serves_[i] = std::make_unique<ChildProcess>(
        std::vector<std::string>{testing::HotrowBinary(), "serve", "--config",
                                 dir_.Sub("hotrow-" + std::to_string(i) + ".yaml")},
        dir_.Sub("serve-" + std::to_string(i) + ".log"));
  }

  std::string Logs() {
    std::string out;
    for (int i = 0; i < kInstances; ++i) {
      const std::string log = ReadFile(dir_.Sub("serve-" + std::to_string(i) + ".log"));
      out += "--- serve " + std::to_string(i) + "\n" +
             log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
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

  // Every partition has one serving owner and a serving standby among the three.
  bool Settled() {
    std::map<int32_t, int> owners, standbys;
    for (int i = 0; i < kInstances; ++i) {
      auto [status, body] = Get(i, "/v1/cluster?local=true");
      if (status != 200) return false;
      const json j = json::parse(body, nullptr, false);
      if (!j.is_object() || !j.value("complete", false)) return false;
      if (j.contains("partitions") && j["partitions"].contains("events")) {
        for (const json& p : j["partitions"]["events"]) ++owners[p.get<int32_t>()];
      }
      if (j.contains("standby") && j["standby"].contains("events")) {
        for (const json& p : j["standby"]["events"]) ++standbys[p.get<int32_t>()];
      }
    }
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (owners[p] != 1 || standbys[p] < 1) return false;
    }
    return true;
  }

  // The producer thread: about 300 records a second over kDevices ids, one in 40 keyed by
  // something else than its id.
  void StartProducing() {
    producing_ = std::thread([this] {
      std::mt19937 random(7);
      int64_t n = 0;
      while (!stop_producing_.load()) {
        const std::string id = Id(static_cast<int>(random() % kDevices));
        const bool miskeyed = random() % 40 == 0;
        producer_->Produce(id, miskeyed ? "not-" + id + "-" + std::to_string(n) : id, n);
        if (miskeyed) miskeyed_.fetch_add(1);
        ++n;
        producer_->Poll(3);
      }
    });
  }

  // Asks the instances up, round robin: a range of a checked id ending kSealedMs ago.
  void StartAsking() {
    asker_ = std::thread([this] {
      size_t turn = 0;
      while (!stop_.load()) {
        std::vector<int> up;
        {
          std::lock_guard<std::mutex> lock(mu_);
          up = up_;
        }
        const int instance = up[turn % up.size()];
        const std::string id = Id(static_cast<int>(turn % kCheckedIds));
        ++turn;
        const int64_t to = NowMs() - kSealedMs;
        std::set<Place> want;
        if (!ledger_.Before(id, to, &want)) continue;  // an acknowledgement still due
        auto [status, body] = Get(
            instance, "/v1/events/" + id + "?from=0&to=" + std::to_string(to) + "&limit=100000");
        std::lock_guard<std::mutex> lock(mu_);
        ++answers_;
        const json j = json::parse(body, nullptr, false);
        if (status != 200 || !j.is_object()) {
          ++failed_;
          continue;
        }
        if (!j.value("complete", false)) {
          ++incomplete_;
          continue;
        }
        if (j.contains("from_standby")) ++from_standby_;
        std::set<Place> got;
        for (const json& e : j["events"]) {
          got.emplace(e["partition"].get<int32_t>(), e["offset"].get<int64_t>());
        }
        if (got != want) {
          ++inexact_;
          if (first_bad_.empty()) {
            first_bad_ = "instance " + std::to_string(instance) + " " + id + ": " +
                         std::to_string(got.size()) + " events, the ledger has " +
                         std::to_string(want.size());
          }
        }
      }
    });
  }

  void SetAsked(std::vector<int> up) {
    std::lock_guard<std::mutex> lock(mu_);
    up_ = std::move(up);
  }

  testing::TempDir dir_;
  std::string bootstrap_;
  std::vector<int> ports_;
  std::unique_ptr<ChildProcess> kafka_;
  std::vector<std::unique_ptr<ChildProcess>> serves_;
  Ledger ledger_;
  std::unique_ptr<Producer> producer_;
  std::thread producing_;
  std::atomic<bool> stop_producing_{false};
  std::atomic<uint64_t> miskeyed_{0};
  std::unique_ptr<StreamClient> stream_;

  std::thread asker_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<int> up_;  // GUARDED_BY(mu_)
  uint64_t answers_ = 0, failed_ = 0, incomplete_ = 0, inexact_ = 0, from_standby_ = 0;
  std::string first_bad_;
};

TEST_F(GroupTruthTest, AnswersAndStreamsHoldEveryRecordThroughStopsAndKills) {
  producer_ = std::make_unique<Producer>(bootstrap_, &ledger_);
  for (int i = 0; i < kInstances; ++i) StartServe(i);
  ASSERT_TRUE(WaitFor([&] { return Settled(); }, 90s, 200ms)) << Logs();
  // A first batch, stored before the stream client starts: a stream names a partition once its
  // instance stored a row of it.
  for (int n = 0; n < 300; ++n) producer_->Produce(Id(n % kDevices), Id(n % kDevices), n);
  ASSERT_TRUE(producer_->Flush());
  std::set<int32_t> holding;
  for (const Ledger::Record& r : ledger_.All()) holding.insert(r.place.first);
  std::set<Place> first_batch;
  ASSERT_TRUE(ledger_.Before(Id(0), NowMs() + 1, &first_batch));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto [status, body] =
            Get(0, "/v1/events/" + Id(0) + "?from=0&to=" + std::to_string(NowMs() + 1) +
                       "&limit=100000");
        const json j = json::parse(body, nullptr, false);
        return status == 200 && j.is_object() && j.value("complete", false) &&
               j["events"].size() == first_batch.size();
      },
      60s, 200ms))
      << Logs();
  stream_ = std::make_unique<StreamClient>(ports_, Id(0));
  stream_->Start();
  // Every partition holding a row named by its owner's stream (a hub that did not know its
  // partitions yet announces them, and the client opens that stream again).
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::map<int32_t, int64_t> named = stream_->first_next();
        if (!stream_->AllOpened()) return false;
        for (int32_t p : holding) {
          if (named.count(p) == 0) return false;
        }
        return true;
      },
      30s, 50ms))
      << stream_->first_next().size() << " of " << holding.size();
  StartProducing();
  SetAsked({0, 1, 2});
  StartAsking();
  std::this_thread::sleep_for(3s);  // answers of a group at rest first

  // SIGTERM and restart, kill -9 and restart, SIGTERM and restart: one member at a time, clients
  // asking the two others.
  for (int i = 0; i < kInstances; ++i) {
    std::vector<int> others;
    for (int k = 0; k < kInstances; ++k) {
      if (k != i) others.push_back(k);
    }
    SetAsked(others);
    const int signal = i == 1 ? SIGKILL : SIGTERM;
    serves_[i]->Signal(signal);
    ASSERT_EQ(serves_[i]->Wait(30s), signal == SIGKILL ? 128 + SIGKILL : 0) << Logs();
    std::this_thread::sleep_for(3s);  // answers while it is down
    StartServe(i);
    ASSERT_TRUE(WaitFor([&] { return Settled(); }, 90s, 200ms)) << Logs();
    SetAsked({0, 1, 2});
  }
  std::this_thread::sleep_for(kSealedMs * 1ms + 2s);  // the last restart's records sealed and asked
  stop_.store(true);
  asker_.join();
  stop_producing_.store(true);
  producing_.join();
  ASSERT_TRUE(producer_->Flush());
  ASSERT_EQ(producer_->failed(), 0u);

  // Every record of the stream's id from its start on arrives.
  const std::map<int32_t, int64_t> start = stream_->first_next();
  std::set<Place> owed;
  for (const Ledger::Record& r : ledger_.All()) {
    // A partition no stream named at the start is sent from the window's start.
    auto from = start.find(r.place.first);
    if (r.id == Id(0) && (from == start.end() || r.place.second >= from->second)) {
      owed.insert(r.place);
    }
  }
  std::set<Place> missing;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::set<Place> seen = stream_->seen();
        missing.clear();
        for (const Place& p : owed) {
          if (seen.count(p) == 0) missing.insert(p);
        }
        return missing.empty();
      },
      60s, 200ms))
      << missing.size() << " of " << owed.size() << " owed events never arrived, the first at "
      << missing.begin()->first << "/" << missing.begin()->second;
  stream_->Stop();

  std::lock_guard<std::mutex> lock(mu_);
  std::printf(
      "%llu answers: %llu incomplete, %llu inexact, %llu failed, %llu from a standby; %llu "
      "mis-keyed records; stream: %zu events owed, all arrived, %llu duplicates dropped by the "
      "client, %llu resumes\n",
      static_cast<unsigned long long>(answers_), static_cast<unsigned long long>(incomplete_),
      static_cast<unsigned long long>(inexact_), static_cast<unsigned long long>(failed_),
      static_cast<unsigned long long>(from_standby_),
      static_cast<unsigned long long>(miskeyed_.load()), owed.size(),
      static_cast<unsigned long long>(stream_->duplicates()),
      static_cast<unsigned long long>(stream_->resumes()));
  EXPECT_GT(answers_ - incomplete_ - failed_, 50u);
  EXPECT_EQ(inexact_, 0u) << first_bad_;
  EXPECT_GT(miskeyed_.load(), 0u);
}

}  // namespace
}  // namespace hotrow::group_truth_test
