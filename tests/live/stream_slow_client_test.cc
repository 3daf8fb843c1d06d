// Slow stream clients (CONTRACT.md "Live", "Slow clients") through a real HttpServer over a real
// store: a latest stream coalesces per id for a client behind; a burst faster than the client's
// socket makes the stream catch up from the store instead of closing it; a client that reads
// nothing is cut at the write timeout; a delivery thread too far behind closes what it cannot
// serve in order.

#include "tests/live/stream_test_base.h"

namespace hotrow::live {
namespace {

TEST_F(StreamTest, LatestStreamCoalescesPerIdForAClientBehind) {
  // A client that has not read keeps one waiting event per id, the newest: a buffer of 2 ids
  // takes 200 events of 2 ids without the client being too slow.
  StreamHubOptions options;
  options.max_buffered = 2;
  Start(options);
  StreamSpec spec;
  spec.kind = StreamSpec::Kind::kLatest;
  Result<StreamStart> started = hub_->Subscribe(spec, nullptr);
  ASSERT_TRUE(started.ok());
  std::map<std::string, int64_t> newest;
  for (int i = 0; i < 10; ++i) {
    for (const TestEvent& e : Write({"x", "y"}, 20)) newest[e.id] = e.offset;
  }
  hub_->WaitDelivered();
  std::vector<LiveEventPtr> got;
  const auto state = started->subscription->Take(std::chrono::steady_clock::now(), &got);
  EXPECT_EQ(state, Subscription::State::kOpen);
  std::map<std::string, int64_t> taken;
  for (const LiveEventPtr& e : got) taken[e->id] = e->offset;
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(taken, newest);
  hub_->Unsubscribe(started->subscription);
}

TEST_F(StreamTest, ADeliveryThreadTooFarBehindClosesTheStreamsItCannotServeInOrder) {
  // With no room for undelivered rows, every matched row finds the delivery thread "behind": its
  // streams end as too slow (their clients resume from the store), the writer goes on, and a
  // stream no row matched stays open.
  StreamHubOptions options;
  options.max_undelivered = 0;
  Start(options);
  StreamSpec a;
  a.id = "a";
  StreamSpec b;
  b.id = "b";
  Result<StreamStart> on_a = hub_->Subscribe(a, nullptr);
  Result<StreamStart> on_b = hub_->Subscribe(b, nullptr);
  ASSERT_TRUE(on_a.ok() && on_b.ok());
  Write({"a"}, 5);
  hub_->WaitDelivered();
  std::vector<LiveEventPtr> got;
  EXPECT_EQ(on_a->subscription->Take(std::chrono::steady_clock::now(), &got),
            Subscription::State::kTooSlow);
  EXPECT_TRUE(got.empty());
  EXPECT_NE(on_a->subscription->reason().find("fell behind"), std::string::npos);
  EXPECT_EQ(on_b->subscription->Take(std::chrono::steady_clock::now(), &got),
            Subscription::State::kOpen);
  EXPECT_EQ(hub_->Stats().too_slow, 1u);
  hub_->Unsubscribe(on_a->subscription);
  hub_->Unsubscribe(on_b->subscription);
}

TEST_F(StreamTest, IndexStreamCarriesTheEventsOfItsValue) {
  Start();
  SseReader reader(port(), "/v1/index/kind/alarm/stream");
  ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
  Write({"a", "b"}, 10, "reading");
  std::vector<TestEvent> alarms = Write({"a", "b"}, 4, "alarm");
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= 4; }));
  const std::vector<Place> got = Places(reader.events());
  EXPECT_EQ(std::set<Place>(got.begin(), got.end()), PlacesOf(alarms, ""));

  SseReader unindexed(port(), "/v1/index/colour/red/stream");
  ASSERT_TRUE(WaitFor([&] { return unindexed.ended(); }));
  EXPECT_EQ(unindexed.status(), 400);
}

// A client that reads nothing is not closed by the hub (its overflow only makes its stream catch
// up from the store, whose events wait for it): it is cut when its socket has taken nothing for the
// write timeout, and it never holds writes or another stream up.
TEST_F(StreamTest, AStalledClientIsCutAtTheWriteTimeoutAndNeverHoldsWrites) {
  StreamHubOptions options;
  options.max_buffered = 1000;
  http::HttpServerOptions http_options;
  http_options.write_timeout_ms = 1000;
  Start(options, http_options);
  // A client that reads nothing, with a small receive buffer: the server's writes to it block
  // once the socket's buffers are full (its events carry 1 KiB each: 8 MiB in all).
  http::RawConnection stalled(port(), 4096);
  ASSERT_TRUE(stalled.connected());
  ASSERT_TRUE(stalled.Send("GET /v1/events/a/stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(WaitFor([&] { return hub_->Stats().open == 1; }));
  SseReader healthy(port(), "/v1/events/b/stream");
  ASSERT_TRUE(WaitFor([&] { return healthy.Opened(); }));
  // Writes go on however far behind the stalled client is (each Write returns: the hub never
  // waits on a client), and the healthy client gets every one of its events.
  std::atomic<bool> written{false};
  std::thread writer([&] {
    for (int round = 0; round < 40; ++round) {
      Write({"a"}, 200, "reading", 1024);
      Write({"b"}, 10);
    }
    written = true;
  });
  EXPECT_TRUE(WaitFor([&] { return written.load(); }, std::chrono::seconds(60)));
  writer.join();
  hub_->WaitDelivered();
  ASSERT_TRUE(WaitFor([&] { return healthy.event_count() >= 400; }));
  EXPECT_EQ(healthy.event_count(), 400u);
  // Its buffer overflowed (it fell behind and caught up from the store), but that closed nothing:
  // the write timeout did, and only the healthy stream is left.
  EXPECT_GE(hub_->Stats().catch_ups, 1u);
  EXPECT_TRUE(WaitFor([&] { return hub_->Stats().open == 1; }, std::chrono::seconds(30)));
  EXPECT_EQ(hub_->Stats().too_slow, 0u);
  // What it finds once it reads: the start of its stream, then the end of the connection, with
  // no `event: closed` (nothing more could be written to it).
  const std::string text = stalled.Read(64 << 20, std::chrono::seconds(30));
  EXPECT_NE(text.find("event: open"), std::string::npos);
  EXPECT_EQ(text.find("event: closed"), std::string::npos);
  const StreamHubStats stats = hub_->Stats();
  const std::string metrics = metrics_.Render(nullptr, store_->Stats(), store_->options(), nullptr,
                                              nullptr, nullptr, nullptr, nullptr, &stats);
  EXPECT_NE(metrics.find("hotrow_streams_too_slow_total 0"), std::string::npos);
  EXPECT_NE(metrics.find("hotrow_stream_catch_ups_total"), std::string::npos);
}

// A burst faster than the client's socket takes it (one batch of 1,500 events of one id, a buffer
// of 100) overflows the stream's buffer: the stream catches up from the store by itself and goes
// on live. The client, which reads all along, gets every event once, each partition in offset
// order, and is never closed.
TEST_F(StreamTest, AReadingClientCatchesUpFromTheStoreAfterABurstAndIsNotClosed) {
  StreamHubOptions options;
  options.max_buffered = 100;
  Start(options);
  SseReader reader(port(), "/v1/events/a/stream");
  ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
  std::vector<TestEvent> written = Write({"a"}, 1500);
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= 1500; }))
      << reader.event_count() << " of 1500";
  std::vector<TestEvent> live = Write({"a"}, 9);  // then live again
  written.insert(written.end(), live.begin(), live.end());
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= written.size(); }));
  const std::vector<SseMessage> events = reader.events();
  const std::vector<Place> got = Places(events);  // none twice, each partition in order
  EXPECT_EQ(got.size(), written.size());
  EXPECT_EQ(std::set<Place>(got.begin(), got.end()), PlacesOf(written, "a"));
  for (const SseMessage& m : reader.messages()) EXPECT_NE(m.event, "closed") << m.data;
  EXPECT_FALSE(reader.ended());
  EXPECT_GE(hub_->Stats().catch_ups, 1u);
  EXPECT_EQ(hub_->Stats().too_slow, 0u);
  EXPECT_EQ(hub_->Stats().open, 1u);
  // Its last id resumes exactly where it stands: nothing is owed but what comes next.
  SseReader resumed(port(), "/v1/events/a/stream", events.back().id);
  ASSERT_TRUE(WaitFor([&] { return resumed.Opened(); }));
  const std::vector<TestEvent> next = Write({"a"}, 1);
  ASSERT_TRUE(WaitFor([&] { return resumed.event_count() >= 1; }));
  const std::vector<Place> after = Places(resumed.events());
  EXPECT_EQ(after, std::vector<Place>({{next[0].topic, next[0].partition, next[0].offset}}));
}

// The same without HTTP, with catch-ups cut at their limit (max_replay 64): each one's events are
// taken before the next reads on from where they end, live events keep arriving between them, and
// the subscription ends with every event once, per partition in offset order.
TEST_F(StreamTest, ACatchUpCutAtItsLimitContinuesUntilItHasCaughtUp) {
  StreamHubOptions options;
  options.max_buffered = 10;
  options.max_replay = 64;
  Start(options);
  StreamSpec spec;
  spec.id = "a";
  Result<StreamStart> started = hub_->Subscribe(spec, nullptr);
  ASSERT_TRUE(started.ok());
  std::vector<TestEvent> written;
  std::vector<LiveEventPtr> got;
  for (int round = 0; round < 5; ++round) {
    std::vector<TestEvent> batch = Write({"a", "b"}, 400);
    written.insert(written.end(), batch.begin(), batch.end());
    // Taken a little at a time, as a client that reads slower than the writes come.
    ASSERT_EQ(started->subscription->Take(std::chrono::steady_clock::now(), &got),
              Subscription::State::kOpen);
  }
  const size_t expected = PlacesOf(written, "a").size();
  ASSERT_TRUE(WaitFor([&] {
    const auto state = started->subscription->Take(
        std::chrono::steady_clock::now() + std::chrono::milliseconds(20), &got);
    return state != Subscription::State::kOpen || got.size() >= expected;
  }));
  std::set<Place> places;
  std::map<int32_t, int64_t> last;
  for (const LiveEventPtr& e : got) {
    EXPECT_EQ(e->id, "a");
    places.insert({e->tp.topic, e->tp.partition, e->offset});
    auto [it, fresh] = last.try_emplace(e->tp.partition, e->offset);
    if (!fresh) {
      EXPECT_LT(it->second, e->offset) << "out of order or twice in partition " << e->tp.partition;
      it->second = e->offset;
    }
  }
  EXPECT_EQ(got.size(), expected);
  EXPECT_EQ(places, PlacesOf(written, "a"));
  EXPECT_GE(hub_->Stats().catch_ups, 4u);  // 1,000 events of "a", at most 64 a catch-up
  EXPECT_EQ(started->subscription->reason(), "");
  hub_->Unsubscribe(started->subscription);
}

}  // namespace
}  // namespace hotrow::live
