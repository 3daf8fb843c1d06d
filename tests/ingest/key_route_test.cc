// Where a partitioner puts a key (ingest/key_route.h), against values computed apart from
// librdkafka: the Java client's murmur2 of "1".."12345" (the hashes its Utils.murmur2 gives, as
// Kafka's and Akka's tests list them), made positive and taken modulo the count, and Python's
// zlib.crc32 of each key modulo the count.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/key_route.h"

namespace hotrow::ingest {
namespace {

struct Want {
  std::string key;
  int32_t count;
  int32_t partition;
};

TEST(KeyRouteTest, Murmur2IsTheJavaClientsPartitioner) {
  const std::vector<Want> wants = {
      {"1", 12, 3},           {"12", 12, 10},         {"123", 12, 5},
      {"1234", 12, 0},        {"12345", 12, 8},       {"1", 1000, 159},
      {"1234", 1000, 940},    {"12345", 1000, 44},    {"123", 2147483647, 1879781165},
      {"12", 2147483647, 126087238},
  };
  for (const Want& w : wants) {
    EXPECT_EQ(PartitionForKey(KeyPartitioner::kMurmur2, w.key, w.count), w.partition)
        << w.key << " of " << w.count;
  }
}

TEST(KeyRouteTest, Crc32IsLibrdkafkasConsistentPartitioner) {
  const std::vector<Want> wants = {
      {"1", 12, 11},          {"12", 12, 9},         {"dev-000000", 12, 5},
      {"dev-000001", 12, 11}, {"a", 1000, 907},      {"abc", 1000, 578},
      {"foobar", 7, 6},       {"\xc3\xb1" "and\xc3\xba", 12, 6},
  };
  for (const Want& w : wants) {
    EXPECT_EQ(PartitionForKey(KeyPartitioner::kCrc32, w.key, w.count), w.partition)
        << w.key << " of " << w.count;
  }
}

TEST(KeyRouteTest, NamesParseAndAnythingElseIsRefused) {
  for (KeyPartitioner p : {KeyPartitioner::kOff, KeyPartitioner::kMurmur2, KeyPartitioner::kCrc32}) {
    Result<KeyPartitioner> parsed = ParseKeyPartitioner(KeyPartitionerName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  for (const char* bad : {"", "Murmur2", "consistent_random", "crc"}) {
    EXPECT_FALSE(ParseKeyPartitioner(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace hotrow::ingest
