// The live streams (CONTRACT.md "Live") through a real HttpServer on loopback over a real RocksDB
// store: what each stream carries, resumes, the limit, tokens, keep-alive and the stop, and that
// streams leave the connection threads to queries (the fixture: stream_test_base.h; slow clients:
// stream_slow_client_test.cc).

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "http/stream_tokens.h"
#include "tests/live/stream_test_base.h"
#include "tests/support/threads.h"

namespace hotrow::live {
namespace {

// What the process logs, captured from before any test starts a thread: a sink added to the
// logger while other threads log through it races with them (TSan saw the fixture's cache rebuild
// log through a sink being added).
class CapturedLog final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  static CapturedLog& Get() {
    static const std::shared_ptr<CapturedLog> sink = [] {
      auto made = std::make_shared<CapturedLog>();
      spdlog::default_logger()->sinks().push_back(made);
      return made;
    }();
    return *sink;
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t out;
    formatter_->format(msg, out);
    text_.append(out.data(), out.size());
  }
  void flush_() override {}

 private:
  std::string text_;  // guarded by mutex_
};
// Installed as the executable starts, before any test.
[[maybe_unused]] const bool kLogCaptured = (CapturedLog::Get(), true);

TEST_F(StreamTest, PerIdStreamCarriesEachStoredEventOnceInOrderOnlyOnceStored) {
  Start();
  Write({"a", "b"}, 30);  // before the stream: not sent
  std::atomic<int> unstored{0};
  SseReader reader(port(), "/v1/events/a/stream", "", [&](const SseMessage& m) {
    // Nothing before its batch is durable: when the client reads an event, the store already
    // holds it and its offset.
    const Place p = PlaceOf(json::parse(m.data));
    const auto offsets = store_->StoredOffsets();
    auto it = offsets.find({std::get<0>(p), std::get<1>(p)});
    if (it == offsets.end() || it->second <= std::get<2>(p)) ++unstored;
  });
  ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
  EXPECT_EQ(reader.status(), 200);
  EXPECT_EQ(reader.content_type(), "text/event-stream");
  EXPECT_EQ(reader.content_encoding(), "");  // never compressed: it would hold the events
  std::vector<TestEvent> written;
  for (int round = 0; round < 20; ++round) {
    std::vector<TestEvent> batch = Write({"a", "b", "c"}, 33);
    written.insert(written.end(), batch.begin(), batch.end());
  }
  const std::set<Place> expected = PlacesOf(written, "a");
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= expected.size(); }))
      << reader.event_count() << " of " << expected.size();
  const std::vector<SseMessage> events = reader.events();
  const std::vector<Place> got = Places(events);
  EXPECT_EQ(std::set<Place>(got.begin(), got.end()), expected);
  EXPECT_EQ(got.size(), expected.size());
  for (const SseMessage& m : events) {
    EXPECT_EQ(json::parse(m.data)["event_id"], "a");
    EXPECT_TRUE(ParseStreamPosition(m.id).ok()) << m.id;
  }
  EXPECT_EQ(unstored.load(), 0);
  EXPECT_EQ(hub_->Stats().events_sent, expected.size());
}

// In a group: a partition this instance stops serving as owner is announced (`event: partitions`)
// with the offset up to which it was sent, after its last event and before anything later; the
// position that follows names it there, and nothing more of it is sent.
TEST_F(StreamTest, APartitionThatLeavesIsAnnouncedWithTheOffsetItWasSentUpTo) {
  Start();
  Write({"a"}, 3);  // one event in each of partitions 0, 1, 2
  SseReader reader(port(), "/v1/events/a/stream");
  ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
  Write({"a"}, 6);  // offsets 1, 2 of each partition
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= 6; }));
  hub_->SetOwnedPartitions({{"t", 0}, {"t", 1}});
  Write({"a"}, 6);  // only partitions 0 and 1 are sent
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= 10; }));
  std::vector<SseMessage> messages;
  for (const SseMessage& m : reader.messages()) {
    if (m.event.empty() || m.event == "partitions") messages.push_back(m);
  }
  ASSERT_EQ(messages.size(), 11u);
  EXPECT_EQ(messages[6].event, "partitions");
  EXPECT_EQ(json::parse(messages[6].data), json::parse(R"({"added":{},"removed":{"t":{"2":3}}})"));
  Result<StreamPosition> position = ParseStreamPosition(messages[6].id);
  ASSERT_TRUE(position.ok()) << messages[6].id;
  EXPECT_EQ(position->NextOf({"t", 2}), 3);
  for (size_t i = 7; i < messages.size(); ++i) {
    EXPECT_NE(json::parse(messages[i].data)["partition"], 2) << messages[i].data;
  }
}

TEST_F(StreamTest, ResumeFromLastEventIdOrAfterIsExact) {
  Start();
  std::vector<TestEvent> written = Write({"a", "b"}, 20);
  std::string last_id;
  std::vector<Place> got;
  {
    SseReader reader(port(), "/v1/events/a/stream");
    ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
    std::vector<TestEvent> batch = Write({"a", "b"}, 40);
    written.insert(written.end(), batch.begin(), batch.end());
    ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= 20; }));
    got = Places(reader.events());
    last_id = reader.last_id();
  }
  // Written while no client listens, then more once it is back.
  for (int round = 0; round < 3; ++round) {
    std::vector<TestEvent> batch = Write({"a", "b"}, 40);
    written.insert(written.end(), batch.begin(), batch.end());
  }
  std::set<Place> after_first = PlacesOf(written, "a");
  for (const Place& p : got) after_first.erase(p);
  // The first 20 events of "a" were written before the first stream began: not its to send.
  std::set<Place> before;
  for (size_t i = 0; i < 20; ++i) {
    if (written[i].id == "a") {
      before.insert({written[i].topic, written[i].partition, written[i].offset});
    }
  }
  for (const Place& p : before) after_first.erase(p);

  SseReader resumed(port(), "/v1/events/a/stream", last_id);
  ASSERT_TRUE(WaitFor([&] { return resumed.event_count() >= after_first.size(); }))
      << resumed.event_count() << " of " << after_first.size();
  std::vector<SseMessage> open;
  for (const SseMessage& m : resumed.messages())
    if (m.event == "open") open.push_back(m);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(json::parse(open[0].data)["resumed"], true);
  EXPECT_EQ(json::parse(open[0].data)["gap"], false);
  std::vector<TestEvent> live = Write({"a"}, 9);
  for (const Place& p : PlacesOf(live, "a")) after_first.insert(p);
  ASSERT_TRUE(WaitFor([&] { return resumed.event_count() >= after_first.size(); }));
  const std::vector<Place> second = Places(resumed.events());
  EXPECT_EQ(second.size(), after_first.size()) << "a duplicate or a loss across the resume";
  EXPECT_EQ(std::set<Place>(second.begin(), second.end()), after_first);

  // ?after= is the same position as Last-Event-ID.
  SseReader by_param(port(), "/v1/events/a/stream?after=" + last_id);
  ASSERT_TRUE(WaitFor([&] { return by_param.event_count() >= after_first.size(); }));
  const std::vector<Place> third = Places(by_param.events());
  EXPECT_EQ(std::set<Place>(third.begin(), third.end()), after_first);
  EXPECT_EQ(third.size(), after_first.size());

  // The earlier, decimal text of the same position (a client that kept one) resumes the same.
  Result<StreamPosition> parsed = ParseStreamPosition(last_id);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const std::string decimal = parsed->ToDecimalString();
  ASSERT_NE(decimal, last_id);
  SseReader by_decimal(port(), "/v1/events/a/stream", decimal);
  ASSERT_TRUE(WaitFor([&] { return by_decimal.event_count() >= after_first.size(); }));
  const std::vector<Place> fourth = Places(by_decimal.events());
  EXPECT_EQ(std::set<Place>(fourth.begin(), fourth.end()), after_first);
  EXPECT_EQ(fourth.size(), after_first.size());
}

TEST_F(StreamTest, APositionOlderThanTheWindowSaysSoInTheFirstMessage) {
  Start();
  std::vector<TestEvent> written = Write({"a"}, 10);
  SseReader reader(port(), "/v1/events/a/stream?after=1/");
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= 10; }));
  const std::vector<SseMessage> all = reader.messages();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0].event, "open");  // the first message
  const json open = json::parse(all[0].data);
  EXPECT_EQ(open["gap"], true);
  EXPECT_NE(open["warning"].get<std::string>().find("older than the hot window"),
            std::string::npos);
  EXPECT_EQ(reader.event_count(), 10u);  // what the window holds, once

  SseReader bad(port(), "/v1/events/a/stream?after=yesterday");
  ASSERT_TRUE(WaitFor([&] { return bad.ended(); }));
  EXPECT_EQ(bad.status(), 400);
}

TEST_F(StreamTest, LatestStreamSendsEachIdsNewestWithinItsPrefix) {
  Start();
  SseReader reader(port(), "/v1/latest/stream?prefix=dev-");
  ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
  // The newest of each dev- id arrives (older ones may be coalesced away); "other" never.
  auto newest_arrived = [&](const std::vector<TestEvent>& written) {
    std::map<std::string, Place> newest;
    for (const TestEvent& e : written) {
      if (e.id != "other") newest[e.id] = {e.topic, e.partition, e.offset};
    }
    std::map<std::string, Place> got;
    for (const SseMessage& m : reader.events()) {
      const json e = json::parse(m.data);
      got[e["event_id"].get<std::string>()] = PlaceOf(e);
    }
    return got == newest;
  };
  std::vector<TestEvent> written = Write({"dev-1", "dev-2", "other"}, 9);
  ASSERT_TRUE(WaitFor([&] { return newest_arrived(written); }));
  std::vector<TestEvent> more = Write({"dev-2"}, 1);
  written.insert(written.end(), more.begin(), more.end());
  ASSERT_TRUE(WaitFor([&] { return newest_arrived(written); }));
  const std::vector<SseMessage> events = reader.events();
  EXPECT_EQ(PlaceOf(json::parse(events.back().data)),
            Place(more[0].topic, more[0].partition, more[0].offset));
  Places(events);  // in order per partition, none twice
}

TEST_F(StreamTest, StreamsBeyondTheLimitAre503) {
  StreamHubOptions options;
  options.max_streams = 2;
  Start(options);
  SseReader one(port(), "/v1/events/a/stream");
  SseReader two(port(), "/v1/latest/stream");
  ASSERT_TRUE(WaitFor([&] { return one.Opened() && two.Opened(); }));
  SseReader three(port(), "/v1/events/b/stream");
  ASSERT_TRUE(WaitFor([&] { return three.ended(); }));
  EXPECT_EQ(three.status(), 503);
  EXPECT_EQ(hub_->Stats().refused, 1u);
  one.Stop();  // a stream that ends frees its place
  ASSERT_TRUE(WaitFor([&] {
    Write({"a"}, 1);  // the server finds the client gone when it next writes to it
    return hub_->Stats().open == 1;
  }));
  SseReader four(port(), "/v1/events/b/stream");
  ASSERT_TRUE(WaitFor([&] { return four.Opened(); }));
}

// Open streams hold no thread (the transport writes them from its I/O threads as their events
// come): the process has as many threads with 200 streams open as with none, every stream gets its
// id's events, and queries are answered beside them.
TEST_F(StreamTest, OpenStreamsHoldNoThread) {
  http::HttpServerOptions http_options;
  http_options.max_queries = 1;
  Start({}, http_options);
  auto threads = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
      ++n;
    }
    return n;
  };
  // The cache's rebuild thread ends on its own once the (empty) store is read: counted before it
  // ended, the streams' count came out one short on a loaded machine.
  ASSERT_TRUE(WaitFor([] { return hotrow::testing::ThreadsNamed("hotrow-lcache").empty(); }));
  const size_t before = threads();
  constexpr int kStreams = 200;
  std::vector<std::unique_ptr<http::RawConnection>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<http::RawConnection>(port()));
    ASSERT_TRUE(streams.back()->Send("GET /v1/events/s" + std::to_string(i % 20) +
                                     "/stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  ASSERT_TRUE(WaitFor([&] { return hub_->Stats().open == kStreams; }));
  EXPECT_EQ(threads(), before) << "open streams took threads";
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) ids.push_back("s" + std::to_string(i));
  Write(ids, 40);
  for (int i = 0; i < kStreams; ++i) {
    std::string got;
    const std::string id = "data: {\"event_id\":\"s" + std::to_string(i % 20) + "\"";
    ASSERT_TRUE(WaitFor([&] {
      got += streams[static_cast<size_t>(i)]->Read(1 << 16, std::chrono::milliseconds(50));
      size_t n = 0;
      for (size_t at = got.find(id); at != std::string::npos; at = got.find(id, at + 1)) ++n;
      return n == 2;
    })) << "stream "
        << i << " got: " << got.substr(0, 400);
  }
  httplib::Client client("127.0.0.1", port());
  client.set_read_timeout(std::chrono::seconds(30));
  auto healthz = client.Get("/healthz");
  ASSERT_TRUE(healthz);
  EXPECT_EQ(healthz->status, 200);
  auto latest = client.Get("/v1/events/s1/latest?n=100");  // the store, on a worker
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->status, 200);
  EXPECT_EQ(threads(), before);
}

TEST_F(StreamTest, TheTokenIsCheckedBeforeAStreamOpens) {
  Start({}, {}, "s3cret-token");
  http::RawConnection without(port());
  ASSERT_TRUE(without.Send("GET /v1/events/a/stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string refused = without.Read(1 << 16, std::chrono::seconds(30));
  EXPECT_EQ(http::StatusOfRawResponse(refused), 401) << refused;
  EXPECT_EQ(hub_->Stats().opened, 0u);
  http::RawConnection with(port());
  ASSERT_TRUE(
      with.Send("GET /v1/events/a/stream HTTP/1.1\r\nHost: x\r\n"
                "Authorization: Bearer s3cret-token\r\n\r\n"));
  ASSERT_TRUE(WaitFor([&] { return hub_->Stats().open == 1; }));
  const std::string opened = with.Read(1 << 16, std::chrono::seconds(5));
  EXPECT_EQ(http::StatusOfRawResponse(opened), 200) << opened;
  EXPECT_NE(opened.find("event: open"), std::string::npos);
}

// A reload that no longer accepts the token a stream was opened with ends that stream, saying
// why; a stream opened with the token still accepted goes on.
TEST_F(StreamTest, AStreamEndsWhenItsTokenIsRetired) {
  Start({}, {}, "old-token");
  auto open = [&](const std::string& token) {
    auto conn = std::make_unique<http::RawConnection>(port());
    EXPECT_TRUE(
        conn->Send("GET /v1/events/a/stream HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer " +
                   token + "\r\n\r\n"));
    return conn;
  };
  auto old_stream = open("old-token");
  ASSERT_TRUE(WaitFor([&] { return hub_->Stats().open == 1; }));
  std::ofstream(dir_.Sub("token"), std::ios::trunc) << "new-token\n";
  ASSERT_TRUE(credentials_->Reload().ok());
  auto new_stream = open("new-token");
  ASSERT_TRUE(WaitFor([&] { return hub_->Stats().open == 2; }));
  http_->AccessReloaded();
  std::string old_text;
  ASSERT_TRUE(WaitFor([&] {
    old_text += old_stream->Read(1 << 16, std::chrono::milliseconds(50));
    return old_text.find("event: closed") != std::string::npos;
  })) << old_text;
  EXPECT_NE(old_text.find("no longer accepted"), std::string::npos) << old_text;
  EXPECT_TRUE(WaitFor([&] { return hub_->Stats().open == 1; }));
  Write({"a"}, 1);
  std::string new_text;
  ASSERT_TRUE(WaitFor([&] {
    new_text += new_stream->Read(1 << 16, std::chrono::milliseconds(50));
    return new_text.find("\"event_id\":\"a\"") != std::string::npos;
  })) << new_text;
  EXPECT_EQ(new_text.find("event: closed"), std::string::npos);
}

TEST_F(StreamTest, KeepAliveCommentsFlowOnAQuietStream) {
  http::HttpServerOptions http_options;
  http_options.stream_keepalive_ms = 20;
  Start({}, http_options);
  SseReader reader(port(), "/v1/events/quiet/stream");
  ASSERT_TRUE(WaitFor([&] {
    int comments = 0;
    for (const SseMessage& m : reader.messages()) comments += m.event == "comment";
    return comments >= 2;
  }));
}

TEST_F(StreamTest, StoppingTheServerClosesItsStreams) {
  Start();
  SseReader reader(port(), "/v1/latest/stream");
  ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
  http_->Stop();  // returns once every stream's thread ended
  ASSERT_TRUE(WaitFor([&] { return reader.ended(); }));
  bool closed = false;
  for (const SseMessage& m : reader.messages()) closed |= m.event == "closed";
  EXPECT_TRUE(closed);
}

// Outside cluster mode a store may hold many more partitions than the instance consumes (an
// earlier assignment, a topic no longer consumed). A stream's positions name only the partitions
// it serves (StreamHub::SetServedPartitions): 2,000 of them, with offsets spread over 240,000, fit
// the server's 8 KiB header line as Last-Event-ID, and a resume from such an id is exact. Named
// all 4,000 stored, the id is about 12 KB and the resume is refused.
TEST_F(StreamTest, APositionNamesOnlyTheServedPartitionsAndResumesThroughTheHeaderAt2000) {
  StreamHubOptions hub_options;
  hub_options.max_buffered = 4000;  // one batch of an event in each of 2,000 partitions
  Start(hub_options);
  constexpr int32_t kStored = 4000, kServed = 2000;
  auto write_one_each = [&](const std::string& id, int32_t first, int32_t count) {
    std::vector<TestEvent> events;
    store::WriteBatchInput batch;
    for (int32_t p = first; p < first + count; ++p) {
      TestEvent e;
      e.id = id;
      e.topic = "t";
      e.partition = p;
      // Spread offsets: each partition's distance from the run's base takes 3 digits.
      if (!next_.contains(p)) next_[p] = (p % kServed) * 120;
      e.offset = next_[p]++;
      e.ts_ms = kNowMs - 1000 + p % 500;
      e.payload = "{\"p\":" + std::to_string(p) + "}";
      Result<store::Row> row = testing::MakeRow(store_.get(), e);
      EXPECT_TRUE(row.ok());
      batch.rows.push_back(std::move(row).value());
      batch.next_offsets[{e.topic, e.partition}] = e.offset + 1;
      events.push_back(e);
    }
    store::WriteOutcome outcome;
    EXPECT_TRUE(store_->Write(batch, &outcome).ok());
    return events;
  };
  write_one_each("old", 0, kStored);  // every partition stored once
  // Events of the stream's id in partitions no longer served: stored before the stream, never sent
  // by it nor by its resume.
  write_one_each("a", 0, kStored - kServed);
  std::vector<store::TopicPartition> served;
  for (int32_t p = kStored - kServed; p < kStored; ++p) served.push_back({"t", p});
  hub_->SetServedPartitions(served);

  std::string last_id;
  std::set<Place> sent;
  {
    SseReader reader(port(), "/v1/events/a/stream");
    ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
    const std::string open_id = reader.last_id();
    Result<StreamPosition> open = ParseStreamPosition(open_id);
    ASSERT_TRUE(open.ok()) << open.status().ToString();
    EXPECT_EQ(open->next.size(), static_cast<size_t>(kServed));
    EXPECT_LE(open_id.size(), 6050u);
    const std::vector<TestEvent> first = write_one_each("a", kStored - kServed, kServed);
    ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= first.size(); }))
        << reader.event_count() << " of " << first.size();
    const std::vector<Place> got = Places(reader.events());
    sent.insert(got.begin(), got.end());
    EXPECT_EQ(sent, PlacesOf(first, "a"));
    last_id = reader.last_id();
  }
  EXPECT_LE(last_id.size(), 6050u);
  const std::vector<TestEvent> missed = write_one_each("a", kStored - kServed, 50);
  SseReader resumed(port(), "/v1/events/a/stream", last_id);
  ASSERT_TRUE(WaitFor([&] { return resumed.event_count() >= missed.size() || resumed.ended(); }));
  EXPECT_EQ(resumed.status(), 200);
  const std::vector<Place> again = Places(resumed.events());
  EXPECT_EQ(std::set<Place>(again.begin(), again.end()), PlacesOf(missed, "a"));
  EXPECT_EQ(again.size(), missed.size()) << "a duplicate or a loss across the resume";
}

// Browsers' streams (CONTRACT.md "Live streams"): a token of POST /v1/stream-tokens, issued to
// a holder of the bearer token, opens streams as ?access_token= (EventSource sends no
// Authorization header), only streams, only until it expires, and only while its bearer token is
// accepted: a reload that retires that token refuses it and ends the streams it opened. No token
// ever reaches the log, though refusals are logged.
TEST_F(StreamTest, AStreamTokenOpensStreamsOnlyUntilItExpiresOrItsBearerTokenIsRetired) {
  ManualClock monotonic(1'000'000);
  http::HttpServerOptions options;
  options.stream_token_ttl_ms = 60'000;
  options.stream_token_clock = &monotonic;
  const size_t log_from = CapturedLog::Get().Text().size();
  Start({}, options, "bearer-1");
  httplib::Client client("127.0.0.1", port());
  client.set_read_timeout(std::chrono::seconds(30));
  auto issue = [&](const std::string& bearer) -> std::string {
    httplib::Headers headers;
    if (!bearer.empty()) headers.emplace("Authorization", "Bearer " + bearer);
    auto res = client.Post("/v1/stream-tokens", headers, "", "application/json");
    if (!res || res->status != 200) return "status " + std::to_string(res ? res->status : -1);
    const json body = json::parse(res->body);
    EXPECT_EQ(body.value("ttl_ms", 0), 60'000);
    EXPECT_EQ(res->get_header_value("Cache-Control"), "no-store");
    return body.value("token", "");
  };
  auto status_of = [&](const std::string& target) {
    http::RawConnection conn(port());
    EXPECT_TRUE(conn.Send("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    const std::string text = conn.Read(1 << 16, std::chrono::seconds(30));
    return std::make_pair(http::StatusOfRawResponse(text), text);
  };
  EXPECT_EQ(issue(""), "status 401");  // only a holder of the bearer token gets one
  EXPECT_EQ(client.Get("/v1/stream-tokens", {{"Authorization", "Bearer bearer-1"}})->status, 405);
  const std::string token = issue("bearer-1");
  ASSERT_EQ(token.rfind("st-", 0), 0u) << token;

  // Accepted on a stream, which carries events.
  SseReader reader(port(), "/v1/events/a/stream?access_token=" + token);
  ASSERT_TRUE(WaitFor([&] { return reader.Opened(); }));
  EXPECT_EQ(reader.status(), 200);
  Write({"a"}, 3);
  ASSERT_TRUE(WaitFor([&] { return reader.event_count() >= 3; }));

  // Wrong, and on another path (even with a stream's shape of query): refused.
  auto wrong = status_of("/v1/events/a/stream?access_token=st-00000000000000000000000000000000");
  EXPECT_EQ(wrong.first, 401) << wrong.second;
  EXPECT_NE(wrong.second.find("wrong stream token"), std::string::npos) << wrong.second;
  EXPECT_EQ(status_of("/v1/events/a/latest?access_token=" + token).first, 401);
  EXPECT_EQ(status_of("/v1/stats?access_token=" + token).first, 401);
  EXPECT_EQ(status_of("/v1/events/a/latest?n=1").first, 401);

  // Expired: the clock it is counted on moves past its 60 s.
  monotonic.Advance(60'000);
  auto expired = status_of("/v1/events/a/stream?access_token=" + token);
  EXPECT_EQ(expired.first, 401) << expired.second;
  EXPECT_NE(expired.second.find("expired"), std::string::npos) << expired.second;
  EXPECT_FALSE(reader.ended()) << "an open stream outlives its token's expiry";

  // Retired: a reload that no longer accepts bearer-1 ends the streams its tokens opened and
  // refuses its tokens.
  const std::string second = issue("bearer-1");
  SseReader by_second(port(), "/v1/latest/stream?access_token=" + second);
  ASSERT_TRUE(WaitFor([&] { return by_second.Opened(); }));
  std::ofstream(dir_.Sub("token"), std::ios::trunc) << "bearer-2\n";
  ASSERT_TRUE(credentials_->Reload().ok());
  http_->AccessReloaded();
  for (SseReader* r : {&reader, &by_second}) {
    ASSERT_TRUE(WaitFor([&] { return r->ended(); }));
    bool closed = false;
    for (const SseMessage& m : r->messages()) {
      closed |= m.event == "closed" && m.data.find("no longer accepted") != std::string::npos;
    }
    EXPECT_TRUE(closed);
  }
  auto retired = status_of("/v1/latest/stream?access_token=" + second);
  EXPECT_EQ(retired.first, 401) << retired.second;
  EXPECT_NE(issue("bearer-2").rfind("st-", 0), std::string::npos);

  spdlog::default_logger()->flush();
  const std::string logged = CapturedLog::Get().Text().substr(log_from);
  EXPECT_NE(logged.find("refused"), std::string::npos) << "refusals are logged: " << logged;
  EXPECT_EQ(logged.find(token), std::string::npos) << logged;
  EXPECT_EQ(logged.find(second), std::string::npos) << logged;
}

TEST(RedactedTargetTest, AnAccessTokenNeverLeavesInALoggedTarget) {
  EXPECT_EQ(http::RedactedTarget("/v1/latest/stream?access_token=st-abc&after=1~t:0.0.1.A"),
            "/v1/latest/stream?access_token=[redacted]&after=1~t:0.0.1.A");
  EXPECT_EQ(http::RedactedTarget("/v1/x?a=1&access_token=s&access_token=t"),
            "/v1/x?a=1&access_token=[redacted]&access_token=[redacted]");
  EXPECT_EQ(http::RedactedTarget("/v1/events/a/latest"), "/v1/events/a/latest");
  EXPECT_EQ(http::RedactedTarget("/v1/x?access_tokenish=1"), "/v1/x?access_tokenish=1");
  // The same name percent-encoded: the server reads it as access_token.
  EXPECT_EQ(http::RedactedTarget("/v1/x?access%5Ftoken=s&b=%zz"),
            "/v1/x?access_token=[redacted]&b=%zz");
}

}  // namespace
}  // namespace hotrow::live
