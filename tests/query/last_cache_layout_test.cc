// What the last-N cache's layout (query/last_cache.h "Layout") adds, told apart through its public
// calls against a model of what it should hold: ids that share a hash kept apart (inline and in
// the arena), the index and the id order through growth, eviction exactly least recently written
// first, a full entry's payload rewritten in its oldest's place, and the arena's evacuation under
// payloads of changing sizes keeping every answer's bytes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/last_cache.h"

namespace hotrow::last_cache_layout_test {
namespace {

using query::CachedEvent;
using query::LastCache;

// Rows handed to the cache, with the storage their views point into.
class Rows {
 public:
  // A row of `id` at `ts_ms`; `hash` (0: keying::IdHash(id)) is the id hash its key carries.
  void Add(const std::string& id, int64_t ts_ms, const std::string& payload, uint64_t hash = 0) {
    values_.push_back(keying::EncodeRowValue(id, payload));
    keying::RowKey key;
    key.id_hash = hash != 0 ? hash : keying::IdHash(id);
    key.ts_ms = ts_ms;
    key.offset = ts_ms;
    keys_.push_back(key);
  }
  void WriteTo(LastCache* cache) {
    std::vector<store::WrittenRow> rows;
    for (size_t i = 0; i < keys_.size(); ++i) rows.push_back({keys_[i], values_[i]});
    cache->RowsWritten(rows);
    keys_.clear();
    values_.clear();
  }

 private:
  std::vector<keying::RowKey> keys_;
  std::vector<std::string> values_;
};

// The cache's answer for `id` (hashed as `hash`), or nullopt on a miss.
std::optional<std::vector<CachedEvent>> LatestOf(LastCache* cache, const std::string& id, int n,
                                                 uint64_t hash = 0) {
  std::vector<CachedEvent> out;
  if (!cache->Latest(id, hash != 0 ? hash : keying::IdHash(id), n, 0, nullptr, &out)) {
    return std::nullopt;
  }
  return out;
}

// Ids that share a hash, short (held in the entry) and long (in the arena), each answer with
// their own events and none of the others'; one of them evicted or unknown does not take the
// others.
TEST(LastCacheLayoutTest, IdsThatShareAHashAreKeptApart) {
  LastCache cache({4, size_t{64} << 20});
  cache.SetKnownFrom(0);
  const std::vector<std::string> ids = {"a", "b", "device-with-a-long-name-0001",
                                        "device-with-a-long-name-0002", "abcdefghijkl"};
  constexpr uint64_t kShared = 0x1234;
  Rows rows;
  for (int round = 0; round < 6; ++round) {
    for (size_t i = 0; i < ids.size(); ++i) {
      rows.Add(ids[i], 1000 * round + static_cast<int64_t>(i), ids[i] + "/" + std::to_string(round),
               kShared);
    }
  }
  rows.WriteTo(&cache);
  EXPECT_EQ(cache.Stats().ids, ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto got = LatestOf(&cache, ids[i], 4, kShared);
    ASSERT_TRUE(got) << ids[i];
    ASSERT_EQ(got->size(), 4u);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ((*got)[static_cast<size_t>(j)].payload, ids[i] + "/" + std::to_string(5 - j));
    }
  }
  // An id of that hash the cache never saw: no entry, and no row of it in the window.
  auto unknown = LatestOf(&cache, "c", 4, kShared);
  ASSERT_TRUE(unknown);
  EXPECT_TRUE(unknown->empty());
}

// A thousand ids into two shards: the index grows by doubling and the id order is sorted at
// each walk, with ids arriving between walks; every id is found and the walk lists them in byte
// order, as a model does.
TEST(LastCacheLayoutTest, TheIndexAndTheIdOrderGrowWithEveryIdFoundAndWalkedInOrder) {
  LastCache cache({2, size_t{512} << 10});  // two shards
  cache.SetKnownFrom(0);
  std::mt19937_64 rng(11);
  std::map<std::string, int64_t> newest;
  int64_t ts = 1000;
  for (int wave = 0; wave < 4; ++wave) {
    Rows rows;
    for (int i = 0; i < 300; ++i) {
      const std::string id = "id-" + std::to_string(rng() % 100000);
      rows.Add(id, ++ts, "p");
      newest[id] = ts;
    }
    rows.WriteTo(&cache);
    ASSERT_EQ(cache.Stats().evicted, 0u);
    ASSERT_EQ(cache.Stats().ids, newest.size());
    auto walked = cache.NewestAfter("", "", 100000, 0, nullptr, nullptr);
    ASSERT_TRUE(walked);
    ASSERT_EQ(walked->size(), newest.size());
    auto it = newest.begin();
    for (const LastCache::IdNewest& id : *walked) {
      EXPECT_EQ(id.id, it->first);
      ASSERT_TRUE(id.newest);
      EXPECT_EQ(id.newest->ts_ms, it->second);
      ++it;
    }
  }
  for (const auto& [id, ts_ms] : newest) {
    auto got = LatestOf(&cache, id, 1);
    ASSERT_TRUE(got && got->size() == 1) << id;
    EXPECT_EQ(got->front().ts_ms, ts_ms);
  }
}

// Past the cap the least recently written ids go first, exactly: ids written again move to the
// warm end. The held ids are always those written last, in a model's order.
TEST(LastCacheLayoutTest, EvictionTakesTheLeastRecentlyWrittenFirst) {
  const size_t cap = size_t{256} << 10;  // one shard
  LastCache cache({1, cap});
  cache.SetKnownFrom(0);
  std::vector<std::string> order;  // the model: least recently written first
  auto touch = [&](const std::string& id) {
    std::erase(order, id);
    order.push_back(id);
  };
  const std::string payload(200, 'x');
  int64_t ts = 1000;
  std::mt19937_64 rng(5);
  for (int step = 0; step < 40; ++step) {
    Rows rows;
    for (int i = 0; i < 100; ++i) {
      // New ids, and old ones written again, some long ago.
      const bool again = !order.empty() && rng() % 3 == 0;
      const std::string id =
          again ? order[rng() % order.size()] : "dev-" + std::to_string(step * 100 + i);
      rows.Add(id, ++ts, payload);
      touch(id);
    }
    rows.WriteTo(&cache);
  }
  ASSERT_GT(cache.Stats().evicted, 0u);
  ASSERT_LE(cache.Stats().bytes, cap);
  const size_t held = cache.Stats().ids;
  ASSERT_LT(held, order.size());
  // The `held` most recently written are held; the one before them is not.
  for (size_t i = order.size() - held; i < order.size(); ++i) {
    auto got = LatestOf(&cache, order[i], 1);
    ASSERT_TRUE(got && got->size() == 1) << order[i] << " (position " << i << ")";
  }
  EXPECT_FALSE(LatestOf(&cache, order[order.size() - held - 1], 1));
}

// At steady state (every entry at the depth, payloads of one size) a row's payload is written in
// the place of its entry's oldest: the arena neither grows nor evacuates.
TEST(LastCacheLayoutTest, AFullEntryWritesItsNewestPayloadInItsOldestsPlace) {
  LastCache cache({4, size_t{64} << 20});
  cache.SetKnownFrom(0);
  int64_t ts = 1000;
  auto write = [&](int events) {
    Rows rows;
    for (int i = 0; i < events; ++i) {
      rows.Add("dev-" + std::to_string(i % 100), ++ts, std::string(100, 'a' + i % 26));
    }
    rows.WriteTo(&cache);
  };
  write(400);  // every entry at the depth
  const query::LastCacheStats full = cache.Stats();
  for (int round = 0; round < 20; ++round) write(400);
  const query::LastCacheStats later = cache.Stats();
  EXPECT_EQ(later.arena_chunk_bytes, full.arena_chunk_bytes);
  EXPECT_EQ(later.bytes, full.bytes);
  EXPECT_EQ(later.arena_evacuated, 0u);
  auto got = LatestOf(&cache, "dev-7", 4);
  ASSERT_TRUE(got && got->size() == 4);
  EXPECT_EQ(got->front().payload, std::string(100, 'a' + 307 % 26));  // i = 307, the last of 7
}

// Payloads whose sizes change from one event to the next cannot be rewritten in place: old ones
// die in sealed chunks, which are evacuated. Every answer keeps its bytes through the moves, and
// the memory stays within about twice what is live.
TEST(LastCacheLayoutTest, EvacuatedPayloadsAnswerWithTheirBytes) {
  LastCache cache({3, size_t{64} << 20});
  cache.SetKnownFrom(0);
  std::mt19937_64 rng(3);
  std::map<std::string, std::vector<std::string>> model;  // newest first, at most 3
  int64_t ts = 1000;
  for (int batch = 0; batch < 60; ++batch) {
    Rows rows;
    for (int i = 0; i < 500; ++i) {
      const std::string id = "dev-" + std::to_string(rng() % 300);
      std::string payload(20 + rng() % 200, static_cast<char>('a' + rng() % 26));
      payload += std::to_string(ts);
      rows.Add(id, ++ts, payload);
      auto& kept = model[id];
      kept.insert(kept.begin(), payload);
      if (kept.size() > 3) kept.pop_back();
    }
    rows.WriteTo(&cache);
  }
  const query::LastCacheStats stats = cache.Stats();
  EXPECT_GT(stats.arena_evacuated, 0u);
  size_t live = 0;
  for (const auto& [id, payloads] : model) {
    auto got = LatestOf(&cache, id, 3);
    ASSERT_TRUE(got) << id;
    ASSERT_EQ(got->size(), payloads.size()) << id;
    for (size_t i = 0; i < payloads.size(); ++i) {
      EXPECT_EQ((*got)[i].payload, payloads[i]) << id << " #" << i;
      live += payloads[i].size() + 16;
    }
  }
  // Sealed chunks are over half live; the open chunk of each shard is at most 64 KiB.
  EXPECT_LE(stats.arena_chunk_bytes, 2.2 * static_cast<double>(live) + 64 * (size_t{64} << 10));
}

}  // namespace
}  // namespace hotrow::last_cache_layout_test
