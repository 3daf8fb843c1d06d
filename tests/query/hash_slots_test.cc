// query::HashSlots, the last-N cache's index of entries by id hash, against std::map under random
// inserts, erases and lookups, with hashes made to collide: equal hashes of different keys, and
// hashes that differ only in their high bits or only in their low ones (the cache's shards split
// ids by the low bits).

#include "query/hash_slots.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace hotrow::hash_slots_test {
namespace {

struct Item {
  std::string key;
  uint64_t hash = 0;
};

// A hash of few distinct values in one of three shapes, so that probe runs form, wrap around the
// end of the array and get holes torn into them by erases.
uint64_t HashOf(int shape, uint64_t n) {
  switch (shape) {
    case 0:
      return n % 7;  // equal hashes of different keys
    case 1:
      return (n % 97) << 40;  // only the high bits differ
    default:
      return (n % 97) * 64;  // only the low bits above the shard's differ
  }
}

class HashSlotsTest : public ::testing::TestWithParam<int> {};

TEST_P(HashSlotsTest, FindsExactlyWhatIsHeldThroughInsertsAndErases) {
  std::mt19937_64 rng(1234 + static_cast<uint64_t>(GetParam()));
  query::HashSlots<Item> slots;
  std::map<std::string, std::unique_ptr<Item>> held;  // the oracle
  auto find = [&slots](const std::string& key, uint64_t hash) {
    return slots.Find(hash, [&key](const Item& item) { return item.key == key; });
  };
  for (int step = 0; step < 40000; ++step) {
    const uint64_t n = rng() % 600;
    const std::string key = "id-" + std::to_string(n);
    const uint64_t hash = HashOf(GetParam(), n);
    auto it = held.find(key);
    const bool grow_phase = (step / 5000) % 2 == 0;  // fill up, then thin out, in turns
    if (it == held.end() && (grow_phase || rng() % 4 == 0)) {
      auto item = std::make_unique<Item>(Item{key, hash});
      slots.Insert(hash, item.get());
      held.emplace(key, std::move(item));
    } else if (it != held.end() && (!grow_phase || rng() % 4 == 0)) {
      slots.Erase(hash, it->second.get());
      held.erase(it);
    }
    ASSERT_EQ(slots.size(), held.size()) << "step " << step;
    if (step % 97 == 0) {
      // Every key, held or not, is found exactly when held.
      for (uint64_t m = 0; m < 600; ++m) {
        const std::string k = "id-" + std::to_string(m);
        auto h = held.find(k);
        const Item* found = find(k, HashOf(GetParam(), m));
        ASSERT_EQ(found, h == held.end() ? nullptr : h->second.get()) << k << " at step " << step;
      }
    }
  }
}

TEST_P(HashSlotsTest, PeekGivesAnEntryOfTheHashOrNone) {
  query::HashSlots<Item> slots;
  EXPECT_EQ(slots.Peek(HashOf(GetParam(), 1)), nullptr);  // no array yet
  std::vector<std::unique_ptr<Item>> items;
  for (uint64_t n = 0; n < 50; ++n) {
    items.push_back(std::make_unique<Item>(Item{"id-" + std::to_string(n), HashOf(GetParam(), n)}));
    slots.Insert(items.back()->hash, items.back().get());
  }
  for (uint64_t n = 0; n < 50; ++n) {
    const Item* peeked = slots.Peek(HashOf(GetParam(), n));
    ASSERT_NE(peeked, nullptr);
    EXPECT_EQ(peeked->hash, HashOf(GetParam(), n));
  }
  EXPECT_EQ(slots.Peek(uint64_t{1} << 63 | 12345), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Shapes, HashSlotsTest, ::testing::Values(0, 1, 2));

}  // namespace
}  // namespace hotrow::hash_slots_test
