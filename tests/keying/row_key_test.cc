#include "keying/row_key.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "tests/keying/key_test_util.h"

namespace hotrow::keying {

namespace {

std::string Hex(const std::string& bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof(buf), "%02x", c);
    out += buf;
  }
  return out;
}

RowKey MakeKey(uint8_t salt, uint64_t id_hash, int64_t ts, uint16_t topic, int32_t partition,
               int64_t offset) {
  RowKey k;
  k.salt = salt;
  k.id_hash = id_hash;
  k.ts_ms = ts;
  k.topic = topic;
  k.partition = partition;
  k.offset = offset;
  return k;
}

RowKey TypicalKey() {
  return MakeKey(7, 0x0123456789ABCDEFULL, 1'700'000'000'000, 3, 12, 987'654'321);
}

bool InRange(const RowKey& key, const KeyRange& range) { return InRange(EncodeRowKey(key), range); }

RowKey Decoded(const std::string& bytes) {
  RowKey k;
  EXPECT_TRUE(DecodeRowKey(bytes, &k)) << Hex(bytes);
  return k;
}

// The extreme values of every field after (salt, id_hash): the keys a range bound is most likely
// to get wrong.
std::vector<RowKey> ExtremeTails(uint8_t salt, uint64_t id_hash, int64_t ts) {
  std::vector<RowKey> out;
  for (uint16_t topic : {uint16_t{0}, uint16_t{65535}}) {
    for (int32_t partition : {0, INT32_MAX}) {
      for (int64_t offset : {int64_t{0}, INT64_MAX}) {
        out.push_back(MakeKey(salt, id_hash, ts, topic, partition, offset));
      }
    }
  }
  return out;
}

// ---- Layout ----

TEST(RowKeyTest, EncodingIsExactly31Bytes) {
  EXPECT_EQ(kRowKeySize, 31u);
  EXPECT_EQ(kRowKeyPrefixSize, 9u);
  EXPECT_EQ(EncodeRowKey(RowKey{}).size(), kRowKeySize);
  EXPECT_EQ(EncodeRowKey(TypicalKey()).size(), kRowKeySize);
  EXPECT_EQ(EncodeRowKey(MakeKey(255, UINT64_MAX, INT64_MAX, 65535, INT32_MAX, INT64_MAX)).size(),
            kRowKeySize);
}

TEST(RowKeyTest, LayoutIsBigEndianWithReversedTimeAndComplementedTuple) {
  const RowKey k = MakeKey(0x07, 0x0123456789ABCDEFULL, 0x0000018BCFE56800LL, 0x0003, 0x0000000C,
                           0x000000003ADE68B1LL);
  // salt | id_hash | UINT64_MAX - ts | ~topic | ~partition | ~offset
  EXPECT_EQ(Hex(EncodeRowKey(k)),
            "07"
            "0123456789abcdef"
            "fffffe74301a97ff"
            "fffc"
            "fffffff3"
            "ffffffffc521974e");
}

TEST(RowKeyTest, GoldenEncodingOfZeroAndMaxKeys) {
  EXPECT_EQ(Hex(EncodeRowKey(MakeKey(0, 0, 0, 0, 0, 0))),
            "00"
            "0000000000000000"
            "ffffffffffffffff"
            "ffff"
            "ffffffff"
            "ffffffffffffffff");
  EXPECT_EQ(Hex(EncodeRowKey(MakeKey(255, UINT64_MAX, INT64_MAX, 65535, INT32_MAX, INT64_MAX))),
            "ff"
            "ffffffffffffffff"
            "8000000000000000"
            "0000"
            "80000000"
            "8000000000000000");
}

TEST(RowKeyTest, EncodeToWritesTheSameBytesAsEncode) {
  char buf[kRowKeySize + 2];
  buf[kRowKeySize] = 'x';
  buf[kRowKeySize + 1] = 'y';
  EncodeRowKeyTo(TypicalKey(), buf);
  EXPECT_EQ(std::string(buf, kRowKeySize), EncodeRowKey(TypicalKey()));
  EXPECT_EQ(buf[kRowKeySize], 'x') << "wrote past 31 bytes";
  EXPECT_EQ(buf[kRowKeySize + 1], 'y');
}

TEST(RowKeyTest, PrefixIsSaltThenIdHash) {
  const RowKey k = TypicalKey();
  const std::string bytes = EncodeRowKey(k);
  EXPECT_EQ(bytes.substr(0, kRowKeyPrefixSize), IdKeyRange(k.salt, k.id_hash).start);
}

// ---- Round trip and boundaries ----

TEST(RowKeyTest, DecodeInvertsEncode) {
  const RowKey k = TypicalKey();
  EXPECT_EQ(Decoded(EncodeRowKey(k)), k);
  EXPECT_EQ(Decoded(EncodeRowKey(RowKey{})), RowKey{});
}

TEST(RowKeyTest, EveryFieldRoundTripsAtItsBoundaries) {
  const uint8_t salts[] = {0, 1, 127, 128, 254, 255};
  const uint64_t hashes[] = {0, 1, 0x7FFFFFFFFFFFFFFFULL, 0x8000000000000000ULL, UINT64_MAX};
  const int64_t times[] = {0, 1, 255, 256, 1'700'000'000'000, INT64_MAX - 1, INT64_MAX};
  const uint16_t topics[] = {0, 1, 255, 256, 32767, 32768, 65534, 65535};
  const int32_t partitions[] = {0, 1, 255, 256, INT32_MAX - 1, INT32_MAX};
  const int64_t offsets[] = {0, 1, 255, 256, INT64_MAX - 1, INT64_MAX};
  int checked = 0;
  for (uint8_t s : salts)
    for (uint64_t h : hashes)
      for (int64_t t : times)
        for (uint16_t tp : topics)
          for (int32_t p : partitions)
            for (int64_t o : offsets) {
              const RowKey k = MakeKey(s, h, t, tp, p, o);
              RowKey back;
              ASSERT_TRUE(DecodeRowKey(EncodeRowKey(k), &back)) << ::testing::PrintToString(k);
              ASSERT_EQ(back, k);
              ++checked;
            }
  EXPECT_EQ(checked, 6 * 5 * 7 * 8 * 6 * 6);
}

TEST(RowKeyTest, BoundaryTimesAndOffsetsEncodeAsDocumented) {
  // ts = 0 is the largest reversed time: the last key of a prefix. ts = INT64_MAX the smallest.
  const std::string ts0 = EncodeRowKey(MakeKey(1, 2, 0, 0, 0, 0));
  const std::string ts_max = EncodeRowKey(MakeKey(1, 2, INT64_MAX, 0, 0, 0));
  EXPECT_EQ(Hex(ts0.substr(9, 8)), "ffffffffffffffff");
  EXPECT_EQ(Hex(ts_max.substr(9, 8)), "8000000000000000");
  EXPECT_LT(ts_max, ts0);
  const std::string off0 = EncodeRowKey(MakeKey(1, 2, 5, 0, 0, 0));
  const std::string off_max = EncodeRowKey(MakeKey(1, 2, 5, 0, 0, INT64_MAX));
  EXPECT_EQ(Hex(off0.substr(23, 8)), "ffffffffffffffff");
  EXPECT_EQ(Hex(off_max.substr(23, 8)), "8000000000000000");
  EXPECT_LT(off_max, off0);
}

// ---- Decode rejects bad input ----

TEST(RowKeyTest, DecodeRejectsWrongLengths) {
  const std::string good = EncodeRowKey(TypicalKey());
  RowKey k;
  EXPECT_FALSE(DecodeRowKey("", &k));
  EXPECT_FALSE(DecodeRowKey(good.substr(0, 30), &k));
  EXPECT_FALSE(DecodeRowKey(good + '\0', &k));
  EXPECT_FALSE(DecodeRowKey(good.substr(0, kRowKeyPrefixSize), &k));
  EXPECT_FALSE(DecodeRowKey(good + good, &k));
  for (size_t n = 0; n <= 64; ++n) {
    const std::string bytes(n, '\xff');  // all-0xFF of length 31 is a valid key (see below)
    EXPECT_EQ(DecodeRowKey(bytes, &k), n == kRowKeySize) << n;
  }
}

TEST(RowKeyTest, DecodeRejectsTimeBeyondInt64) {
  // A reversed time below 2^63 would be a time above INT64_MAX.
  std::string bytes = EncodeRowKey(TypicalKey());
  bytes[9] = '\x7f';
  RowKey k;
  EXPECT_FALSE(DecodeRowKey(bytes, &k));
  EXPECT_FALSE(DecodeRowKey(std::string(kRowKeySize, '\0'), &k));  // reversed time 0
}

TEST(RowKeyTest, DecodeRejectsNegativePartition) {
  std::string bytes = EncodeRowKey(TypicalKey());
  bytes[19] = '\x7f';  // ~partition with the top bit clear: partition >= 2^31
  RowKey k;
  EXPECT_FALSE(DecodeRowKey(bytes, &k));
}

TEST(RowKeyTest, DecodeRejectsNegativeOffset) {
  std::string bytes = EncodeRowKey(TypicalKey());
  bytes[23] = '\x7f';  // ~offset with the top bit clear: offset >= 2^63
  RowKey k;
  EXPECT_FALSE(DecodeRowKey(bytes, &k));
}

TEST(RowKeyTest, DecodeAcceptsTheExtremesOfTheValidSpace) {
  RowKey k;
  // All 0xFF: salt 255, id_hash max, ts 0, topic 0, partition 0, offset 0.
  ASSERT_TRUE(DecodeRowKey(std::string(kRowKeySize, '\xff'), &k));
  EXPECT_EQ(k, MakeKey(255, UINT64_MAX, 0, 0, 0, 0));
  // The smallest valid encoding: top bits of time, partition and offset set, all else zero.
  std::string low(kRowKeySize, '\0');
  low[9] = low[19] = low[23] = '\x80';
  ASSERT_TRUE(DecodeRowKey(low, &k));
  EXPECT_EQ(k, MakeKey(0, 0, INT64_MAX, 65535, INT32_MAX, INT64_MAX));
}

// ---- Order ----

TEST(RowKeyTest, ReversedTimeOrdersNewestFirst) {
  const RowKey older = MakeKey(1, 42, 1000, 0, 0, 0);
  const RowKey newer = MakeKey(1, 42, 1001, 0, 0, 0);
  EXPECT_TRUE(KeyLess(newer, older));
  EXPECT_FALSE(KeyLess(older, newer));
  EXPECT_LT(EncodeRowKey(newer), EncodeRowKey(older));
}

TEST(RowKeyTest, OrderIsSaltThenIdHashThenTimeDescThenTupleDesc) {
  // Listed in ascending key order.
  const std::vector<RowKey> ascending = {
      MakeKey(0, 0, INT64_MAX, 65535, INT32_MAX, INT64_MAX),
      MakeKey(0, 0, INT64_MAX, 65535, INT32_MAX, 0),
      MakeKey(0, 0, INT64_MAX, 65535, 0, INT64_MAX),
      MakeKey(0, 0, INT64_MAX, 0, INT32_MAX, INT64_MAX),
      MakeKey(0, 0, 0, 65535, INT32_MAX, INT64_MAX),
      MakeKey(0, 0, 0, 0, 0, 0),
      MakeKey(0, 1, INT64_MAX, 65535, INT32_MAX, INT64_MAX),
      MakeKey(0, 1, 5, 2, 3, 4),
      MakeKey(0, UINT64_MAX, 0, 0, 0, 0),
      MakeKey(1, 0, INT64_MAX, 65535, INT32_MAX, INT64_MAX),
      MakeKey(1, 0, 100, 7, 3, 11),
      MakeKey(1, 0, 100, 7, 3, 10),
      MakeKey(1, 0, 100, 7, 2, 99),
      MakeKey(1, 0, 100, 6, 9, 99),
      MakeKey(1, 0, 99, 9, 9, 99),
      MakeKey(255, UINT64_MAX, 0, 0, 0, 0),
  };
  for (size_t i = 0; i < ascending.size(); ++i) {
    for (size_t j = 0; j < ascending.size(); ++j) {
      SCOPED_TRACE(::testing::Message() << "i=" << i << " j=" << j);
      EXPECT_EQ(KeyLess(ascending[i], ascending[j]), i < j);
      const std::string a = EncodeRowKey(ascending[i]);
      const std::string b = EncodeRowKey(ascending[j]);
      EXPECT_EQ(a < b, i < j);
      EXPECT_EQ(a == b, i == j);
    }
  }
}

TEST(RowKeyTest, KeyLessIsIrreflexive) {
  EXPECT_FALSE(KeyLess(TypicalKey(), TypicalKey()));
  EXPECT_FALSE(KeyLess(RowKey{}, RowKey{}));
}

// ---- Big-endian helpers ----

TEST(BigEndianTest, StoresMostSignificantByteFirst) {
  char b[8];
  StoreBigEndian64(0x0102030405060708ULL, b);
  EXPECT_EQ(std::string(b, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  StoreBigEndian32(0x0A0B0C0DU, b);
  EXPECT_EQ(std::string(b, 4), "\x0a\x0b\x0c\x0d");
  StoreBigEndian16(0xFE01, b);
  EXPECT_EQ(std::string(b, 2), "\xfe\x01");
}

TEST(BigEndianTest, LoadInvertsStore) {
  char b[8];
  const uint64_t values[] = {0,         1, 0x80, 0xFF, 0x0102030405060708ULL, 0x8000000000000000ULL,
                             UINT64_MAX};
  for (uint64_t v : values) {
    StoreBigEndian64(v, b);
    EXPECT_EQ(LoadBigEndian64(b), v);
    StoreBigEndian32(static_cast<uint32_t>(v), b);
    EXPECT_EQ(LoadBigEndian32(b), static_cast<uint32_t>(v));
    StoreBigEndian16(static_cast<uint16_t>(v), b);
    EXPECT_EQ(LoadBigEndian16(b), static_cast<uint16_t>(v));
  }
}

// ---- IdHash ----

TEST(IdHashTest, IsXxh3AndStableAcrossVersions) {
  // XXH3_64bits("") is the published test vector 0x2D06800538D394C2. The second value pins the
  // hash of a typical id: a change here would orphan every stored key.
  EXPECT_EQ(IdHash(""), 0x2D06800538D394C2ULL);
  EXPECT_EQ(IdHash("dev-000001"), 0xA1D1EF3E7FE91C47ULL);
}

TEST(IdHashTest, UsesEveryByteOfTheId) {
  EXPECT_NE(IdHash("dev-1"), IdHash("dev-10"));
  EXPECT_NE(IdHash(std::string_view("a\0b", 3)), IdHash(std::string_view("a\0c", 3)));
  EXPECT_NE(IdHash(std::string_view("a\0", 2)), IdHash("a"));
}

// ---- IdKeyRange ----

TEST(IdKeyRangeTest, IsThePrefixAndItsSuccessor) {
  const KeyRange r = IdKeyRange(7, 0x0123456789ABCDEFULL);
  EXPECT_EQ(Hex(r.start), "070123456789abcdef");
  EXPECT_EQ(Hex(r.limit), "070123456789abcdf0");
}

TEST(IdKeyRangeTest, SuccessorCarriesPastTrailingFF) {
  EXPECT_EQ(Hex(IdKeyRange(7, 0x01234567890000FFULL).limit), "0701234567890001");
  EXPECT_EQ(Hex(IdKeyRange(7, UINT64_MAX).limit), "08");
  EXPECT_EQ(Hex(IdKeyRange(254, UINT64_MAX).limit), "ff");
}

TEST(IdKeyRangeTest, TopPrefixHasNoLimit) {
  const KeyRange r = IdKeyRange(255, UINT64_MAX);
  EXPECT_EQ(Hex(r.start), "ffffffffffffffffff");
  EXPECT_TRUE(r.limit.empty()) << "prefix successor of all-0xFF must be \"no limit\"";
}

TEST(IdKeyRangeTest, HoldsEveryKeyOfThePrefixAndNoNeighbour) {
  struct Prefix {
    uint8_t salt;
    uint64_t id_hash;
  };
  const Prefix prefixes[] = {{0, 0},
                             {0, 1},
                             {3, 0x00000000000000FFULL},
                             {3, UINT64_MAX},
                             {128, 1ULL << 63},
                             {254, UINT64_MAX},
                             {255, 0},
                             {255, UINT64_MAX - 1},
                             {255, UINT64_MAX}};
  for (const Prefix& p : prefixes) {
    SCOPED_TRACE(::testing::Message() << "salt=" << int{p.salt} << " id_hash=" << p.id_hash);
    const KeyRange r = IdKeyRange(p.salt, p.id_hash);
    for (int64_t ts : {int64_t{0}, int64_t{1}, int64_t{1'700'000'000'000}, INT64_MAX}) {
      for (const RowKey& k : ExtremeTails(p.salt, p.id_hash, ts)) {
        EXPECT_TRUE(InRange(k, r)) << ::testing::PrintToString(k);
      }
      // Neighbouring prefixes: the adjacent id_hash in the same salt, and the same id_hash in the
      // adjacent salt. None of their keys may fall inside.
      std::vector<Prefix> neighbours;
      if (p.id_hash > 0) neighbours.push_back({p.salt, p.id_hash - 1});
      if (p.id_hash < UINT64_MAX) neighbours.push_back({p.salt, p.id_hash + 1});
      if (p.salt > 0) neighbours.push_back({static_cast<uint8_t>(p.salt - 1), p.id_hash});
      if (p.salt < 255) neighbours.push_back({static_cast<uint8_t>(p.salt + 1), p.id_hash});
      if (p.salt < 255 && p.id_hash == UINT64_MAX) {
        neighbours.push_back({static_cast<uint8_t>(p.salt + 1), 0});  // just past the carry
      }
      if (p.salt > 0 && p.id_hash == 0) {
        neighbours.push_back({static_cast<uint8_t>(p.salt - 1), UINT64_MAX});
      }
      for (const Prefix& n : neighbours) {
        for (const RowKey& k : ExtremeTails(n.salt, n.id_hash, ts)) {
          EXPECT_FALSE(InRange(k, r)) << ::testing::PrintToString(k);
        }
      }
    }
  }
}

// ---- IdTimeKeyRange ----

class IdTimeKeyRangeTest : public ::testing::Test {
 protected:
  // Whether every extreme tuple of (salt, id_hash, ts) is inside `r` (inside == true) or every one
  // is outside (inside == false). A range bound must never split one millisecond's events.
  static void ExpectTime(const KeyRange& r, uint8_t salt, uint64_t id_hash, int64_t ts,
                         bool inside) {
    for (const RowKey& k : ExtremeTails(salt, id_hash, ts)) {
      EXPECT_EQ(InRange(k, r), inside) << ::testing::PrintToString(k);
    }
  }
};

TEST_F(IdTimeKeyRangeTest, FromIsInclusiveToIsExclusive) {
  const uint8_t salt = 9;
  const uint64_t h = 0xDEADBEEFCAFEF00DULL;
  const int64_t from = 1'700'000'000'000, to = 1'700'000'060'000;
  const KeyRange r = IdTimeKeyRange(salt, h, from, to);
  ExpectTime(r, salt, h, from - 1, false);
  ExpectTime(r, salt, h, from, true);
  ExpectTime(r, salt, h, from + 1, true);
  ExpectTime(r, salt, h, to - 1, true);
  ExpectTime(r, salt, h, to, false);
  ExpectTime(r, salt, h, to + 1, false);
  ExpectTime(r, salt, h, 0, false);
  ExpectTime(r, salt, h, INT64_MAX, false);
}

TEST_F(IdTimeKeyRangeTest, OneMillisecondWide) {
  const KeyRange r = IdTimeKeyRange(1, 2, 500, 501);
  ExpectTime(r, 1, 2, 499, false);
  ExpectTime(r, 1, 2, 500, true);
  ExpectTime(r, 1, 2, 501, false);
}

TEST_F(IdTimeKeyRangeTest, FromZeroReachesTheEpoch) {
  const KeyRange r = IdTimeKeyRange(4, 77, 0, 1000);
  ExpectTime(r, 4, 77, 0, true);
  ExpectTime(r, 4, 77, 999, true);
  ExpectTime(r, 4, 77, 1000, false);
  EXPECT_EQ(r.limit, IdKeyRange(4, 77).limit) << "from = 0 ends where the id's keys end";
  ExpectTime(r, 4, 78, 0, false);
  ExpectTime(r, 4, 78, 500, false);
}

TEST_F(IdTimeKeyRangeTest, ToInt64MaxCoversAllButTheLastMillisecond) {
  const KeyRange r = IdTimeKeyRange(4, 77, 1, INT64_MAX);
  ExpectTime(r, 4, 77, 0, false);
  ExpectTime(r, 4, 77, 1, true);
  ExpectTime(r, 4, 77, INT64_MAX - 1, true);
  ExpectTime(r, 4, 77, INT64_MAX, false);
  ExpectTime(r, 4, 76, INT64_MAX - 1, false);
}

TEST_F(IdTimeKeyRangeTest, WholeTimeRange) {
  const KeyRange r = IdTimeKeyRange(4, 77, 0, INT64_MAX);
  ExpectTime(r, 4, 77, 0, true);
  ExpectTime(r, 4, 77, INT64_MAX - 1, true);
  ExpectTime(r, 4, 77, INT64_MAX, false);
  ExpectTime(r, 4, 76, 5, false);
  ExpectTime(r, 4, 78, 5, false);
  ExpectTime(r, 3, 77, 5, false);
  ExpectTime(r, 5, 77, 5, false);
}

TEST_F(IdTimeKeyRangeTest, TopPrefixFromZeroHasNoLimit) {
  const KeyRange r = IdTimeKeyRange(255, UINT64_MAX, 0, 10);
  EXPECT_TRUE(r.limit.empty());
  ExpectTime(r, 255, UINT64_MAX, 0, true);
  ExpectTime(r, 255, UINT64_MAX, 9, true);
  ExpectTime(r, 255, UINT64_MAX, 10, false);
  ExpectTime(r, 255, UINT64_MAX - 1, 5, false);
}

TEST_F(IdTimeKeyRangeTest, TopPrefixWithFromHasALimit) {
  const KeyRange r = IdTimeKeyRange(255, UINT64_MAX, 5, 10);
  ExpectTime(r, 255, UINT64_MAX, 4, false);
  ExpectTime(r, 255, UINT64_MAX, 5, true);
  ExpectTime(r, 255, UINT64_MAX, 9, true);
  ExpectTime(r, 255, UINT64_MAX, 10, false);
}

TEST_F(IdTimeKeyRangeTest, IdHashEndingInFFDoesNotLeakIntoTheNext) {
  const uint64_t h = 0x00000000000000FFULL;
  const KeyRange r = IdTimeKeyRange(3, h, 0, INT64_MAX);
  ExpectTime(r, 3, h, 0, true);
  ExpectTime(r, 3, h + 1, 0, false);
  ExpectTime(r, 3, h + 1, INT64_MAX - 1, false);
  const KeyRange top = IdTimeKeyRange(3, UINT64_MAX, 0, INT64_MAX);
  ExpectTime(top, 3, UINT64_MAX, 0, true);
  ExpectTime(top, 4, 0, INT64_MAX - 1, false);
  ExpectTime(top, 4, 0, 0, false);
}

TEST_F(IdTimeKeyRangeTest, StartsAtTheNewestKeyBeforeTo) {
  // A forward scan from `start` meets ts = to - 1 first: no key of the prefix lies in
  // [start, key(to - 1, tuple max)).
  const KeyRange r = IdTimeKeyRange(2, 3, 100, 200);
  const std::string first = EncodeRowKey(MakeKey(2, 3, 199, 65535, INT32_MAX, INT64_MAX));
  const std::string before = EncodeRowKey(MakeKey(2, 3, 200, 0, 0, 0));
  EXPECT_LE(r.start, first);
  EXPECT_LT(before, r.start);
}

// ---- SaltKeyRange ----

TEST(SaltKeyRangeTest, HoldsEveryKeyOfTheSaltAndNoOther) {
  for (int s = 0; s < 256; ++s) {
    const uint8_t salt = static_cast<uint8_t>(s);
    const KeyRange r = SaltKeyRange(salt);
    ASSERT_EQ(r.start, std::string(1, static_cast<char>(salt)));
    EXPECT_EQ(r.limit.empty(), s == 255) << s;
    for (uint64_t h : {uint64_t{0}, UINT64_MAX}) {
      for (int64_t ts : {int64_t{0}, INT64_MAX}) {
        for (const RowKey& k : ExtremeTails(salt, h, ts)) {
          ASSERT_TRUE(InRange(k, r)) << ::testing::PrintToString(k);
        }
        if (s > 0) {
          for (const RowKey& k : ExtremeTails(static_cast<uint8_t>(s - 1), h, ts)) {
            ASSERT_FALSE(InRange(k, r)) << ::testing::PrintToString(k);
          }
        }
        if (s < 255) {
          for (const RowKey& k : ExtremeTails(static_cast<uint8_t>(s + 1), h, ts)) {
            ASSERT_FALSE(InRange(k, r)) << ::testing::PrintToString(k);
          }
        }
      }
    }
  }
}

TEST(SaltKeyRangeTest, ContainsEveryIdRangeOfTheSalt) {
  for (uint64_t h : {uint64_t{0}, uint64_t{12345}, UINT64_MAX}) {
    for (uint8_t salt : {uint8_t{0}, uint8_t{17}, uint8_t{255}}) {
      const KeyRange id = IdKeyRange(salt, h);
      const KeyRange all = SaltKeyRange(salt);
      EXPECT_GE(id.start, all.start);
      if (all.limit.empty()) continue;
      EXPECT_FALSE(id.limit.empty());
      EXPECT_LE(id.limit, all.limit);
    }
  }
}

}  // namespace
}  // namespace hotrow::keying
