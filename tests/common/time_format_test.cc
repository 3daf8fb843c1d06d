#include "common/time_format.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace hotrow {
namespace {

// 2023-11-14T22:13:20Z, a round number of seconds that is easy to check by hand.
constexpr int64_t kNovember2023Ms = 1'700'000'000'000;
// 9999-12-31T23:59:59.999Z: the last instant a four-digit RFC 3339 year can express.
constexpr int64_t kLastFourDigitYearMs = 253'402'300'799'999;

// Parses `text` and expects success; the failure message shows the input and the error.
int64_t ParseOk(std::string_view text) {
  Result<int64_t> r = ParseTimeMs(text);
  EXPECT_TRUE(r.ok()) << "\"" << text << "\": " << r.status().ToString();
  return r.ok() ? *r : -1;
}

void ExpectBadTime(std::string_view text) {
  Result<int64_t> r = ParseTimeMs(text);
  ASSERT_FALSE(r.ok()) << "\"" << text << "\" parsed as " << *r;
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_FALSE(r.status().message().empty());
}

// ---- ParseTimeMs: integer milliseconds ----

TEST(ParseTimeMsTest, AcceptsIntegerMilliseconds) {
  EXPECT_EQ(ParseOk("0"), 0);
  EXPECT_EQ(ParseOk("1"), 1);
  EXPECT_EQ(ParseOk("1700000000000"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("0001700000000000"), kNovember2023Ms);  // leading zeros are still a number
  EXPECT_EQ(ParseOk("9223372036854775807"), INT64_MAX);
}

TEST(ParseTimeMsTest, RejectsIntegerBeyondInt64) {
  ExpectBadTime("9223372036854775808");
  ExpectBadTime("18446744073709551616");
  ExpectBadTime("99999999999999999999999999");
}

TEST(ParseTimeMsTest, OverflowErrorNamesTheInput) {
  Result<int64_t> r = ParseTimeMs("9223372036854775808");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("9223372036854775808"), std::string::npos)
      << r.status().message();
}

TEST(ParseTimeMsTest, RejectsSignedOrDecoratedIntegers) {
  ExpectBadTime("-1");
  ExpectBadTime("+1");
  ExpectBadTime(" 1");
  ExpectBadTime("1 ");
  ExpectBadTime("1.5");
  ExpectBadTime("1e3");
  ExpectBadTime("0x10");
  ExpectBadTime("12ms");
}

TEST(ParseTimeMsTest, RejectsEmptyAndGarbage) {
  ExpectBadTime("");
  ExpectBadTime(" ");
  ExpectBadTime("now");
  ExpectBadTime("yesterday");
  ExpectBadTime("T");
  ExpectBadTime("Z");
  ExpectBadTime(std::string_view("\0", 1));
  ExpectBadTime("\xff\xfe");
}

TEST(ParseTimeMsTest, ErrorSaysWhatWasExpectedAndEchoesTheInput) {
  Result<int64_t> r = ParseTimeMs("half past nine");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("RFC 3339"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("half past nine"), std::string::npos);
}

TEST(ParseTimeMsTest, ErrorMessageOfHugeInputIsBounded) {
  const std::string huge(1 << 20, 'x');
  Result<int64_t> r = ParseTimeMs(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 1024u);
}

TEST(ParseTimeMsTest, AcceptsRfc3339) {
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20Z"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-14T23:13:20.5+01:00"), kNovember2023Ms + 500);
}

// ---- ParseRfc3339Ms ----

TEST(ParseRfc3339MsTest, EpochIsZero) {
  Result<int64_t> r = ParseRfc3339Ms("1970-01-01T00:00:00Z");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 0);
  EXPECT_EQ(ParseOk("1970-01-01T00:00:00.001Z"), 1);
}

TEST(ParseRfc3339MsTest, KnownInstants) {
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20Z"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2000-01-01T00:00:00Z"), 946'684'800'000);
  EXPECT_EQ(ParseOk("2038-01-19T03:14:07Z"), int64_t{INT32_MAX} * 1000);
  EXPECT_EQ(ParseOk("2038-01-19T03:14:08Z"), (int64_t{INT32_MAX} + 1) * 1000);  // past 32-bit
  EXPECT_EQ(ParseOk("9999-12-31T23:59:59.999Z"), kLastFourDigitYearMs);
}

TEST(ParseRfc3339MsTest, UtcDesignatorMayBeLowerCase) {
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20z"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-14t22:13:20Z"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-14t22:13:20z"), kNovember2023Ms);
}

TEST(ParseRfc3339MsTest, OffsetsAreSubtractedToGetUtc) {
  EXPECT_EQ(ParseOk("2023-11-14T23:13:20+01:00"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-14T16:43:20-05:30"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-15T03:58:20+05:45"), kNovember2023Ms);  // Nepal
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20+00:00"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20-00:00"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-15T22:12:20+23:59"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-13T22:14:20-23:59"), kNovember2023Ms);
}

TEST(ParseRfc3339MsTest, OffsetCrossesDayMonthAndYear) {
  EXPECT_EQ(ParseOk("2023-12-31T23:30:00-01:00"), ParseOk("2024-01-01T00:30:00Z"));
  EXPECT_EQ(ParseOk("2024-03-01T00:30:00+01:00"), ParseOk("2024-02-29T23:30:00Z"));
}

TEST(ParseRfc3339MsTest, FractionsAreMillisecondsTruncated) {
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20.5Z"), kNovember2023Ms + 500);
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20.05Z"), kNovember2023Ms + 50);
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20.123Z"), kNovember2023Ms + 123);
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20.000Z"), kNovember2023Ms);
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20.1239Z"), kNovember2023Ms + 123);
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20.123456789Z"), kNovember2023Ms + 123);
  EXPECT_EQ(ParseOk("2023-11-14T22:13:20.999999999Z"), kNovember2023Ms + 999);
  EXPECT_EQ(ParseOk("2023-11-14T23:13:20.123456789+01:00"), kNovember2023Ms + 123);
}

TEST(ParseRfc3339MsTest, FractionNeedsDigits) {
  ExpectBadTime("2023-11-14T22:13:20.Z");
  ExpectBadTime("2023-11-14T22:13:20.");
  ExpectBadTime("2023-11-14T22:13:20.+01:00");
  ExpectBadTime("2023-11-14T22:13:20,5Z");
  ExpectBadTime("2023-11-14T22:13:20.5.5Z");
}

TEST(ParseRfc3339MsTest, LeapDayOnlyInLeapYears) {
  EXPECT_EQ(ParseOk("2024-02-29T00:00:00Z"), 1'709'164'800'000);
  EXPECT_EQ(ParseOk("2024-03-01T00:00:00Z") - ParseOk("2024-02-29T00:00:00Z"), 86'400'000);
  EXPECT_EQ(ParseOk("2000-02-29T12:00:00Z"), 951'825'600'000);  // divisible by 400: leap
  ExpectBadTime("2023-02-29T00:00:00Z");
  ExpectBadTime("2100-02-29T00:00:00Z");  // divisible by 100, not 400: not leap
  ExpectBadTime("2024-02-30T00:00:00Z");
}

TEST(ParseRfc3339MsTest, EveryMonthEndsOnItsLastDay) {
  const char* last_days[] = {"2023-01-31", "2023-02-28", "2023-03-31", "2023-04-30",
                             "2023-05-31", "2023-06-30", "2023-07-31", "2023-08-31",
                             "2023-09-30", "2023-10-31", "2023-11-30", "2023-12-31"};
  const char* day_after[] = {"2023-01-32", "2023-02-29", "2023-03-32", "2023-04-31",
                             "2023-05-32", "2023-06-31", "2023-07-32", "2023-08-32",
                             "2023-09-31", "2023-10-32", "2023-11-31", "2023-12-32"};
  for (int m = 0; m < 12; ++m) {
    SCOPED_TRACE(last_days[m]);
    EXPECT_GT(ParseOk(std::string(last_days[m]) + "T00:00:00Z"), 0);
    ExpectBadTime(std::string(day_after[m]) + "T00:00:00Z");
  }
}

TEST(ParseRfc3339MsTest, RejectsOutOfRangeFields) {
  ExpectBadTime("2023-00-14T22:13:20Z");
  ExpectBadTime("2023-13-14T22:13:20Z");
  ExpectBadTime("2023-99-14T22:13:20Z");
  ExpectBadTime("2023-11-00T22:13:20Z");
  ExpectBadTime("2023-11-31T22:13:20Z");
  ExpectBadTime("2023-11-14T24:00:00Z");
  ExpectBadTime("2023-11-14T25:13:20Z");
  ExpectBadTime("2023-11-14T22:60:20Z");
  ExpectBadTime("2023-11-14T22:13:61Z");
  ExpectBadTime("2023-11-14T22:13:20+24:00");
  ExpectBadTime("2023-11-14T22:13:20+01:60");
}

TEST(ParseRfc3339MsTest, LeapSecondCountsAsTheNextSecond) {
  // Documented behaviour: second 60 is accepted and lands on the start of the next minute.
  EXPECT_EQ(ParseOk("2016-12-31T23:59:60Z"), ParseOk("2017-01-01T00:00:00Z"));
}

TEST(ParseRfc3339MsTest, RejectsMalformedShapes) {
  ExpectBadTime("2023-11-14");
  ExpectBadTime("2023-11-14T22:13Z");
  ExpectBadTime("2023-11-14T22:13:20");       // no offset
  ExpectBadTime("2023-11-14T22:13:20+0100");  // offset without colon
  ExpectBadTime("2023-11-14T22:13:20+01");    // offset without minutes
  ExpectBadTime("2023-11-14T22:13:20+1:00");
  ExpectBadTime("2023-11-14X22:13:20Z");
  ExpectBadTime("2023/11/14T22:13:20Z");
  ExpectBadTime("23-11-14T22:13:20Z");  // two-digit year
  ExpectBadTime("2023-1-14T22:13:20Z");
  ExpectBadTime("2023-11-4T22:13:20Z");
  ExpectBadTime("2023-11-14T2:13:20Z");
  ExpectBadTime("02023-11-14T22:13:20Z");
  ExpectBadTime("2023-11-14T22:13:2OZ");  // letter O for zero
  ExpectBadTime("+2023-11-14T22:13:20Z");
  ExpectBadTime(" 2023-11-14T22:13:20Z");
  ExpectBadTime("2023-11-14T22:13:20 Z");
}

TEST(ParseRfc3339MsTest, RejectsTrailingJunk) {
  ExpectBadTime("2023-11-14T22:13:20Z ");
  ExpectBadTime("2023-11-14T22:13:20Zjunk");
  ExpectBadTime("2023-11-14T22:13:20ZZ");
  ExpectBadTime("2023-11-14T22:13:20+01:00Z");
  ExpectBadTime("2023-11-14T22:13:20+01:000");
  ExpectBadTime(std::string_view("2023-11-14T22:13:20Z\0", 21));
}

TEST(ParseRfc3339MsTest, RejectsEveryTruncationOfAValidTime) {
  const std::string full = "2023-11-14T23:13:20.5+01:00";
  for (size_t n = 0; n < full.size(); ++n) {
    const std::string cut = full.substr(0, n);
    // "2023-11-14T23:13:20.5+01:0" etc.: none of the proper prefixes is a complete time.
    SCOPED_TRACE(cut);
    Result<int64_t> r = ParseRfc3339Ms(cut);
    EXPECT_FALSE(r.ok());
  }
}

TEST(ParseRfc3339MsTest, RejectsTimesBeforeTheEpoch) {
  ExpectBadTime("1969-12-31T23:59:59Z");
  ExpectBadTime("1969-12-31T23:59:59.999Z");
  ExpectBadTime("1900-01-01T00:00:00Z");
  ExpectBadTime("0000-01-01T00:00:00Z");
  // The local time is 1970 but the instant is not.
  ExpectBadTime("1970-01-01T00:00:00+01:00");
  ExpectBadTime("1970-01-01T00:59:59.999+01:00");
  EXPECT_EQ(ParseOk("1970-01-01T01:00:00+01:00"), 0);
  // The local time is 1969 but the instant is 1970.
  EXPECT_EQ(ParseOk("1969-12-31T23:00:00-01:00"), 0);
}

TEST(ParseRfc3339MsTest, PreEpochErrorSaysSo) {
  Result<int64_t> r = ParseRfc3339Ms("1969-07-20T20:17:40Z");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("1970"), std::string::npos) << r.status().message();
}

TEST(ParseRfc3339MsTest, DoesNotAcceptIntegerMilliseconds) {
  EXPECT_FALSE(ParseRfc3339Ms("1700000000000").ok());
  EXPECT_FALSE(ParseRfc3339Ms("0").ok());
}

// ---- FormatRfc3339Ms ----

TEST(FormatRfc3339MsTest, FormatsUtcWithMilliseconds) {
  EXPECT_EQ(FormatRfc3339Ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339Ms(1), "1970-01-01T00:00:00.001Z");
  EXPECT_EQ(FormatRfc3339Ms(kNovember2023Ms), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(FormatRfc3339Ms(kNovember2023Ms + 123), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(FormatRfc3339Ms(1'709'164'800'000), "2024-02-29T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339Ms(kLastFourDigitYearMs), "9999-12-31T23:59:59.999Z");
}

TEST(FormatRfc3339MsTest, NeverCrashesOnExtremes) {
  // INT64_MAX is year 292278994: not round-trippable through RFC 3339, but formatted, not crashed.
  EXPECT_FALSE(FormatRfc3339Ms(INT64_MAX).empty());
  EXPECT_FALSE(FormatRfc3339Ms(-1).empty());
}

TEST(FormatRfc3339MsTest, RoundTripsThroughParse) {
  std::mt19937_64 rng(20231114);
  std::uniform_int_distribution<int64_t> any_ms(0, kLastFourDigitYearMs);
  std::uniform_int_distribution<int64_t> recent_ms(kNovember2023Ms - 86'400'000LL * 365 * 5,
                                                   kNovember2023Ms + 86'400'000LL * 365 * 5);
  for (int i = 0; i < 200'000; ++i) {
    const int64_t ms = (i % 2 == 0) ? any_ms(rng) : recent_ms(rng);
    const std::string text = FormatRfc3339Ms(ms);
    Result<int64_t> back = ParseRfc3339Ms(text);
    ASSERT_TRUE(back.ok()) << ms << " -> " << text << ": " << back.status().ToString();
    ASSERT_EQ(*back, ms) << text;
  }
}

TEST(FormatRfc3339MsTest, RoundTripsEveryDayBoundaryFor1970To2100) {
  for (int64_t day = 0; day < 47'482; ++day) {  // 1970-01-01 .. 2099-12-31
    for (int64_t ms : {day * 86'400'000, day * 86'400'000 + 86'399'999}) {
      Result<int64_t> back = ParseRfc3339Ms(FormatRfc3339Ms(ms));
      ASSERT_TRUE(back.ok()) << FormatRfc3339Ms(ms);
      ASSERT_EQ(*back, ms) << FormatRfc3339Ms(ms);
    }
  }
}

TEST(FormatRfc3339MsTest, CanonicalTextRoundTrips) {
  for (const char* text : {"1970-01-01T00:00:00.000Z", "2024-02-29T23:59:59.999Z",
                           "2000-12-31T12:00:00.500Z", "9999-12-31T23:59:59.999Z"}) {
    Result<int64_t> ms = ParseRfc3339Ms(text);
    ASSERT_TRUE(ms.ok()) << text;
    EXPECT_EQ(FormatRfc3339Ms(*ms), text);
  }
}

// ---- ParseDurationMs / FormatDurationMs ----

int64_t DurationOk(std::string_view text) {
  Result<int64_t> r = ParseDurationMs(text);
  EXPECT_TRUE(r.ok()) << "\"" << text << "\": " << r.status().ToString();
  return r.ok() ? *r : -1;
}

void ExpectBadDuration(std::string_view text) {
  Result<int64_t> r = ParseDurationMs(text);
  ASSERT_FALSE(r.ok()) << "\"" << text << "\" parsed as " << *r;
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
}

TEST(ParseDurationMsTest, AcceptsEveryUnit) {
  EXPECT_EQ(DurationOk("500ms"), 500);
  EXPECT_EQ(DurationOk("20s"), 20'000);
  EXPECT_EQ(DurationOk("10m"), 600'000);
  EXPECT_EQ(DurationOk("1h"), 3'600'000);
  EXPECT_EQ(DurationOk("36h"), 129'600'000);
}

TEST(ParseDurationMsTest, ZeroIsAllowedInAnyUnit) {
  EXPECT_EQ(DurationOk("0s"), 0);
  EXPECT_EQ(DurationOk("0ms"), 0);
  EXPECT_EQ(DurationOk("0m"), 0);
  EXPECT_EQ(DurationOk("0h"), 0);
}

TEST(ParseDurationMsTest, LargestValuesThatFitAreAccepted) {
  EXPECT_EQ(DurationOk("9223372036854775807ms"), INT64_MAX);
  EXPECT_EQ(DurationOk("9223372036854775s"), 9'223'372'036'854'775'000);
  EXPECT_EQ(DurationOk("2562047788015h"), 2'562'047'788'015 * 3'600'000);
}

TEST(ParseDurationMsTest, RejectsOverflow) {
  ExpectBadDuration("9223372036854775808ms");
  ExpectBadDuration("99999999999999999999999ms");
  ExpectBadDuration("9223372036854776s");
  ExpectBadDuration("153722867280913m");
  ExpectBadDuration("2562047788016h");
}

TEST(ParseDurationMsTest, RejectsMissingOrUnknownParts) {
  ExpectBadDuration("");
  ExpectBadDuration("10");  // no unit
  ExpectBadDuration("ms");  // no number
  ExpectBadDuration("s");
  ExpectBadDuration("1d");
  ExpectBadDuration("1w");
  ExpectBadDuration("1us");
  ExpectBadDuration("1sec");
  ExpectBadDuration("1hm");
  ExpectBadDuration("1m30s");
}

TEST(ParseDurationMsTest, RejectsSignsFractionsAndSpaces) {
  ExpectBadDuration("-1s");
  ExpectBadDuration("+1s");
  ExpectBadDuration("1.5s");
  ExpectBadDuration(".5s");
  ExpectBadDuration("1 s");
  ExpectBadDuration(" 1s");
  ExpectBadDuration("1s ");
  ExpectBadDuration(std::string_view("1s\0", 3));
}

TEST(ParseDurationMsTest, ErrorGivesExamples) {
  Result<int64_t> r = ParseDurationMs("1d");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("500ms"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("1d"), std::string::npos) << r.status().message();
}

TEST(FormatDurationMsTest, UsesTheLargestExactUnit) {
  EXPECT_EQ(FormatDurationMs(0), "0ms");
  EXPECT_EQ(FormatDurationMs(1), "1ms");
  EXPECT_EQ(FormatDurationMs(500), "500ms");
  EXPECT_EQ(FormatDurationMs(1500), "1500ms");
  EXPECT_EQ(FormatDurationMs(1000), "1s");
  EXPECT_EQ(FormatDurationMs(20'000), "20s");
  EXPECT_EQ(FormatDurationMs(90'000), "90s");
  EXPECT_EQ(FormatDurationMs(60'000), "1m");
  EXPECT_EQ(FormatDurationMs(600'000), "10m");
  EXPECT_EQ(FormatDurationMs(5'400'000), "90m");
  EXPECT_EQ(FormatDurationMs(3'600'000), "1h");
  EXPECT_EQ(FormatDurationMs(86'400'000), "24h");
  EXPECT_EQ(FormatDurationMs(INT64_MAX), "9223372036854775807ms");
}

TEST(FormatDurationMsTest, RoundTripsThroughParse) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100'000; ++i) {
    int64_t ms = 0;
    switch (i % 4) {
      case 0:
        ms = static_cast<int64_t>(rng() >> 1);
        break;  // any non-negative
      case 1:
        ms = static_cast<int64_t>(rng() % 100'000) * 1000;
        break;
      case 2:
        ms = static_cast<int64_t>(rng() % 100'000) * 60'000;
        break;
      case 3:
        ms = static_cast<int64_t>(rng() % 100'000) * 3'600'000;
        break;
    }
    const std::string text = FormatDurationMs(ms);
    Result<int64_t> back = ParseDurationMs(text);
    ASSERT_TRUE(back.ok()) << ms << " -> " << text;
    ASSERT_EQ(*back, ms) << text;
  }
}

// ---- ParseIntervalMs: a series step as Grafana writes ${__interval} or ${__interval_ms} ----

int64_t IntervalOk(std::string_view text) {
  Result<int64_t> r = ParseIntervalMs(text);
  EXPECT_TRUE(r.ok()) << "\"" << text << "\": " << r.status().ToString();
  return r.ok() ? *r : -1;
}

void ExpectBadInterval(std::string_view text) {
  Result<int64_t> r = ParseIntervalMs(text);
  ASSERT_FALSE(r.ok()) << "\"" << text << "\" parsed as " << *r;
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_TRUE(r.status().message().starts_with("expected milliseconds or an interval such as"))
      << r.status().message();
}

TEST(ParseIntervalMsTest, AcceptsPlainMillisecondsAsIntervalMsWritesThem) {
  EXPECT_EQ(IntervalOk("1"), 1);
  EXPECT_EQ(IntervalOk("30000"), 30'000);
  EXPECT_EQ(IntervalOk("0"), 0);  // the series says a step must be at least 1 ms, not the parser
  EXPECT_EQ(IntervalOk("9223372036854775807"), INT64_MAX);
}

TEST(ParseIntervalMsTest, AcceptsEveryGrafanaUnitCountedAsGrafanaCountsIt) {
  EXPECT_EQ(IntervalOk("500ms"), 500);
  EXPECT_EQ(IntervalOk("15s"), 15'000);
  EXPECT_EQ(IntervalOk("1m"), 60'000);
  EXPECT_EQ(IntervalOk("1h"), 3'600'000);
  EXPECT_EQ(IntervalOk("2d"), 2 * 86'400'000);
  EXPECT_EQ(IntervalOk("1w"), 7 * 86'400'000);
  EXPECT_EQ(IntervalOk("1y"), 365LL * 86'400'000);  // Grafana's year: 31536000 s
}

TEST(ParseIntervalMsTest, LargestValuesThatFitAreAcceptedAndOverflowIsRefused) {
  EXPECT_EQ(IntervalOk("292471208y"), 292'471'208LL * 365 * 86'400'000);
  ExpectBadInterval("292471209y");
  ExpectBadInterval("15250284452472w");
  ExpectBadInterval("106751991167301d");
  ExpectBadInterval("9223372036854775808");
  ExpectBadInterval("99999999999999999999999ms");
}

TEST(ParseIntervalMsTest, RefusesWhatGrafanaNeverWrites) {
  for (const char* text : {"", "s", "ms", "-1s", "+1s", "1.5s", "1e3", " 1s", "1s ", "1 s", "1m30s",
                           "1M", "1S", "1us", "1sec", "1min", "0x10", "1,000", "\xff"}) {
    ExpectBadInterval(text);
  }
}

}  // namespace
}  // namespace hotrow
