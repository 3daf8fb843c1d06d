#include "keying/index_key.h"

#include <xxhash.h>

#include <cstring>

#include "keying/key_time.h"

namespace hotrow::keying {
namespace {

constexpr size_t kIndexSaltAt = 0;
constexpr size_t kIndexHashAt = 1;
constexpr size_t kIndexTimeAt = 10;
static_assert(kIndexTimeAt + kKeyTailSize == kIndexKeySize);
static_assert(kIndexTagAt + 1 == kIndexTimeAt);

// salt | value_hash | tag.
std::string TaggedPrefix(uint8_t salt, uint64_t value_hash) {
  std::string out(kIndexTagAt + 1, '\0');
  out[kIndexSaltAt] = static_cast<char>(salt);
  StoreBigEndian64(value_hash, out.data() + kIndexHashAt);
  out[kIndexTagAt] = static_cast<char>(kIndexTag);
  return out;
}

}  // namespace

uint64_t IndexHash(std::string_view field, std::string_view value) {
  // length(field) BE64 | field | value, hashed in one call; on the stack for every size ingest
  // and queries allow (field <= 255, value <= 256 bytes).
  char buffer[8 + kMaxIndexFieldSize + kMaxIndexValueSize];
  std::string heap;
  char* p = buffer;
  const size_t size = 8 + field.size() + value.size();
  if (size > sizeof(buffer)) {
    heap.resize(size);
    p = heap.data();
  }
  StoreBigEndian64(field.size(), p);
  if (!field.empty()) std::memcpy(p + 8, field.data(), field.size());
  if (!value.empty()) std::memcpy(p + 8 + field.size(), value.data(), value.size());
  return XXH3_64bits(p, size);
}

void EncodeIndexKeyTo(const IndexKey& key, char* out) {
  out[kIndexSaltAt] = static_cast<char>(key.salt);
  StoreBigEndian64(key.value_hash, out + kIndexHashAt);
  out[kIndexTagAt] = static_cast<char>(kIndexTag);
  EncodeKeyTail({key.ts_ms, key.topic, key.partition, key.offset}, out + kIndexTimeAt);
}

std::string EncodeIndexKey(const IndexKey& key) {
  std::string out(kIndexKeySize, '\0');
  EncodeIndexKeyTo(key, out.data());
  return out;
}

bool IsIndexKey(std::string_view bytes) {
  return bytes.size() == kIndexKeySize &&
         static_cast<unsigned char>(bytes[kIndexTagAt]) == kIndexTag;
}

bool DecodeIndexKey(std::string_view bytes, IndexKey* key) {
  if (!IsIndexKey(bytes)) return false;
  KeyTail tail;
  if (!DecodeKeyTail(bytes.data() + kIndexTimeAt, &tail)) return false;
  key->salt = static_cast<uint8_t>(bytes[kIndexSaltAt]);
  key->value_hash = LoadBigEndian64(bytes.data() + kIndexHashAt);
  key->ts_ms = tail.ts_ms;
  key->topic = tail.topic;
  key->partition = tail.partition;
  key->offset = tail.offset;
  return true;
}

IndexKey IndexKeyFor(const RowKey& event, uint64_t value_hash) {
  IndexKey k;
  k.salt = event.salt;
  k.value_hash = value_hash;
  k.ts_ms = event.ts_ms;
  k.topic = event.topic;
  k.partition = event.partition;
  k.offset = event.offset;
  return k;
}

RowKey EventKeyOf(const IndexKey& key, uint64_t id_hash) {
  RowKey k;
  k.salt = key.salt;
  k.id_hash = id_hash;
  k.ts_ms = key.ts_ms;
  k.topic = key.topic;
  k.partition = key.partition;
  k.offset = key.offset;
  return k;
}

KeyRange IndexTimeKeyRange(uint8_t salt, uint64_t value_hash, int64_t from_ms, int64_t to_ms) {
  const std::string tagged = TaggedPrefix(salt, value_hash);
  KeyRange range;
  // ts < to  <=>  rev(ts) >= rev(to) + 1; ts >= from  <=>  rev(ts) < rev(from) + 1.
  range.start = AtReversedTime(tagged, ReverseTime(to_ms) + 1);
  if (from_ms == 0) {
    // rev(0) + 1 overflows: end at the tag's successor, still inside the 9-byte prefix.
    range.limit = tagged;
    range.limit.back() = static_cast<char>(kIndexTag + 1);
  } else {
    range.limit = AtReversedTime(tagged, ReverseTime(from_ms) + 1);
  }
  return range;
}

std::string EncodeIndexValue(uint64_t id_hash, std::string_view field, std::string_view value) {
  std::string out;
  EncodeIndexValueTo(id_hash, field, value, &out);
  return out;
}

void EncodeIndexValueTo(uint64_t id_hash, std::string_view field, std::string_view value,
                        std::string* out) {
  out->resize(9);
  StoreBigEndian64(id_hash, out->data());
  (*out)[8] = static_cast<char>(static_cast<unsigned char>(field.size()));
  out->append(field);
  out->append(value);
}

bool DecodeIndexValue(std::string_view bytes, uint64_t* id_hash, std::string_view* field,
                      std::string_view* value) {
  if (bytes.size() < 9) return false;
  const size_t field_len = static_cast<unsigned char>(bytes[8]);
  if (bytes.size() < 9 + field_len) return false;
  *id_hash = LoadBigEndian64(bytes.data());
  *field = bytes.substr(9, field_len);
  *value = bytes.substr(9 + field_len);
  return true;
}

}  // namespace hotrow::keying
