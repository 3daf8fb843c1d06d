// query::CacheArena, where the last-N cache keeps its payloads: records appended to chunks, a
// wholly dead chunk released, a sealed chunk at least half dead evacuated (its live records moved
// and repointed, the chunk released), a record rewritten in place when the new bytes take the same
// room, and the bytes it counts. Checked against a model of which records are live and what they
// hold.

#include "query/cache_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace hotrow::cache_arena_test {
namespace {

using query::ArenaRef;
using query::CacheArena;

constexpr size_t kChunk = 4096;

// A record's holder: where its owner keeps its place, and what it holds.
struct Held {
  ArenaRef ref;
  std::string bytes;
  bool live = true;
};

// Every record appended, by owner; `locate` answers from it as the cache does from its entries.
class Model {
 public:
  explicit Model(CacheArena* arena) : arena_(arena) {}
  uint32_t Append(const std::string& bytes) {
    const uint32_t owner = static_cast<uint32_t>(held_.size());
    held_.push_back({arena_->Append(owner, bytes), bytes, true});
    return owner;
  }
  void Free(uint32_t owner) {
    arena_->Free(held_[owner].ref, held_[owner].bytes.size());
    held_[owner].live = false;
  }
  void Evacuate() {
    arena_->Evacuate([this](uint32_t owner, ArenaRef ref) -> ArenaRef* {
      Held& h = held_[owner];
      return h.live && h.ref == ref ? &h.ref : nullptr;
    });
  }
  // Every live record reads back what was written; returns their bytes as the arena counts them.
  size_t CheckLive() const {
    size_t bytes = 0;
    for (const Held& h : held_) {
      if (!h.live) continue;
      EXPECT_EQ(arena_->Read(h.ref), h.bytes);
      bytes += CacheArena::RecordBytes(h.bytes.size());
    }
    return bytes;
  }
  Held& at(uint32_t owner) { return held_[owner]; }

 private:
  CacheArena* arena_;
  std::vector<Held> held_;
};

TEST(CacheArenaTest, AHalfDeadSealedChunkIsEvacuatedAndItsLiveRecordsRepointed) {
  CacheArena arena(kChunk);
  Model model(&arena);
  const std::string payload(100, 'a');  // 112 bytes a record: 36 to a chunk
  std::vector<uint32_t> first_chunk;
  for (int i = 0; i < 36; ++i) first_chunk.push_back(model.Append(payload + std::to_string(i)));
  ASSERT_EQ(arena.chunks(), 1u);
  model.Append(payload);  // seals the first chunk
  ASSERT_EQ(arena.chunks(), 2u);
  // Under half dead: stays.
  for (int i = 0; i < 17; ++i) model.Free(first_chunk[static_cast<size_t>(2 * i)]);
  model.Evacuate();
  EXPECT_EQ(arena.evacuated(), 0u);
  EXPECT_EQ(arena.bytes(), model.CheckLive() + 17 * CacheArena::RecordBytes(payload.size() + 2));
  // Half dead: its 18 live records move to the open chunk, and it goes.
  model.Free(first_chunk[34]);
  model.Evacuate();
  EXPECT_EQ(arena.evacuated(), 1u);
  EXPECT_EQ(arena.chunks(), 1u);
  EXPECT_NE(model.at(first_chunk[1]).ref.chunk, 0u);  // moved out of the first chunk
  EXPECT_EQ(arena.bytes(), model.CheckLive());        // the open chunk's dead are not counted
  EXPECT_EQ(arena.chunk_memory(), kChunk);
}

TEST(CacheArenaTest, AWhollyDeadChunkIsReleasedAndTheOpenOneStartsOver) {
  CacheArena arena(kChunk);
  Model model(&arena);
  std::vector<uint32_t> owners;
  for (int i = 0; i < 80; ++i) owners.push_back(model.Append(std::string(100, 'b')));
  ASSERT_EQ(arena.chunks(), 3u);
  for (uint32_t owner : owners) model.Free(owner);
  model.Evacuate();
  EXPECT_EQ(arena.bytes(), 0u);
  EXPECT_EQ(arena.chunks(), 1u);  // the open one, empty again
  const uint32_t again = model.Append("x");
  EXPECT_EQ(model.at(again).ref.offset, 0u);
  EXPECT_EQ(arena.evacuated(), 0u);  // nothing live had to move
}

TEST(CacheArenaTest, ARecordIsRewrittenInPlaceOnlyWhenItTakesTheSameRoom) {
  CacheArena arena(kChunk);
  const ArenaRef ref = arena.Append(7, std::string(100, 'c'));
  const size_t counted = arena.bytes();
  EXPECT_TRUE(arena.Rewrite(ref, 100, std::string(97, 'd')));  // 8 + 97 rounds to 112 as well
  EXPECT_EQ(arena.Read(ref), std::string(97, 'd'));
  EXPECT_EQ(arena.bytes(), counted);
  EXPECT_FALSE(arena.Rewrite(ref, 97, std::string(120, 'e')));
  EXPECT_EQ(arena.Read(ref), std::string(97, 'd'));
}

TEST(CacheArenaTest, ALongRecordTakesAChunkOfItsOwnReleasedWhenFreed) {
  CacheArena arena(kChunk);
  const ArenaRef small = arena.Append(1, "small");
  const std::string big(3 * kChunk, 'f');
  const ArenaRef ref = arena.Append(2, big);
  EXPECT_NE(ref.chunk, small.chunk);
  EXPECT_EQ(arena.Read(ref), big);
  EXPECT_EQ(arena.chunk_memory(), kChunk + CacheArena::RecordBytes(big.size()));
  arena.Free(ref, big.size());
  EXPECT_EQ(arena.chunk_memory(), kChunk);
  EXPECT_EQ(arena.Read(small), "small");
}

// Random appends, frees and evacuations of records of many sizes: every live record reads back
// what was written, the counted bytes are the live ones plus the dead ones of sealed chunks, and
// the chunks' memory stays within about twice the live records (a sealed chunk is over half live,
// less the tail it was sealed with, under a record of at most 308 bytes) plus the open chunk.
TEST(CacheArenaTest, RandomChurnKeepsEveryLiveRecordAndBoundsTheMemory) {
  CacheArena arena(kChunk);
  Model model(&arena);
  std::mt19937_64 rng(7);
  std::vector<uint32_t> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.size() < 50 || rng() % 2 == 0) {
      const size_t length = rng() % 300;
      std::string bytes(length, static_cast<char>('a' + step % 26));
      if (length > 0) bytes[0] = static_cast<char>(step);
      live.push_back(model.Append(bytes));
    } else {
      const size_t i = rng() % live.size();
      model.Free(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 16 == 0) model.Evacuate();
  }
  model.Evacuate();
  const size_t live_bytes = model.CheckLive();
  EXPECT_GE(arena.bytes(), live_bytes);
  EXPECT_LE(static_cast<double>(arena.chunk_memory()),
            2.2 * static_cast<double>(live_bytes) + kChunk);
  EXPECT_GT(arena.evacuated(), 0u);
}

}  // namespace
}  // namespace hotrow::cache_arena_test
