// The service manager's protocol (CONTRACT.md "Running as a service") through the real binary and
// a real socket: the test binds its own AF_UNIX datagram socket, as systemd does, starts
// `hotrow serve` against `hotrow embedded-kafka` with NOTIFY_SOCKET (and WATCHDOG_USEC) naming it,
// and reads what arrives: READY=1 only once the store is open and HTTP answers; WATCHDOG=1 at
// least every half interval while healthy and none while a store writer is wedged (the
// HOTROW_TEST_HOLD_WRITES fault hook of service/server.cc); RELOADING=1 then READY=1 around
// SIGHUP; STOPPING=1 on SIGTERM; nothing but an exit 2 for a bad configuration.

#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::service::notify_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;
using testing::ChildProcess;
using testing::FreePort;
using testing::ReadFile;
using testing::WaitFor;

// One notification as it arrived.
struct Message {
  steady_clock::time_point at;
  std::string text;
  bool Has(const std::string& assignment) const {
    return ("\n" + text + "\n").find("\n" + assignment + "\n") != std::string::npos;
  }
};

// A manager's end of the protocol: an AF_UNIX datagram socket in the abstract namespace (no path
// length limit, nothing to clean up), named "@hotrow-notify-<pid>-<n>" in $NOTIFY_SOCKET's form.
class NotifySocket {
 public:
  NotifySocket() {
    static int counter = 0;
    name_ = "hotrow-notify-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name_.data(), name_.size());  // sun_path[0] = 0: abstract
    const socklen_t len =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_.size());
    bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) close(fd_);
  }
  bool bound() const { return bound_; }
  std::string env_value() const { return "@" + name_; }

  // The next message, or false when none came within `timeout`.
  bool Receive(Message* out, milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return false;
    out->at = steady_clock::now();
    out->text.assign(buf, static_cast<size_t>(n));
    received_.push_back(*out);
    return true;
  }

  // Reads until a message holding `assignment` comes ("READY=1"); false when `timeout` passed.
  bool AwaitMessage(const std::string& assignment, milliseconds timeout, Message* found = nullptr) {
    const auto deadline = steady_clock::now() + timeout;
    Message m;
    while (true) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
      if (left.count() <= 0 || !Receive(&m, left)) return false;
      if (m.Has(assignment)) {
        if (found != nullptr) *found = m;
        return true;
      }
    }
  }

  // Everything received so far, one message a line, for failure messages.
  std::string Transcript() const {
    std::string out;
    for (const Message& m : received_) out += "[" + m.text + "]\n";
    return out;
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
  std::vector<Message> received_;
};

class NotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(notify_.bound()) << std::strerror(errno);
    port_ = FreePort();
  }

  void TearDown() override {
    std::remove(hold_file().c_str());  // a wedged writer would hold the stop
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
  }

  void StartKafka() {
    kafka_ = testing::StartEmbeddedKafka(2, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
  }

  std::string hold_file() const { return dir_.Sub("hold-writes"); }
  std::string ServeLog() { return ReadFile(dir_.Sub("serve.log")); }

  // Starts serve with the notify environment; `watchdog_usec` 0: no WATCHDOG_USEC.
  void StartServe(int64_t watchdog_usec, const std::vector<std::string>& sets = {}) {
    setenv("NOTIFY_SOCKET", notify_.env_value().c_str(), 1);
    if (watchdog_usec > 0) setenv("WATCHDOG_USEC", std::to_string(watchdog_usec).c_str(), 1);
    setenv("HOTROW_TEST_HOLD_WRITES", hold_file().c_str(), 1);
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
