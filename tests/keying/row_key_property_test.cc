// Property tests of the row-key codec over millions of random keys: decoding inverts encoding,
// and byte order of encodings is exactly KeyLess. Inputs are drawn from a fixed seed, so a failure
// reproduces; each failure prints the keys involved.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "keying/row_key.h"
#include "tests/keying/key_test_util.h"

namespace hotrow::keying {

namespace {

constexpr int kRandomKeys = 2'000'000;
constexpr int kRandomPairs = 2'000'000;

// Draws field values that exercise every byte of the encoding: a third of the time a boundary
// (0, 1, max - 1, max, and the values around a byte carry), otherwise a value of random bit width
// so that small and large numbers are equally common.
class KeyGenerator {
 public:
  explicit KeyGenerator(uint64_t seed) : rng_(seed) {}

  uint64_t Unsigned(uint64_t max) {
    const uint64_t pick = rng_() % 12;
    switch (pick) {
      case 0:
        return 0;
      case 1:
        return 1;
      case 2:
        return max;
      case 3:
        return max - 1;
      case 4:
        return std::min<uint64_t>(max, 255);
      case 5:
        return std::min<uint64_t>(max, 256);
      case 6:
        return max / 2;
      case 7:
        return max / 2 + 1;
      default: {
        const int bits = static_cast<int>(rng_() % 64) + 1;
        const uint64_t v = bits == 64 ? rng_() : rng_() & ((uint64_t{1} << bits) - 1);
        return max == UINT64_MAX ? v : v % (max + 1);
      }
    }
  }

  uint8_t Salt() { return static_cast<uint8_t>(Unsigned(255)); }
  uint64_t IdHash() { return Unsigned(UINT64_MAX); }
  int64_t Ts() { return static_cast<int64_t>(Unsigned(INT64_MAX)); }
  uint16_t Topic() { return static_cast<uint16_t>(Unsigned(65535)); }
  int32_t Partition() { return static_cast<int32_t>(Unsigned(INT32_MAX)); }
  int64_t Offset() { return static_cast<int64_t>(Unsigned(INT64_MAX)); }

  RowKey Key() {
    RowKey k;
    k.salt = Salt();
    k.id_hash = IdHash();
    k.ts_ms = Ts();
    k.topic = Topic();
    k.partition = Partition();
    k.offset = Offset();
    return k;
  }

  // A copy of `a` with only field `field` (0..5) redrawn; it may come out equal.
  RowKey ChangeOneField(RowKey a, int field) {
    switch (field) {
      case 0:
        a.salt = Salt();
        break;
      case 1:
        a.id_hash = IdHash();
        break;
      case 2:
        a.ts_ms = Ts();
        break;
      case 3:
        a.topic = Topic();
        break;
      case 4:
        a.partition = Partition();
        break;
      case 5:
        a.offset = Offset();
        break;
    }
    return a;
  }

  // A copy of `a` nudged by one in field `field`, the smallest difference the encoding must see.
  RowKey NudgeOneField(RowKey a, int field) {
    const bool up = rng_() & 1;
    switch (field) {
      case 0:
        a.salt = static_cast<uint8_t>(up ? (a.salt == 255 ? 254 : a.salt + 1)
                                         : (a.salt == 0 ? 1 : a.salt - 1));
        break;
      case 1:
        a.id_hash = up ? (a.id_hash == UINT64_MAX ? a.id_hash - 1 : a.id_hash + 1)
                       : (a.id_hash == 0 ? 1 : a.id_hash - 1);
        break;
      case 2:
        a.ts_ms = up ? (a.ts_ms == INT64_MAX ? a.ts_ms - 1 : a.ts_ms + 1)
                     : (a.ts_ms == 0 ? 1 : a.ts_ms - 1);
        break;
      case 3:
        a.topic = static_cast<uint16_t>(up ? (a.topic == 65535 ? 65534 : a.topic + 1)
                                           : (a.topic == 0 ? 1 : a.topic - 1));
        break;
      case 4:
        a.partition = up ? (a.partition == INT32_MAX ? a.partition - 1 : a.partition + 1)
                         : (a.partition == 0 ? 1 : a.partition - 1);
        break;
      case 5:
        a.offset = up ? (a.offset == INT64_MAX ? a.offset - 1 : a.offset + 1)
                      : (a.offset == 0 ? 1 : a.offset - 1);
        break;
    }
    return a;
  }

  uint64_t Next() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

// The sign of a comparison: -1, 0 or 1.
int Sign(int c) { return (c > 0) - (c < 0); }

int LogicalCompare(const RowKey& a, const RowKey& b) {
  return KeyLess(a, b) ? -1 : KeyLess(b, a) ? 1 : 0;
}

int EncodedCompare(const char* a, const char* b) { return Sign(std::memcmp(a, b, kRowKeySize)); }

// Checks that the byte order of a and b's encodings is their logical order, and that keys are
// equal exactly when their encodings are.
::testing::AssertionResult OrderAgrees(const RowKey& a, const RowKey& b) {
  char ea[kRowKeySize], eb[kRowKeySize];
  EncodeRowKeyTo(a, ea);
  EncodeRowKeyTo(b, eb);
  const int logical = LogicalCompare(a, b);
  const int bytes = EncodedCompare(ea, eb);
  if (logical == bytes && (logical == 0) == (a == b)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "a=" << ::testing::PrintToString(a) << " b=" << ::testing::PrintToString(b)
         << " KeyLess says " << logical << ", memcmp says " << bytes;
}

TEST(RowKeyPropertyTest, DecodeInvertsEncodeForRandomKeys) {
  KeyGenerator gen(0x5EED0001);
  char buf[kRowKeySize];
  for (int i = 0; i < kRandomKeys; ++i) {
    const RowKey k = gen.Key();
    EncodeRowKeyTo(k, buf);
    RowKey back;
    ASSERT_TRUE(DecodeRowKey(std::string_view(buf, kRowKeySize), &back))
        << ::testing::PrintToString(k);
    ASSERT_EQ(back, k);
  }
}

TEST(RowKeyPropertyTest, EncodeInvertsDecodeOverTheValidByteSpace) {
  // Any 31 bytes whose time, partition and offset top bits are set decode, and re-encode to
  // themselves: the encoding is a bijection onto that space, so no two keys share bytes.
  std::mt19937_64 rng(0x5EED0002);
  std::string bytes(kRowKeySize, '\0');
  for (int i = 0; i < kRandomKeys / 4; ++i) {
    for (char& c : bytes) c = static_cast<char>(rng());
    bytes[9] = static_cast<char>(bytes[9] | 0x80);
    bytes[19] = static_cast<char>(bytes[19] | 0x80);
    bytes[23] = static_cast<char>(bytes[23] | 0x80);
    RowKey k;
    ASSERT_TRUE(DecodeRowKey(bytes, &k));
    ASSERT_EQ(EncodeRowKey(k), bytes);
    // Clearing any one of those bits makes the bytes invalid.
    for (size_t at : {size_t{9}, size_t{19}, size_t{23}}) {
      std::string bad = bytes;
      bad[at] = static_cast<char>(bad[at] & 0x7F);
      ASSERT_FALSE(DecodeRowKey(bad, &k)) << "byte " << at;
    }
  }
}

TEST(RowKeyPropertyTest, ByteOrderEqualsKeyLessForRandomPairs) {
  KeyGenerator gen(0x5EED0003);
  for (int i = 0; i < kRandomPairs; ++i) {
    const RowKey a = gen.Key();
    const RowKey b = gen.Key();
    ASSERT_TRUE(OrderAgrees(a, b));
    ASSERT_TRUE(OrderAgrees(b, a));
  }
}

TEST(RowKeyPropertyTest, ByteOrderEqualsKeyLessWhenOneFieldDiffers) {
  KeyGenerator gen(0x5EED0004);
  for (int i = 0; i < kRandomPairs; ++i) {
    const RowKey a = gen.Key();
    const int field = i % 6;
    const RowKey b = (i / 6) % 2 == 0 ? gen.ChangeOneField(a, field) : gen.NudgeOneField(a, field);
    ASSERT_TRUE(OrderAgrees(a, b)) << "field " << field;
    ASSERT_TRUE(OrderAgrees(b, a)) << "field " << field;
  }
}

TEST(RowKeyPropertyTest, ByteOrderEqualsKeyLessWhenOnlyTheTupleDiffers) {
  // Same salt, id and time: the events of one millisecond must still come out in one direction.
  KeyGenerator gen(0x5EED0005);
  for (int i = 0; i < kRandomPairs / 2; ++i) {
    const RowKey a = gen.Key();
    RowKey b = a;
    b.topic = gen.Topic();
    b.partition = gen.Partition();
    b.offset = gen.Offset();
    ASSERT_TRUE(OrderAgrees(a, b));
    ASSERT_TRUE(OrderAgrees(b, a));
  }
}

TEST(RowKeyPropertyTest, EqualKeysEncodeEqually) {
  KeyGenerator gen(0x5EED0006);
  for (int i = 0; i < 100'000; ++i) {
    const RowKey a = gen.Key();
    const RowKey b = a;
    ASSERT_TRUE(OrderAgrees(a, b));
    ASSERT_FALSE(KeyLess(a, b));
  }
}

TEST(RowKeyPropertyTest, SortingEncodingsSortsKeys) {
  // Sort the same keys both ways; the sequences must match element by element. Keys share
  // prefixes and times often so that ties are decided deep in the key.
  KeyGenerator gen(0x5EED0007);
  std::vector<RowKey> keys;
  keys.reserve(200'000);
  for (int i = 0; i < 200'000; ++i) {
    RowKey k = gen.Key();
    k.salt = static_cast<uint8_t>(gen.Next() % 4);
    k.id_hash = gen.Next() % 8;
    if (gen.Next() % 2) k.ts_ms = static_cast<int64_t>(gen.Next() % 16);
    keys.push_back(k);
  }
  std::vector<std::string> encoded;
  encoded.reserve(keys.size());
  for (const RowKey& k : keys) encoded.push_back(EncodeRowKey(k));
  std::sort(keys.begin(), keys.end(), KeyLess);
  std::sort(encoded.begin(), encoded.end());
  for (size_t i = 0; i < keys.size(); ++i) {
    RowKey decoded;
    ASSERT_TRUE(DecodeRowKey(encoded[i], &decoded));
    ASSERT_EQ(decoded, keys[i]) << "position " << i;
  }
}

TEST(RowKeyPropertyTest, IdTimeKeyRangeHoldsExactlyTheTimesInFromTo) {
  KeyGenerator gen(0x5EED0008);
  for (int i = 0; i < 500'000; ++i) {
    const uint8_t salt = gen.Salt();
    const uint64_t h = gen.IdHash();
    int64_t from = gen.Ts();
    int64_t to = gen.Ts();
    if (from > to) std::swap(from, to);
    if (from == to) {
      if (to == INT64_MAX)
        --from;
      else
        ++to;
    }
    const KeyRange r = IdTimeKeyRange(salt, h, from, to);
    // A key at a random time, near either bound a third of the time each.
    RowKey k = gen.Key();
    k.salt = salt;
    k.id_hash = h;
    const int64_t delta = static_cast<int64_t>(gen.Next() % 5) - 2;
    switch (gen.Next() % 3) {
      case 0:
        k.ts_ms = gen.Ts();
        break;
      case 1:
        k.ts_ms =
            std::clamp<int64_t>(from + std::min<int64_t>(delta, INT64_MAX - from), 0, INT64_MAX);
        break;
      case 2:
        k.ts_ms = std::clamp<int64_t>(to + std::min<int64_t>(delta, INT64_MAX - to), 0, INT64_MAX);
        break;
    }
    const std::string key = EncodeRowKey(k);
    const bool in = key >= r.start && (r.limit.empty() || key < r.limit);
    ASSERT_EQ(in, k.ts_ms >= from && k.ts_ms < to)
        << ::testing::PrintToString(k) << " from=" << from << " to=" << to;
    // The same time under a neighbouring prefix is never inside.
    RowKey other = gen.NudgeOneField(k, static_cast<int>(gen.Next() % 2));
    const std::string other_key = EncodeRowKey(other);
    ASSERT_FALSE(other_key >= r.start && (r.limit.empty() || other_key < r.limit))
        << ::testing::PrintToString(other) << " from=" << from << " to=" << to;
  }
}

TEST(RowKeyPropertyTest, IdKeyRangeHoldsExactlyItsPrefix) {
  KeyGenerator gen(0x5EED0009);
  for (int i = 0; i < 500'000; ++i) {
    const RowKey a = gen.Key();
    const KeyRange r = IdKeyRange(a.salt, a.id_hash);
    const RowKey b = (i % 2) ? gen.Key() : gen.NudgeOneField(a, static_cast<int>(gen.Next() % 6));
    const std::string key = EncodeRowKey(b);
    const bool in = key >= r.start && (r.limit.empty() || key < r.limit);
    ASSERT_EQ(in, b.salt == a.salt && b.id_hash == a.id_hash)
        << "range of " << ::testing::PrintToString(a) << ", key " << ::testing::PrintToString(b);
  }
}

}  // namespace
}  // namespace hotrow::keying
