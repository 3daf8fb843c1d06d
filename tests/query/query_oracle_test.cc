// Every query of the engine compared to a brute-force oracle (tests/support/oracle.h) on random
// data in a real RocksDB store: ties in time, ids that share prefixes or hold any bytes, several
// topics and partitions, empty and single-event buckets, ranges on bucket edges and outside the
// window, the window moving, buckets dropped, new events arriving late, and a reopen. Run for every
// salt_by, for 1, 3 and 16 salts, with 1 and 2 query threads and a tiny chunk so that the chunked
// merge hands over many times.
//
// Each parameter runs HOTROW_ORACLE_ROUNDS rounds (default 3) with seeds S, S+1, ... where S is
// $HOTROW_TEST_SEED or a fixed default. A failure names the stage, the thread count, the query
// and the round's seed; rerun just that round with
//   HOTROW_TEST_SEED=<seed> HOTROW_ORACLE_ROUNDS=1 query_oracle_test --gtest_filter='*<param>'

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "keying/salter.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using keying::SaltBy;
using query::Event;
using query::Order;
using query::QueryEngine;
using query::QueryOptions;
using store::EventStore;
using store::StoreOptions;
using store::TopicPartition;
using testing::Oracle;
using testing::TestEvent;

constexpr int64_t kBucketMs = 1000;
constexpr int64_t kTtlMs = 10 * kBucketMs;
constexpr int64_t kMaxFutureMs = 2 * kBucketMs;
constexpr int64_t kT0 = 1'700'000'000'000;  // a multiple of kBucketMs
constexpr uint64_t kDefaultSeed = 20240611;
constexpr int kMaxReportedFailures = 8;

// A wire form for ScanEncoded: length-prefixed fields, decoded back by TakeEncodedEvent.
void EncodeForTest(const Event& e, std::string* out) {
  for (const std::string* field : {&e.id, &e.topic, &e.payload}) {
    out->append(std::to_string(field->size())).push_back(':');
    out->append(*field);
  }
  out->append(std::to_string(e.ts_ms) + "," + std::to_string(e.partition) + "," +
              std::to_string(e.offset) + ";");
}

// Takes one event written by EncodeForTest off the front of `text`; false when malformed.
bool TakeEncodedEvent(std::string_view* text, Event* e) {
  for (std::string* field : {&e->id, &e->topic, &e->payload}) {
    const size_t colon = text->find(':');
    if (colon == std::string_view::npos) return false;
    const size_t n = std::stoull(std::string(text->substr(0, colon)));
    if (colon + 1 + n > text->size()) return false;
    field->assign(text->substr(colon + 1, n));
    text->remove_prefix(colon + 1 + n);
  }
  const size_t end = text->find(';');
  if (end == std::string_view::npos) return false;
  long long ts = 0, offset = 0;
  int partition = 0;
  if (std::sscanf(std::string(text->substr(0, end)).c_str(), "%lld,%d,%lld", &ts, &partition,
                  &offset) != 3) {
    return false;
  }
  e->ts_ms = ts;
  e->partition = partition;
  e->offset = offset;
  text->remove_prefix(end + 1);
  return true;
}

struct OracleParam {
  SaltBy salt_by;
  int salts;
};

// For test names and messages: "salt_by=record salts=16".
void PrintTo(const OracleParam& param, std::ostream* os) {
  *os << "salt_by=" << keying::SaltByName(param.salt_by) << " salts=" << param.salts;
}

std::string ParamName(const ::testing::TestParamInfo<OracleParam>& info) {
  return std::string(keying::SaltByName(info.param.salt_by)) + "_" +
         std::to_string(info.param.salts) + "salts";
}

std::string TimeName(int64_t t) {
  if (t == INT64_MAX) return "INT64_MAX";
  if (t >= kT0 - 100 * kBucketMs && t <= kT0 + 100 * kBucketMs) {
    return "T0" + std::string(t >= kT0 ? "+" : "") + std::to_string(t - kT0);
  }
  return std::to_string(t);
}

class QueryOracleTest : public ::testing::TestWithParam<OracleParam> {
 protected:
  // Starts a fresh round: a new directory and store, the clock back at the start, a new seed.
  void StartRound(int round) {
    engines_.clear();
    store_.reset();
    base_seed_ = testing::TestSeed(kDefaultSeed) + static_cast<uint64_t>(round);
    // record and id keep the seeds they always had; adaptive takes its own.
    seed_ = base_seed_ * 1000003 + static_cast<uint64_t>(GetParam().salts) * 2 +
            static_cast<uint64_t>(GetParam().salt_by);
    rng_.seed(seed_);
    dir_ = std::make_unique<testing::TempDir>();
    clock_.Set(kT0 + kTtlMs);
    oracle_ = Oracle();
    event_times_.clear();
    next_offset_.clear();
    ids_ = testing::TrickyIds(&rng_);
    absent_ = testing::AbsentIds();
    OpenStore();
  }

  void OpenStore() {
    engines_.clear();
    store_.reset();
    StoreOptions options;
    options.path = dir_->Sub("store");
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.max_future_ms = kMaxFutureMs;
    options.salts = GetParam().salts;
    options.salt_by = GetParam().salt_by;
    options.wall_clock = &clock_;
    options.clock = store::ClockKind::kWall;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    // Under salt_by adaptive, low enough that the chattiest ids (GenerateEvents' skew) are
    // spread in these buckets of 40 to 160 events, and the quiet ones are not.
    options.hot = keying::HotRule{0.05, 4};
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    for (int threads : {1, 2}) {
      QueryOptions q;
      q.threads = threads;
      q.chunk_events = 3;
      engines_.push_back(std::make_unique<QueryEngine>(store_.get(), q));
    }
  }

  std::string Context(const std::string& stage, const QueryEngine& engine) const {
    return "[stage " + stage + ", threads=" + std::to_string(engine.threads()) +
           ", seed=" + std::to_string(base_seed_) + " (param seed " + std::to_string(seed_) +
           "), W=" + TimeName(store_->WindowStartMs()) + "] ";
  }

  void RunRound();

  // Writes `events` in batches of random size, checks every Write's outcome against what the
  // window and max_future say, and records the stored events in the oracle.
  void WriteAndRecord(const std::vector<TestEvent>& events) {
    std::uniform_int_distribution<size_t> batch_size(1, 150);
    size_t at = 0;
    while (at < events.size()) {
      const size_t n = std::min(events.size() - at, batch_size(rng_));
      std::vector<TestEvent> batch(events.begin() + at, events.begin() + at + n);
      at += n;
      const int64_t window_start = store_->WindowStartMs();
      const int64_t future_after = clock_.NowMs() + kMaxFutureMs;
      store::WriteOutcome want;
      for (const TestEvent& e : batch) {
        if (e.ts_ms < window_start) {
          ++want.expired;
        } else if (e.ts_ms > future_after) {
          ++want.future;
        } else {
          ++want.stored;
        }
      }
      store::WriteOutcome got;
      Status st = testing::WriteEvents(store_.get(), batch, &got);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_EQ(got.stored, want.stored) << "seed " << base_seed_;
      ASSERT_EQ(got.expired, want.expired) << "seed " << base_seed_;
      ASSERT_EQ(got.future, want.future) << "seed " << base_seed_;
      ASSERT_EQ(got.duplicate, 0u) << "seed " << base_seed_;
      for (const TestEvent& e : batch) {
        if (e.ts_ms < window_start || e.ts_ms > future_after) continue;
        Result<uint16_t> topic = store_->TopicNumber(e.topic);
        ASSERT_TRUE(topic.ok()) << topic.status().ToString();
        oracle_.Add(Event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload}, *topic);
        event_times_.push_back(e.ts_ms);
      }
    }
  }

  // Times a query should start or end at: bucket edges and their neighbours, the window start,
  // times events have and the millisecond after, and times far outside everything.
  std::vector<int64_t> TimePoints() {
    std::vector<int64_t> points = {0, 1, kT0 - 60 * kBucketMs, kT0 + 60 * kBucketMs};
    for (int64_t k = -3; k <= 16; ++k) {
      for (int64_t d : {-1, 0, 1}) points.push_back(kT0 + k * kBucketMs + d);
    }
    for (const auto& bucket : store_->Buckets()) {
      points.push_back(bucket->start_ms());
      points.push_back(bucket->end_ms());
    }
    const int64_t w = store_->WindowStartMs();
    for (int64_t d : {-1, 0, 1}) points.push_back(w + d);
    points.push_back(clock_.NowMs());
    std::uniform_int_distribution<size_t> pick(0, event_times_.size() - 1);
    for (int i = 0; i < 40 && !event_times_.empty(); ++i) {
      const int64_t ts = event_times_[pick(rng_)];
      points.push_back(ts);
      points.push_back(ts + 1);
    }
    return points;
  }

  // [from, to) with from < to, both from `points`, now and then reaching INT64_MAX or a single ms.
  std::pair<int64_t, int64_t> RandomSpan(const std::vector<int64_t>& points) {
    std::uniform_int_distribution<size_t> pick(0, points.size() - 1);
    std::uniform_int_distribution<int> percent(0, 99);
    int64_t from = points[pick(rng_)];
    int64_t to = points[pick(rng_)];
    const int p = percent(rng_);
    if (p < 3) to = INT64_MAX;
    if (p >= 3 && p < 8) to = from + 1;  // exactly one millisecond
    if (from > to) std::swap(from, to);
    if (from == to) to = from + 1;
    return {from, to};
  }

  const std::string& RandomId() {
    std::uniform_int_distribution<int> percent(0, 99);
    if (percent(rng_) < 8) {
      std::uniform_int_distribution<size_t> pick(0, absent_.size() - 1);
      return absent_[pick(rng_)];
    }
    std::uniform_int_distribution<size_t> pick(0, ids_.size() - 1);
    return ids_[pick(rng_)];
  }

  void Fail(const std::string& context, const std::string& what) {
    ++failures_;
    if (failures_ <= kMaxReportedFailures) ADD_FAILURE() << context << what;
  }

  bool Stop() const { return failures_ >= kMaxReportedFailures; }

  void BucketOrderBroken(const std::string& context, const std::string& what) {
    if (bucket_order_failures_++ == 0) first_bucket_order_failure_ = context + what;
  }

  void CheckLatest(QueryEngine& engine, const std::string& stage, const std::string& id, int n) {
    ++cases_;
    const std::string what =
        "Latest(id=\"" + testing::EscapeBytes(id) + "\", n=" + std::to_string(n) + ")";
    Result<std::vector<Event>> got = engine.Latest(id, n);
    if (!got.ok())
      return Fail(Context(stage, engine), what + " failed: " + got.status().ToString());
    const std::vector<Event> expected = oracle_.Latest(id, n, store_->WindowStartMs());
    if (!expected.empty()) ++nonempty_;
    const std::string diff = testing::DiffEvents(expected, *got);
    if (!diff.empty()) Fail(Context(stage, engine), what + ": " + diff);
  }

  // How CheckRange asks: Range, RangeTo, RangeEncoded (each event's text on the thread that read
  // it), or RangeTo with a sink that stops half-way through the answer.
  enum class RangeCall { kRange, kRangeTo, kRangeEncoded, kStoppedHalfWay };

  void CheckRange(QueryEngine& engine, const std::string& stage, const std::string& id,
                  int64_t from, int64_t to, int64_t limit, Order order, RangeCall call) {
    ++cases_;
    static constexpr const char* kNames[] = {"Range", "RangeTo", "RangeEncoded",
                                             "RangeTo (stopped half-way)"};
    const std::string what = std::string(kNames[static_cast<int>(call)]) + "(id=\"" +
                             testing::EscapeBytes(id) + "\", from=" + TimeName(from) +
                             ", to=" + TimeName(to) + ", limit=" + std::to_string(limit) +
                             ", order=" + (order == Order::kAsc ? "asc" : "desc") + ")";
    std::vector<Event> expected =
        oracle_.Range(id, from, to, limit, order, store_->WindowStartMs());
    if (!expected.empty()) ++nonempty_;
    std::vector<Event> got;
    std::mutex mu;
    Status st;
    switch (call) {
      case RangeCall::kRange: {
        Result<std::vector<Event>> result = engine.Range(id, from, to, limit, order);
        st = result.status();
        if (result.ok()) got = std::move(result).value();
        break;
      }
      case RangeCall::kRangeTo:
        st = engine.RangeTo(id, from, to, limit, order, [&](const Event& e) {
          std::lock_guard<std::mutex> lock(mu);
          got.push_back(e);
          return true;
        });
        break;
      case RangeCall::kRangeEncoded: {
        bool malformed = false;
        const query::EventEncoder encode = EncodeForTest;
        st = engine.RangeEncoded(id, from, to, limit, order, encode,
                                 [&](std::string_view text, int64_t n) {
                                   std::lock_guard<std::mutex> lock(mu);
                                   for (int64_t i = 0; i < n && !malformed; ++i) {
                                     Event e;
                                     malformed = !TakeEncodedEvent(&text, &e);
                                     got.push_back(std::move(e));
                                   }
                                   // No more text than the events it was said to hold.
                                   malformed = malformed || n < 1 || !text.empty();
                                   return !malformed;
                                 });
        if (malformed) return Fail(Context(stage, engine), what + ": text and event counts differ");
        break;
      }
      case RangeCall::kStoppedHalfWay: {
        // The sink takes the first half of the answer, then says stop: the range ends there.
        const size_t stop_after = (expected.size() + 1) / 2;
        expected.resize(stop_after);
        st = engine.RangeTo(id, from, to, limit, order, [&](const Event& e) {
          std::lock_guard<std::mutex> lock(mu);
          got.push_back(e);
          return got.size() < stop_after;
        });
        break;
      }
    }
    if (!st.ok()) return Fail(Context(stage, engine), what + " failed: " + st.ToString());
    const std::string diff = testing::DiffEvents(expected, got);
    if (!diff.empty()) Fail(Context(stage, engine), what + ": " + diff);
  }

  void CheckScan(QueryEngine& engine, const std::string& stage, int64_t from, int64_t to,
                 int64_t limit) {
    ++cases_;
    // Every other case goes through ScanEncoded, its events encoded on the pool threads.
    const bool encoded = cases_ % 2 == 0;
    const std::string what = std::string(encoded ? "ScanEncoded" : "Scan") +
                             "(from=" + TimeName(from) + ", to=" + TimeName(to) + ", limit=" +
                             (limit == query::kNoLimit ? "none" : std::to_string(limit)) + ")";
    // Bucket edges as the store has them, to check "bucket by bucket, oldest bucket first".
    std::vector<int64_t> bucket_starts;
    for (const auto& bucket : store_->Buckets()) bucket_starts.push_back(bucket->start_ms());
    auto bucket_of = [&](int64_t ts) {
      auto it = std::upper_bound(bucket_starts.begin(), bucket_starts.end(), ts);
      return static_cast<int>(it - bucket_starts.begin()) - 1;
    };
    std::mutex mu;
    std::vector<Event> got;
    Status st;
    if (encoded) {
      bool malformed = false;
      const query::EventEncoder encode = EncodeForTest;
      st = engine.ScanEncoded(from, to, limit, encode, [&](std::string_view text, int64_t n) {
        std::lock_guard<std::mutex> lock(mu);
        for (int64_t i = 0; i < n; ++i) {
          Event e;
          if (!TakeEncodedEvent(&text, &e)) malformed = true;
          if (malformed) return false;
          got.push_back(std::move(e));
        }
        if (!text.empty()) malformed = true;  // more text than the events it was said to hold
        return !malformed;
      });
      if (malformed) return Fail(Context(stage, engine), what + ": text and event counts differ");
    } else {
      st = engine.Scan(from, to, limit, [&](const Event& e) {
        std::lock_guard<std::mutex> lock(mu);
        got.push_back(e);
        return true;
      });
    }
    if (!st.ok()) return Fail(Context(stage, engine), what + " failed: " + st.ToString());
    // The header promises "bucket by bucket, oldest bucket first". Counted apart from the set
    // checks below, so that a break of this promise does not hide a wrong answer.
    for (size_t i = 1; i < got.size(); ++i) {
      if (bucket_of(got[i].ts_ms) < bucket_of(got[i - 1].ts_ms)) {
        BucketOrderBroken(Context(stage, engine), what + ": event " + std::to_string(i) + " " +
                                                      testing::Describe(got[i]) + " came after " +
                                                      testing::Describe(got[i - 1]) +
                                                      " of a newer bucket");
        break;
      }
    }
    const std::vector<Event> expected = oracle_.Scan(from, to, store_->WindowStartMs());
    if (!expected.empty()) ++nonempty_;
    Oracle::SortCanonical(&got);
    if (limit >= static_cast<int64_t>(expected.size())) {
      const std::string diff = testing::DiffEvents(expected, got);
      if (!diff.empty()) Fail(Context(stage, engine), what + " (sorted): " + diff);
      return;
    }
    // With a limit below the total: exactly `limit` distinct events of the answer, and, since
    // buckets stream oldest first, every event of the buckets before the last one reached.
    if (static_cast<int64_t>(got.size()) != limit) {
      return Fail(Context(stage, engine), what + ": expected exactly " + std::to_string(limit) +
                                              " of " + std::to_string(expected.size()) +
                                              " events, got " + std::to_string(got.size()));
    }
    if (std::adjacent_find(got.begin(), got.end()) != got.end()) {
      return Fail(Context(stage, engine),
                  what + ": an event came twice: " +
                      testing::Describe(*std::adjacent_find(got.begin(), got.end())));
    }
    for (const Event& e : got) {
      if (!std::binary_search(expected.begin(), expected.end(), e, Oracle::CanonicalLess)) {
        return Fail(Context(stage, engine),
                    what + ": returned an event outside the answer: " + testing::Describe(e));
      }
    }
    int last_bucket = -1;
    for (const Event& e : got) last_bucket = std::max(last_bucket, bucket_of(e.ts_ms));
    for (const Event& e : expected) {
      if (bucket_of(e.ts_ms) < last_bucket &&
          !std::binary_search(got.begin(), got.end(), e, Oracle::CanonicalLess)) {
        return BucketOrderBroken(Context(stage, engine),
                                 what + ": skipped " + testing::Describe(e) +
                                     " of an older bucket than events it returned");
      }
    }
  }

  // One round of queries against every engine: latest for every id (and absent ones), ranges and
  // streamed ranges with random spans, limits and orders, scans with and without a limit.
  void CheckAllQueries(const std::string& stage) {
    ASSERT_EQ(store_->WindowStartMs(), clock_.NowMs() - kTtlMs);
    const std::vector<int64_t> points = TimePoints();
    const std::vector<int> ns = {1, 2, 3, 5, 10, 50, 10000};
    // Past kSmallQueryLimit (256) a range is read bucket by bucket on the pool: 257 and 600 cut
    // such ranges short inside a bucket.
    const std::vector<int64_t> limits = {1, 2, 3, 5, 17, 100, 257, 600, query::kMaxRangeLimit};
    std::uniform_int_distribution<size_t> pick_n(0, ns.size() - 1);
    std::uniform_int_distribution<size_t> pick_limit(0, limits.size() - 1);
    std::uniform_int_distribution<int> coin(0, 1);
    std::uniform_int_distribution<int> pick_call(0, 3);
    for (auto& engine : engines_) {
      for (const std::string& id : ids_) {
        CheckLatest(*engine, stage, id, ns[pick_n(rng_)]);
        // n equal to, and one below, what the id has in the window.
        const int visible =
            static_cast<int>(oracle_.Latest(id, query::kMaxLatest, store_->WindowStartMs()).size());
        if (visible > 1) {
          CheckLatest(*engine, stage, id, visible);
          CheckLatest(*engine, stage, id, visible - 1);
        }
      }
      for (const std::string& id : absent_) CheckLatest(*engine, stage, id, ns[pick_n(rng_)]);
      if (Stop()) return;
      for (int i = 0; i < 160; ++i) {
        auto [from, to] = RandomSpan(points);
        const Order order = coin(rng_) ? Order::kAsc : Order::kDesc;
        CheckRange(*engine, stage, RandomId(), from, to, limits[pick_limit(rng_)], order,
                   static_cast<RangeCall>(pick_call(rng_)));
        if (Stop()) return;
      }
      for (int i = 0; i < 12; ++i) {
        auto [from, to] = RandomSpan(points);
        CheckScan(*engine, stage, from, to, query::kNoLimit);
      }
      // Whole window, and scans cut by a limit.
      CheckScan(*engine, stage, 0, INT64_MAX, query::kNoLimit);
      std::uniform_int_distribution<int64_t> scan_limit(1, static_cast<int64_t>(oracle_.size()));
      for (int i = 0; i < 8; ++i) {
        auto [from, to] = RandomSpan(points);
        CheckScan(*engine, stage, from, to, i == 0 ? 1 : scan_limit(rng_));
      }
      if (Stop()) return;
    }
  }

  std::vector<TestEvent> Generate(int64_t first_bucket_start, std::vector<int> per_bucket) {
    testing::EventGenSpec spec;
    spec.ids = ids_;
    spec.topics = {"orders", "sensors", "audit"};
    spec.partitions = 3;
    spec.bucket_ms = kBucketMs;
    spec.first_bucket_start_ms = first_bucket_start;
    spec.events_per_bucket = std::move(per_bucket);
    spec.times_per_bucket = 8;
    return testing::GenerateEvents(spec, &rng_, &next_offset_);
  }

  uint64_t base_seed_ = 0;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<testing::TempDir> dir_;
  ManualClock clock_{kT0 + kTtlMs};
  std::unique_ptr<EventStore> store_;
  std::vector<std::unique_ptr<QueryEngine>> engines_;
  Oracle oracle_;
  std::vector<std::string> ids_;
  std::vector<std::string> absent_;
  std::vector<int64_t> event_times_;
  std::map<TopicPartition, int64_t> next_offset_;
  int cases_ = 0;
  int failures_ = 0;
  int bucket_order_failures_ = 0;
  int nonempty_ = 0;  // answers with at least one event, to see the cases are not vacuous
  std::string first_bucket_order_failure_;
};

void QueryOracleTest::RunRound() {
  std::uniform_int_distribution<int> busy(40, 160);
  // Wave 1: buckets T0 .. T0+11s. Bucket 3 and 8 empty, 5 and 10 hold one event each; bucket 11
  // lies ahead of now but within max_future. Mixed in: events older than the window and too far
  // ahead, which the store must refuse.
  std::vector<int> per_bucket;
  for (int b = 0; b < 12; ++b) {
    per_bucket.push_back(b == 3 || b == 8 ? 0 : (b == 5 || b == 10 ? 1 : busy(rng_)));
  }
  std::vector<TestEvent> wave = Generate(kT0, per_bucket);
  for (TestEvent& e : Generate(kT0 - 3 * kBucketMs, {4, 4, 4})) wave.push_back(e);   // expired
  for (TestEvent& e : Generate(kT0 + 13 * kBucketMs, {4, 0, 4})) wave.push_back(e);  // future
  std::shuffle(wave.begin(), wave.end(), rng_);
  next_offset_.clear();
  testing::AssignOffsets(&wave, &next_offset_);
  ASSERT_NO_FATAL_FAILURE(WriteAndRecord(wave));
  if (GetParam().salt_by == SaltBy::kAdaptive) {
    // Not vacuous: some buckets spread their chattiest ids, and keep the others at home.
    size_t spread = 0;
    for (const auto& bucket : store_->Buckets()) spread += bucket->spread_ids();
    EXPECT_GE(spread, 4u) << "seed " << base_seed_;
    EXPECT_LT(spread, store_->Buckets().size() * ids_.size() / 2) << "seed " << base_seed_;
  }
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("A: all in window"));

  // The window moves to the middle of bucket 2: buckets 0 and 1 are wholly out, 2 half, nothing
  // dropped yet: the engine must filter.
  clock_.Set(kT0 + 12'500);
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("B: window mid-bucket, nothing dropped"));

  // Drop: buckets 0 and 1 go, 2 stays (its end is after the window start).
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 2u);
  ASSERT_FALSE(store_->Buckets().empty());
  EXPECT_EQ(store_->Buckets().front()->start_ms(), kT0 + 2 * kBucketMs);

  // Wave 2: late events into bucket 2 (half refused as expired) and dropped bucket 1 (refused),
  // events into live buckets, new buckets up to T0+14s (now+max_future = T0+14.5s, so part of the
  // last bucket is refused as future).
  std::vector<int> per_bucket2 = {3};  // bucket 1, dropped
  for (int b = 2; b <= 14; ++b) per_bucket2.push_back(b == 13 ? 1 : busy(rng_) / 2);
  std::vector<TestEvent> wave2 = Generate(kT0 + kBucketMs, per_bucket2);
  ASSERT_NO_FATAL_FAILURE(WriteAndRecord(wave2));
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("C: after drop and late writes"));

  // The window starts exactly on a bucket edge (T0+3s), then that bucket is dropped.
  clock_.Set(kT0 + 13'000);
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("D: window on a bucket edge"));
  dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 1u);
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("E: edge bucket dropped"));

  // Reopen: buckets and topic numbers come back, and so do the answers.
  ASSERT_NO_FATAL_FAILURE(OpenStore());
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("F: after reopen"));
}

// HOTROW_ORACLE_ROUNDS (default 3) rounds, each with its own seed (base seed + round).
TEST_P(QueryOracleTest, EveryQueryMatchesTheOracle) {
  const char* env = getenv("HOTROW_ORACLE_ROUNDS");
  const int rounds = env != nullptr && *env != '\0' ? std::max(1, atoi(env)) : 3;
  for (int round = 0; round < rounds && failures_ == 0; ++round) {
    ASSERT_NO_FATAL_FAILURE(StartRound(round));
    ASSERT_NO_FATAL_FAILURE(RunRound());
    std::printf("[oracle] %s round %d (seed %llu): %zu events stored\n",
                ParamName({GetParam(), 0}).c_str(), round,
                static_cast<unsigned long long>(base_seed_), oracle_.size());
  }
  EXPECT_EQ(failures_, 0) << failures_ << " of " << cases_ << " queries differ from the oracle";
  EXPECT_EQ(bucket_order_failures_, 0)
      << bucket_order_failures_ << " scans did not stream bucket by bucket, oldest bucket first "
      << "(query_engine.h); the first:\n"
      << first_bucket_order_failure_;
  std::printf("[oracle] %s: %d queries compared, %d with a non-empty answer\n",
              ParamName({GetParam(), 0}).c_str(), cases_, nonempty_);
}

INSTANTIATE_TEST_SUITE_P(
    SaltLayouts, QueryOracleTest,
    ::testing::Values(OracleParam{SaltBy::kRecord, 1}, OracleParam{SaltBy::kRecord, 3},
                      OracleParam{SaltBy::kRecord, 16}, OracleParam{SaltBy::kId, 1},
                      OracleParam{SaltBy::kId, 3}, OracleParam{SaltBy::kId, 16},
                      OracleParam{SaltBy::kAdaptive, 1}, OracleParam{SaltBy::kAdaptive, 3},
                      OracleParam{SaltBy::kAdaptive, 16}),
    ParamName);

}  // namespace
}  // namespace hotrow
