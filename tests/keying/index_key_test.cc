// The index-key codec (keying/index_key.h), by property over random keys drawn from a fixed seed:
// decoding inverts encoding, byte order is the logical order, and above all index keys and data
// keys can never be taken for one another: not by length, not by a range of the other kind (per-id
// time ranges and index ranges), even when an index key's value hash equals a data key's id hash,
// while the prefix bloom (first 9 bytes) and the salt ranges still treat both alike.

#include "keying/index_key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>

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
    k.salt = static_cast<uint8_t>(U(255));
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
  return std::make_tuple(k.salt, k.value_hash, ~static_cast<uint64_t>(k.ts_ms),
                         static_cast<uint16_t>(~k.topic), ~static_cast<uint32_t>(k.partition),
                         ~static_cast<uint64_t>(k.offset));
}

TEST(IndexKeyTest, RoundTripsAndHasTheTagAtByte9) {
  Gen gen(1401);
  for (int i = 0; i < kRandomIndexKeys; ++i) {
    const IndexKey k = gen.Index();
    const std::string bytes = EncodeIndexKey(k);
    ASSERT_EQ(bytes.size(), kIndexKeySize);
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
      b.salt = a.salt;
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
    rk.salt = ik.salt;
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
    ASSERT_TRUE(InRange(index, SaltKeyRange(ik.salt)));
    ASSERT_TRUE(InRange(data, SaltKeyRange(rk.salt)));

    int64_t from = gen.Time(), to = gen.Time();
    if (from > to) std::swap(from, to);
    if (from == to) ++to;
    if (i % 5 == 0) from = 0;
    if (i % 7 == 0) to = INT64_MAX;
    ASSERT_FALSE(InRange(index, IdTimeKeyRange(rk.salt, rk.id_hash, from, to)))
        << "an id's time range holds an index key, from=" << from << " to=" << to;
    ASSERT_FALSE(InRange(data, IndexTimeKeyRange(ik.salt, ik.value_hash, from, to)))
        << "an index range holds a data key, from=" << from << " to=" << to;
  }
}

TEST(IndexKeyTest, TimeRangeHoldsExactlyItsKeys) {
  Gen gen(1404);
  for (int i = 0; i < kRandomIndexKeys; ++i) {
    IndexKey k = gen.Index();
    const uint8_t salt = i % 3 == 0 ? static_cast<uint8_t>(gen.U(255)) : k.salt;
    const uint64_t hash = i % 5 == 0 ? gen.U(UINT64_MAX) : k.value_hash;
    int64_t from = gen.Time(), to = gen.Time();
    if (i % 2 == 0) {  // times around the key's own, to hit the edges
      from = std::max<int64_t>(0, k.ts_ms - static_cast<int64_t>(gen.U(2)));
      const int64_t up = static_cast<int64_t>(gen.U(2));
      to = k.ts_ms > INT64_MAX - up ? INT64_MAX : k.ts_ms + up;  // the generator reaches INT64_MAX
    }
    if (i % 11 == 0) from = 0;
    if (from > to) std::swap(from, to);
    if (from == to) {
      if (to == INT64_MAX)
        --from;
      else
        ++to;
    }
    const bool want = k.salt == salt && k.value_hash == hash && k.ts_ms >= from && k.ts_ms < to;
    const KeyRange r = IndexTimeKeyRange(salt, hash, from, to);
    ASSERT_EQ(InRange(EncodeIndexKey(k), r), want)
        << "ts=" << k.ts_ms << " from=" << from << " to=" << to;
    // Both bounds stay inside the 9-byte prefix: the prefix bloom filter applies.
    ASSERT_EQ(r.start.substr(0, kRowKeyPrefixSize), r.limit.substr(0, kRowKeyPrefixSize));
  }
}

TEST(IndexKeyTest, EventKeyOfInvertsIndexKeyFor) {
  Gen gen(1405);
  for (int i = 0; i < 10000; ++i) {
    RowKey rk;
    rk.salt = static_cast<uint8_t>(gen.U(255));
    rk.id_hash = gen.U(UINT64_MAX);
    rk.ts_ms = gen.Time();
    rk.topic = static_cast<uint16_t>(gen.U(65535));
    rk.partition = static_cast<int32_t>(gen.U(INT32_MAX));
    rk.offset = static_cast<int64_t>(gen.U(INT64_MAX));
    ASSERT_EQ(EventKeyOf(IndexKeyFor(rk, gen.U(UINT64_MAX)), rk.id_hash), rk);
  }
}

TEST(IndexKeyTest, HashSeparatesFieldFromValue) {
  EXPECT_NE(IndexHash("ab", "c"), IndexHash("a", "bc"));
  EXPECT_NE(IndexHash("site", ""), IndexHash("", "site"));
  EXPECT_EQ(IndexHash("site", "x"), IndexHash("site", "x"));
}

TEST(IndexValueTest, RoundTripsAndRefusesShortInput) {
  const std::string field(255, 'f');
  for (const std::string& value :
       {std::string(), std::string("x"), std::string(256, '\xff'), std::string("a\0b", 3)}) {
    const std::string bytes = EncodeIndexValue(0x0123456789abcdefULL, field, value);
    uint64_t h = 0;
    std::string_view f, v;
    ASSERT_TRUE(DecodeIndexValue(bytes, &h, &f, &v));
    EXPECT_EQ(h, 0x0123456789abcdefULL);
    EXPECT_EQ(f, field);
    EXPECT_EQ(v, value);
    // Cut anywhere inside the header or the field: refused.
    for (size_t cut = 0; cut < 9 + field.size(); cut += 7) {
      EXPECT_FALSE(DecodeIndexValue(std::string_view(bytes).substr(0, cut), &h, &f, &v)) << cut;
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
}

}  // namespace
}  // namespace hotrow::keying
