// A scan (or a large range) never holds every thread of the query pool: with one scan held
// mid-way (its own thread in its sink, its pool reads in a test hook), a second scan and a large
// range still answer in full, and the held scan never had more than threads - 1 pool threads.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using query::Event;
using query::QueryEngine;
using query::QueryOptions;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kBucketMs = 10'000;
constexpr int64_t kTtlMs = 60'000;
constexpr int kEvents = 2000;
constexpr int kThreads = 2;

// Holds every pool Fill of queries starting at `held_from` until Release().
class Gate {
 public:
  explicit Gate(int64_t held_from) : held_from_(held_from) {}

  void OnFill(int64_t min_ts) {
    if (min_ts != held_from_) return;
    std::unique_lock lock(mu_);
    ++inside_;
    most_inside_ = std::max(most_inside_, inside_);
    cv_.wait(lock, [&] { return released_; });
    --inside_;
  }
  // Holds the held scan's own thread too (a slow client), so that its reads wait for the pool.
  void HoldCaller() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return released_; });
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  int inside() {
    std::lock_guard lock(mu_);
    return inside_;
  }
  int most_inside() {
    std::lock_guard lock(mu_);
    return most_inside_;
  }

 private:
  const int64_t held_from_;
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  int most_inside_ = 0;
  bool released_ = false;
};

TEST(PoolShareTest, AScanHeldOnThePoolLeavesAThreadForOtherQueries) {
  testing::TempDir dir;
  ManualClock clock(kT0 + kTtlMs);  // the window starts at kT0
  store::StoreOptions options;
  options.path = dir.Sub("store");
  options.ttl_ms = kTtlMs;
  options.bucket_ms = kBucketMs;
  options.salts = 4;
  options.wall_clock = &clock;
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 8 << 20;
  auto opened = store::EventStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto store = std::move(opened).value();
  std::vector<testing::TestEvent> events;
  const std::string ids[2] = {"dev-0", "dev-1"}, topic = "t";
  for (int i = 0; i < kEvents; ++i) {
    events.push_back({ids[i % 2], kT0 + 1000 + (i * 397) % 50'000, topic, 0, i,
                      R"({"o":)" + std::to_string(i) + "}"});
  }
  store::WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store.get(), events, &outcome).ok());
  ASSERT_EQ(outcome.stored, static_cast<size_t>(kEvents));

  // Scans from kT0 + 1 are held on the pool; every other query runs freely.
  Gate gate(kT0 + 1);
  QueryOptions q;
  q.threads = kThreads;
  q.chunk_events = 4;  // many Fills per stream
  q.pool_fill_hook = [&gate](int64_t min_ts, int64_t /*max_ts*/) { gate.OnFill(min_ts); };
  QueryEngine engine(store.get(), q);

  std::atomic<int64_t> held_scan_events{0};
  auto held = std::async(std::launch::async, [&] {
    return engine.Scan(kT0 + 1, INT64_MAX, query::kNoLimit, [&](const Event&) {
      if (held_scan_events.fetch_add(1) == 0) gate.HoldCaller();
      return true;
    });
  });
  // Its first event reached the sink (where its thread now waits) and a pool thread holds one of
  // its reads.
  ASSERT_TRUE(testing::WaitFor([&] { return gate.inside() >= 1 && held_scan_events.load() >= 1; }))
      << "the scan never reached the pool";

  // A second client's scan and a large range (limit > kSmallQueryLimit: on the pool) answer in
  // full while the first scan holds its pool threads. Without the cap the held scan takes both
  // pool threads and these wait for it (the release below never comes: the test fails).
  struct Answers {
    Status scan, range;
    int64_t scanned = 0, ranged = 0;
  };
  auto others = std::async(std::launch::async, [&] {
    Answers a;
    a.scan = engine.Scan(kT0, INT64_MAX, query::kNoLimit, [&](const Event&) {
      ++a.scanned;
      return true;
    });
    a.range = engine.RangeTo("dev-0", kT0, INT64_MAX, 1000, query::Order::kDesc,
                             [&](const Event&) {
                               ++a.ranged;
                               return true;
                             });
    return a;
  });
  const bool answered = others.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  EXPECT_TRUE(answered) << "a second scan and a large range waited behind the held scan";
  EXPECT_LE(gate.most_inside(), kThreads - 1) << "the held scan had every pool thread";
  gate.Release();
  const Answers a = others.get();
  EXPECT_TRUE(a.scan.ok()) << a.scan.ToString();
  EXPECT_TRUE(a.range.ok()) << a.range.ToString();
  EXPECT_EQ(a.scanned, kEvents);
  EXPECT_EQ(a.ranged, kEvents / 2);

  Status st = held.get();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(held_scan_events.load(), kEvents);
}

}  // namespace
}  // namespace hotrow
