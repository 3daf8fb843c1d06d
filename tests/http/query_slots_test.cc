// The query slots' two lanes (http/query_slots.h): client queries wait a bounded time for a slot,
// peers' queries never wait behind them.

#include "http/query_slots.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/support/process.h"

namespace hotrow::http {
namespace {

using namespace std::chrono_literals;

TEST(QuerySlotsTest, AClientQueryBeyondTheSlotsWaitsForOneToFree) {
  QuerySlots slots(1, 1, 60s);
  ASSERT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kImmediate);
  SlotOutcome queued = SlotOutcome::kShed;
  std::thread waiter([&] { queued = slots.Acquire(QueryLane::kClient); });
  ASSERT_TRUE(testing::WaitFor([&] { return slots.waiting() == 1; }));
  slots.Release(QueryLane::kClient);
  waiter.join();
  EXPECT_EQ(queued, SlotOutcome::kQueued);
  EXPECT_EQ(slots.held(QueryLane::kClient), 1);
}

// A freed slot passes to a query already waiting, so that one arriving meanwhile cannot take it
// first and send the woken waiter back to sleep (a wasted thread switch, and a wait that may end
// in a 503 however many slots freed while it waited).
TEST(QuerySlotsTest, AFreedSlotPassesToAWaitingQueryNotToANewcomer) {
  QuerySlots slots(1, 1, 60s);
  ASSERT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kImmediate);
  SlotOutcome queued = SlotOutcome::kShed;
  std::thread waiter([&] { queued = slots.Acquire(QueryLane::kClient); });
  ASSERT_TRUE(testing::WaitFor([&] { return slots.waiting() == 1; }));
  slots.Release(QueryLane::kClient);
  // Held at once by the waiter, whether or not it has woken yet: nothing is left for a newcomer.
  EXPECT_EQ(slots.held(QueryLane::kClient), 1);
  waiter.join();
  EXPECT_EQ(queued, SlotOutcome::kQueued);
  slots.Release(QueryLane::kClient);
  EXPECT_EQ(slots.held(QueryLane::kClient), 0);
}

TEST(QuerySlotsTest, AClientQueryIsShedWhenNoSlotFreesWithinTheWait) {
  QuerySlots slots(1, 1, 1ms);
  ASSERT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kImmediate);
  EXPECT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kShed);
  EXPECT_EQ(slots.held(QueryLane::kClient), 1);
  QuerySlots no_wait(1, 1, 0ms);
  ASSERT_EQ(no_wait.Acquire(QueryLane::kClient), SlotOutcome::kImmediate);
  EXPECT_EQ(no_wait.Acquire(QueryLane::kClient), SlotOutcome::kShed);
}

TEST(QuerySlotsTest, PeerQueriesNeverWaitBehindClientQueries) {
  QuerySlots slots(2, 2, 60s);
  ASSERT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kImmediate);
  ASSERT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kImmediate);
  std::thread waiter([&] { slots.Acquire(QueryLane::kClient); });
  ASSERT_TRUE(testing::WaitFor([&] { return slots.waiting() == 1; }));
  // Every client slot held and a client queued: peers still get theirs at once.
  EXPECT_EQ(slots.Acquire(QueryLane::kPeer), SlotOutcome::kImmediate);
  EXPECT_EQ(slots.Acquire(QueryLane::kPeer), SlotOutcome::kImmediate);
  // Past their own slots they are refused at once, never queued (a 60 s wait would hang here).
  EXPECT_EQ(slots.Acquire(QueryLane::kPeer), SlotOutcome::kShed);
  EXPECT_EQ(slots.held(QueryLane::kPeer), 2);
  // A peer's slot freed does not go to the waiting client.
  slots.Release(QueryLane::kPeer);
  EXPECT_EQ(slots.waiting(), 1);
  slots.Release(QueryLane::kClient);
  waiter.join();
}

TEST(QuerySlotsTest, CloseWakesTheWaitersAndEndsWaiting) {
  QuerySlots slots(1, 1, 60s);
  ASSERT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kImmediate);
  SlotOutcome outcome = SlotOutcome::kImmediate;
  std::thread waiter([&] { outcome = slots.Acquire(QueryLane::kClient); });
  ASSERT_TRUE(testing::WaitFor([&] { return slots.waiting() == 1; }));
  slots.Close();
  waiter.join();
  EXPECT_EQ(outcome, SlotOutcome::kShed);
  EXPECT_EQ(slots.Acquire(QueryLane::kClient), SlotOutcome::kShed);
}

}  // namespace
}  // namespace hotrow::http
