#include <gtest/gtest.h>

#include "live/position.h"

namespace hotrow::live {
namespace {

TEST(StreamPositionTest, TextRoundTrips) {
  StreamPosition p;
  p.made_ms = 1764330000000;
  p.next[{"iot", 0}] = 1234;
  p.next[{"iot", 1}] = 998;
  p.next[{"other.t-1_x", 0}] = 5;
  EXPECT_EQ(p.ToString(), "1764330000000/iot:0.1234,1.998;other.t-1_x:0.5");
  Result<StreamPosition> back = ParseStreamPosition(p.ToString());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->made_ms, p.made_ms);
  EXPECT_EQ(back->next, p.next);
  Result<StreamPosition> empty = ParseStreamPosition("7/");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->next.empty());
}

TEST(StreamPositionTest, BadTextIsRefusedNamingTheShape) {
  for (const char* bad : {"", "12", "x/iot:0.1", "1/iot", "1/iot:", "1/iot:0", "1/iot:0.x",
                          "1/i t:0.1", "1/:0.1", "1/iot:-1.2", "1/iot:0.1,", "1/iot:0.1;;"}) {
    Result<StreamPosition> p = ParseStreamPosition(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("expected MS/TOPIC"), std::string::npos);
    }
  }
}

TEST(StreamPositionTest, AdvanceOnlyMovesForward) {
  StreamPosition p;
  p.Advance({"t", 0}, 10);
  EXPECT_EQ(p.NextOf({"t", 0}), 11);
  p.Advance({"t", 0}, 3);
  EXPECT_EQ(p.NextOf({"t", 0}), 11);
  EXPECT_EQ(p.NextOf({"t", 1}), 0);
}

}  // namespace
}  // namespace hotrow::live
