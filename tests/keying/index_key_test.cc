// The index-posting codec (keying/index_key.h), by property over random keys drawn from a fixed
// seed: decoding inverts encoding, byte order is the logical order, a posting range holds exactly
// the postings that may list an event of its time range, and above all index keys and data keys
// can never be taken for one another: not by length, not by a range of the other kind (per-id
// time ranges and posting ranges), even when an index key's value hash equals a data key's id
// hash, while the prefix bloom (first 9 bytes) and the salt ranges still treat both alike.

#include "keying/index_key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "keying/row_key.h"
#include "tests/keying/key_test_util.h"

namespace hotrow::keying {
namespace {

constexpr int kRandomIndexKeys = 300'000;

// Field values with a third of them on boundaries, the rest of random bit width.
class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  uint64_t U(uint64_t max) {
    switch (rng_() % 8) {
      case 0:
        return 0;
      case 1:
        return max;
      case 2:
        return max / 2;
      default: {
        const int bits = static_cast<int>(rng_() % 64) + 1;
        const uint64_t v = bits == 64 ? rng_() : rng_() & ((uint64_t{1} << bits) - 1);
        return max == UINT64_MAX ? v : v % (max + 1);
      }
    }
  }
  IndexKey Index() {
    IndexKey k;
    k.value_hash = U(UINT64_MAX);
    k.ts_ms = static_cast<int64_t>(U(INT64_MAX));
    k.topic = static_cast<uint16_t>(U(65535));
    k.partition = static_cast<int32_t>(U(INT32_MAX));
    k.offset = static_cast<int64_t>(U(INT64_MAX));
    return k;
  }
  int64_t Time() { return static_cast<int64_t>(U(INT64_MAX - 1)); }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

auto Logical(const IndexKey& k) {
  // ts, topic, partition and offset descend: negate through the complement.
  return std::make_tuple(k.value_hash, ~static_cast<uint64_t>(k.ts_ms),
                         static_cast<uint16_t>(~k.topic), ~static_cast<uint32_t>(k.partition),
                         ~static_cast<uint64_t>(k.offset));
}

TEST(IndexKeyTest, RoundTripsAndHasByte0ZeroAndTheTagAtByte9) {
  Gen gen(1401);
  for (int i = 0; i < kRandomIndexKeys; ++i) {
    const IndexKey k = gen.Index();
    const std::string bytes = EncodeIndexKey(k);
    ASSERT_EQ(bytes.size(), kIndexKeySize);
    ASSERT_EQ(bytes[0], '\0');
    ASSERT_EQ(static_cast<unsigned char>(bytes[kIndexTagAt]), kIndexTag);
    ASSERT_TRUE(IsIndexKey(bytes));
    IndexKey back;
    ASSERT_TRUE(DecodeIndexKey(bytes, &back));
    ASSERT_EQ(back, k);
  }
}

TEST(IndexKeyTest, ByteOrderIsTheLogicalOrder) {
  Gen gen(1402);
  for (int i = 0; i < kRandomIndexKeys; ++i) {
    IndexKey a = gen.Index();
    IndexKey b = gen.Index();
    if (i % 2 == 0) {  // share the prefix half the time so that the tail decides
      b.value_hash = a.value_hash;
      if (i % 4 == 0) b.ts_ms = a.ts_ms;
    }
    const int bytes = EncodeIndexKey(a).compare(EncodeIndexKey(b));
    const bool less = Logical(a) < Logical(b);
    const bool greater = Logical(b) < Logical(a);
    ASSERT_EQ(bytes < 0, less) << i;
    ASSERT_EQ(bytes > 0, greater) << i;
  }
}

// The heart of the layout: index keys and data keys never mix, even with equal hashes.
TEST(IndexKeyTest, NeverMixesWithDataKeysEvenWithTheSameHash) {
  Gen gen(1403);
  for (int i = 0; i < kRandomIndexKeys; ++i) {
    const IndexKey ik = gen.Index();
    RowKey rk;
    rk.salt = 0;                 // the salt postings' keys share
    rk.id_hash = ik.value_hash;  // the worst case: a 64-bit collision of value and id hashes
    rk.ts_ms = gen.Time();
    rk.topic = static_cast<uint16_t>(gen.U(65535));
    rk.partition = static_cast<int32_t>(gen.U(INT32_MAX));
    rk.offset = static_cast<int64_t>(gen.U(INT64_MAX));
    const std::string index = EncodeIndexKey(ik);
    const std::string data = EncodeRowKey(rk);

    ASSERT_FALSE(IsIndexKey(data));
    RowKey as_row;
    IndexKey as_index;
    ASSERT_FALSE(DecodeRowKey(index, &as_row));
    ASSERT_FALSE(DecodeIndexKey(data, &as_index));
    // Same bloom prefix and same salt range: the filter and the scans treat both alike.
    ASSERT_EQ(index.substr(0, kRowKeyPrefixSize), data.substr(0, kRowKeyPrefixSize));
    ASSERT_TRUE(InRange(index, SaltKeyRange(0)));
    ASSERT_TRUE(InRange(data, SaltKeyRange(rk.salt)));

    int64_t from = gen.Time(), to = gen.Time();
    if (from > to) std::swap(from, to);
    if (from == to) ++to;
    if (i % 5 == 0) from = 0;
    if (i % 7 == 0) to = INT64_MAX;
    ASSERT_FALSE(InRange(index, IdTimeKeyRange(rk.salt, rk.id_hash, from, to)))
        << "an id's time range holds an index key, from=" << from << " to=" << to;
    ASSERT_FALSE(InRange(data, PostingKeyRange(ik.value_hash, from, to)))
        << "a posting range holds a data key, from=" << from << " to=" << to;
    // Nor a legacy index row (tag 00) of any salt, which nothing reads.
    std::string legacy = index;
    legacy[0] = static_cast<char>(gen.U(255));
    legacy[kIndexTagAt] = static_cast<char>(kLegacyIndexTag);
    ASSERT_TRUE(IsIndexKey(legacy));
    ASSERT_FALSE(DecodeIndexKey(legacy, &as_index));
    ASSERT_FALSE(InRange(legacy, PostingKeyRange(ik.value_hash, from, to)));
  }
}

// A posting keyed at t lists events of [PostingSpanStart(t), t]: the range of [from, to) holds
// it exactly when that span meets [from, to).
TEST(IndexKeyTest, PostingRangeHoldsExactlyThePostingsThatMayListItsEvents) {
  Gen gen(1404);
  for (int i = 0; i < kRandomIndexKeys; ++i) {
    IndexKey k = gen.Index();
    const uint64_t hash = i % 5 == 0 ? gen.U(UINT64_MAX) : k.value_hash;
    int64_t from = gen.Time(), to = gen.Time();
    if (i % 2 == 0) {  // times around the key's own and its span's start, to hit the edges
      const int64_t around = i % 4 == 0 ? k.ts_ms : PostingSpanStart(k.ts_ms);
      from = std::max<int64_t>(0, around - static_cast<int64_t>(gen.U(2)));
      const int64_t up = static_cast<int64_t>(gen.U(2));
      to = around > INT64_MAX - up ? INT64_MAX : around + up;  // the generator reaches INT64_MAX
    }
    if (i % 11 == 0) from = 0;
    if (from > to) std::swap(from, to);
    if (from == to) {
      if (to == INT64_MAX)
        --from;
      else
        ++to;
    }
    const bool want = k.value_hash == hash && k.ts_ms >= from && PostingSpanStart(k.ts_ms) < to;
    const KeyRange r = PostingKeyRange(hash, from, to);
    ASSERT_EQ(InRange(EncodeIndexKey(k), r), want)
        << "ts=" << k.ts_ms << " from=" << from << " to=" << to;
    // Both bounds stay inside the 9-byte prefix: the prefix bloom filter applies.
    ASSERT_EQ(r.start.substr(0, kRowKeyPrefixSize), r.limit.substr(0, kRowKeyPrefixSize));
  }
}

TEST(IndexKeyTest, IndexKeyForTakesTheNewestEventsPlace) {
  Gen gen(1405);
  for (int i = 0; i < 10000; ++i) {
    RowKey rk;
    rk.salt = static_cast<uint8_t>(gen.U(255));
    rk.id_hash = gen.U(UINT64_MAX);
    rk.ts_ms = gen.Time();
    rk.topic = static_cast<uint16_t>(gen.U(65535));
    rk.partition = static_cast<int32_t>(gen.U(INT32_MAX));
    rk.offset = static_cast<int64_t>(gen.U(INT64_MAX));
    const uint64_t hash = gen.U(UINT64_MAX);
    const IndexKey k = IndexKeyFor(rk, hash);
    ASSERT_EQ(k.value_hash, hash);
    ASSERT_EQ(std::make_tuple(k.ts_ms, k.topic, k.partition, k.offset),
              std::make_tuple(rk.ts_ms, rk.topic, rk.partition, rk.offset));
  }
}

TEST(IndexKeyTest, HashSeparatesFieldFromValue) {
  EXPECT_NE(IndexHash("ab", "c"), IndexHash("a", "bc"));
  EXPECT_NE(IndexHash("site", ""), IndexHash("", "site"));
  EXPECT_EQ(IndexHash("site", "x"), IndexHash("site", "x"));
}

TEST(PostingTest, RoundTripsAndRefusesWhatIsNotAPosting) {
  const std::string field(255, 'f');
  std::vector<std::string> keys;
  for (int i = 0; i < 3; ++i) {
    RowKey rk;
    rk.salt = static_cast<uint8_t>(i);
    rk.id_hash = 0x0123456789abcdefULL + static_cast<uint64_t>(i);
    rk.ts_ms = 1'700'000'000'000 + i;
    rk.offset = i;
    keys.push_back(EncodeRowKey(rk));
  }
  for (const std::string& value :
       {std::string(), std::string("x"), std::string(256, '\xff'), std::string("a\0b", 3)}) {
    for (size_t listed = 0; listed <= keys.size(); ++listed) {
      std::string bytes;
      EncodePostingHeaderTo(field, value, &bytes);
      const size_t header = bytes.size();
      for (size_t i = 0; i < listed; ++i) AppendPostingEvent(keys[i], &bytes);
      std::string_view f, v, events;
      ASSERT_TRUE(DecodePosting(bytes, &f, &v, &events));
      EXPECT_EQ(f, field);
      EXPECT_EQ(v, value);
      ASSERT_EQ(events.size(), listed * kRowKeySize);
      for (size_t i = 0; i < listed; ++i) {
        EXPECT_EQ(events.substr(i * kRowKeySize, kRowKeySize), keys[i]);
      }
      // Cut inside the header, or inside a listed key: refused.
      for (size_t cut = 0; cut < header; cut += 7) {
        EXPECT_FALSE(DecodePosting(std::string_view(bytes).substr(0, cut), &f, &v, &events)) << cut;
      }
      if (listed > 0) {
        EXPECT_FALSE(
            DecodePosting(std::string_view(bytes).substr(0, bytes.size() - 1), &f, &v, &events));
      }
    }
  }
}

TEST(IndexKeyTest, RefusesWhatIsNotAnIndexKey) {
  IndexKey k;
  std::string bytes = EncodeIndexKey(k);
  IndexKey out;
  EXPECT_FALSE(DecodeIndexKey(bytes.substr(0, 31), &out));
  EXPECT_FALSE(DecodeIndexKey(bytes + "x", &out));
  bytes[kIndexTagAt] = '\x80';
  EXPECT_FALSE(IsIndexKey(bytes));
  EXPECT_FALSE(DecodeIndexKey(bytes, &out));
  bytes[kIndexTagAt] = static_cast<char>(kIndexTag);
  bytes[0] = '\x01';  // a posting's key has no salt
  EXPECT_FALSE(DecodeIndexKey(bytes, &out));
}

}  // namespace
}  // namespace hotrow::keying
