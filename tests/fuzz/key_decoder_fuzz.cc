// Fuzz target: the stored-key and stored-value decoders (keying/row_key.h, keying/row_value.h) and
// the salter. Every input is read as a whole key, as a whole value, and as a run of 31-byte keys.
//
// Properties:
// - DecodeRowKey accepts exactly the 31-byte strings whose time, partition and offset fit their
//   signed range (a clear top bit in the stored complement means a negative value), and a decoded
//   key re-encodes to the very same bytes;
// - a decoded key lies inside its salt's, its id's and its exact time's key ranges, and outside
//   the time ranges that end before or start after it;
// - memcmp order of two encoded keys is KeyLess order;
// - DecodeRowValue accepts exactly what EncodeRowValue can produce, and re-encodes to the input;
// - a salt is always below the salt count;
// - DecodePosting (keying/index_key.h) accepts exactly a header (field length, field, value
//   length, value) followed by whole 31-byte keys, and the posting re-encodes to the input.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "keying/salter.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using hotrow::keying::KeyRange;
using hotrow::keying::RowKey;

bool InRange(const std::string& key, const KeyRange& range) {
  return key >= range.start && (range.limit.empty() || key < range.limit);
}

// The top bits that DecodeRowKey must find set: the complements of non-negative values.
bool ShouldDecode(std::string_view bytes) {
  if (bytes.size() != hotrow::keying::kRowKeySize) return false;
  auto top_bit = [&](size_t at) { return (static_cast<unsigned char>(bytes[at]) & 0x80) != 0; };
  return top_bit(9) && top_bit(19) && top_bit(23);  // reversed time, ~partition, ~offset
}

void CheckKeyRanges(const std::string& bytes, const RowKey& key) {
  FUZZ_CHECK(InRange(bytes, hotrow::keying::SaltKeyRange(key.salt)));
  FUZZ_CHECK(InRange(bytes, hotrow::keying::IdKeyRange(key.salt, key.id_hash)));
  auto time_range = [&](int64_t from, int64_t to) {
    return hotrow::keying::IdTimeKeyRange(key.salt, key.id_hash, from, to);
  };
  if (key.ts_ms < INT64_MAX) {
    FUZZ_CHECK(InRange(bytes, time_range(key.ts_ms, key.ts_ms + 1)));
    FUZZ_CHECK(InRange(bytes, time_range(0, key.ts_ms + 1)));
  }
  if (key.ts_ms < INT64_MAX - 1) FUZZ_CHECK(!InRange(bytes, time_range(key.ts_ms + 1, key.ts_ms + 2)));
  if (key.ts_ms > 0) FUZZ_CHECK(!InRange(bytes, time_range(0, key.ts_ms)));
}

void CheckRowKey(std::string_view bytes) {
  RowKey key;
  const bool decoded = hotrow::keying::DecodeRowKey(bytes, &key);
  FUZZ_CHECK(decoded == ShouldDecode(bytes));
  if (!decoded) return;
  FUZZ_CHECK(key.ts_ms >= 0 && key.partition >= 0 && key.offset >= 0);
  const std::string encoded = hotrow::keying::EncodeRowKey(key);
  FUZZ_CHECK(encoded == bytes);
  CheckKeyRanges(encoded, key);
}

// Both keys must decode. memcmp order and KeyLess must agree, equality included.
void CheckOrder(std::string_view a_bytes, std::string_view b_bytes) {
  RowKey a, b;
  if (!hotrow::keying::DecodeRowKey(a_bytes, &a) || !hotrow::keying::DecodeRowKey(b_bytes, &b)) {
    return;
  }
  const int cmp = a_bytes.compare(b_bytes);
  FUZZ_CHECK((cmp < 0) == hotrow::keying::KeyLess(a, b));
  FUZZ_CHECK((cmp > 0) == hotrow::keying::KeyLess(b, a));
  FUZZ_CHECK((cmp == 0) == (a == b));
}

void CheckRowValue(std::string_view bytes) {
  std::string_view id, payload;
  const bool decoded = hotrow::keying::DecodeRowValue(bytes, &id, &payload);
  const size_t id_len =
      bytes.size() < 2 ? 0 : hotrow::keying::LoadBigEndian16(bytes.data());
  const bool should = bytes.size() >= 2 && id_len <= hotrow::keying::kMaxIdSize &&
                      bytes.size() >= 2 + id_len;
  FUZZ_CHECK(decoded == should);
  if (!decoded) return;
  FUZZ_CHECK(id.size() == id_len);
  FUZZ_CHECK(hotrow::keying::EncodeRowValue(id, payload) == bytes);
}

void CheckPosting(std::string_view bytes) {
  std::string_view field, value, events;
  const bool decoded = hotrow::keying::DecodePosting(bytes, &field, &value, &events);
  bool should = false;
  if (!bytes.empty()) {
    const size_t field_len = static_cast<unsigned char>(bytes[0]);
    if (bytes.size() >= 3 + field_len) {
      const size_t header =
          3 + field_len + hotrow::keying::LoadBigEndian16(bytes.data() + 1 + field_len);
      should = bytes.size() >= header &&
               (bytes.size() - header) % hotrow::keying::kRowKeySize == 0;
    }
  }
  FUZZ_CHECK(decoded == should);
  if (!decoded) return;
  std::string again;
  hotrow::keying::EncodePostingHeaderTo(field, value, &again);
  for (size_t at = 0; at < events.size(); at += hotrow::keying::kRowKeySize) {
    hotrow::keying::AppendPostingEvent(events.substr(at, hotrow::keying::kRowKeySize), &again);
  }
  FUZZ_CHECK(again == bytes);
}

// The salt count and record identity come from the first bytes; the id is the whole input.
void CheckSalter(std::string_view bytes) {
  if (bytes.size() < 2) return;
  const int salts = 1 + static_cast<unsigned char>(bytes[0]);  // 1..256
  const auto by = (bytes[1] & 1) != 0 ? hotrow::keying::SaltBy::kId : hotrow::keying::SaltBy::kRecord;
  const hotrow::keying::Salter salter(salts, by);
  int64_t offset = 0;
  std::memcpy(&offset, bytes.data(), std::min(bytes.size(), sizeof(offset)));
  offset &= INT64_MAX;
  const int32_t partition = static_cast<int32_t>(offset & INT32_MAX);
  const uint8_t salt = salter.SaltOf(bytes, partition, offset, bytes);
  FUZZ_CHECK(salt < salts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckRowKey(bytes);
  CheckRowValue(bytes);
  CheckSalter(bytes);
  CheckPosting(bytes);
  // The input as consecutive keys: each one alone, and each with the next for order.
  constexpr size_t kKey = hotrow::keying::kRowKeySize;
  for (size_t at = 0; size > kKey && at + kKey <= size; at += kKey) {
    CheckRowKey(bytes.substr(at, kKey));
    if (at + 2 * kKey <= size) CheckOrder(bytes.substr(at, kKey), bytes.substr(at + kKey, kKey));
  }
  return 0;
}
