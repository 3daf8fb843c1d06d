// A stopping instance and its standbys (CONTRACT.md "cluster.standby_replicas"), through the real
// binary: one `hotrow serve` of a two-instance peer list (the other never starts) owns every
// partition; on SIGTERM its group consumer gives them up to its own standby, which keeps them
// fresh and answers a second round's `?local=true&standby=...` for them until the HTTP server
// stops, while its heads no longer name them as a standby. $HOTROW_TEST_HOLD_STOP holds the stop
// between the group consumer's stop and the HTTP server's (service/server.cc) while a file exists.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::standby_stop_test {
namespace {

namespace testing = ::hotrow::testing;

using nlohmann::json;
using testing::ChildProcess;
using testing::ReadFile;
using testing::WaitFor;
using namespace std::chrono_literals;

constexpr int kPartitions = 4;

std::pair<int, std::string> Get(int port, const std::string& target) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2s);
  client.set_read_timeout(10s);
  httplib::Result res = client.Get(target);
  if (!res) return {-1, ""};
  return {res->status, res->body};
}

size_t Count(const json& j, const char* member) {
  if (!j.is_object() || !j.contains(member) || !j[member].contains("events")) return 0;
  return j[member]["events"].size();
}

TEST(StandbyStopTest, AStoppingOwnerHandsItsPartitionsToItsStandbyWhichAnswersUntilHttpStops) {
  testing::TempDir dir;
  std::string bootstrap;
  std::unique_ptr<ChildProcess> kafka =
      testing::StartEmbeddedKafka(kPartitions, dir.Sub("kafka.log"), &bootstrap);
  ASSERT_NE(kafka, nullptr) << ReadFile(dir.Sub("kafka.log"));
  {
    ChildProcess produce(
        {testing::HotrowBinary(), "produce", "--brokers", bootstrap, "--topic", "events", "--count",
         "400", "--rate", "0", "--devices", "10", "--seed", "1"},
        dir.Sub("produce.log"));
    ASSERT_EQ(produce.Wait(60s), 0) << ReadFile(dir.Sub("produce.log"));
  }
  const int port = testing::FreePort();
  const int absent = testing::FreePort();  // the other peer, never started
  {
    std::ofstream config(dir.Sub("hotrow.yaml"));
    config << "kafka:\n  brokers: " << bootstrap
           << "\n  topics: [events]\n  group_id: standby-stop\n"
           << "store:\n  path: " << dir.Sub("store") << "\n"
           << "http:\n  listen: 127.0.0.1:" << port << "\n"
           << "query:\n  threads: 1\n"
           << "cluster:\n  peers: [127.0.0.1:" << port << ", 127.0.0.1:" << absent
           << "]\n  standby_replicas: 1\n";
  }
  const std::string hold = dir.Sub("hold");
  std::ofstream(hold) << "held\n";
  ::setenv("HOTROW_TEST_HOLD_STOP", hold.c_str(), 1);
  ChildProcess serve({testing::HotrowBinary(), "serve", "--config", dir.Sub("hotrow.yaml")},
                     dir.Sub("serve.log"));
  ::unsetenv("HOTROW_TEST_HOLD_STOP");
  auto log = [&] { return ReadFile(dir.Sub("serve.log")); };

  // It owns and serves every partition, and follows none (it owns them).
  ASSERT_TRUE(WaitFor(
      [&] {
        auto [status, body] = Get(port, "/v1/cluster?local=true");
        return status == 200 && Count(json::parse(body, nullptr, false), "partitions") ==
                                    static_cast<size_t>(kPartitions);
      },
      60s, 50ms))
      << log();

  serve.Signal(SIGTERM);
  ASSERT_TRUE(WaitFor([&] { return log().find("stop: held") != std::string::npos; }, 30s)) << log();
  // The group consumer has stopped: nothing is owned, nothing named as a standby.
  auto [status, body] = Get(port, "/v1/cluster?local=true");
  ASSERT_EQ(status, 200) << body << log();
  json head = json::parse(body, nullptr, false);
  EXPECT_EQ(Count(head, "partitions"), 0u) << body;
  EXPECT_EQ(Count(head, "standby"), 0u) << body;
  // A second round that chose it just before is answered: its standby holds every partition it
  // gave up, whole and fresh.
  std::string asked;
  for (int p = 0; p < kPartitions; ++p)
    asked += (p == 0 ? "" : ",") + ("events:" + std::to_string(p));
  json answer;
  const bool served = WaitFor(
      [&] {
        auto [s, b] = Get(port, "/v1/latest?local=true&standby=" + asked);
        answer = json::parse(b, nullptr, false);
        return s == 200 && Count(answer, "partitions") == static_cast<size_t>(kPartitions);
      },
      10s, 20ms);
  EXPECT_TRUE(served) << answer.dump() << log();
  EXPECT_EQ(Count(answer, "stale"), 0u) << answer.dump();
  EXPECT_TRUE(answer.is_object() && !answer.value("events", json::array()).empty())
      << answer.dump();

  std::filesystem::remove(hold);
  EXPECT_EQ(serve.Wait(30s), 0) << log();
  kafka->Signal(SIGTERM);
  kafka->Wait(15s);
}

}  // namespace
}  // namespace hotrow::standby_stop_test
