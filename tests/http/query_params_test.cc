// The parameter parsers of http/query_params.h that are not reached through a route in one
// instance: TakeLocalFlag, which only cluster mode's routes call; and, alone, the forms a Grafana
// dashboard writes (CONTRACT.md "Grafana"): the series' step and max_points, and `format`.

#include "http/query_params.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hotrow::http {
namespace {

TEST(TakeLocalFlagTest, TakesTheFlagOutAndLeavesTheRestInOrder) {
  bool local = false;
  std::string rest;
  ASSERT_TRUE(TakeLocalFlag("n=3&local=true&from=5", &local, &rest).ok());
  EXPECT_TRUE(local);
  EXPECT_EQ(rest, "n=3&from=5");

  rest.clear();
  ASSERT_TRUE(TakeLocalFlag("local=false", &local, &rest).ok());
  EXPECT_FALSE(local);
  EXPECT_EQ(rest, "");

  rest.clear();
  ASSERT_TRUE(TakeLocalFlag("n=3&&localx=1", &local, &rest).ok());
  EXPECT_FALSE(local);
  EXPECT_EQ(rest, "n=3&localx=1");  // a parameter that only starts with "local" is not the flag
}

TEST(TakeLocalFlagTest, RefusesTheFlagTwiceEvenWithTheSameValue) {
  for (const char* query :
       {"local=true&local=true", "local=true&n=1&local=false", "local=false&local=false"}) {
    bool local = false;
    std::string rest;
    const Status st = TakeLocalFlag(query, &local, &rest);
    EXPECT_TRUE(st.IsInvalidArgument()) << query;
    EXPECT_EQ(st.message(), "parameter \"local\" is given more than once") << query;
  }
}

TEST(TakeLocalFlagTest, RefusesAValueOtherThanTrueOrFalseQuotingIt) {
  for (const char* query : {"local", "local=", "local=1", "local=TRUE", "local=yes"}) {
    bool local = false;
    std::string rest;
    const Status st = TakeLocalFlag(query, &local, &rest);
    EXPECT_TRUE(st.IsInvalidArgument()) << query;
    EXPECT_TRUE(st.message().starts_with("local must be true or false, got ")) << st.message();
  }
}

// ---- The series' step as Grafana writes it, max_points, and format ----

constexpr char kWindow[] = "field=temp&from=1700000000000&to=1700000600000";  // 10 minutes

int64_t StepOf(const std::string& query) {
  Result<SeriesParams> p = ParseSeriesParams(query);
  EXPECT_TRUE(p.ok()) << query << ": " << p.status().ToString();
  return p.ok() ? p->step_ms : -1;
}

TEST(SeriesParamsTest, StepTakesIntervalFormsAndPlainMilliseconds) {
  const std::string w = kWindow;
  EXPECT_EQ(StepOf(w + "&step=30s"), 30'000);    // ${__interval}
  EXPECT_EQ(StepOf(w + "&step=30000"), 30'000);  // ${__interval_ms}
  EXPECT_EQ(StepOf(w + "&step=500ms"), 500);
  EXPECT_EQ(StepOf(w + "&step=1m"), 60'000);
  EXPECT_EQ(StepOf(w + "&step=1h"), 3'600'000);  // one step past the range's end is fine
  EXPECT_EQ(StepOf(w + "&step=2d"), 2 * 86'400'000);
  EXPECT_EQ(StepOf(w + "&step=1w"), 7 * 86'400'000);
  EXPECT_EQ(StepOf(w + "&step=1y"), 365LL * 86'400'000);
}

TEST(SeriesParamsTest, TimesTakeEpochMillisecondsAndRfc3339AsGrafanaWritesThem) {
  // ${__from} / ${__to}; ${__from:date} (fraction trimmed by Infinity's backend: .25, none).
  for (const char* window : {"from=1700000000000&to=1700000600000",
                             "from=2023-11-14T22:13:20.000Z&to=2023-11-14T22:23:20Z",
                             "from=2023-11-14T22:13:20Z&to=2023-11-14T22:23:20.25Z",
                             "from=2023-11-14T23:13:20%2B01:00&to=1700000600000"}) {
    Result<SeriesParams> p = ParseSeriesParams(std::string("field=temp&step=1m&") + window);
    ASSERT_TRUE(p.ok()) << window << ": " << p.status().ToString();
    EXPECT_EQ(p->from_ms, 1'700'000'000'000) << window;
    EXPECT_GE(p->to_ms, 1'700'000'600'000) << window;
    EXPECT_LE(p->to_ms, 1'700'000'600'250) << window;
  }
}

TEST(SeriesParamsTest, MaxPointsDerivesTheSmallestStepGivingAtMostThatMany) {
  const std::string w = kWindow;
  EXPECT_EQ(StepOf(w + "&max_points=1200"), 500);  // $__maxDataPoints-like: 600000 / 1200
  EXPECT_EQ(StepOf(w + "&max_points=7"), 85'715);  // rounded up: 7 steps cover the range
  EXPECT_EQ(StepOf(w + "&max_points=10000"), 60);
  EXPECT_EQ(StepOf(w + "&max_points=1"), 600'000);
}

TEST(SeriesParamsTest, BadStepsAndMaxPointsAreRefusedNamingTheParameter) {
  const std::string w = kWindow;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"&step=1.5s", "step: expected milliseconds or an interval"},
      {"&step=-1s", "step: expected milliseconds or an interval"},
      {"&step=1M", "step: expected milliseconds or an interval"},
      {"&step=1m30s", "step: expected milliseconds or an interval"},
      {"&step=", "step: expected milliseconds or an interval"},
      {"&step=$__interval", "step: expected milliseconds or an interval"},  // not interpolated
      {"&step=0", "step must be at least 1 ms"},
      {"&step=0s", "step must be at least 1 ms"},
      {"&step=59ms", "step of 59 ms cuts the range into 10170 steps; at most 10000"},
      {"&max_points=0", "max_points must be an integer from 1 to 10000"},
      {"&max_points=10001", "max_points must be an integer from 1 to 10000"},
      {"&max_points=$__maxDataPoints", "max_points must be an integer from 1 to 10000"},
      {"&step=1s&max_points=10", "expected exactly one of step"},
      {"", "expected exactly one of step"},
  };
  for (const auto& [extra, message] : cases) {
    Result<SeriesParams> p = ParseSeriesParams(w + extra);
    ASSERT_FALSE(p.ok()) << extra;
    EXPECT_TRUE(p.status().IsInvalidArgument()) << extra;
    EXPECT_TRUE(p.status().message().starts_with(message)) << extra << ": " << p.status().message();
  }
}

TEST(TakeFormatParamTest, TakesRowsOrJsonOutAndLeavesTheRestInOrder) {
  AnswerFormat format = AnswerFormat::kJson;
  std::string rest;
  ASSERT_TRUE(TakeFormatParam("n=3&format=rows&from=5", &format, &rest).ok());
  EXPECT_EQ(format, AnswerFormat::kRows);
  EXPECT_EQ(rest, "n=3&from=5");

  rest.clear();
  ASSERT_TRUE(TakeFormatParam("format=json", &format, &rest).ok());
  EXPECT_EQ(format, AnswerFormat::kJson);
  EXPECT_EQ(rest, "");

  rest.clear();
  ASSERT_TRUE(TakeFormatParam("formats=rows&n=1", &format, &rest).ok());
  EXPECT_EQ(format, AnswerFormat::kJson);  // another parameter, left for the route to refuse
  EXPECT_EQ(rest, "formats=rows&n=1");

  rest.clear();
  ASSERT_TRUE(TakeFormatParam("format=%72ows", &format, &rest).ok());  // percent-encoded
  EXPECT_EQ(format, AnswerFormat::kRows);
}

TEST(TakeFormatParamTest, RefusesAnUnknownFormatOrOneGivenTwice) {
  for (const char* query : {"format=csv", "format=", "format", "format=ROWS", "format=rows%20"}) {
    AnswerFormat format = AnswerFormat::kJson;
    std::string rest;
    const Status st = TakeFormatParam(query, &format, &rest);
    EXPECT_TRUE(st.IsInvalidArgument()) << query;
    EXPECT_TRUE(st.message().starts_with("format must be json or rows, got ")) << st.message();
  }
  AnswerFormat format = AnswerFormat::kJson;
  std::string rest;
  const Status twice = TakeFormatParam("format=rows&format=rows", &format, &rest);
  EXPECT_EQ(twice.message(), "parameter \"format\" is given more than once");
  const Status bad_escape = TakeFormatParam("format=%ZZ", &format, &rest);
  EXPECT_TRUE(bad_escape.IsInvalidArgument());
}

}  // namespace
}  // namespace hotrow::http
