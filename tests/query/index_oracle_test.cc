// Index queries (query/index_query.h) compared to a brute-force oracle on random data in a real
// RocksDB store, for both salt_by and 1, 3 and 16 salts: the generator and the oracle of
// query_oracle_test (tests/support), with each event given random indexed fields. The oracle of an
// index is an Oracle keyed by "field\0value" instead of the id, so that its order, window and limit
// rules are the very ones the id queries are checked against.
//
// Stages: a first wave over 12 buckets (empty and single-event ones included), the window moved
// and buckets dropped, a reopen (the open-time count must not take index rows for events), and a
// reopen with one more indexed field, where the older buckets must be reported as unindexed.
//
// HOTROW_TEST_SEED=<seed> reruns one seed.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "keying/index_key.h"
#include "query/index_query.h"
#include "query/index_series.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/temp_dir.h"

namespace hotrow::index_oracle_test {
namespace {

using keying::IndexEntry;
using keying::SaltBy;
using query::Event;
using query::IndexAnswer;
using query::IndexQuery;
using query::Order;
using store::EventStore;
using testing::Oracle;
using testing::TestEvent;

// Not a multiple of keying::kPostingSpanMs: a bucket holds the postings of several spans, one of
// them cut at its edge, so the queries' rules for stopping between postings are exercised.
constexpr int64_t kBucketMs = 2500;
constexpr int64_t kTtlMs = 10 * kBucketMs;
constexpr int64_t kT0 = 1'700'000'000'000;
constexpr uint64_t kDefaultSeed = 20261123;

struct Param {
  SaltBy salt_by;
  int salts;
};

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::string(keying::SaltByName(info.param.salt_by)) + "_" +
         std::to_string(info.param.salts) + "salts";
}

std::string OracleKey(const std::string& field, const std::string& value) {
  return field + std::string(1, '\0') + value;
}

class IndexOracleTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    seed_ = testing::TestSeed(kDefaultSeed) * 31 + static_cast<uint64_t>(GetParam().salts) * 2 +
            static_cast<uint64_t>(GetParam().salt_by);
    rng_.seed(seed_);
    ids_ = testing::TrickyIds(&rng_);
    // Values that share prefixes, an empty one, non-ASCII, and the longest allowed.
    values_ = {"", "a", "ab", "b", "1", "true", "\xc3\xa9t\xc3\xa9", std::string(256, 'v')};
    absent_values_ = {"c", "a ", std::string(255, 'v'), "A"};
    Open({"site", "meta.type"});
  }

  void Open(std::vector<std::string> fields) {
    store_.reset();
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.max_future_ms = 2 * kBucketMs;
    options.salts = GetParam().salts;
    options.salt_by = GetParam().salt_by;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    options.index_fields = std::move(fields);
    // Under salt_by adaptive, low enough that the chattiest ids are spread in these small buckets
    // and their index rows follow them to the record's salts.
    options.hot = keying::HotRule{0.05, 4};
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  // Random indexed fields for one event: most have a site, half a type, some fields no bucket
  // indexes, some none at all.
  std::vector<IndexEntry> RandomEntries(bool with_extra) {
    std::uniform_int_distribution<int> percent(0, 99);
    std::uniform_int_distribution<size_t> pick(0, values_.size() - 1);
    std::vector<IndexEntry> out;
    if (percent(rng_) < 85) out.push_back({"site", values_[std::min(pick(rng_), pick(rng_))]});
    if (percent(rng_) < 50) out.push_back({"meta.type", percent(rng_) < 70 ? "alarm" : "info"});
    if (percent(rng_) < 20) out.push_back({"not.indexed", "a"});
    if (with_extra && percent(rng_) < 60) out.push_back({"extra", values_[pick(rng_)]});
    return out;
  }

  // Writes events in random batches; records in the index oracle what each bucket indexes.
  void Write(std::vector<TestEvent> events, bool with_extra) {
    std::uniform_int_distribution<size_t> batch_size(1, 120);
    size_t at = 0;
    while (at < events.size()) {
      const size_t n = std::min(events.size() - at, batch_size(rng_));
      store::WriteBatchInput batch;
      std::vector<std::pair<TestEvent, std::vector<IndexEntry>>> written;
      for (size_t i = at; i < at + n; ++i) {
        Result<store::Row> row = testing::MakeRow(store_.get(), events[i]);
        ASSERT_TRUE(row.ok()) << row.status().ToString();
        row->index = RandomEntries(with_extra);
        written.emplace_back(events[i], row->index);
        batch.rows.push_back(std::move(row).value());
        int64_t& next = batch.next_offsets[{events[i].topic, events[i].partition}];
        next = std::max(next, events[i].offset + 1);
      }
      at += n;
      const int64_t window_start = store_->WindowStartMs();
      const int64_t future_after = clock_.NowMs() + 2 * kBucketMs;
      store::WriteOutcome outcome;
      ASSERT_TRUE(store_->Write(batch, &outcome).ok());
      for (const auto& [e, entries] : written) {
        if (e.ts_ms < window_start || e.ts_ms > future_after) continue;
        const uint16_t topic = *store_->TopicNumber(e.topic);
        const Event event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload};
        events_.Add(event, topic);
        by_position_[{topic, e.partition, e.offset}] = event;
        std::shared_ptr<const store::Bucket> bucket = BucketOf(e.ts_ms);
        ASSERT_NE(bucket, nullptr);
        for (const IndexEntry& entry : entries) {
          if (!bucket->Indexes(entry.field)) continue;
          Event keyed = event;
          keyed.id = OracleKey(entry.field, entry.value);
          index_.Add(keyed, topic);
        }
      }
    }
  }

  std::shared_ptr<const store::Bucket> BucketOf(int64_t ts) const {
    for (const auto& b : store_->Buckets()) {
      if (b->start_ms() <= ts && ts < b->end_ms()) return b;
    }
    return nullptr;
  }

  // The oracle's answer with the real ids put back.
  std::vector<Event> Expected(const std::string& field, const std::string& value, int64_t from,
                              int64_t to, int64_t limit, Order order) const {
    std::vector<Event> out =
        index_.Range(OracleKey(field, value), from, to, limit, order, store_->WindowStartMs());
    for (Event& e : out) {
      const uint16_t topic = *store_->TopicNumber(e.topic);
      e = by_position_.at({topic, e.partition, e.offset});
    }
    return out;
  }

  void Check(const std::string& stage, const std::string& field, const std::string& value,
             int64_t from, int64_t to, int64_t limit, Order order, bool latest) {
    ++cases_;
    const IndexQuery q(store_.get(), nullptr);
    Result<IndexAnswer> got = latest ? q.Latest(field, value, static_cast<int>(limit))
                                     : q.Range(field, value, from, to, limit, order);
    const std::string what =
        "[" + stage + ", seed " + std::to_string(seed_) + "] " + (latest ? "Latest" : "Range") +
        "(" + field + "=\"" + testing::EscapeBytes(value) +
        "\", from=" + std::to_string(from - kT0) +
        ", to=" + (to == INT64_MAX ? "MAX" : std::to_string(to - kT0)) +
        ", limit=" + std::to_string(limit) + (order == Order::kAsc ? ", asc)" : ", desc)");
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
    const std::vector<Event> expected =
        latest ? Expected(field, value, 0, INT64_MAX, limit, Order::kDesc)
               : Expected(field, value, from, to, limit, order);
    if (!expected.empty()) ++nonempty_;
    const std::string diff = testing::DiffEvents(expected, got->events);
    ASSERT_TRUE(diff.empty()) << what << ": " << diff;
  }

  // The series of the payload's "n" (or of "pad", which is no number) over the events with
  // field = value, against the oracle's events of that index range aggregated here, and the
  // buckets of [from, to) in the window that do not index the field, oldest first.
  void CheckSeries(const std::string& stage, const std::string& field, const std::string& value,
                   int64_t from, int64_t to, int64_t step, const std::string& of) {
    ++cases_;
    query::QueryOptions options;
    options.threads = 2;
    query::QueryEngine engine(store_.get(), options);
    Result<query::IndexSeriesAnswer> got = engine.IndexSeries(field, value, of, from, to, step);
    const std::string what = "[" + stage + ", seed " + std::to_string(seed_) + "] IndexSeries(" +
                             field + "=\"" + testing::EscapeBytes(value) + "\", " + of +
                             ", from=" + std::to_string(from - kT0) +
                             ", to=" + std::to_string(to - kT0) + ", step=" + std::to_string(step) +
                             ")";
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
    struct Want {
      uint64_t count = 0;
      double sum = 0, min = 0, max = 0, last = 0;
      std::tuple<int64_t, std::string, int32_t, int64_t> last_key{-1, "", 0, 0};
    };
    std::map<int64_t, Want> want;
    uint64_t not_number = 0;
    for (const Event& e : Expected(field, value, from, to, 1'000'000'000, Order::kAsc)) {
      if (of != "n") {
        ++not_number;
        continue;
      }
      const double v = std::stod(e.payload.substr(e.payload.find(':') + 1));
      Want& w = want[from + (e.ts_ms - from) / step * step];
      w.min = w.count == 0 ? v : std::min(w.min, v);
      w.max = w.count == 0 ? v : std::max(w.max, v);
      ++w.count;
      w.sum += v;
      const auto key = std::make_tuple(e.ts_ms, e.topic, e.partition, e.offset);
      if (key > w.last_key) w.last_key = key, w.last = v;
    }
    if (!want.empty() || not_number > 0) ++nonempty_;
    EXPECT_EQ(got->series.not_number, not_number) << what;
    EXPECT_EQ(got->series.absent, 0u) << what;
    ASSERT_EQ(got->series.points.size(), want.size()) << what;
    size_t i = 0;
    for (const auto& [t, w] : want) {
      const query::SeriesPoint& p = got->series.points[i++];
      ASSERT_EQ(p.t_ms, t) << what;
      EXPECT_EQ(p.count, w.count) << what << " step " << t;
      EXPECT_DOUBLE_EQ(p.sum, w.sum) << what << " step " << t;
      EXPECT_EQ(p.min, w.min) << what << " step " << t;
      EXPECT_EQ(p.max, w.max) << what << " step " << t;
      EXPECT_EQ(p.last, w.last) << what << " step " << t;
    }
    std::vector<int64_t> unindexed, want_unindexed;
    for (const auto& s : got->unindexed) unindexed.push_back(s.start_ms);
    for (const auto& b : store_->Buckets()) {
      if (!b->Indexes(field) && b->end_ms() > std::max(from, store_->WindowStartMs()) &&
          b->start_ms() < to) {
        want_unindexed.push_back(b->start_ms());
      }
    }
    EXPECT_EQ(unindexed, want_unindexed) << what;
  }

  void CheckAll(const std::string& stage, const std::vector<std::string>& fields) {
    std::uniform_int_distribution<int> coin(0, 1);
    std::uniform_int_distribution<int64_t> point(-2 * kBucketMs, 16 * kBucketMs);
    const std::vector<int64_t> limits = {1, 2, 3, 7, 50, 100000};
    std::uniform_int_distribution<size_t> pick_limit(0, limits.size() - 1);
    std::vector<std::string> values = values_;
    values.insert(values.end(), absent_values_.begin(), absent_values_.end());
    values.push_back("alarm");
    values.push_back("info");
    for (const std::string& field : fields) {
      for (const std::string& value : values) {
        for (int n : {1, 3, 10, 10000}) {
          ASSERT_NO_FATAL_FAILURE(Check(stage, field, value, 0, 0, n, Order::kDesc, true));
        }
        for (int i = 0; i < 12; ++i) {
          int64_t from = kT0 + point(rng_), to = kT0 + point(rng_);
          if (i == 0) from = 0, to = INT64_MAX;
          if (i == 1) to = from + 1;
          if (from > to) std::swap(from, to);
          if (from == to) ++to;
          ASSERT_NO_FATAL_FAILURE(Check(stage, field, value, from, to, limits[pick_limit(rng_)],
                                        coin(rng_) ? Order::kAsc : Order::kDesc, false));
          if (i % 4 == 1 && from > 0) {
            std::uniform_int_distribution<int64_t> step(1 + (to - from) / 10000, 2 * kBucketMs);
            ASSERT_NO_FATAL_FAILURE(
                CheckSeries(stage, field, value, from, to, step(rng_), i == 9 ? "pad" : "n"));
          }
        }
      }
    }
    // Scans see events only: the index rows in every salt range are not events.
    query::QueryEngine engine(store_.get(), query::QueryOptions{});
    size_t scanned = 0;
    ASSERT_TRUE(engine
                    .Scan(0, INT64_MAX, query::kNoLimit,
                          [&](const Event&) {
                            ++scanned;
                            return true;
                          })
                    .ok());
    EXPECT_EQ(scanned, events_.Scan(0, INT64_MAX, store_->WindowStartMs()).size()) << stage;
  }

  std::vector<TestEvent> Generate(int64_t first_bucket_start, std::vector<int> per_bucket) {
    testing::EventGenSpec spec;
    spec.ids = ids_;
    spec.topics = {"orders", "sensors"};
    spec.partitions = 3;
    spec.bucket_ms = kBucketMs;
    spec.first_bucket_start_ms = first_bucket_start;
    spec.events_per_bucket = std::move(per_bucket);
    return testing::GenerateEvents(spec, &rng_, &next_offset_);
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  testing::TempDir dir_;
  ManualClock clock_{kT0 + kTtlMs};
  std::unique_ptr<EventStore> store_;
  std::vector<std::string> ids_, values_, absent_values_;
  Oracle events_;  // every stored event, by id
  Oracle index_;   // every index entry, keyed by "field\0value"
  std::map<std::tuple<uint16_t, int32_t, int64_t>, Event> by_position_;
  std::map<store::TopicPartition, int64_t> next_offset_;
  int cases_ = 0;
  int nonempty_ = 0;
};

TEST_P(IndexOracleTest, MatchesTheOracle) {
  std::uniform_int_distribution<int> busy(20, 90);
  std::vector<int> per_bucket;
  for (int b = 0; b < 12; ++b) per_bucket.push_back(b == 3 ? 0 : b == 5 ? 1 : busy(rng_));
  ASSERT_NO_FATAL_FAILURE(Write(Generate(kT0, per_bucket), false));
  ASSERT_NO_FATAL_FAILURE(CheckAll("wave 1", {"site", "meta.type"}));

  clock_.Set(clock_.NowMs() + 3 * kBucketMs + 1);  // the window moves past 3 buckets
  ASSERT_TRUE(store_->DropExpiredBuckets().ok());
  ASSERT_NO_FATAL_FAILURE(CheckAll("window moved", {"site", "meta.type"}));

  // Reopen: the open-time check counts every bucket's rows against its event counters, so index
  // rows counted as events would fail the open.
  ASSERT_NO_FATAL_FAILURE(Open({"site", "meta.type"}));
  ASSERT_NO_FATAL_FAILURE(CheckAll("reopened", {"site", "meta.type"}));

  // One more field: buckets made from now on index it, the older ones say they do not.
  ASSERT_NO_FATAL_FAILURE(Open({"site", "meta.type", "extra"}));
  std::vector<int64_t> old_buckets;
  for (const auto& b : store_->Buckets()) old_buckets.push_back(b->start_ms());
  ASSERT_FALSE(old_buckets.empty());
  clock_.Set(clock_.NowMs() + 4 * kBucketMs);
  ASSERT_TRUE(store_->DropExpiredBuckets().ok());
  const int64_t first_new = old_buckets.back() + kBucketMs;
  ASSERT_NO_FATAL_FAILURE(Write(Generate(first_new, {busy(rng_), busy(rng_), 1}), true));
  ASSERT_NO_FATAL_FAILURE(CheckAll("field added", {"site", "meta.type", "extra"}));

  const IndexQuery q(store_.get(), nullptr);
  Result<IndexAnswer> all = q.Latest("extra", "a", 10000);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<int64_t> unindexed;
  for (const auto& span : all->unindexed) unindexed.push_back(span.start_ms);
  std::vector<int64_t> want;
  for (const auto& b : store_->Buckets()) {
    if (!b->Indexes("extra") && b->end_ms() > store_->WindowStartMs())
      want.push_back(b->start_ms());
  }
  std::reverse(want.begin(), want.end());  // a latest visits buckets newest first
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(unindexed, want);
  Result<IndexAnswer> site = q.Latest("site", "a", 10000);
  ASSERT_TRUE(site.ok());
  EXPECT_TRUE(site->unindexed.empty()) << "every bucket indexes site";

  // A field not in index.fields is refused, whatever older buckets indexed.
  EXPECT_EQ(q.Latest("not.indexed", "a", 10).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(q.Latest("site", std::string(257, 'v'), 10).status().code(),
            Status::Code::kInvalidArgument);

  EXPECT_GT(nonempty_, cases_ / 4) << "too few answers held events: the cases are vacuous";
  std::printf("%d index cases, %d non-empty\n", cases_, nonempty_);
}

INSTANTIATE_TEST_SUITE_P(SaltBy, IndexOracleTest,
                         ::testing::Values(Param{SaltBy::kRecord, 1}, Param{SaltBy::kRecord, 16},
                                           Param{SaltBy::kId, 3}, Param{SaltBy::kId, 16},
                                           Param{SaltBy::kAdaptive, 3},
                                           Param{SaltBy::kAdaptive, 16}),
                         ParamName);

}  // namespace
}  // namespace hotrow::index_oracle_test
