// A subscription that falls behind (live/subscription.h), alone, with the hub's part played by
// hand: what its buffer's overflow drops, when it asks to catch up, and the order Take hands out
// the catch-up's events and the live events pushed while the catch-up read the store.

#include "live/subscription.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "live/position.h"

namespace hotrow::live::subscription_test {

const store::TopicPartition kTp{"t", 0};

LiveEventPtr Event(int64_t offset) {
  auto e = std::make_shared<LiveEvent>();
  e->id = "a";
  e->tp = kTp;
  e->offset = offset;
  e->json = "{}";
  return e;
}

std::vector<int64_t> Offsets(const std::vector<LiveEventPtr>& events) {
  std::vector<int64_t> out;
  for (const LiveEventPtr& e : events) out.push_back(e->offset);
  return out;
}

std::vector<int64_t> Range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t o = from; o < to; ++o) out.push_back(o);
  return out;
}

// A deadline already past: Take hands over what is ready without waiting, as the transport does.
std::chrono::steady_clock::time_point Now() { return std::chrono::steady_clock::now(); }

class SubscriptionTest : public ::testing::Test {
 protected:
  SubscriptionTest() : subscription_(Spec(), /*max_buffered=*/4, StreamPosition{}) {
    subscription_.SetCatchUp([this] { ++asked_; });
  }
  static StreamSpec Spec() {
    StreamSpec spec;
    spec.id = "a";
    return spec;
  }
  Subscription subscription_;
  int asked_ = 0;
};

TEST_F(SubscriptionTest, AnOverflowDropsWhatWaitedAndAsksOnceToCatchUp) {
  std::vector<LiveEventPtr> got;
  for (int64_t o = 0; o < 3; ++o) EXPECT_FALSE(subscription_.Push(Event(o)));
  ASSERT_EQ(subscription_.Take(Now(), &got), Subscription::State::kOpen);
  EXPECT_EQ(Offsets(got), Range(0, 3));
  // Offsets 3..6 fill the buffer; 7 overflows it: nothing waits, nothing more is taken.
  for (int64_t o = 3; o < 10; ++o) EXPECT_FALSE(subscription_.Push(Event(o)));
  EXPECT_EQ(asked_, 1);
  got.clear();
  EXPECT_EQ(subscription_.Take(Now(), &got), Subscription::State::kOpen);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(asked_, 1);
  // The catch-up reads from where the client stands (3) up to the store's offsets (10).
  StreamPosition to;
  to.next[kTp] = 10;
  StreamPosition from;
  ASSERT_TRUE(subscription_.BeginCatchUp(to, &from));
  EXPECT_EQ(from.NextOf(kTp), 3);
}

// Live events pushed while the catch-up reads are above its `to`: they go after its events, never
// before, or a partition's order breaks and the client's last id passes events it was not sent.
TEST_F(SubscriptionTest, LiveEventsPushedDuringACatchUpGoAfterItsEvents) {
  for (int64_t o = 0; o < 6; ++o) subscription_.Push(Event(o));  // 4 overflows
  ASSERT_EQ(asked_, 1);
  StreamPosition to;
  to.next[kTp] = 6;
  StreamPosition from;
  ASSERT_TRUE(subscription_.BeginCatchUp(to, &from));
  EXPECT_EQ(from.NextOf(kTp), 0);
  subscription_.Push(Event(5));  // below `to`: the catch-up sends it
  subscription_.Push(Event(6));  // live again
  subscription_.Push(Event(7));
  std::vector<LiveEventPtr> got;
  EXPECT_EQ(subscription_.Take(Now(), &got), Subscription::State::kOpen);
  EXPECT_TRUE(got.empty()) << "live events handed out before the catch-up's";
  std::vector<LiveEventPtr> read;
  for (int64_t o = 0; o < 6; ++o) read.push_back(Event(o));
  subscription_.FinishCatchUp(std::move(read), /*truncated=*/false);
  EXPECT_EQ(subscription_.Take(Now(), &got), Subscription::State::kOpen);
  EXPECT_EQ(Offsets(got), Range(0, 8));
  EXPECT_EQ(asked_, 1);
}

// A catch-up cut at its limit: once its events are taken the subscription asks again, from where
// they end, and the live events pushed meanwhile are read again by that one.
TEST_F(SubscriptionTest, ACutCatchUpAsksAgainFromWhereItEndedOnceItsEventsAreTaken) {
  for (int64_t o = 0; o < 6; ++o) subscription_.Push(Event(o));
  StreamPosition to;
  to.next[kTp] = 6;
  StreamPosition from;
  ASSERT_TRUE(subscription_.BeginCatchUp(to, &from));
  subscription_.Push(Event(6));
  subscription_.FinishCatchUp({Event(0), Event(1), Event(2)}, /*truncated=*/true);
  EXPECT_EQ(asked_, 1);  // not before its events are taken
  std::vector<LiveEventPtr> got;
  EXPECT_EQ(subscription_.Take(Now(), &got), Subscription::State::kOpen);
  EXPECT_EQ(Offsets(got), Range(0, 3));
  EXPECT_EQ(asked_, 2);
  to.next[kTp] = 8;
  ASSERT_TRUE(subscription_.BeginCatchUp(to, &from));
  EXPECT_EQ(from.NextOf(kTp), 3);
}

// Where a change of partitions falls among the events a catch-up reads again is unknown: one that
// reaches a subscription behind makes it too slow (the client resumes), and so does an overflow
// with a change waiting; what waited is still sent first.
TEST_F(SubscriptionTest, AChangeOfPartitionsMetDuringACatchUpIsTooSlow) {
  auto change = std::make_shared<PartitionChange>();
  change->removed[kTp] = 6;
  for (int64_t o = 0; o < 6; ++o) subscription_.Push(Event(o));
  ASSERT_EQ(asked_, 1);
  EXPECT_TRUE(subscription_.PushChange(change));
  std::vector<LiveEventPtr> got;
  EXPECT_EQ(subscription_.Take(Now(), &got), Subscription::State::kTooSlow);
  EXPECT_NE(subscription_.reason().find("partitions changed"), std::string::npos);
}

TEST_F(SubscriptionTest, AnOverflowWithAChangeWaitingIsTooSlow) {
  auto change = std::make_shared<PartitionChange>();
  change->added[{"t", 1}] = 0;
  EXPECT_FALSE(subscription_.PushChange(change));
  for (int64_t o = 0; o < 4; ++o) EXPECT_FALSE(subscription_.Push(Event(o)));
  EXPECT_TRUE(subscription_.Push(Event(4)));
  EXPECT_EQ(asked_, 0);
  std::vector<StreamItem> got;
  EXPECT_EQ(subscription_.Take(Now(), &got), Subscription::State::kTooSlow);
  ASSERT_EQ(got.size(), 5u);  // the change, then the events that waited
  EXPECT_EQ(got[0].change, change);
}

// Without a catch-up (SetCatchUp never called) an overflow still makes the subscription too slow.
TEST(SubscriptionWithoutCatchUpTest, AnOverflowIsTooSlow) {
  StreamSpec spec;
  spec.id = "a";
  Subscription subscription(spec, /*max_buffered=*/2, StreamPosition{});
  EXPECT_FALSE(subscription.Push(Event(0)));
  EXPECT_FALSE(subscription.Push(Event(1)));
  EXPECT_TRUE(subscription.Push(Event(2)));
  std::vector<LiveEventPtr> got;
  EXPECT_EQ(subscription.Take(Now(), &got), Subscription::State::kTooSlow);
  EXPECT_EQ(Offsets(got), Range(0, 2));
}

}  // namespace hotrow::live::subscription_test
