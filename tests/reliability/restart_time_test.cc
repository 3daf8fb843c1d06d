// How soon a restarted `hotrow serve` ingests again (docs/RELIABILITY.md, "Restart time"), through
// the real binary against `hotrow embedded-kafka`, with hotrow's default consumer settings: after a
// clean stop (SIGTERM) and after kill -9. Measures the time from the new process's start to its
// first stored record and prints it; asserts it is well under the 45 s session timeout
// (librdkafka's default) that a restart used to wait out.

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using testing::ChildProcess;
using testing::FreePort;
using testing::ReadFile;
using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;

// The session timeout a restart used to wait out (librdkafka's default, which hotrow used).
constexpr double kOldSessionTimeoutSeconds = 45;

class RestartTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = testing::StartEmbeddedKafka(4, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    port_ = FreePort();
    // hotrow's own consumer defaults: no session or heartbeat settings here.
    std::ofstream config(dir_.Sub("hotrow.yaml"));
    config << "kafka:\n  brokers: " << bootstrap_ << "\n  topics: [events]\n  group_id: restart\n"
           << "store:\n  path: " << dir_.Sub("store") << "\n"
           << "http:\n  listen: 127.0.0.1:" << port_ << "\n";
  }

  void TearDown() override {
    if (serve_ && serve_->Running()) {
      serve_->Signal(SIGTERM);
      serve_->Wait(15s);
    }
    serve_.reset();
    if (kafka_) {
      kafka_->Signal(SIGTERM);
      kafka_->Wait(15s);
    }
  }

  void Produce(int count, int seed) {
    ChildProcess produce(
        {testing::HotrowBinary(), "produce", "--brokers", bootstrap_, "--topic", "events",
         "--count", std::to_string(count), "--rate", "0", "--seed", std::to_string(seed)},
        dir_.Sub("produce.log"));
    ASSERT_EQ(produce.Wait(60s), 0) << ReadFile(dir_.Sub("produce.log"));
  }

  uint64_t Ingested() {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(1s);
    client.set_read_timeout(5s);
    httplib::Result res = client.Get("/v1/stats");
    if (!res || res->status != 200) return 0;
    return nlohmann::json::parse(res->body).value("ingested", uint64_t{0});
  }

  // Starts serve and returns the seconds from its start to its first stored record (-1 when
  // none within 150 s).
  double StartAndTimeFirstRecord() {
    const auto t0 = std::chrono::steady_clock::now();
    serve_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{testing::HotrowBinary(), "serve", "--config",
                                 dir_.Sub("hotrow.yaml")},
        dir_.Sub("serve.log"));
    if (!WaitFor([&] { return Ingested() > 0 || !serve_->Running(); }, 150s, 50ms) ||
        !serve_->Running()) {
      return -1;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  TempDir dir_;
  std::unique_ptr<ChildProcess> kafka_;
  std::unique_ptr<ChildProcess> serve_;
  std::string bootstrap_;
  int port_ = 0;
};

TEST_F(RestartTimeTest, ARestartIngestsWithinSecondsAfterACleanStopAndAfterKill9) {
  ASSERT_NO_FATAL_FAILURE(Produce(1000, 1));
  const double first = StartAndTimeFirstRecord();
  ASSERT_GT(first, 0) << ReadFile(dir_.Sub("serve.log"));
  std::printf("first start (a new group): %.1f s to the first stored record\n", first);

  // A clean stop: SIGTERM, the consumer leaves the group.
  serve_->Signal(SIGTERM);
  ASSERT_EQ(serve_->Wait(15s), 0) << ReadFile(dir_.Sub("serve.log"));
  ASSERT_NO_FATAL_FAILURE(Produce(500, 2));
  const double after_stop = StartAndTimeFirstRecord();
  std::printf("restart after a clean stop: %.1f s to the first stored record\n", after_stop);

  // kill -9: the dead member stays in the group until its session times out.
  serve_->Signal(SIGKILL);
  serve_->Wait(15s);
  ASSERT_NO_FATAL_FAILURE(Produce(500, 3));
  const double after_kill = StartAndTimeFirstRecord();
  std::printf("restart after kill -9: %.1f s to the first stored record\n", after_kill);

  // Structural bounds: the old code waited out a whole 45 s session timeout (clean stop) or two
  // (kill -9) before ingesting; now the session timeout is 6 s (3 s on the embedded broker).
  EXPECT_GT(after_stop, 0) << ReadFile(dir_.Sub("serve.log"));
  EXPECT_LT(after_stop, kOldSessionTimeoutSeconds / 2);
  EXPECT_GT(after_kill, 0) << ReadFile(dir_.Sub("serve.log"));
  EXPECT_LT(after_kill, kOldSessionTimeoutSeconds / 2);
}

}  // namespace
}  // namespace hotrow
