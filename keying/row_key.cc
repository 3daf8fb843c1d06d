#include "keying/row_key.h"

#include <xxhash.h>

#include <tuple>

#include "keying/key_time.h"

namespace hotrow::keying {
namespace {

constexpr size_t kSaltAt = 0;
constexpr size_t kIdHashAt = 1;
constexpr size_t kTimeAt = 9;
static_assert(kTimeAt + kKeyTailSize == kRowKeySize);
static_assert(kRowKeyPrefixSize == kTimeAt);  // AtReversedTime appends to the prefix

// Inside the tail.
constexpr size_t kTailTopicAt = 8;
constexpr size_t kTailPartitionAt = 10;
constexpr size_t kTailOffsetAt = 14;
static_assert(kTailOffsetAt + 8 == kKeyTailSize);

std::string Prefix(uint8_t salt, uint64_t id_hash) {
  std::string out(kRowKeyPrefixSize, '\0');
  out[kSaltAt] = static_cast<char>(salt);
  StoreBigEndian64(id_hash, out.data() + kIdHashAt);
  return out;
}

// The first key after every key that starts with `prefix`; empty when there is none.
std::string PrefixSuccessor(std::string prefix) {
  while (!prefix.empty()) {
    unsigned char last = static_cast<unsigned char>(prefix.back());
    if (last != 0xFF) {
      prefix.back() = static_cast<char>(last + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return prefix;
}

}  // namespace

std::string AtReversedTime(const std::string& prefix, uint64_t rev) {
  std::string out = prefix;
  out.resize(prefix.size() + 8, '\0');
  StoreBigEndian64(rev, out.data() + prefix.size());
  return out;
}

uint64_t LoadBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint32_t LoadBigEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint16_t LoadBigEndian16(const char* p) {
  return static_cast<uint16_t>((static_cast<unsigned char>(p[0]) << 8) |
                               static_cast<unsigned char>(p[1]));
}
void StoreBigEndian64(uint64_t v, char* p) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<char>(v & 0xFF);
}
void StoreBigEndian32(uint32_t v, char* p) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<char>(v & 0xFF);
}
void StoreBigEndian16(uint16_t v, char* p) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v & 0xFF);
}

bool KeyLess(const RowKey& a, const RowKey& b) {
  // ts, topic, partition and offset all descend: compare them with the operands swapped.
  return std::tie(a.salt, a.id_hash, b.ts_ms, b.topic, b.partition, b.offset) <
         std::tie(b.salt, b.id_hash, a.ts_ms, a.topic, a.partition, a.offset);
}

void EncodeKeyTail(const KeyTail& tail, char* out) {
  StoreBigEndian64(ReverseTime(tail.ts_ms), out);
  StoreBigEndian16(static_cast<uint16_t>(~tail.topic), out + kTailTopicAt);
  StoreBigEndian32(~static_cast<uint32_t>(tail.partition), out + kTailPartitionAt);
  StoreBigEndian64(~static_cast<uint64_t>(tail.offset), out + kTailOffsetAt);
}

bool DecodeKeyTail(const char* p, KeyTail* tail) {
  const uint64_t ts = UINT64_MAX - LoadBigEndian64(p);
  const uint32_t partition = ~LoadBigEndian32(p + kTailPartitionAt);
  const uint64_t offset = ~LoadBigEndian64(p + kTailOffsetAt);
  if (ts > static_cast<uint64_t>(INT64_MAX) || partition > static_cast<uint32_t>(INT32_MAX) ||
      offset > static_cast<uint64_t>(INT64_MAX)) {
    return false;
  }
  tail->ts_ms = static_cast<int64_t>(ts);
  tail->topic = static_cast<uint16_t>(~LoadBigEndian16(p + kTailTopicAt));
  tail->partition = static_cast<int32_t>(partition);
  tail->offset = static_cast<int64_t>(offset);
  return true;
}

void EncodeRowKeyTo(const RowKey& key, char* out) {
  out[kSaltAt] = static_cast<char>(key.salt);
  StoreBigEndian64(key.id_hash, out + kIdHashAt);
  EncodeKeyTail({key.ts_ms, key.topic, key.partition, key.offset}, out + kTimeAt);
}

std::string EncodeRowKey(const RowKey& key) {
  std::string out(kRowKeySize, '\0');
  EncodeRowKeyTo(key, out.data());
  return out;
}

bool DecodeRowKey(std::string_view bytes, RowKey* key) {
  if (bytes.size() != kRowKeySize) return false;
  KeyTail tail;
  if (!DecodeKeyTail(bytes.data() + kTimeAt, &tail)) return false;
  key->salt = static_cast<uint8_t>(bytes[kSaltAt]);
  key->id_hash = LoadBigEndian64(bytes.data() + kIdHashAt);
  key->ts_ms = tail.ts_ms;
  key->topic = tail.topic;
  key->partition = tail.partition;
  key->offset = tail.offset;
  return true;
}

uint64_t IdHash(std::string_view id) { return XXH3_64bits(id.data(), id.size()); }

KeyRange IdKeyRange(uint8_t salt, uint64_t id_hash) {
  std::string prefix = Prefix(salt, id_hash);
  std::string limit = PrefixSuccessor(prefix);
  return KeyRange{std::move(prefix), std::move(limit)};
}

KeyRange IdTimeKeyRange(uint8_t salt, uint64_t id_hash, int64_t from_ms, int64_t to_ms) {
  const std::string prefix = Prefix(salt, id_hash);
  // ts < to  <=>  rev(ts) >= rev(to) + 1; ts >= from  <=>  rev(ts) < rev(from) + 1.
  KeyRange range;
  range.start = AtReversedTime(prefix, ReverseTime(to_ms) + 1);
  range.limit = from_ms == 0 ? PrefixSuccessor(prefix)
                             : AtReversedTime(prefix, ReverseTime(from_ms) + 1);
  return range;
}

KeyRange SaltKeyRange(uint8_t salt) {
  std::string start(1, static_cast<char>(salt));
  std::string limit = PrefixSuccessor(start);
  return KeyRange{std::move(start), std::move(limit)};
}

}  // namespace hotrow::keying
