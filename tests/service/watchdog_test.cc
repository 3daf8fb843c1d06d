// The watchdog's definition of healthy (service/watchdog.h, CONTRACT.md "Running as a service"):
// the poller iterated within the bound, no store write under way for the bound or longer, and the
// HTTP API answered, and the same of the standby consumer where there is one. The notify test
// (notify_test.cc) proves it through the real process; the standby's part is proved in process
// against a real notify socket.

#include "service/watchdog.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "service/notifier.h"
#include "tests/support/notify_socket.h"

namespace hotrow::service::watchdog_test {
namespace {

constexpr int64_t kBound = 2000;
constexpr int64_t kNow = 1'000'000;

HealthInputs Healthy() {
  HealthInputs in;
  in.now_ms = kNow;
  in.ingest.poll_began_ms = kNow - 50;
  in.ingest.oldest_write_began_ms = 0;
  in.http = Status::Ok();
  return in;
}

TEST(WatchdogTest, HealthyWhenPollerIteratesNoWriteIsLongAndHttpAnswers) {
  EXPECT_TRUE(JudgeHealth(Healthy(), kBound).ok());
  HealthInputs writing = Healthy();
  writing.ingest.oldest_write_began_ms = kNow - (kBound - 1);  // a long write, within the bound
  EXPECT_TRUE(JudgeHealth(writing, kBound).ok());
}

TEST(WatchdogTest, AWriteUnderWayForTheBoundIsStuckEvenWhileThePollerLoops) {
  HealthInputs in = Healthy();
  in.ingest.oldest_write_began_ms = kNow - kBound;
  const Status health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("a store write has been under way for 2s"), std::string::npos)
      << health.message();
}

TEST(WatchdogTest, APollerThatHasNotIteratedForTheBoundOrNotBegunIsStuck) {
  HealthInputs in = Healthy();
  in.ingest.poll_began_ms = kNow - kBound;
  Status health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("poller has not iterated for 2s"), std::string::npos)
      << health.message();
  in.ingest.poll_began_ms = 0;
  health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("has not begun"), std::string::npos) << health.message();
}

TEST(WatchdogTest, AnHttpApiThatDoesNotAnswerIsUnhealthy) {
  HealthInputs in = Healthy();
  in.http = Status::IOError("GET http://127.0.0.1:1/healthz: Connection");
  const Status health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("the HTTP API does not answer"), std::string::npos);
}

TEST(WatchdogTest, APollerNotBegunIsStuckOnlyOnceTheBoundHasPassedSinceTheWatchStarted) {
  // The standby consumer starts last: at the watchdog's first round its poller may not have begun.
  HealthInputs in = Healthy();
  in.watching_since_ms = kNow - (kBound - 1);
  in.standby = in.ingest;
  in.standby->poll_began_ms = 0;
  EXPECT_TRUE(JudgeHealth(in, kBound).ok()) << JudgeHealth(in, kBound).message();
  in.ingest.poll_began_ms = 0;
  EXPECT_TRUE(JudgeHealth(in, kBound).ok()) << JudgeHealth(in, kBound).message();
  in.watching_since_ms = kNow - kBound;
  const Status health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("the ingest poller has not begun"), std::string::npos)
      << health.message();
}

TEST(WatchdogTest, AWedgedStandbyPollerOrWriteIsStuckAndNoStandbyIsNoCheck) {
  HealthInputs in = Healthy();
  in.standby = in.ingest;
  EXPECT_TRUE(JudgeHealth(in, kBound).ok());
  in.standby->poll_began_ms = kNow - kBound;
  Status health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("the standby consumer's poller has not iterated for 2s"),
            std::string::npos)
      << health.message();
  in.standby->poll_began_ms = 0;
  health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("the standby consumer's poller has not begun"), std::string::npos)
      << health.message();
  in.standby = in.ingest;
  in.standby->oldest_write_began_ms = kNow - kBound;
  health = JudgeHealth(in, kBound);
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.message().find("a store write of the standby consumer has been under way"),
            std::string::npos)
      << health.message();
  in.standby.reset();  // no standby consumer: nothing of it to judge
  EXPECT_TRUE(JudgeHealth(in, kBound).ok());
}

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The Watchdog's thread, in process, against a real AF_UNIX datagram socket named by
// $NOTIFY_SOCKET (as `hotrow serve` wires it in cli/cmd_serve.cc, its probes here fakes): while the
// standby consumer's poller is wedged, the owner's poller looping and HTTP answering, no
// WATCHDOG=1 is sent and STATUS= says why; it resumes once the standby's poller moves.
TEST(WatchdogTest, AWedgedStandbyPollerWithholdsWatchdogUntilItMovesAgain) {
  if (!NotifyCompiledIn()) GTEST_SKIP() << "a build without libsystemd notifies nothing";
  testing::NotifySocket manager;
  ASSERT_TRUE(manager.bound()) << std::strerror(errno);
  setenv("NOTIFY_SOCKET", manager.env_value().c_str(), 1);
  // W = 400 ms: a round every 100 ms, stuck after 200 ms without progress.
  constexpr int64_t kIntervalUs = 400'000;
  std::atomic<int64_t> standby_wedged_at{0};  // 0: the standby's poller iterates
  Watchdog::Probes probes;
  probes.ingest = [] { return ingest::IngestLiveness{SteadyNowMs(), 0}; };
  probes.http = [](int) { return Status::Ok(); };
  probes.standby = [&]() -> std::optional<ingest::IngestLiveness> {
    const int64_t wedged = standby_wedged_at.load();
    return ingest::IngestLiveness{wedged != 0 ? wedged : SteadyNowMs(), 0};
  };
  Watchdog watchdog(probes, kIntervalUs);
  testing::Message m;
  ASSERT_TRUE(manager.AwaitMessage("WATCHDOG=1", std::chrono::seconds(10), &m))
      << manager.Transcript();

  standby_wedged_at.store(SteadyNowMs());
  // Pings may still come until the standby has been still for W/2; then STATUS= names it.
  bool said = false;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!said && std::chrono::steady_clock::now() < give_up &&
         manager.Receive(&m, std::chrono::seconds(10))) {
    said = m.text.find("STATUS=not healthy: the standby consumer's poller has not iterated") !=
           std::string::npos;
  }
  ASSERT_TRUE(said) << manager.Transcript();
  // From then on, for a whole interval (4 rounds), no WATCHDOG=1.
  EXPECT_FALSE(
      manager.AwaitMessage("WATCHDOG=1", std::chrono::milliseconds(kIntervalUs / 1000), &m))
      << "WATCHDOG=1 sent while the standby's poller is wedged\n"
      << manager.Transcript();

  standby_wedged_at.store(0);
  EXPECT_TRUE(manager.AwaitMessage("WATCHDOG=1", std::chrono::seconds(10))) << manager.Transcript();
  watchdog.Stop();
  unsetenv("NOTIFY_SOCKET");
}

}  // namespace
}  // namespace hotrow::service::watchdog_test
