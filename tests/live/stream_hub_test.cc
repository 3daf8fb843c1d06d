// The live streams' hub (live/stream_hub.h) over a real RocksDB store, without HTTP: what a resume
// replays, when it says events are gone, which partitions a stream carries in a group and how their
// changes reach it, and closing the subscriptions of one opener. Events are written with
// EventStore::Write, the call ingestion makes, so the hub is fed exactly as in a running service.

#include "live/stream_hub.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "live/position.h"
#include "live/subscription.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::live {
namespace {

using testing::TestEvent;

constexpr int64_t kNowMs = 1'764'330'000'000;  // on the minute: buckets start on it
constexpr int64_t kMinute = 60'000;

using Place = std::tuple<std::string, int32_t, int64_t>;  // topic, partition, offset

class StreamHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = 10 * kMinute;
    options.bucket_ms = kMinute;
    options.salts = 4;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 16 << 20;
    options.index_fields = {"kind"};
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    query::QueryOptions q;
    q.threads = 2;
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), q);
  }
  void TearDown() override {
    if (hub_) store_->RemoveWriteObserver(hub_.get());
    hub_.reset();
  }

  void Start(StreamHubOptions options = {}) {
    hub_ = std::make_unique<StreamHub>(store_.get(), engine_.get(), options);
    store_->AddWriteObserver(hub_.get());
  }

  // Writes `count` events of `id` to partition `partition` of "t", each at the next offset, at
  // times from `ts_ms` on, one per ms; in one Write per 10,000.
  void Write(const std::string& id, int32_t partition, int count, int64_t ts_ms,
             const std::string& kind = "reading") {
    std::vector<TestEvent> events;
    for (int i = 0; i < count; ++i) {
      TestEvent e;
      e.id = id;
      e.topic = "t";
      e.partition = partition;
      e.offset = next_[partition]++;
      e.ts_ms = ts_ms + i;
      e.payload = "{\"kind\":\"" + kind + "\"}";
      events.push_back(std::move(e));
      if (events.size() == 10'000 || i + 1 == count) {
        std::vector<store::Row> rows;
        store::WriteBatchInput batch;
        for (const TestEvent& w : events) {
          Result<store::Row> row = testing::MakeRow(store_.get(), w);
          ASSERT_TRUE(row.ok());
          row->index.push_back({"kind", kind});
          batch.rows.push_back(std::move(row).value());
          batch.next_offsets[{w.topic, w.partition}] = w.offset + 1;
        }
        store::WriteOutcome outcome;
        Status st = store_->Write(batch, &outcome);
        ASSERT_TRUE(st.ok()) << st.ToString();
        ASSERT_EQ(outcome.stored, events.size());
        events.clear();
      }
    }
  }

  // What the subscription has ready now (after the hub delivered everything written so far).
  std::vector<StreamItem> TakeNow(Subscription& s, Subscription::State* state = nullptr) {
    hub_->WaitDelivered();
    std::vector<StreamItem> items;
    const Subscription::State got = s.Take(std::chrono::steady_clock::now(), &items);
    if (state != nullptr) *state = got;
    return items;
  }
  static std::vector<Place> Places(const std::vector<StreamItem>& items) {
    std::vector<Place> out;
    for (const StreamItem& item : items) {
      if (item.event != nullptr) {
        out.emplace_back(item.event->tp.topic, item.event->tp.partition, item.event->offset);
      }
    }
    return out;
  }

  static StreamSpec Id(const std::string& id) {
    StreamSpec spec;
    spec.kind = StreamSpec::Kind::kId;
    spec.id = id;
    return spec;
  }

  testing::TempDir dir_;
  ManualClock clock_{kNowMs};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  std::unique_ptr<StreamHub> hub_;
  std::map<int32_t, int64_t> next_;
};

// More events of an id than a replay may send, and a recent position: the replay reads from the
// position, not the oldest events of the window.
TEST_F(StreamHubTest, ReplayOfManyEventsResumedNearTheirEndSendsWhatFollows) {
  Start();
  Write("a", 0, 100'005, kNowMs - 5 * kMinute);
  StreamPosition after;
  after.made_ms = kNowMs;
  after.next[{"t", 0}] = 100'000;
  const uint64_t rows_before = engine_->Work().rows_read;
  Result<StreamStart> started = hub_->Subscribe(Id("a"), &after);
  // The keys order an id's events by time: the whole window of the id is read, each row once.
  EXPECT_EQ(engine_->Work().rows_read - rows_before, 100'005u);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_FALSE(started->replay_truncated);
  EXPECT_FALSE(started->gap);
  Subscription::State state;
  const std::vector<StreamItem> items = TakeNow(*started->subscription, &state);
  EXPECT_EQ(state, Subscription::State::kOpen);
  const std::vector<Place> expected = {{"t", 0, 100'000},
                                       {"t", 0, 100'001},
                                       {"t", 0, 100'002},
                                       {"t", 0, 100'003},
                                       {"t", 0, 100'004}};
  EXPECT_EQ(Places(items), expected);
}

// A replay owed more than its limit sends the lowest per partition, ends the stream, and the
// resumes that follow from its last position send the rest: each event once, in offset order.
TEST_F(StreamHubTest, TruncatedReplayEndsWhereTheNextResumeContinues) {
  StreamHubOptions options;
  options.max_replay = 10;
  Start(options);
  Write("a", 0, 12, kNowMs - 3 * kMinute);
  Write("b", 0, 5, kNowMs - 3 * kMinute);       // not the stream's: offsets 12..16 of partition 0
  Write("a", 1, 13, kNowMs - 2 * kMinute - 7);  // later offsets of partition 1 are older in time
  Write("a", 0, 3, kNowMs - 4 * kMinute);       // late in time, high in offset
  StreamPosition position;
  position.made_ms = kNowMs;
  position.next[{"t", 0}] = 0;
  position.next[{"t", 1}] = 0;
  std::vector<Place> sent;
  for (int resume = 0; resume < 5; ++resume) {
    Result<StreamStart> started = hub_->Subscribe(Id("a"), &position);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    Subscription::State state;
    const std::vector<StreamItem> items = TakeNow(*started->subscription, &state);
    for (const Place& p : Places(items)) {
      sent.push_back(p);
      position.Advance({std::get<0>(p), std::get<1>(p)}, std::get<2>(p));
    }
    hub_->Unsubscribe(started->subscription);
    if (!started->replay_truncated) {
      EXPECT_EQ(state, Subscription::State::kOpen);
      break;
    }
    EXPECT_EQ(state, Subscription::State::kClosed);
    EXPECT_NE(started->subscription->reason().find("resume from the last id"), std::string::npos);
    EXPECT_EQ(items.size(), 10u);
  }
  std::vector<Place> expected;
  for (int64_t o = 0; o < 12; ++o) expected.emplace_back("t", 0, o);
  for (int64_t o = 17; o < 20; ++o) expected.emplace_back("t", 0, o);
  for (int64_t o = 0; o < 13; ++o) expected.emplace_back("t", 1, o);
  EXPECT_EQ(sent, expected);
}

// The same for an index stream: read from the postings, only what is owed.
TEST_F(StreamHubTest, IndexReplayResumedNearTheEndSendsWhatFollows) {
  Start();
  Write("a", 0, 30, kNowMs - 3 * kMinute, "alarm");
  Write("b", 0, 30, kNowMs - 2 * kMinute, "reading");
  Write("c", 0, 4, kNowMs - 4 * kMinute, "alarm");  // offsets 60..63, oldest in time
  StreamSpec spec;
  spec.kind = StreamSpec::Kind::kIndex;
  spec.field = "kind";
  spec.value = "alarm";
  StreamPosition after;
  after.made_ms = kNowMs;
  after.next[{"t", 0}] = 28;
  Result<StreamStart> started = hub_->Subscribe(spec, &after);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const std::vector<Place> expected = {{"t", 0, 28}, {"t", 0, 29}, {"t", 0, 60},
                                       {"t", 0, 61}, {"t", 0, 62}, {"t", 0, 63}};
  EXPECT_EQ(Places(TakeNow(*started->subscription)), expected);
}

// A late event (stored after its bucket's span had passed), stored after a position was made and
// dropped with its bucket before the resume, is gone: the position's time alone is within the
// window, yet the resume says so.
TEST_F(StreamHubTest, GapWhenALateEventAfterThePositionWasDroppedWithItsBucket) {
  Start();
  Write("a", 0, 3, kNowMs - kMinute);
  Result<StreamStart> first = hub_->Subscribe(Id("a"), nullptr);
  ASSERT_TRUE(first.ok());
  StreamPosition position = first->subscription->start();  // made at kNowMs, names t:0 at 3
  hub_->Unsubscribe(first->subscription);

  // Another partition's late event does not concern it; nor does a bucket dropped with nothing
  // late in it.
  clock_.Set(kNowMs + 2 * kMinute);
  Write("x", 1, 1, kNowMs - 7 * kMinute - 30'000);
  clock_.Set(kNowMs + 3 * kMinute + 30'000);  // the window starts at kNowMs - 6.5 min
  ASSERT_TRUE(store_->DropExpiredBuckets().ok());
  {
    Result<StreamStart> resumed = hub_->Subscribe(Id("a"), &position);
    ASSERT_TRUE(resumed.ok());
    EXPECT_FALSE(resumed->gap);
    hub_->Unsubscribe(resumed->subscription);
  }

  // A late event of partition 0 (of another id: the hub cannot know whom it concerned) at offset
  // 3, at or above the position's 3, stored after it was made, then dropped.
  Write("b", 0, 1, kNowMs - 6 * kMinute - 10'000);
  clock_.Set(kNowMs + 4 * kMinute + 30'000);
  ASSERT_TRUE(store_->DropExpiredBuckets().ok());
  ASSERT_GE(position.made_ms, store_->WindowStartMs());  // the time rule alone sees nothing
  Result<StreamStart> resumed = hub_->Subscribe(Id("a"), &position);
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed->gap);
  hub_->Unsubscribe(resumed->subscription);

  // A position made after the drop has nothing missing.
  StreamPosition later = position;
  later.made_ms = clock_.NowMs();
  later.next[{"t", 0}] = 4;
  Result<StreamStart> fresh = hub_->Subscribe(Id("a"), &later);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->gap);
}

// After a restart the hub does not know what the buckets of before held: a position made before it
// started says `gap` once one of them was dropped; one made after does not.
TEST_F(StreamHubTest, GapForAPositionFromBeforeTheStartOnceABucketOfThenWasDropped) {
  Write("a", 0, 3, kNowMs - 9 * kMinute);  // stored before the hub: its bucket ends at -8 min
  Write("a", 0, 3, kNowMs - kMinute);
  StreamPosition before;
  before.made_ms = kNowMs - 1;
  before.next[{"t", 0}] = 6;
  Start();
  clock_.Set(kNowMs + kMinute + 30'000);  // the window starts at -8.5 min: nothing dropped yet
  ASSERT_TRUE(store_->DropExpiredBuckets().ok());
  {
    Result<StreamStart> resumed = hub_->Subscribe(Id("a"), &before);
    ASSERT_TRUE(resumed.ok());
    EXPECT_FALSE(resumed->gap);
    hub_->Unsubscribe(resumed->subscription);
  }
  clock_.Set(kNowMs + 2 * kMinute + 30'000);  // -7.5 min: the bucket of -9 min goes
  ASSERT_TRUE(store_->DropExpiredBuckets().ok());
  ASSERT_GE(before.made_ms, store_->WindowStartMs());  // the time rule alone sees nothing
  Result<StreamStart> resumed = hub_->Subscribe(Id("a"), &before);
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed->gap);
  hub_->Unsubscribe(resumed->subscription);
  StreamPosition after = before;
  after.made_ms = kNowMs;
  Result<StreamStart> fresh = hub_->Subscribe(Id("a"), &after);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->gap);
}

// In a group a stream carries only what this instance serves as owner: a followed (standby)
// partition's rows are never pushed, a partition that arrives is carried from the store's offset
// then (its catch-up is not pushed as live), one that leaves is announced with the offset up to
// which it was pushed, each in order with the events.
TEST_F(StreamHubTest, StreamCarriesOnlyOwnedPartitionsAndAnnouncesTheirChanges) {
  Start();
  Write("a", 0, 2, kNowMs - kMinute);  // "t" gets its number
  hub_->SetOwnedPartitions({{"t", 0}});
  Result<StreamStart> started = hub_->Subscribe(Id("a"), nullptr);
  ASSERT_TRUE(started.ok());
  Subscription& s = *started->subscription;
  // The start names what is carried, and only that.
  EXPECT_EQ(s.start().next, (std::map<store::TopicPartition, int64_t>{{{"t", 0}, 2}}));

  Write("a", 1, 4, kNowMs - kMinute);  // followed as a standby here: not the stream's
  Write("a", 0, 2, kNowMs - kMinute);  // offsets 2, 3
  std::vector<StreamItem> items = TakeNow(s);
  EXPECT_EQ(Places(items), (std::vector<Place>{{"t", 0, 2}, {"t", 0, 3}}));

  // Partition 1 arrives here: what its new owner stores before it has caught up is a backlog.
  Write("a", 1, 3, kNowMs - kMinute);  // offsets 4..6
  hub_->SetOwnedPartitions({{"t", 0}, {"t", 1}});
  Write("a", 1, 2, kNowMs - kMinute);  // offsets 7, 8: live
  items = TakeNow(s);
  ASSERT_EQ(items.size(), 3u);
  ASSERT_NE(items[0].change, nullptr);
  EXPECT_EQ(items[0].change->ToJson(), R"({"added":{"t":{"1":7}},"removed":{}})");
  EXPECT_EQ(Places(items), (std::vector<Place>{{"t", 1, 7}, {"t", 1, 8}}));

  // Partition 0 leaves: its last events, then the change, then nothing more of it.
  Write("a", 0, 1, kNowMs - kMinute);  // offset 4
  hub_->SetOwnedPartitions({{"t", 1}});
  Write("a", 0, 5, kNowMs - kMinute);
  Write("a", 1, 1, kNowMs - kMinute);  // offset 9
  items = TakeNow(s);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(Places({items[0]}), (std::vector<Place>{{"t", 0, 4}}));
  ASSERT_NE(items[1].change, nullptr);
  EXPECT_EQ(items[1].change->ToJson(), R"({"added":{},"removed":{"t":{"0":5}}})");
  EXPECT_EQ(Places({items[2]}), (std::vector<Place>{{"t", 1, 9}}));

  // The same again: nothing changes, nothing is announced.
  hub_->SetOwnedPartitions({{"t", 1}});
  EXPECT_TRUE(TakeNow(s).empty());
}

// Before the ownership is known (one instance alone) every partition is carried; the first call
// announces those that leave.
TEST_F(StreamHubTest, EveryPartitionIsCarriedUntilTheOwnershipIsKnown) {
  Start();
  Write("a", 0, 1, kNowMs - kMinute);
  Write("a", 1, 1, kNowMs - kMinute);
  Result<StreamStart> started = hub_->Subscribe(Id("a"), nullptr);
  ASSERT_TRUE(started.ok());
  Subscription& s = *started->subscription;
  EXPECT_EQ(s.start().next.size(), 2u);
  Write("a", 1, 1, kNowMs - kMinute);
  EXPECT_EQ(Places(TakeNow(s)), (std::vector<Place>{{"t", 1, 1}}));
  hub_->SetOwnedPartitions({{"t", 0}});
  Write("a", 1, 1, kNowMs - kMinute);
  const std::vector<StreamItem> items = TakeNow(s);
  ASSERT_EQ(items.size(), 1u);
  ASSERT_NE(items[0].change, nullptr);
  EXPECT_EQ(items[0].change->ToJson(), R"({"added":{},"removed":{"t":{"1":2}}})");
}

// The events-only Take of the HTTP layer leaves the changes out.
TEST_F(StreamHubTest, EventsOnlyTakeLeavesChangesOut) {
  Start();
  Write("a", 0, 1, kNowMs - kMinute);
  Result<StreamStart> started = hub_->Subscribe(Id("a"), nullptr);
  ASSERT_TRUE(started.ok());
  Write("a", 0, 1, kNowMs - kMinute);
  hub_->SetOwnedPartitions({{"t", 1}});  // partition 0 leaves: a change between two events
  Write("a", 1, 1, kNowMs - kMinute);
  hub_->WaitDelivered();
  std::vector<LiveEventPtr> events;
  started->subscription->Take(std::chrono::steady_clock::now(), &events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]->tp.partition, 0);
  EXPECT_EQ(events[1]->tp.partition, 1);
}

// The subscriptions opened under one tag (a token a reload removed) are closed, with the reason,
// and only they.
TEST_F(StreamHubTest, CloseWhereClosesOnlyTheSubscriptionsItAccepts) {
  Start();
  Result<StreamStart> old1 = hub_->Subscribe(Id("a"), nullptr, nullptr, "token:old");
  StreamSpec latest;
  latest.kind = StreamSpec::Kind::kLatest;
  Result<StreamStart> old2 = hub_->Subscribe(latest, nullptr, nullptr, "token:old");
  Result<StreamStart> kept = hub_->Subscribe(Id("a"), nullptr, nullptr, "token:new");
  ASSERT_TRUE(old1.ok() && old2.ok() && kept.ok());
  const size_t closed = hub_->CloseWhere(
      [](const Subscription& s) { return s.tag() == "token:old"; }, "the token was revoked");
  EXPECT_EQ(closed, 2u);
  Subscription::State state;
  EXPECT_TRUE(TakeNow(*old1->subscription, &state).empty());
  EXPECT_EQ(state, Subscription::State::kClosed);
  EXPECT_EQ(old1->subscription->reason(), "the token was revoked");
  TakeNow(*old2->subscription, &state);
  EXPECT_EQ(state, Subscription::State::kClosed);
  Write("a", 0, 1, kNowMs - kMinute);
  EXPECT_EQ(Places(TakeNow(*kept->subscription, &state)), (std::vector<Place>{{"t", 0, 0}}));
  EXPECT_EQ(state, Subscription::State::kOpen);
  // Closed ones are not counted again.
  EXPECT_EQ(hub_->CloseWhere([](const Subscription&) { return true; }, "stop"), 1u);
}

// A catch-up on a saturated server (every query slot taken) waits for a slot instead of ending a
// stream whose client reads: once the slot frees it reads, and the subscription gets every event.
TEST_F(StreamHubTest, ACatchUpWaitsForAQuerySlotWhenEveryOneIsTaken) {
  query::QueryOptions q;
  q.threads = 2;
  q.max_concurrent_queries = 1;
  engine_ = std::make_unique<query::QueryEngine>(store_.get(), q);
  StreamHubOptions options;
  options.max_buffered = 10;
  Start(options);
  Write("held", 1, 1, kNowMs - kMinute);
  // The one slot, held by a query whose client has not taken its first event yet.
  std::mutex mu;
  std::condition_variable cv;
  bool holding = false;
  bool release = false;
  std::thread holder([&] {
    const query::EventSink sink = [&](const query::Event&) {
      std::unique_lock lock(mu);
      holding = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
      return true;
    };
    EXPECT_TRUE(engine_->RangeEach("held", 0, kNowMs + kMinute, sink).ok());
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return holding; });
  }
  Result<StreamStart> started = hub_->Subscribe(Id("a"), nullptr);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  Write("a", 0, 50, kNowMs - kMinute);  // one batch: its 11th event overflows the buffer
  EXPECT_TRUE(testing::WaitFor([&] { return hub_->Stats().catch_ups_delayed >= 1; }));
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  holder.join();
  std::vector<StreamItem> got;
  EXPECT_TRUE(testing::WaitFor([&] {
    started->subscription->Take(std::chrono::steady_clock::now(), &got);
    return got.size() >= 50 || !started->subscription->reason().empty();
  }));
  EXPECT_EQ(started->subscription->reason(), "");
  std::vector<Place> expected;
  for (int64_t o = 0; o < 50; ++o) expected.emplace_back("t", 0, o);
  EXPECT_EQ(Places(got), expected);
  EXPECT_EQ(hub_->Stats().too_slow, 0u);
}

}  // namespace
}  // namespace hotrow::live
