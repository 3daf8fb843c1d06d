#include "wire/url_codec.h"

#include <gtest/gtest.h>

namespace hotrow::wire {
namespace {

TEST(UrlCodecTest, PercentDecodeTurnsEscapesIntoBytes) {
  Result<std::string> r = PercentDecode("a%2Fb%00c%ffd%41");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, std::string("a/b\0c\xff"
                            "dA",
                            8));
}

TEST(UrlCodecTest, PercentDecodeKeepsPlusLiteral) {
  Result<std::string> r = PercentDecode("2023-11-14T23:13:20+01:00");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "2023-11-14T23:13:20+01:00");
}

TEST(UrlCodecTest, PercentDecodeDecodesOnlyOnce) {
  Result<std::string> r = PercentDecode("%252F");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "%2F");
}

TEST(UrlCodecTest, PercentDecodeRefusesTruncatedOrNonHexEscapes) {
  for (const char* bad : {"%", "%4", "abc%", "%zz", "%4g", "a%%41"}) {
    Result<std::string> r = PercentDecode(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("percent-encoding"), std::string::npos);
    }
  }
}

TEST(UrlCodecTest, PercentEncodeRoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string encoded = PercentEncode(all);
  for (char c : encoded) {
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '%' || c == '-' || c == '.' ||
                c == '_' || c == '~')
        << c;
  }
  Result<std::string> decoded = PercentDecode(encoded);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, all);
}

TEST(UrlCodecTest, PercentEncodeLeavesUnreservedAlone) {
  EXPECT_EQ(PercentEncode("device-0001_x.y~z"), "device-0001_x.y~z");
  EXPECT_EQ(PercentEncode("a/b c+d"), "a%2Fb%20c%2Bd");
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(UrlCodecTest, ParseQueryStringKeepsOrderAndRepeats) {
  Result<std::vector<QueryParam>> r = ParseQueryString("n=5&&x&n=6&a%3Db=c%26d&=v");
  ASSERT_TRUE(r.ok());
  std::vector<QueryParam> want = {{"n", "5"}, {"x", ""}, {"n", "6"}, {"a=b", "c&d"}, {"", "v"}};
  EXPECT_EQ(*r, want);
}

TEST(UrlCodecTest, ParseQueryStringOfNothingIsEmpty) {
  Result<std::vector<QueryParam>> r = ParseQueryString("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(UrlCodecTest, ParseQueryStringRefusesBadEscapes) {
  EXPECT_FALSE(ParseQueryString("from=%GG").ok());
  EXPECT_FALSE(ParseQueryString("%=1").ok());
}

TEST(UrlCodecTest, SplitRequestTargetDecodesEachSegmentOnce) {
  Result<RequestTarget> r = SplitRequestTarget("/v1/events/a%2Fb%3Fc/latest?n=5&x=%2F");
  ASSERT_TRUE(r.ok());
  std::vector<std::string> want = {"v1", "events", "a/b?c", "latest"};
  EXPECT_EQ(r->segments, want);
  EXPECT_EQ(r->raw_query, "n=5&x=%2F");
}

TEST(UrlCodecTest, SplitRequestTargetKeepsEmptySegments) {
  Result<RequestTarget> r = SplitRequestTarget("/v1/scan/");
  ASSERT_TRUE(r.ok());
  std::vector<std::string> want = {"v1", "scan", ""};
  EXPECT_EQ(r->segments, want);
  r = SplitRequestTarget("/");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->segments, std::vector<std::string>{""});
  r = SplitRequestTarget("/v1/events//latest");
  ASSERT_TRUE(r.ok());
  want = {"v1", "events", "", "latest"};
  EXPECT_EQ(r->segments, want);
}

TEST(UrlCodecTest, SplitRequestTargetOnlyFirstQuestionMarkSplits) {
  Result<RequestTarget> r = SplitRequestTarget("/healthz?a=1?b");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->raw_query, "a=1?b");
}

TEST(UrlCodecTest, SplitRequestTargetRefusesWhatIsNotAnAbsolutePath) {
  EXPECT_FALSE(SplitRequestTarget("").ok());
  EXPECT_FALSE(SplitRequestTarget("*").ok());
  EXPECT_FALSE(SplitRequestTarget("http://x/healthz").ok());
  EXPECT_FALSE(SplitRequestTarget("/v1/events/%zz").ok());
}

}  // namespace
}  // namespace hotrow::wire
