// The service manager's protocol (CONTRACT.md "Running as a service") through the real binary and
// a real socket: the test binds its own AF_UNIX datagram socket, as systemd does, starts
// `hotrow serve` against `hotrow embedded-kafka` with NOTIFY_SOCKET (and WATCHDOG_USEC) naming it,
// and reads what arrives: READY=1 only once the store is open and HTTP answers; WATCHDOG=1 at
// least every half interval while healthy and none while a store writer is wedged (the
// HOTROW_TEST_HOLD_WRITES fault hook of service/server.cc); EXTEND_TIMEOUT_USEC= while the store's
// open is held (HOTROW_TEST_HOLD_OPEN); RELOADING=1 then READY=1 around
// SIGHUP; STOPPING=1 on SIGTERM; nothing but an exit 2 for a bad configuration.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/notify_socket.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::service::notify_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;
using testing::ChildProcess;
using testing::FreePort;
using testing::Message;
using testing::NotifySocket;
using testing::ReadFile;
using testing::WaitFor;

class NotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(notify_.bound()) << std::strerror(errno);
    port_ = FreePort();
  }

  void TearDown() override {
    std::remove(hold_file().c_str());  // a wedged writer would hold the stop
    std::remove(hold_open_file().c_str());
    if (serve_ && serve_->Running()) {
      serve_->Signal(SIGTERM);
      serve_->Wait(seconds(15));
    }
    serve_.reset();
    if (kafka_) {
      kafka_->Signal(SIGTERM);
      kafka_->Wait(seconds(15));
    }
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("HOTROW_TEST_HOLD_WRITES");
    unsetenv("HOTROW_TEST_HOLD_OPEN");
  }

  void StartKafka() {
    kafka_ = testing::StartEmbeddedKafka(2, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
  }

  std::string hold_file() const { return dir_.Sub("hold-writes"); }
  std::string hold_open_file() const { return dir_.Sub("hold-open"); }
  std::string ServeLog() { return ReadFile(dir_.Sub("serve.log")); }

  // Starts serve with the notify environment; `watchdog_usec` 0: no WATCHDOG_USEC.
  void StartServe(int64_t watchdog_usec, const std::vector<std::string>& sets = {}) {
    setenv("NOTIFY_SOCKET", notify_.env_value().c_str(), 1);
    if (watchdog_usec > 0) setenv("WATCHDOG_USEC", std::to_string(watchdog_usec).c_str(), 1);
    setenv("HOTROW_TEST_HOLD_WRITES", hold_file().c_str(), 1);
    setenv("HOTROW_TEST_HOLD_OPEN", hold_open_file().c_str(), 1);
    std::vector<std::string> argv = {
        testing::HotrowBinary(),
        "serve",
        "--set",
        "kafka.brokers=" + bootstrap_,
        "--set",
        "kafka.group_id=notify",
        "--set",
        "kafka.properties={session.timeout.ms: 6000, heartbeat.interval.ms: 500}",
        "--set",
        "store.path=" + dir_.Sub("store"),
        "--set",
        "keying.salts=4",
        "--set",
        "http.listen=127.0.0.1:" + std::to_string(port_),
        "--set",
        "query.threads=2"};
    for (const auto& s : sets) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    serve_ = std::make_unique<ChildProcess>(argv, dir_.Sub("serve.log"));
  }

  int GetStatus(const std::string& path) {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(seconds(2));
    client.set_read_timeout(seconds(10));
    httplib::Result res = client.Get(path);
    return res ? res->status : -1;
  }

  testing::TempDir dir_;
  NotifySocket notify_;
  int port_ = 0;
  std::string bootstrap_;
  std::unique_ptr<ChildProcess> kafka_;
  std::unique_ptr<ChildProcess> serve_;
};

TEST_F(NotifyTest, ReadyOnlyOnceStoreOpenAndHttpAnswersThenReloadingReadyAndStopping) {
  StartKafka();
  StartServe(0);
  Message ready;
  ASSERT_TRUE(notify_.AwaitMessage("READY=1", seconds(60), &ready))
      << notify_.Transcript() << ServeLog();
  // At READY the store is open (its lock is taken, its CURRENT written) and HTTP answers: asked
  // right away, not awaited.
  EXPECT_TRUE(std::ifstream(dir_.Sub("store") + "/CURRENT").good()) << ServeLog();
  EXPECT_EQ(GetStatus("/healthz"), 200) << ServeLog();
  EXPECT_NE(ReadFile(dir_.Sub("serve.log")).find("store: opened"), std::string::npos) << ServeLog();
  // Nothing but READY and its STATUS came before it (no WATCHDOG without WATCHDOG_USEC).
  EXPECT_EQ(notify_.Transcript().find("WATCHDOG=1"), std::string::npos) << notify_.Transcript();

  // SIGHUP: RELOADING=1 (with the MONOTONIC_USEC systemd asks for), then READY=1.
  serve_->Signal(SIGHUP);
  Message reloading;
  ASSERT_TRUE(notify_.AwaitMessage("RELOADING=1", seconds(30), &reloading))
      << notify_.Transcript() << ServeLog();
  EXPECT_NE(reloading.text.find("MONOTONIC_USEC="), std::string::npos) << reloading.text;
  EXPECT_FALSE(reloading.Has("READY=1")) << reloading.text;
  Message ready_again;
  ASSERT_TRUE(notify_.AwaitMessage("READY=1", seconds(30), &ready_again))
      << notify_.Transcript() << ServeLog();
  EXPECT_EQ(GetStatus("/healthz"), 200);

  // SIGTERM: STOPPING=1, then the clean exit of CONTRACT.md.
  serve_->Signal(SIGTERM);
  ASSERT_TRUE(notify_.AwaitMessage("STOPPING=1", seconds(30)))
      << notify_.Transcript() << ServeLog();
  EXPECT_EQ(serve_->Wait(seconds(15)), 0) << ServeLog();
}

TEST_F(NotifyTest, ALongStoreOpenExtendsTheStartTimeoutThenReady) {
  // The store's open held (HOTROW_TEST_HOLD_OPEN, service/server.cc) stands for a cold, large store
  // that opens for longer than TimeoutStartSec=: the manager is asked to wait while it lasts.
  StartKafka();
  { std::ofstream(hold_open_file()) << "held\n"; }
  StartServe(0);
  Message extend;
  ASSERT_TRUE(notify_.AwaitMessage("EXTEND_TIMEOUT_USEC=30000000", seconds(60), &extend))
      << notify_.Transcript() << ServeLog();
  // The status names the store; on a loaded machine the first one already says how long it took.
  const std::string status = "\nSTATUS=opening the store at " + dir_.Sub("store");
  EXPECT_NE(("\n" + extend.text).find(status), std::string::npos) << extend.text;
  EXPECT_EQ(notify_.Transcript().find("READY=1"), std::string::npos) << notify_.Transcript();
  EXPECT_FALSE(std::ifstream(dir_.Sub("store") + "/CURRENT").good()) << "the open was not held";
  // Released, the open ends and READY=1 follows.
  std::remove(hold_open_file().c_str());
  ASSERT_TRUE(notify_.AwaitMessage("READY=1", seconds(60))) << notify_.Transcript() << ServeLog();
  EXPECT_TRUE(std::ifstream(dir_.Sub("store") + "/CURRENT").good()) << ServeLog();
}

TEST_F(NotifyTest, WatchdogEveryHalfIntervalWhileHealthyAndNoneWhileAWriterIsWedged) {
  StartKafka();
  // W = 4 s: WATCHDOG=1 every 1 s while healthy; a write under way for 2 s is stuck.
  constexpr int64_t kWatchdogUsec = 4'000'000;
  const milliseconds half_interval(kWatchdogUsec / 2000);
  StartServe(kWatchdogUsec);
  ASSERT_TRUE(notify_.AwaitMessage("READY=1", seconds(60))) << notify_.Transcript() << ServeLog();
  ASSERT_TRUE(WaitFor([&] { return GetStatus("/readyz") == 200; }, seconds(60), milliseconds(100)))
      << ServeLog();

  // Healthy: six WATCHDOG=1 in a row, none more than half the interval after the one before.
  Message m;
  ASSERT_TRUE(notify_.AwaitMessage("WATCHDOG=1", seconds(10), &m))
      << notify_.Transcript() << ServeLog();
  steady_clock::time_point last = m.at;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(notify_.AwaitMessage("WATCHDOG=1", half_interval, &m))
        << "no WATCHDOG=1 within half the interval after the last\n"
        << notify_.Transcript() << ServeLog();
    EXPECT_LE(m.at - last, half_interval);
    last = m.at;
  }

  // Wedge the writers: every store write now waits at its start; records make one begin.
  { std::ofstream(hold_file()) << "held\n"; }
  ChildProcess produce({testing::HotrowBinary(), "produce", "--brokers", bootstrap_, "--topic",
                        "events", "--count", "50", "--rate", "0"},
                       dir_.Sub("produce.log"));
  ASSERT_EQ(produce.Wait(seconds(60)), 0) << ReadFile(dir_.Sub("produce.log"));
  // The watchdog says so once the write has been under way for half the interval.
  Message unhealthy;
  bool saw_unhealthy = false;
  const auto give_up = steady_clock::now() + seconds(60);
  while (!saw_unhealthy && steady_clock::now() < give_up) {
    if (!notify_.Receive(&unhealthy, seconds(5))) continue;
    saw_unhealthy = unhealthy.text.find("STATUS=not healthy: a store write has been under way") !=
                    std::string::npos;
  }
  ASSERT_TRUE(saw_unhealthy) << notify_.Transcript() << ServeLog();
  // From then on, for a whole interval (4 rounds of the watchdog), no WATCHDOG=1.
  Message after;
  EXPECT_FALSE(notify_.AwaitMessage("WATCHDOG=1", milliseconds(kWatchdogUsec / 1000), &after))
      << "WATCHDOG=1 sent while a writer is wedged: " << after.text << "\n"
      << notify_.Transcript();

  // Released, the write finishes and WATCHDOG=1 resumes.
  std::remove(hold_file().c_str());
  EXPECT_TRUE(notify_.AwaitMessage("WATCHDOG=1", seconds(30)))
      << notify_.Transcript() << ServeLog();
}

TEST_F(NotifyTest, WatchdogPingsWhenTheApiServesHttpsWithAToken) {
  // The health probe asks /healthz in the scheme served; a probe that spoke plain HTTP to an HTTPS
  // listener would withhold every ping and have systemd kill a healthy service.
  ChildProcess openssl(
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
       "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
       "-keyout", dir_.Sub("tls.key"), "-out", dir_.Sub("tls.crt")},
      dir_.Sub("openssl.log"));
  ASSERT_EQ(openssl.Wait(), 0) << ReadFile(dir_.Sub("openssl.log"));
  { std::ofstream(dir_.Sub("token")) << "notify-test-token\n"; }
  StartKafka();
  constexpr int64_t kWatchdogUsec = 4'000'000;
  const milliseconds half_interval(kWatchdogUsec / 2000);
  StartServe(kWatchdogUsec,
             {"http.tls_cert=" + dir_.Sub("tls.crt"), "http.tls_key=" + dir_.Sub("tls.key"),
              "http.token_file=" + dir_.Sub("token")});
  ASSERT_TRUE(notify_.AwaitMessage("READY=1", seconds(60))) << notify_.Transcript() << ServeLog();
  Message m;
  ASSERT_TRUE(notify_.AwaitMessage("WATCHDOG=1", seconds(10), &m))
      << notify_.Transcript() << ServeLog();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(notify_.AwaitMessage("WATCHDOG=1", half_interval, &m))
        << notify_.Transcript() << ServeLog();
  }
  EXPECT_EQ(notify_.Transcript().find("not healthy"), std::string::npos) << notify_.Transcript();
}

TEST_F(NotifyTest, BadConfigurationExitsTwoWithoutReady) {
  // No broker is needed: the configuration is refused before anything is opened.
  bootstrap_ = "127.0.0.1:1";
  StartServe(0, {"store.ttl=ten"});
  EXPECT_EQ(serve_->Wait(seconds(30)), 2) << ServeLog();
  EXPECT_NE(ServeLog().find("store.ttl"), std::string::npos) << ServeLog();
  // The process is gone: whatever it sent is already queued on the socket.
  Message m;
  while (notify_.Receive(&m, milliseconds(0))) {
  }
  EXPECT_EQ(notify_.Transcript().find("READY=1"), std::string::npos) << notify_.Transcript();

  // A TLS key that is not a key: refused before the store is opened, no READY either.
  { std::ofstream(dir_.Sub("cert.pem")) << "not a certificate\n"; }
  StartServe(0, {"http.tls_cert=" + dir_.Sub("cert.pem"), "http.tls_key=" + dir_.Sub("cert.pem")});
  EXPECT_EQ(serve_->Wait(seconds(30)), 2) << ServeLog();
  while (notify_.Receive(&m, milliseconds(0))) {
  }
  EXPECT_EQ(notify_.Transcript().find("READY=1"), std::string::npos) << notify_.Transcript();
}

}  // namespace
}  // namespace hotrow::service::notify_test
