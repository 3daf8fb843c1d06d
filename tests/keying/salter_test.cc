#include "keying/salter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "keying/row_key.h"

namespace hotrow::keying {
namespace {

// Realistic device ids: "dev-" and a zero-padded number of `width` digits.
std::string DeviceId(int n, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "dev-%0*d", width, n);
  return buf;
}

// The largest |count - mean| / mean over all salts, in percent.
double MaxDeviationPercent(const std::vector<int64_t>& counts) {
  double total = 0;
  for (int64_t c : counts) total += static_cast<double>(c);
  const double mean = total / static_cast<double>(counts.size());
  double worst = 0;
  for (int64_t c : counts) worst = std::max(worst, std::abs(static_cast<double>(c) - mean) / mean);
  return worst * 100;
}

// ---- Names ----

TEST(SaltByTest, NamesRoundTrip) {
  EXPECT_EQ(SaltByName(SaltBy::kRecord), "record");
  EXPECT_EQ(SaltByName(SaltBy::kId), "id");
  EXPECT_EQ(SaltByName(SaltBy::kAdaptive), "adaptive");
  EXPECT_EQ(ParseSaltBy("record"), SaltBy::kRecord);
  EXPECT_EQ(ParseSaltBy("id"), SaltBy::kId);
  EXPECT_EQ(ParseSaltBy("adaptive"), SaltBy::kAdaptive);
}

TEST(SaltByTest, UnknownNamesAreRejected) {
  for (const char* bad :
       {"", "Record", "ID", "ids", "record ", " id", "offset", "random", "Adaptive", "dynamic"}) {
    EXPECT_FALSE(ParseSaltBy(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(SalterTest, ReportsItsSettings) {
  const Salter s(16, SaltBy::kId);
  EXPECT_EQ(s.salts(), 16);
  EXPECT_EQ(s.salt_by(), SaltBy::kId);
}

// ---- Determinism ----

TEST(SalterTest, RecordSaltIsAPureFunctionOfTopicPartitionOffset) {
  std::mt19937_64 rng(1);
  for (int salts : {2, 16, 256}) {
    const Salter a(salts, SaltBy::kRecord);
    const Salter b(salts, SaltBy::kRecord);
    for (int i = 0; i < 10'000; ++i) {
      const std::string topic = "topic-" + std::to_string(rng() % 5);
      const int32_t partition = static_cast<int32_t>(rng() % 64);
      const int64_t offset = static_cast<int64_t>(rng() >> 1);
      const uint8_t salt = a.SaltOf(topic, partition, offset, "dev-1");
      // Again, from another instance, and with any other id: the id plays no part.
      ASSERT_EQ(a.SaltOf(topic, partition, offset, "dev-1"), salt);
      ASSERT_EQ(b.SaltOf(topic, partition, offset, "dev-1"), salt);
      ASSERT_EQ(b.SaltOf(topic, partition, offset, "another-id"), salt);
      ASSERT_EQ(b.SaltOf(topic, partition, offset, ""), salt);
    }
  }
}

TEST(SalterTest, IdSaltIsAPureFunctionOfTheId) {
  std::mt19937_64 rng(2);
  for (int salts : {2, 16, 256}) {
    const Salter a(salts, SaltBy::kId);
    const Salter b(salts, SaltBy::kId);
    for (int i = 0; i < 10'000; ++i) {
      const std::string id = DeviceId(static_cast<int>(rng() % 1'000'000), 7);
      const uint8_t salt = a.SaltOfId(id);
      // Every record of the id, whatever its topic, partition and offset, gets the same salt.
      ASSERT_EQ(a.SaltOf("events", 0, 0, id), salt);
      ASSERT_EQ(b.SaltOf("clicks", static_cast<int32_t>(rng() % 64),
                         static_cast<int64_t>(rng() >> 1), id),
                salt);
      ASSERT_EQ(b.SaltOfId(id), salt);
    }
  }
}

TEST(SalterTest, SaltsAreStableAcrossVersions) {
  // Pinned outputs: a change here moves every stored key to another salt, and a replayed record
  // would no longer overwrite its first copy. Change only with a store format version bump.
  const Salter r16(16, SaltBy::kRecord), r256(256, SaltBy::kRecord);
  const Salter i16(16, SaltBy::kId), i256(256, SaltBy::kId);
  struct Case {
    const char* topic;
    int32_t partition;
    int64_t offset;
    const char* id;
    int r16, r256, i16, i256;
  };
  const Case cases[] = {
      {"events", 0, 0, "dev-000001", 15, 15, 15, 159},
      {"events", 3, 1234567, "dev-000002", 11, 235, 8, 72},
      {"clicks", 11, 42, "sensor/7", 8, 56, 2, 114},
      {"events", 0, INT64_MAX, "", 14, 14, 5, 213},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    EXPECT_EQ(r16.SaltOf(c.topic, c.partition, c.offset, c.id), c.r16);
    EXPECT_EQ(r256.SaltOf(c.topic, c.partition, c.offset, c.id), c.r256);
    EXPECT_EQ(i16.SaltOf(c.topic, c.partition, c.offset, c.id), c.i16);
    EXPECT_EQ(i256.SaltOf(c.topic, c.partition, c.offset, c.id), c.i256);
  }
}

// ---- Adaptive: the home salt, the record salt, the hot rule ----

TEST(SalterTest, AdaptiveEncodesTheHomeSaltOfTheIdHash) {
  std::mt19937_64 rng(5);
  for (int salts : {1, 3, 16, 256}) {
    const Salter adaptive(salts, SaltBy::kAdaptive);
    const Salter record(salts, SaltBy::kRecord);
    for (int i = 0; i < 2000; ++i) {
      const std::string dev = DeviceId(i, 6);
      const int32_t partition = static_cast<int32_t>(rng() % 64);
      const int64_t offset = static_cast<int64_t>(rng() >> 1);
      // What the writer encodes is the home salt, whatever the record; the store moves a hot id.
      ASSERT_EQ(adaptive.SaltOf("t", partition, offset, dev), adaptive.HomeSalt(IdHash(dev)));
      ASSERT_EQ(adaptive.SaltOf("u", partition + 1, offset + 1, dev),
                adaptive.HomeSalt(IdHash(dev)));
      // A spread row's salt is the record salt, the same in every mode.
      ASSERT_EQ(adaptive.RecordSalt("t", partition, offset),
                record.SaltOf("t", partition, offset, dev));
      ASSERT_LT(adaptive.HomeSalt(IdHash(dev)), salts);
    }
  }
}

TEST(SalterTest, HomeSaltsStayBelowTheSaltCountAtTheHashExtremes) {
  for (int salts = 1; salts <= kMaxSalts; ++salts) {
    const Salter s(salts, SaltBy::kAdaptive);
    for (uint64_t hash : {uint64_t{0}, uint64_t{1}, UINT64_MAX, UINT64_MAX >> 32,
                          ~(UINT64_MAX >> 32), uint64_t{0x8000'0000'0000'0000}}) {
      ASSERT_LT(s.HomeSalt(hash), salts) << "hash " << hash << ", " << salts << " salts";
    }
    EXPECT_EQ(s.HomeSalt(UINT64_MAX), salts - 1);
    EXPECT_EQ(s.HomeSalt(0), 0);
  }
}

TEST(SalterTest, HomeSaltsAreStableAcrossVersions) {
  // Pinned outputs: a stored row is "spread" exactly when its salt is not its hash's home salt
  // (the open rebuilds each bucket's spread ids from that). Change only with a format bump.
  const Salter a16(16, SaltBy::kAdaptive), a256(256, SaltBy::kAdaptive);
  struct Case {
    const char* id;
    int h16, h256;
  };
  const Case cases[] = {
      {"dev-000001", 10, 161},
      {"dev-000002", 9, 153},
      {"sensor/7", 9, 151},
      {"", 2, 45},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    EXPECT_EQ(a16.HomeSalt(IdHash(c.id)), c.h16);
    EXPECT_EQ(a256.HomeSalt(IdHash(c.id)), c.h256);
  }
}

TEST(SalterUniformityTest, HomeSaltsSpread1MDistinctIdsEvenlyOver16Salts) {
  const Salter s(16, SaltBy::kAdaptive);
  std::vector<int64_t> counts(16, 0);
  for (int n = 1; n <= 1'000'000; ++n) ++counts[s.HomeSalt(IdHash(DeviceId(n, 7)))];
  const double dev = MaxDeviationPercent(counts);
  std::printf("adaptive home salts, 16 salts, 1M distinct ids: max deviation %.3f%%\n", dev);
  EXPECT_LE(dev, 2.0);
}

TEST(HotRuleTest, AnIdIsHotFromItsShareOfTheBucketAndNotBeforeItsFloor) {
  const HotRule rule{0.01, 32};
  // Below the floor nothing is hot, however large its share.
  EXPECT_FALSE(rule.IsHot(31, 31));
  EXPECT_FALSE(rule.IsHot(1, 1));
  EXPECT_TRUE(rule.IsHot(32, 32));
  // At and above the share (1 % of 10000 = 100 events), below it not.
  EXPECT_TRUE(rule.IsHot(100, 10'000));
  EXPECT_TRUE(rule.IsHot(101, 10'000));
  EXPECT_FALSE(rule.IsHot(99, 10'000));
  // A share of 1: only an id that holds every event of the bucket.
  const HotRule all{1.0, 1};
  EXPECT_TRUE(all.IsHot(7, 7));
  EXPECT_FALSE(all.IsHot(6, 7));
  // Defaults as documented.
  EXPECT_EQ(HotRule().hot_share, kDefaultHotShare);
  EXPECT_EQ(HotRule().min_events, kDefaultHotMinEvents);
  EXPECT_EQ(Salter(16, SaltBy::kAdaptive).hot_rule().hot_share, kDefaultHotShare);
  EXPECT_EQ(Salter(16, SaltBy::kAdaptive, all).hot_rule().hot_share, 1.0);
}

// ---- Range ----

TEST(SalterTest, EverySaltCountGivesSaltsBelowIt) {
  std::mt19937_64 rng(3);
  for (int salts = 1; salts <= kMaxSalts; ++salts) {
    const Salter record(salts, SaltBy::kRecord);
    const Salter id(salts, SaltBy::kId);
    std::vector<bool> seen(static_cast<size_t>(salts), false);
    for (int i = 0; i < 16 * kMaxSalts; ++i) {
      const int32_t partition = (i % 7 == 0) ? INT32_MAX : static_cast<int32_t>(rng() % 100);
      const int64_t offset = (i % 11 == 0) ? INT64_MAX : static_cast<int64_t>(rng() >> 1);
      const std::string dev = DeviceId(i, 6);
      const uint8_t rs = record.SaltOf("t", partition, offset, dev);
      const uint8_t is = id.SaltOf("t", partition, offset, dev);
      ASSERT_LT(rs, salts) << "record mode, partition " << partition << " offset " << offset;
      ASSERT_LT(is, salts) << "id mode, id " << dev;
      ASSERT_EQ(id.SaltOfId(dev), is);
      seen[is] = true;
    }
    // Every salt is reachable: 4096 ids into at most 256 salts leave none empty.
    EXPECT_EQ(std::count(seen.begin(), seen.end(), true), salts) << salts << " salts";
  }
}

TEST(SalterTest, OneSaltIsAlwaysZero) {
  const Salter record(1, SaltBy::kRecord), id(1, SaltBy::kId);
  for (int64_t offset : {int64_t{0}, int64_t{1}, INT64_MAX}) {
    EXPECT_EQ(record.SaltOf("t", 5, offset, "x"), 0);
    EXPECT_EQ(id.SaltOf("t", 5, offset, DeviceId(static_cast<int>(offset % 1000), 6)), 0);
  }
}

// ---- Record mode spreads consecutive offsets ----

TEST(SalterTest, ConsecutiveOffsetsRotateThroughTheSalts) {
  for (int salts : {3, 16, 256}) {
    const Salter s(salts, SaltBy::kRecord);
    for (int64_t start : {int64_t{0}, int64_t{1'000'000'007}, INT64_MAX - 1000}) {
      uint8_t prev = s.SaltOf("events", 4, start, "");
      for (int64_t offset = start + 1; offset < start + 1000; ++offset) {
        const uint8_t salt = s.SaltOf("events", 4, offset, "");
        ASSERT_EQ(salt, (prev + 1) % salts) << "offset " << offset << ", " << salts << " salts";
        prev = salt;
      }
    }
  }
}

// Counts the salts of `records_per_partition` consecutive records in each partition of two topics,
// each partition starting at its own offset, as a consumer reading from the middle of a log does.
std::vector<int64_t> RecordModeCounts(int salts, int partitions, int records_per_partition) {
  const Salter s(salts, SaltBy::kRecord);
  std::vector<int64_t> counts(static_cast<size_t>(salts), 0);
  std::mt19937_64 rng(static_cast<uint64_t>(salts * 1000 + partitions));
  for (const char* topic : {"events", "clicks"}) {
    for (int32_t p = 0; p < partitions; ++p) {
      const int64_t start = static_cast<int64_t>(rng() % 10'000'000'000ULL);
      for (int64_t o = start; o < start + records_per_partition; ++o) {
        ++counts[s.SaltOf(topic, p, o, "same-chatty-device")];
      }
    }
  }
  return counts;
}

TEST(SalterUniformityTest, RecordModeSpreads1MRecordsEvenlyOver16Salts) {
  const std::vector<int64_t> counts = RecordModeCounts(16, 6, 1'000'000 / 12);
  const double dev = MaxDeviationPercent(counts);
  std::printf("record mode, 16 salts, 2 topics x 6 partitions, ~1M records: max deviation %.3f%%\n",
              dev);
  EXPECT_LE(dev, 2.0);
}

TEST(SalterUniformityTest, RecordModeSpreads1MRecordsEvenlyOver256Salts) {
  const std::vector<int64_t> counts = RecordModeCounts(256, 6, 1'000'000 / 12);
  const double dev = MaxDeviationPercent(counts);
  std::printf(
      "record mode, 256 salts, 2 topics x 6 partitions, ~1M records: max deviation %.3f%%\n", dev);
  EXPECT_LE(dev, 2.0);
}

TEST(SalterUniformityTest, RecordModeIsEvenWithinOneRecordPerPartition) {
  // The documented bound: each partition's consecutive offsets deal one salt after another, so
  // no salt is more than one record per partition away from any other.
  for (int salts : {16, 256}) {
    const std::vector<int64_t> counts = RecordModeCounts(salts, 6, 12'345);
    const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
    EXPECT_LE(*hi - *lo, 2 * 6) << salts << " salts";
  }
}

TEST(SalterUniformityTest, IdModeSpreads1MDistinctIdsEvenlyOver16Salts) {
  const Salter s(16, SaltBy::kId);
  std::vector<int64_t> counts(16, 0);
  for (int n = 1; n <= 1'000'000; ++n) ++counts[s.SaltOfId(DeviceId(n, 7))];
  const double dev = MaxDeviationPercent(counts);
  std::printf(
      "id mode, 16 salts, 1M records of 1M distinct ids dev-0000001..: max deviation %.3f%%\n",
      dev);
  EXPECT_LE(dev, 2.0);
}

}  // namespace
}  // namespace hotrow::keying
