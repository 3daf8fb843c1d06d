#include "keying/row_value.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "keying/row_key.h"

namespace hotrow::keying {
namespace {

// Decodes `value` and expects success.
void ExpectDecodes(std::string_view value, std::string_view want_id,
                   std::string_view want_payload) {
  std::string_view id = "unset", payload = "unset";
  ASSERT_TRUE(DecodeRowValue(value, &id, &payload));
  EXPECT_EQ(id, want_id);
  EXPECT_EQ(payload, want_payload);
}

bool Decodes(std::string_view value) {
  std::string_view id, payload;
  return DecodeRowValue(value, &id, &payload);
}

// ---- Round trip ----

TEST(RowValueTest, DecodeInvertsEncode) {
  const std::string payload = R"({"id":"dev-000001","ts":1700000000000,"temp":21.5})";
  ExpectDecodes(EncodeRowValue("dev-000001", payload), "dev-000001", payload);
}

TEST(RowValueTest, LayoutIsBigEndianLengthThenIdThenPayload) {
  EXPECT_EQ(EncodeRowValue("abc", "{}"), std::string("\x00\x03", 2) + "abc{}");
  const std::string long_id(256, 'x');
  const std::string v = EncodeRowValue(long_id, "p");
  ASSERT_EQ(v.size(), 2u + 256u + 1u);
  EXPECT_EQ(v.substr(0, 2), std::string("\x01\x00", 2));
}

TEST(RowValueTest, EmptyPayloadRoundTrips) {
  const std::string v = EncodeRowValue("dev-1", "");
  EXPECT_EQ(v.size(), 2u + 5u);
  ExpectDecodes(v, "dev-1", "");
}

TEST(RowValueTest, EmptyIdRoundTrips) {
  ExpectDecodes(EncodeRowValue("", "{}"), "", "{}");
  ExpectDecodes(EncodeRowValue("", ""), "", "");
  EXPECT_EQ(EncodeRowValue("", ""), std::string(2, '\0'));
}

TEST(RowValueTest, IdOfMaximumSizeRoundTrips) {
  ASSERT_EQ(kMaxIdSize, 256u);
  std::string id(kMaxIdSize, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(i);  // every byte value
  ExpectDecodes(EncodeRowValue(id, "{\"x\":1}"), id, "{\"x\":1}");
}

TEST(RowValueTest, AnyBytesInIdAndPayloadRoundTrip) {
  const std::vector<std::string> ids = {
      std::string("\0", 1),
      std::string("a\0b", 3),
      "/",
      "dev/1/../2",
      "\xff",
      std::string("\xff\x00\xff", 3),
      std::string("\x01\x00", 2),
      "caf\xc3\xa9",
      "\"quoted\"",
      "with space",
  };
  const char kPayload[] = "{\"a\":\"\0\xff\"}";  // a NUL and a non-UTF-8 byte inside
  const std::string payload(kPayload, sizeof(kPayload) - 1);
  for (const std::string& id : ids) {
    SCOPED_TRACE(::testing::PrintToString(id));
    ExpectDecodes(EncodeRowValue(id, payload), id, payload);
  }
}

TEST(RowValueTest, EveryIdLengthRoundTrips) {
  for (size_t n = 0; n <= kMaxIdSize; ++n) {
    const std::string id(n, static_cast<char>('a' + n % 26));
    const std::string payload(n % 7, '\xff');
    ExpectDecodes(EncodeRowValue(id, payload), id, payload);
  }
}

TEST(RowValueTest, LargePayloadRoundTrips) {
  const std::string payload(1 << 20, 'j');
  ExpectDecodes(EncodeRowValue("dev-1", payload), "dev-1", payload);
}

TEST(RowValueTest, EncodeToReplacesWhatTheBufferHeld) {
  std::string out(1000, '#');
  EncodeRowValueTo("dev-1", "{}", &out);
  EXPECT_EQ(out, EncodeRowValue("dev-1", "{}"));
  out = "x";
  EncodeRowValueTo("dev-000002", "{\"k\":2}", &out);
  EXPECT_EQ(out, EncodeRowValue("dev-000002", "{\"k\":2}"));
}

TEST(RowValueTest, DecodedViewsPointIntoTheValue) {
  const std::string v = EncodeRowValue("dev-1", "{}");
  std::string_view id, payload;
  ASSERT_TRUE(DecodeRowValue(v, &id, &payload));
  EXPECT_EQ(id.data(), v.data() + 2);
  EXPECT_EQ(payload.data(), v.data() + 2 + 5);
}

// ---- Rejected values ----

TEST(RowValueTest, TooShortForTheLengthIsRejected) {
  EXPECT_FALSE(Decodes(""));
  EXPECT_FALSE(Decodes(std::string("\x00", 1)));
  EXPECT_TRUE(Decodes(std::string("\x00\x00", 2)));  // empty id, empty payload
}

TEST(RowValueTest, TruncatedIdIsRejected) {
  const std::string v = EncodeRowValue("dev-000001", "{}");
  const size_t id_end = 2 + 10;
  for (size_t n = 0; n < id_end; ++n) {
    EXPECT_FALSE(Decodes(std::string_view(v).substr(0, n))) << n << " bytes";
  }
  // Cut inside the payload, the value still splits: the payload has no length of its own, and the
  // JSON parser after it rejects a cut payload.
  ExpectDecodes(std::string_view(v).substr(0, id_end), "dev-000001", "");
  ExpectDecodes(std::string_view(v).substr(0, id_end + 1), "dev-000001", "{");
}

TEST(RowValueTest, TruncatedMaximumIdIsRejected) {
  const std::string v = EncodeRowValue(std::string(kMaxIdSize, 'z'), "");
  EXPECT_TRUE(Decodes(v));
  EXPECT_FALSE(Decodes(std::string_view(v).substr(0, v.size() - 1)));
}

TEST(RowValueTest, AnnouncedIdLongerThan256IsRejected) {
  // Long enough for the announced length, but the length itself is out of range.
  for (uint16_t announced : {uint16_t{257}, uint16_t{1000}, uint16_t{0xFFFF}}) {
    std::string v(2 + announced + 10, 'x');
    StoreBigEndian16(announced, v.data());
    EXPECT_FALSE(Decodes(v)) << announced;
  }
  std::string ok(2 + 256 + 10, 'x');
  StoreBigEndian16(256, ok.data());
  EXPECT_TRUE(Decodes(ok));
}

TEST(RowValueTest, GarbageNeverCrashes) {
  // Every 2-byte header over a short body either decodes within bounds or is rejected.
  std::string v(300, 'q');
  for (int hi = 0; hi < 256; ++hi) {
    for (int lo = 0; lo < 256; ++lo) {
      v[0] = static_cast<char>(hi);
      v[1] = static_cast<char>(lo);
      std::string_view id, payload;
      const size_t announced = static_cast<size_t>(hi) * 256 + static_cast<size_t>(lo);
      const bool ok = DecodeRowValue(v, &id, &payload);
      ASSERT_EQ(ok, announced <= kMaxIdSize) << announced;
      if (ok) {
        ASSERT_EQ(id.size(), announced);
        ASSERT_EQ(2 + id.size() + payload.size(), v.size());
      }
    }
  }
}

// ---- Hash collisions are told apart by the full id ----

struct StoredEvent {
  std::string key;
  std::string value;
};

// What a reader does for "events of `id`": take every key in the id's key range, decode the value,
// and keep only those whose full id is the one asked for.
std::vector<std::string> ReadPayloadsOf(std::string_view id, uint8_t salt, uint64_t id_hash,
                                        const std::vector<StoredEvent>& stored) {
  const KeyRange range = IdKeyRange(salt, id_hash);
  std::vector<std::string> out;
  for (const StoredEvent& e : stored) {
    if (e.key < range.start || (!range.limit.empty() && e.key >= range.limit)) continue;
    std::string_view stored_id, payload;
    if (!DecodeRowValue(e.value, &stored_id, &payload)) continue;
    if (stored_id != id) continue;  // same hash, another id: not ours
    out.emplace_back(payload);
  }
  return out;
}

TEST(RowValueCollisionTest, FullIdTellsApartTwoIdsWithTheSameHash) {
  // Force a collision: two ids whose keys carry the same id_hash and salt, so their keys share a
  // prefix and interleave in time.
  const uint64_t shared_hash = 0x0BADC0FFEE0DDF00ULL;
  const uint8_t salt = 5;
  const std::string id_a = "dev-000001";
  const std::string id_b = "dev-999999";
  std::vector<StoredEvent> stored;
  for (int i = 0; i < 10; ++i) {
    const std::string& id = i % 2 == 0 ? id_a : id_b;
    RowKey k;
    k.salt = salt;
    k.id_hash = shared_hash;
    k.ts_ms = 1'700'000'000'000 + i;
    k.partition = i % 3;
    k.offset = 100 + i;
    stored.push_back({EncodeRowKey(k), EncodeRowValue(id, "{\"n\":" + std::to_string(i) + "}")});
  }
  // The codec alone cannot tell them apart: every key lies in the shared prefix's range.
  const KeyRange range = IdKeyRange(salt, shared_hash);
  for (const StoredEvent& e : stored) {
    ASSERT_GE(e.key, range.start);
    ASSERT_LT(e.key, range.limit);
  }
  // The value's full id can.
  EXPECT_EQ(
      ReadPayloadsOf(id_a, salt, shared_hash, stored),
      (std::vector<std::string>{"{\"n\":0}", "{\"n\":2}", "{\"n\":4}", "{\"n\":6}", "{\"n\":8}"}));
  EXPECT_EQ(
      ReadPayloadsOf(id_b, salt, shared_hash, stored),
      (std::vector<std::string>{"{\"n\":1}", "{\"n\":3}", "{\"n\":5}", "{\"n\":7}", "{\"n\":9}"}));
  EXPECT_TRUE(ReadPayloadsOf("dev-000002", salt, shared_hash, stored).empty());
}

TEST(RowValueCollisionTest, IdsThatArePrefixesOfEachOtherStayApart) {
  // The stored length keeps "dev-1" + payload "0..." from reading as "dev-10" + payload "...".
  const std::string a = EncodeRowValue("dev-1", "0{}");
  const std::string b = EncodeRowValue("dev-10", "{}");
  EXPECT_NE(a, b);
  ExpectDecodes(a, "dev-1", "0{}");
  ExpectDecodes(b, "dev-10", "{}");
  // Ids that differ only after a NUL byte are different ids.
  const std::string c = EncodeRowValue(std::string("a\0b", 3), "{}");
  const std::string d = EncodeRowValue(std::string("a\0c", 3), "{}");
  std::string_view id_c, id_d, payload;
  ASSERT_TRUE(DecodeRowValue(c, &id_c, &payload));
  ASSERT_TRUE(DecodeRowValue(d, &id_d, &payload));
  EXPECT_NE(id_c, id_d);
  EXPECT_EQ(id_c.size(), 3u);
}

}  // namespace
}  // namespace hotrow::keying
