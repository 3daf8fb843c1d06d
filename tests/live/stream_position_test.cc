#include <gtest/gtest.h>

#include <random>
#include <string>

#include "live/position.h"

namespace hotrow::live {
namespace {

TEST(StreamPositionTest, TextRoundTrips) {
  StreamPosition p;
  p.made_ms = 1764330000000;
  p.next[{"iot", 0}] = 1234;
  p.next[{"iot", 1}] = 998;
  p.next[{"other.t-1_x", 0}] = 5;
  // 1234 - 998 = 236 = 3 * 64 + 44: "Ds"; 998: "AA".
  EXPECT_EQ(p.ToString(), "1764330000000~iot:0.998.2.DsAA;other.t-1_x:0.5.1.A");
  EXPECT_EQ(p.ToDecimalString(), "1764330000000/iot:0.1234,1.998;other.t-1_x:0.5");
  for (const std::string& text : {p.ToString(), p.ToDecimalString()}) {
    Result<StreamPosition> back = ParseStreamPosition(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(back->made_ms, p.made_ms);
    EXPECT_EQ(back->next, p.next);
  }
  for (const char* text : {"7/", "7~"}) {
    Result<StreamPosition> empty = ParseStreamPosition(text);
    ASSERT_TRUE(empty.ok()) << text;
    EXPECT_TRUE(empty->next.empty());
  }
  StreamPosition none;
  none.made_ms = 7;
  EXPECT_EQ(none.ToString(), "7~");
}

// Runs break where partitions are not consecutive; extreme offsets survive.
TEST(StreamPositionTest, CompactTextRoundTripsAnyOffsets) {
  std::mt19937_64 random(42);
  for (int round = 0; round < 500; ++round) {
    StreamPosition p;
    p.made_ms = static_cast<int64_t>(random() >> 20);
    const int partitions = static_cast<int>(random() % 40);
    for (int i = 0; i < partitions; ++i) {
      const std::string topic = random() % 3 == 0 ? "a" : "b.c";
      const int32_t partition = static_cast<int32_t>(random() % 60);
      int64_t offset = 0;
      switch (random() % 4) {
        case 0:
          offset = 0;
          break;
        case 1:
          offset = INT64_MAX - static_cast<int64_t>(random() % 3);
          break;
        case 2:
          offset = static_cast<int64_t>(random() % 100);
          break;
        default:
          offset = static_cast<int64_t>(random() >> 1);
          break;
      }
      p.next[{topic, partition}] = offset;
    }
    const std::string text = p.ToString();
    Result<StreamPosition> back = ParseStreamPosition(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(back->made_ms, p.made_ms) << text;
    EXPECT_EQ(back->next, p.next) << text;
  }
}

// The bound stated in live/position.h: 2,000 partitions of one topic fit a request header (8 KiB)
// with room to spare while their offsets lie within 262,143 of each other, and within 16,777,215
// still fit; the decimal text of the same does not.
TEST(StreamPositionTest, TwoThousandPartitionsFitARequestHeader) {
  std::mt19937_64 random(7);
  for (const int64_t spread : {int64_t{262'143}, int64_t{16'777'215}}) {
    StreamPosition p;
    p.made_ms = 1764330000000;
    for (int32_t partition = 0; partition < 2000; ++partition) {
      p.next[{"sensor-readings.v2", partition}] =
          4'000'000'000 + static_cast<int64_t>(random() % static_cast<uint64_t>(spread + 1));
    }
    p.next[{"sensor-readings.v2", 0}] = 4'000'000'000;
    p.next[{"sensor-readings.v2", 1}] = 4'000'000'000 + spread;
    const std::string text = p.ToString();
    EXPECT_LE(text.size(), spread < (1 << 18) ? 6'050u : 8'050u) << spread;
    EXPECT_LT(text.size(), 8'192u);
    EXPECT_GT(p.ToDecimalString().size(), 20'000u);
    Result<StreamPosition> back = ParseStreamPosition(text);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->next, p.next);
  }
}

TEST(StreamPositionTest, BadTextIsRefusedNamingTheShape) {
  for (const char* bad : {"", "12", "x/iot:0.1", "1/iot", "1/iot:", "1/iot:0", "1/iot:0.x",
                          "1/i t:0.1", "1/:0.1", "1/iot:-1.2", "1/iot:0.1,", "1/iot:0.1;;",
                          // the compact text
                          "1~iot", "1~iot:0.1.1", "1~iot:0.1.1.", "1~iot:0.1.0.A", "1~iot:0.1.12.A",
                          "1~iot:0.1.2.ABC", "1~iot:0.1.1.*", "1~iot:x.1.1.A", "1~iot:0.-1.1.A",
                          "1~iot:2147483647.0.1.AA", "1~iot:0.9223372036854775807.1.B",
                          "1~iot:0.0.11.___________", "1~iot:0.0.1.A,", "1~i t:0.0.1.A"}) {
    Result<StreamPosition> p = ParseStreamPosition(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("expected MS~TOPIC"), std::string::npos);
    }
  }
  // Past 4096 partitions.
  Result<StreamPosition> many = ParseStreamPosition("1~t:0.0.1." + std::string(4097, 'A'));
  EXPECT_FALSE(many.ok());
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
