// TimeoutExtender (service/timeout_extender.h) in process, against a real AF_UNIX datagram
// socket named by $NOTIFY_SOCKET: EXTEND_TIMEOUT_USEC= of three periods at once and every period
// while it lives, with the step in STATUS=; nothing once it is gone. notify_test.cc proves that the
// store's open is inside one, through the real binary.

#include "service/timeout_extender.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <string>

#include "tests/support/notify_socket.h"

namespace hotrow::service::timeout_extender_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Message;
using testing::NotifySocket;

TEST(TimeoutExtenderTest, ExtendsAtOnceAndEveryPeriodWhileItLivesAndNotAfter) {
  NotifySocket manager;
  ASSERT_TRUE(manager.bound()) << std::strerror(errno);
  setenv("NOTIFY_SOCKET", manager.env_value().c_str(), 1);
  {
    TimeoutExtender extender("opening the store at /var/lib/hotrow", /*period_ms=*/20);
    Message m;
    ASSERT_TRUE(manager.AwaitMessage("EXTEND_TIMEOUT_USEC=60000", seconds(10), &m))
        << manager.Transcript();
    EXPECT_TRUE(m.Has("STATUS=opening the store at /var/lib/hotrow")) << m.text;
    // And again, each period, with the time the step has lasted.
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(manager.AwaitMessage("EXTEND_TIMEOUT_USEC=60000", seconds(10), &m))
          << manager.Transcript();
      EXPECT_EQ(m.text.find("STATUS=opening the store at /var/lib/hotrow (for "),
                m.text.find('\n') + 1)
          << m.text;
    }
  }
  // Gone: its thread is joined, so whatever it sent is queued already; nothing follows.
  Message m;
  while (manager.Receive(&m, milliseconds(0))) {
  }
  EXPECT_FALSE(manager.Receive(&m, milliseconds(200))) << "sent after its end: " << m.text;
  unsetenv("NOTIFY_SOCKET");
}

}  // namespace
}  // namespace hotrow::service::timeout_extender_test
