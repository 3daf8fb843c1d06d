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

// 00 | value_hash | tag.
std::string TaggedPrefix(uint64_t value_hash) {
  std::string out(kIndexTagAt + 1, '\0');
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
  out[kIndexSaltAt] = 0;
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
  if (bytes.size() != kIndexKeySize) return false;
  const auto tag = static_cast<unsigned char>(bytes[kIndexTagAt]);
  return tag == kIndexTag || tag == kLegacyIndexTag;
}

bool DecodeIndexKey(std::string_view bytes, IndexKey* key) {
  if (bytes.size() != kIndexKeySize ||
      static_cast<unsigned char>(bytes[kIndexTagAt]) != kIndexTag || bytes[kIndexSaltAt] != 0) {
    return false;
  }
  KeyTail tail;
  if (!DecodeKeyTail(bytes.data() + kIndexTimeAt, &tail)) return false;
  key->value_hash = LoadBigEndian64(bytes.data() + kIndexHashAt);
  key->ts_ms = tail.ts_ms;
  key->topic = tail.topic;
  key->partition = tail.partition;
  key->offset = tail.offset;
  return true;
}

IndexKey IndexKeyFor(const RowKey& newest, uint64_t value_hash) {
  IndexKey k;
  k.value_hash = value_hash;
  k.ts_ms = newest.ts_ms;
  k.topic = newest.topic;
  k.partition = newest.partition;
  k.offset = newest.offset;
  return k;
}

KeyRange PostingKeyRange(uint64_t value_hash, int64_t from_ms, int64_t to_ms) {
  const std::string tagged = TaggedPrefix(value_hash);
  KeyRange range;
  // A posting keyed at t lists events of [PostingSpanStart(t), t]: one with an event before
  // to_ms is keyed before the end of that event's span, upper.
  // t < upper  <=>  rev(t) >= rev(upper) + 1; t >= from  <=>  rev(t) < rev(from) + 1.
  const int64_t span = PostingSpanStart(to_ms - 1);
  if (span > INT64_MAX - kPostingSpanMs) {
    range.start = tagged;  // upper is past every time a key can hold
  } else {
    range.start = AtReversedTime(tagged, ReverseTime(span + kPostingSpanMs) + 1);
  }
  if (from_ms == 0) {
    // rev(0) + 1 overflows: end at the tag's successor, still inside the 9-byte prefix.
    range.limit = tagged;
    range.limit.back() = static_cast<char>(kIndexTag + 1);
  } else {
    range.limit = AtReversedTime(tagged, ReverseTime(from_ms) + 1);
  }
  return range;
}

void EncodePostingHeaderTo(std::string_view field, std::string_view value, std::string* out) {
  out->clear();
  out->push_back(static_cast<char>(static_cast<unsigned char>(field.size())));
  out->append(field);
  char len[2];
  StoreBigEndian16(static_cast<uint16_t>(value.size()), len);
  out->append(len, 2);
  out->append(value);
}

void AppendPostingEvent(std::string_view data_key, std::string* out) { out->append(data_key); }

bool DecodePosting(std::string_view bytes, std::string_view* field, std::string_view* value,
                   std::string_view* events) {
  if (bytes.empty()) return false;
  const size_t field_len = static_cast<unsigned char>(bytes[0]);
  if (bytes.size() < 1 + field_len + 2) return false;
  const size_t value_len = LoadBigEndian16(bytes.data() + 1 + field_len);
  const size_t header = 1 + field_len + 2 + value_len;
  if (bytes.size() < header || (bytes.size() - header) % kRowKeySize != 0) return false;
  *field = bytes.substr(1, field_len);
  *value = bytes.substr(1 + field_len + 2, value_len);
  *events = bytes.substr(header);
  return true;
}

}  // namespace hotrow::keying
