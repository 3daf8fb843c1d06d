// The watchdog's definition of healthy (service/watchdog.h, CONTRACT.md "Running as a service"):
// the poller iterated within the bound, no store write under way for the bound or longer, and the
// HTTP API answered. The notify test (notify_test.cc) proves it through the real process.

#include "service/watchdog.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hotrow::service::watchdog_test
