// The set of ids a bucket spreads over every salt under salt_by: adaptive (store/spread_ids.h):
// the writer's decisions follow the hot rule and stick for the bucket; the set holds exactly the
// ids put in it, so that a cold id's query seeks one salt; a full set says "spread" for every id;
// writers deciding at once never lose an id they spread.

#include "store/spread_ids.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace hotrow::store {
namespace {

constexpr size_t kCountSlots = size_t{1} << 12;

// A well-mixed hash for small numbers, as IdHash would give (H(0) = 0).
constexpr uint64_t H(uint64_t n) { return n * 0x9E37'79B9'7F4A'7C15ULL; }

TEST(SpreadIdsTest, AnIdIsSpreadFromTheRowThatMakesItHotAndForTheRestOfTheBucket) {
  SpreadIds spread(kCountSlots, 1024);
  const keying::HotRule rule{0.25, 4};
  // 3 rows of id 7 among 3 of others: below the floor of 4.
  for (uint64_t other : {100, 200, 300}) EXPECT_FALSE(spread.Place(H(other), rule));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(spread.Place(H(7), rule)) << "row " << i;
  EXPECT_FALSE(spread.Contains(H(7)));
  // The 4th row: 4 of 7 rows, at the floor and above a quarter.
  EXPECT_TRUE(spread.Place(H(7), rule));
  EXPECT_TRUE(spread.Contains(H(7)));
  EXPECT_EQ(spread.size(), 1u);
  // Its share falls far below a quarter: it stays spread.
  for (uint64_t other = 1000; other < 1100; ++other) spread.Place(H(other), rule);
  EXPECT_TRUE(spread.Place(H(7), rule));
  EXPECT_EQ(spread.Hashes(), std::vector<uint64_t>{H(7)});
  // Ids never hot are not in the set: a query of them seeks their home salt alone.
  for (uint64_t other : {100, 200, 300, 1000, 1099}) EXPECT_FALSE(spread.Contains(H(other)));
  EXPECT_FALSE(spread.overflowed());
}

TEST(SpreadIdsTest, RowsFoundOutsideTheirHomeSaltAtOpenPutTheirIdInTheSet) {
  SpreadIds spread(kCountSlots, 1024);
  const keying::HotRule rule{0.5, 1};
  spread.NoteStored(H(11), /*off_home=*/false);
  spread.NoteStored(H(12), /*off_home=*/true);
  spread.NoteStored(0, /*off_home=*/true);  // the hash 0 has no slot of its own
  EXPECT_FALSE(spread.Contains(H(11)));
  EXPECT_TRUE(spread.Contains(H(12)));
  EXPECT_TRUE(spread.Contains(0));
  std::vector<uint64_t> want = {0, H(12)};
  EXPECT_EQ(spread.Hashes(), want);
  // Counted: 3 rows so far, so one row of a new id is a quarter, not hot at a half.
  EXPECT_FALSE(spread.Place(H(13), rule));
  // Id 11 had a row already: 2 of 5 rows, still below a half; a third makes 3 of 6.
  EXPECT_FALSE(spread.Place(H(11), rule));
  EXPECT_TRUE(spread.Place(H(11), rule));
}

// A cold id is counted apart from a hot id whose hash shares the low bits (the id filter's slot)
// or one of the two counters with it; only sharing both would make it look hot.
TEST(SpreadIdsTest, AColdIdSharingOneCounterOrTheFilterSlotWithAHotIdStaysCold) {
  SpreadIds spread(kCountSlots, 1024);
  const keying::HotRule rule{0.1, 8};
  const uint64_t hot = H(5);
  const uint64_t mask = kCountSlots - 1;
  const uint64_t same_low_bits = (H(6) & ~uint64_t{0xFFFFF}) | (hot & 0xFFFFF);
  const uint64_t same_first = (H(7) & ~(mask << 20)) | (hot & (mask << 20));
  const uint64_t same_second = (H(8) & ~(mask << 40)) | (hot & (mask << 40));
  const uint64_t same_both =
      (H(9) & ~((mask << 20) | (mask << 40))) | (hot & ((mask << 20) | (mask << 40)));
  for (int i = 0; i < 100; ++i) spread.Place(hot, rule);
  ASSERT_TRUE(spread.Contains(hot));
  for (uint64_t cold : {same_low_bits, same_first, same_second}) {
    for (int i = 0; i < 9; ++i) EXPECT_FALSE(spread.Place(cold, rule)) << cold;
    EXPECT_FALSE(spread.Contains(cold)) << cold;
  }
  // The documented limit: an id that shares both counters is counted with the hot one.
  EXPECT_TRUE(spread.Place(same_both, rule));
}

TEST(SpreadIdsTest, IdsThatShareNoSlotAreNeverTakenForEachOther) {
  SpreadIds spread(kCountSlots, 1024);
  std::mt19937_64 rng(3);
  std::vector<uint64_t> in, out;
  // Colliding on the low bits (one probe chain), and random ones.
  for (uint64_t i = 1; i <= 200; ++i) in.push_back(i << 20 | 5);
  for (int i = 0; i < 300; ++i) in.push_back(rng());
  for (uint64_t i = 201; i <= 400; ++i) out.push_back(i << 20 | 5);
  for (int i = 0; i < 300; ++i) out.push_back(rng());
  for (uint64_t h : in) spread.NoteStored(h, true);
  for (uint64_t h : in) EXPECT_TRUE(spread.Contains(h)) << h;
  for (uint64_t h : out) EXPECT_FALSE(spread.Contains(h)) << h;
  EXPECT_EQ(spread.size(), in.size());
}

TEST(SpreadIdsTest, AFullSetSpreadsTheNextHotIdAndSaysSpreadForEveryId) {
  SpreadIds spread(kCountSlots, 1024);
  ASSERT_EQ(spread.capacity(), 768u);
  const keying::HotRule rule{0.0001, 1};  // every id hot at its first row
  for (uint64_t h = 1; h <= 768; ++h) ASSERT_TRUE(spread.Place(h, rule));
  EXPECT_FALSE(spread.overflowed());
  EXPECT_FALSE(spread.Contains(100'000));
  // No room for the 769th: its row is spread all the same, and since the set cannot say which
  // ids have spread rows any more, it says so of every id.
  EXPECT_TRUE(spread.Place(100'000, rule));
  EXPECT_TRUE(spread.overflowed());
  EXPECT_TRUE(spread.Contains(100'000));
  EXPECT_TRUE(spread.Contains(123'456'789));
  EXPECT_EQ(spread.size(), 768u);
}

TEST(SpreadIdsTest, CapacityFollowsTheHotShare) {
  EXPECT_EQ(SpreadIds::CapacityFor(0.5), 1024u);
  EXPECT_EQ(SpreadIds::CapacityFor(0.002), 4096u);  // 8 / 0.002 = 4000
  EXPECT_EQ(SpreadIds::CapacityFor(0.001), 8192u);
  EXPECT_EQ(SpreadIds::CapacityFor(1e-9), 65536u);
}

// Two writers placing rows of the same ids at once (the Ingestor's writers share buckets): every
// id either of them spread is in the set when they are done, each id once. Both place the same
// sequence of ids, so that they often make the same id hot at the same moment.
TEST(SpreadIdsConcurrencyTest, WritersDecidingAtOnceNeverLoseASpreadId) {
  for (int round = 0; round < 200; ++round) {
    SpreadIds spread(kCountSlots, 4096);
    const keying::HotRule rule{0.001, 2};
    std::vector<std::vector<uint64_t>> spread_by(2);
    std::atomic<bool> go{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([&, w] {
        std::mt19937_64 rng(static_cast<uint64_t>(round));
        while (!go.load()) {
        }
        for (int i = 0; i < 20'000; ++i) {
          const uint64_t h = 1 + rng() % 3000;
          if (spread.Place(h, rule)) spread_by[static_cast<size_t>(w)].push_back(h);
        }
      });
    }
    go = true;
    for (auto& t : writers) t.join();
    size_t distinct = 0;
    std::vector<bool> seen(3001, false);
    for (const auto& ids : spread_by) {
      for (uint64_t h : ids) {
        ASSERT_TRUE(spread.Contains(h)) << "round " << round << ", id " << h;
        if (!seen[h]) ++distinct;
        seen[h] = true;
      }
    }
    ASSERT_FALSE(spread.overflowed());
    EXPECT_EQ(spread.size(), distinct) << "round " << round;
    EXPECT_EQ(spread.Hashes().size(), distinct) << "round " << round;
  }
}

}  // namespace
}  // namespace hotrow::store
