// Series (query/series.h) against the same aggregation done by hand over the events written:
// many events of one id over several buckets and every salt, steps across bucket edges, the
// window's start, a partition filter, and fields that are absent or not numbers. And the payload
// field reader (query/payload_field.h) alone.

#include "query/series.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "query/payload_field.h"
#include "tests/query/query_engine_test_base.h"

namespace hotrow::query_engine_test {
namespace {

using query::PayloadField;
using query::SeriesPoint;

TEST(PayloadFieldTest, ReadsNumbersAtDottedPathsAndTellsWhatElseItFound) {
  double v = 0;
  PayloadField temp("temp");
  EXPECT_EQ(temp.Read(R"({"temp": 21.5})", &v), PayloadField::Kind::kNumber);
  EXPECT_EQ(v, 21.5);
  EXPECT_EQ(temp.Read(R"({"a": 1, "temp": -3})", &v), PayloadField::Kind::kNumber);
  EXPECT_EQ(v, -3);
  EXPECT_EQ(temp.Read(R"({"temp": 1e3})", &v), PayloadField::Kind::kNumber);
  EXPECT_EQ(v, 1000);
  EXPECT_EQ(temp.Read(R"({"other": 1})", &v), PayloadField::Kind::kAbsent);
  EXPECT_EQ(temp.Read(R"({"temp": null})", &v), PayloadField::Kind::kAbsent);
  EXPECT_EQ(temp.Read(R"({"temp": "21"})", &v), PayloadField::Kind::kNotNumber);
  EXPECT_EQ(temp.Read(R"({"temp": true})", &v), PayloadField::Kind::kNotNumber);
  EXPECT_EQ(temp.Read(R"({"temp": [1]})", &v), PayloadField::Kind::kNotNumber);
  EXPECT_EQ(temp.Read(R"({"temp": {"v": 1}})", &v), PayloadField::Kind::kNotNumber);
  EXPECT_EQ(temp.Read(R"({"temp": })", &v), PayloadField::Kind::kNotNumber);  // broken JSON
  EXPECT_EQ(temp.Read("[1, 2]", &v), PayloadField::Kind::kAbsent);            // no member anywhere
  PayloadField nested("s.t.v");
  EXPECT_EQ(nested.Read(R"({"s": {"t": {"v": 7}}})", &v), PayloadField::Kind::kNumber);
  EXPECT_EQ(v, 7);
  EXPECT_EQ(nested.Read(R"({"s": {"t": 7}})", &v), PayloadField::Kind::kAbsent);
  EXPECT_EQ(nested.Read(R"({"s": 1})", &v), PayloadField::Kind::kAbsent);
  EXPECT_EQ(nested.Read(R"({"s": {"x": {"v": 7}}})", &v), PayloadField::Kind::kAbsent);
  PayloadField dotted("a.b");  // a member named "a.b" is not the path a -> b
  EXPECT_EQ(dotted.Read(R"({"a.b": 1})", &v), PayloadField::Kind::kAbsent);
}

TEST(SeriesArgsTest, StepsAreCountedAndBounded) {
  EXPECT_TRUE(query::CheckSeriesArgs(0, 10'000, 1).ok());
  EXPECT_FALSE(query::CheckSeriesArgs(0, 10'001, 1).ok());
  EXPECT_FALSE(query::CheckSeriesArgs(5, 5, 1).ok());
  EXPECT_FALSE(query::CheckSeriesArgs(0, 5, 0).ok());
  EXPECT_FALSE(query::CheckSeriesArgs(-1, 5, 1).ok());
  EXPECT_EQ(query::StepForMaxPoints(0, 600'000, 600), 1000);
  EXPECT_EQ(query::StepForMaxPoints(0, 600'001, 600), 1001);
  EXPECT_EQ(query::StepForMaxPoints(0, 5, 600), 1);
}

class SeriesTest : public QueryEngineTest {};

TEST_F(SeriesTest, EqualsTheAggregatesOfTheEventsWrittenWhateverTheSaltsAndBuckets) {
  for (const SaltBy salt_by : {SaltBy::kRecord, SaltBy::kId, SaltBy::kAdaptive}) {
    ASSERT_NO_FATAL_FAILURE(OpenStore(salt_by, 8));
    std::vector<TestEvent> events;
    for (int i = 0; i < 3000; ++i) {
      TestEvent e = Ev(i % 10 == 9 ? "other" : "x", kT0 + 2'000 + (i * 7919) % 57'000, "t", i % 4);
      switch (i % 13) {
        case 0:
          e.payload = R"({"m": {"temp": "hot"}})";
          break;
        case 1:
          e.payload = R"({"n": 1})";
          break;
        default:
          e.payload = R"({"m": {"temp": )" + std::to_string((i * 31) % 97 - 40) + "}}";
      }
      events.push_back(e);
    }
    ASSERT_NO_FATAL_FAILURE(Write(events));
    // Only partitions 0..2; `from` is before the window's start (kT0): steps count from it.
    QueryOptions q;
    q.threads = 2;
    const query::PartitionFilter filter = [](uint16_t, int32_t p) { return p < 3; };
    QueryEngine engine(store_.get(), q);
    const int64_t from = kT0 - 3'333, to = kT0 + 58'500, step = 4'321;
    Result<query::SeriesAnswer> got = engine.Series("x", "m.temp", from, to, step, &filter);
    ASSERT_TRUE(got.ok()) << got.status().ToString();

    struct Want {
      uint64_t count = 0;
      double sum = 0, min = std::numeric_limits<double>::infinity(),
             max = -std::numeric_limits<double>::infinity(), last = 0;
      std::tuple<int64_t, int32_t, int64_t> last_key{-1, 0, 0};
    };
    std::map<int64_t, Want> want;
    uint64_t absent = 0, not_number = 0;
    for (const TestEvent& e : events) {
      if (e.id != "x" || e.partition >= 3 || e.ts_ms < from || e.ts_ms >= to) continue;
      if (e.payload.find("hot") != std::string::npos) {
        ++not_number;
        continue;
      }
      if (e.payload.find("temp") == std::string::npos) {
        ++absent;
        continue;
      }
      const double v = std::stod(e.payload.substr(e.payload.find(':', 6) + 1));
      Want& w = want[from + (e.ts_ms - from) / step * step];
      ++w.count;
      w.sum += v;
      w.min = std::min(w.min, v);
      w.max = std::max(w.max, v);
      if (std::make_tuple(e.ts_ms, e.partition, e.offset) > w.last_key) {
        w.last_key = {e.ts_ms, e.partition, e.offset};
        w.last = v;
      }
    }
    EXPECT_EQ(got->step_ms, step);
    EXPECT_EQ(got->absent, absent);
    EXPECT_EQ(got->not_number, not_number);
    ASSERT_EQ(got->points.size(), want.size()) << keying::SaltByName(salt_by);
    size_t i = 0;
    for (const auto& [t, w] : want) {
      const SeriesPoint& p = got->points[i++];
      EXPECT_EQ(p.t_ms, t);
      EXPECT_EQ(p.count, w.count) << "step " << t;
      EXPECT_DOUBLE_EQ(p.sum, w.sum) << "step " << t;
      EXPECT_EQ(p.min, w.min) << "step " << t;
      EXPECT_EQ(p.max, w.max) << "step " << t;
      EXPECT_EQ(p.last, w.last) << "step " << t;
      EXPECT_EQ(p.last_ts_ms, std::get<0>(w.last_key));
    }
  }
}

// Ties in time across topics: `last` is the newest by (ts, topic NAME, partition, offset), the
// contract's order, whatever numbers the store gave the topics ("b" is seen first here, so its
// number is lower than "a"'s), and last_at names the winner's topic number.
TEST_F(SeriesTest, LastBreaksTiesInTimeByTopicName) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(SaltBy::kRecord, 4));
  TestEvent b = Ev("x", kT0 + 1'000, "b", 0);
  b.payload = R"({"v": 2})";
  ASSERT_NO_FATAL_FAILURE(Write({b}));
  TestEvent a = Ev("x", kT0 + 1'000, "a", 0);
  a.payload = R"({"v": 1})";
  ASSERT_NO_FATAL_FAILURE(Write({a}));
  QueryEngine engine(store_.get(), QueryOptions{});
  Result<query::SeriesAnswer> got = engine.Series("x", "v", kT0, kT0 + 10'000, 10'000);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->points.size(), 1u);
  EXPECT_EQ(got->points[0].count, 2u);
  EXPECT_EQ(got->points[0].last, 2) << "b ties a in time and sorts after it by name";
  EXPECT_EQ(store_->TopicName(got->points[0].last_topic).value_or(""), "b");
}

}  // namespace
}  // namespace hotrow::query_engine_test
