// The live streams of a real `hotrow serve` (embedded broker, `hotrow produce`), read by curl -N as
// a user would, across a kill -9 of the service in the middle of ingestion and a restart: every
// stored event of each streamed id arrives exactly once (by its partition and offset) over the two
// sessions, the second resumed from the last id the first one got (Last-Event-ID).

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::live {
namespace {

using nlohmann::json;
using testing::ChildProcess;
using testing::ReadFile;
using testing::WaitFor;

constexpr int kPartitions = 4;
constexpr int kDevices = 3;
constexpr int64_t kCount = 30000;

using Place = std::tuple<int32_t, int64_t>;  // partition, offset (one topic)

struct Received {
  std::vector<Place> places;  // every event message, in arrival order
  std::string last_id;
};

// The event messages curl wrote to `path` (a last, partly written message is left out).
Received ReadStream(const std::string& path) {
  Received out;
  std::string text = ReadFile(path);
  size_t at = 0;
  size_t end;
  while ((end = text.find("\n\n", at)) != std::string::npos) {
    std::istringstream block(text.substr(at, end - at));
    at = end + 2;
    std::string line, event, id, data;
    while (std::getline(block, line)) {
      if (line.rfind("event: ", 0) == 0) event = line.substr(7);
      if (line.rfind("id: ", 0) == 0) id = line.substr(4);
      if (line.rfind("data: ", 0) == 0) data = line.substr(6);
    }
    if (!id.empty()) out.last_id = id;
    if (!event.empty() || data.empty()) continue;
    const json e = json::parse(data);
    out.places.emplace_back(e["partition"].get<int32_t>(), e["offset"].get<int64_t>());
  }
  return out;
}

class StreamE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = testing::StartEmbeddedKafka(kPartitions, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    port_ = testing::FreePort();
    std::ofstream config(dir_.Sub("hotrow.yaml"));
    config << "kafka:\n  brokers: " << bootstrap_ << "\n  topics: [events]\n  group_id: live\n"
           << "  properties: {session.timeout.ms: 6000, heartbeat.interval.ms: 500}\n"
           << "store:\n  path: " << dir_.Sub("store") << "\n"
           << "ingest:\n  batch_max_events: 500\n"
           << "http:\n  listen: 127.0.0.1:" << port_ << "\n  stream_buffer: 100000\n"
           << "query:\n  threads: 2\n";
  }
  void TearDown() override {
    curls_.clear();
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

  std::string Url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(port_) + target;
  }

  void StartServe(int run) {
    serve_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{testing::HotrowBinary(), "serve", "--config",
                                 dir_.Sub("hotrow.yaml")},
        dir_.Sub("serve" + std::to_string(run) + ".log"));
    ASSERT_TRUE(WaitFor([&] { return Get("/readyz").first == 200 || !serve_->Running(); },
                        std::chrono::seconds(60), std::chrono::milliseconds(50)));
    ASSERT_TRUE(serve_->Running()) << ReadFile(dir_.Sub("serve" + std::to_string(run) + ".log"));
  }

  std::pair<int, std::string> Get(const std::string& target) {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(std::chrono::seconds(2));
    client.set_read_timeout(std::chrono::seconds(30));
    httplib::Result res = client.Get(target);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  }

  // curl -N on a device's stream, writing what it reads to `path`.
  void Curl(const std::string& device, const std::string& path, const std::string& last_id) {
    std::vector<std::string> argv = {"curl", "-sN", "-o", path};
    if (!last_id.empty()) {
      argv.push_back("-H");
      argv.push_back("Last-Event-ID: " + last_id);
    }
    argv.push_back(Url("/v1/events/" + device + "/stream"));
    curls_.push_back(std::make_unique<ChildProcess>(argv, path + ".err"));
  }

  // What the store holds, by device and place (a scan of the whole window).
  std::map<std::string, std::set<Place>> Stored(int64_t* count) {
    auto [status, body] = Get("/v1/scan?from=0&to=9999999999999");
    std::map<std::string, std::set<Place>> out;
    *count = 0;
    if (status != 200) return out;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      const json e = json::parse(line);
      out[e["event_id"].get<std::string>()].emplace(e["partition"].get<int32_t>(),
                                                    e["offset"].get<int64_t>());
      ++*count;
    }
    return out;
  }

  static std::string Device(int d) {
    char name[16];
    std::snprintf(name, sizeof(name), "dev-%06d", d);
    return name;
  }

  testing::TempDir dir_;
  std::string bootstrap_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> kafka_;
  std::unique_ptr<ChildProcess> serve_;
  std::vector<std::unique_ptr<ChildProcess>> curls_;
};

TEST_F(StreamE2ETest, EveryStoredEventArrivesOnceAcrossAKill9AndAResume) {
  StartServe(1);
  for (int d = 0; d < kDevices; ++d) {
    Curl(Device(d), dir_.Sub("first" + std::to_string(d)), "");
  }
  ASSERT_TRUE(WaitFor([&] {
    for (int d = 0; d < kDevices; ++d) {
      if (ReadFile(dir_.Sub("first" + std::to_string(d))).find("event: open") == std::string::npos)
        return false;
    }
    return true;
  }));
  ChildProcess produce(
      {testing::HotrowBinary(), "produce", "--brokers", bootstrap_, "--topic", "events", "--count",
       std::to_string(kCount), "--rate", "0", "--devices", std::to_string(kDevices), "--seed", "5"},
      dir_.Sub("produce.log"));
  // kill -9 in the middle of ingestion: some batches written, some not, commits anywhere.
  ASSERT_TRUE(WaitFor([&] {
    size_t got = 0;
    for (int d = 0; d < kDevices; ++d) {
      got += ReadStream(dir_.Sub("first" + std::to_string(d))).places.size();
    }
    return got >= 2000;
  }));
  serve_->Signal(SIGKILL);
  serve_->Wait();
  ASSERT_EQ(produce.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir_.Sub("produce.log"));
  for (auto& c : curls_) c->Wait();  // the connection died with the service
  curls_.clear();

  StartServe(2);
  std::vector<Received> first(kDevices);
  for (int d = 0; d < kDevices; ++d) {
    first[d] = ReadStream(dir_.Sub("first" + std::to_string(d)));
    ASSERT_FALSE(first[d].last_id.empty());
    Curl(Device(d), dir_.Sub("second" + std::to_string(d)), first[d].last_id);
  }
  int64_t count = 0;
  std::map<std::string, std::set<Place>> by_device;
  ASSERT_TRUE(WaitFor(
      [&] {
        by_device = Stored(&count);
        return count == kCount;
      },
      std::chrono::seconds(120), std::chrono::milliseconds(200)))
      << count << " stored of " << kCount;
  ASSERT_EQ(by_device.size(), static_cast<size_t>(kDevices));
  for (int d = 0; d < kDevices; ++d) {
    const std::set<Place>& stored = by_device[Device(d)];
    Received second;
    ASSERT_TRUE(WaitFor(
        [&] {
          second = ReadStream(dir_.Sub("second" + std::to_string(d)));
          return first[d].places.size() + second.places.size() >= stored.size();
        },
        std::chrono::seconds(60), std::chrono::milliseconds(50)))
        << Device(d) << ": " << first[d].places.size() << " + " << second.places.size() << " of "
        << stored.size();
    std::vector<Place> all = first[d].places;
    all.insert(all.end(), second.places.begin(), second.places.end());
    EXPECT_EQ(all.size(), stored.size()) << Device(d) << ": a duplicate or an extra event";
    EXPECT_EQ(std::set<Place>(all.begin(), all.end()), stored) << Device(d);
    // In order per partition within each session.
    for (const Received* r : {&first[d], &second}) {
      std::map<int32_t, int64_t> last;
      for (const auto& [p, o] : r->places) {
        auto [it, fresh] = last.try_emplace(p, o);
        if (!fresh) {
          EXPECT_LT(it->second, o);
          it->second = o;
        }
      }
    }
  }
}

// A store keeps the partitions of a topic no longer consumed until they expire; a stream's
// position names the partitions the instance is assigned (service/server.cc tells the hub each
// second), not those: its ids stay within a request header however much the store holds.
TEST_F(StreamE2ETest, APositionNamesTheAssignedPartitionsNotEveryOneTheStoreHolds) {
  std::string yaml = ReadFile(dir_.Sub("hotrow.yaml"));
  const std::string events_topics = "topics: [events]";
  ASSERT_NE(yaml.find(events_topics), std::string::npos);
  std::string old_yaml = yaml;
  old_yaml.replace(old_yaml.find(events_topics), events_topics.size(), "topics: [retired]");
  std::ofstream(dir_.Sub("hotrow.yaml"), std::ios::trunc) << old_yaml;
  StartServe(1);
  ChildProcess produce(
      {testing::HotrowBinary(), "produce", "--brokers", bootstrap_, "--topic", "retired", "--count",
       "200", "--rate", "0", "--devices", "3", "--seed", "7"},
      dir_.Sub("produce.log"));
  ASSERT_EQ(produce.Wait(std::chrono::seconds(60)), 0) << ReadFile(dir_.Sub("produce.log"));
  int64_t count = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        Stored(&count);
        return count == 200;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(100)))
      << count;
  serve_->Signal(SIGTERM);
  ASSERT_EQ(serve_->Wait(std::chrono::seconds(30)), 0);

  std::ofstream(dir_.Sub("hotrow.yaml"), std::ios::trunc) << yaml;  // consumes "events" only
  StartServe(2);
  // The open message's id of a new stream, once the instance knows its assignment (a stream opened
  // before that names every partition stored, so that a resume never replays what it held then).
  std::string id;
  ASSERT_TRUE(WaitFor(
      [&] {
        httplib::Client client("127.0.0.1", port_);
        client.set_read_timeout(std::chrono::seconds(10));
        std::string text;
        client.Get("/v1/events/dev-000000/stream", [&](const char* data, size_t n) {
          text.append(data, n);
          const size_t open = text.find("event: open\n");
          return open == std::string::npos || text.find("\n\n", open) == std::string::npos;
        });
        const size_t at = text.find("event: open\nid: ");
        if (at == std::string::npos) return false;
        const size_t from = at + std::string("event: open\nid: ").size();
        id = text.substr(from, text.find('\n', from) - from);
        return id.find("retired:") == std::string::npos && id.find("events:") != std::string::npos;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(200)))
      << "the last open id: " << id;
  EXPECT_EQ(Stored(&count).count("dev-000000"), 1u) << "the retired topic's rows are still held";
}

}  // namespace
}  // namespace hotrow::live
