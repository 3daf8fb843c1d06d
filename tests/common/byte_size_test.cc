#include "common/byte_size.h"

#include <gtest/gtest.h>

namespace hotrow {
namespace {

TEST(ByteSizeTest, ParsesBinaryUnits) {
  EXPECT_EQ(*ParseByteSize("0"), 0);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize("7B"), 7);
  EXPECT_EQ(*ParseByteSize("512KiB"), 512 << 10);
  EXPECT_EQ(*ParseByteSize("256MiB"), int64_t{256} << 20);
  EXPECT_EQ(*ParseByteSize("1GiB"), int64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("2TiB"), int64_t{2} << 40);
}

TEST(ByteSizeTest, RefusesEverythingElse) {
  for (const char* text : {"", "MiB", "-1MiB", "1 MiB", "1MB", "1mib", "1.5GiB", "1GiBx", "x",
                           "99999999999999999999", "9999999999TiB"}) {
    Result<int64_t> r = ParseByteSize(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("KiB, MiB"), std::string::npos);
    }
  }
}

TEST(ByteSizeTest, FormatsWithTheLargestExactUnit) {
  EXPECT_EQ(FormatByteSize(0), "0B");
  EXPECT_EQ(FormatByteSize(1000), "1000B");
  EXPECT_EQ(FormatByteSize(int64_t{256} << 20), "256MiB");
  EXPECT_EQ(FormatByteSize(int64_t{3} << 30), "3GiB");
  EXPECT_EQ(FormatByteSize((int64_t{1} << 30) + 1024), "1048577KiB");
  for (int64_t v : {int64_t{1}, int64_t{64} << 20, int64_t{5} << 40}) {
    EXPECT_EQ(*ParseByteSize(FormatByteSize(v)), v);
  }
}

}  // namespace
}  // namespace hotrow
