#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "keying/row_key.h"

namespace hotrow::keying {

// The row key of one secondary-index entry: "the event at (ts, topic, partition, offset) has
// `field` = `value`". 32 bytes, fixed width, every integer big-endian:
//
//   0      1                  9     10                  18          20            24            32
//   +------+------------------+-----+-------------------+-----------+-------------+-------------+
//   | salt |    value_hash    | tag |  UINT64_MAX - ts  |  ~topic   | ~partition  |   ~offset   |
//   |  u8  |       u64        | 00  |       u64         |    u16    |     u32     |     u64     |
//   +------+------------------+-----+-------------------+-----------+-------------+-------------+
//   \______ prefix (9) _______/
//
// - salt is the salt of the event the entry points at, so that index rows spread over the salts
//   exactly as the data does and one salt's index rows and events are written and read together.
// - value_hash = IndexHash(field, value): 64 bits of XXH3 over the field's path and its value's
//   text. The full field and value are kept in the row's value and compared on read, like the id.
// - the tail is the event's own (reversed time, ~topic, ~partition, ~offset), in the same order
//   as data keys: forward iteration is newest first.
//
// Why index keys can never be taken for data keys, nor data keys for index keys. A data key's
// byte 9 is the top byte of UINT64_MAX - ts with 0 <= ts <= INT64_MAX: always 0x80..0xFF. An
// index key has the tag 0x00 there. Therefore:
// - no index key is a data key (and vice versa): the lengths differ (32 vs 31) and so does byte 9;
// - every per-id time range (IdTimeKeyRange) starts at prefix | (rev(to) + 1) >= prefix | 0x80,
//   so it holds no index key even when an index value_hash equals the id's hash; every index range
//   (IndexTimeKeyRange) ends at or below prefix | 0x01, so it holds no data key;
// - the first 9 bytes are (salt, 64-bit hash) for both, so the prefix bloom filter serves index
//   lookups exactly as it serves id lookups (a shared prefix only costs a false positive);
// - full scans (SaltKeyRange) and whole-bucket walks meet both kinds and tell them apart with
//   IsIndexKey: the length alone decides (DecodeRowKey refuses 32 bytes; DecodeIndexKey refuses
//   anything whose byte 9 is not the tag).
inline constexpr size_t kIndexKeySize = 32;
inline constexpr size_t kIndexTagAt = kRowKeyPrefixSize;  // 9
inline constexpr unsigned char kIndexTag = 0x00;
// The longest value that is indexed, in bytes of its text; a longer one gets no index row.
inline constexpr size_t kMaxIndexValueSize = 256;
// The longest field path that can be indexed (the length is one byte in the row's value).
inline constexpr size_t kMaxIndexFieldSize = 255;

struct IndexKey {
  uint8_t salt = 0;
  uint64_t value_hash = 0;
  int64_t ts_ms = 0;  // REQUIRES: >= 0
  uint16_t topic = 0;
  int32_t partition = 0;  // REQUIRES: >= 0
  int64_t offset = 0;     // REQUIRES: >= 0

  friend bool operator==(const IndexKey&, const IndexKey&) = default;
};

// One indexed field of an event as the ingest side found it: the field's dotted path and its
// value as text (a string as is, a number or boolean as its JSON text).
struct IndexEntry {
  std::string field;
  std::string value;
  friend bool operator==(const IndexEntry&, const IndexEntry&) = default;
};

// The hash of (field, value) in index keys. Stable across versions and machines (XXH3); the
// field's length goes in first so that ("ab", "c") and ("a", "bc") differ.
uint64_t IndexHash(std::string_view field, std::string_view value);

// The 32-byte encoding. REQUIRES: out has room for kIndexKeySize bytes.
void EncodeIndexKeyTo(const IndexKey& key, char* out);
std::string EncodeIndexKey(const IndexKey& key);
// Parses an index key. False when `bytes` is not an index key (wrong length, no tag, a field out
// of range).
bool DecodeIndexKey(std::string_view bytes, IndexKey* key);
// True when `bytes` has the shape of an index key (length and tag); data keys never do.
bool IsIndexKey(std::string_view bytes);

// The index key of the entry pointing at the event with data key `event`.
IndexKey IndexKeyFor(const RowKey& event, uint64_t value_hash);
// The data key of the event an index entry points at, given the id hash kept in its value.
RowKey EventKeyOf(const IndexKey& key, uint64_t id_hash);

// The index keys of one (field, value) hash in one salt whose time is in [from_ms, to_ms), newest
// first. REQUIRES: 0 <= from_ms < to_ms.
KeyRange IndexTimeKeyRange(uint8_t salt, uint64_t value_hash, int64_t from_ms, int64_t to_ms);

// The stored value of an index row:
//
//   +--------------+-------------+-------------------+-------------------+
//   | id_hash u64  | field_len u8|  field (field_len) |  value (the rest) |
//   +--------------+-------------+-------------------+-------------------+
//
// id_hash completes the event's data key (the rest of it is in the index key), so a query reads
// the event with one seek; field and value are compared with the query's, so that a 64-bit hash
// collision never returns another value's events.
// REQUIRES: field.size() <= kMaxIndexFieldSize.
std::string EncodeIndexValue(uint64_t id_hash, std::string_view field, std::string_view value);
void EncodeIndexValueTo(uint64_t id_hash, std::string_view field, std::string_view value,
                        std::string* out);
// False when `bytes` is too short for what it announces. The views point into `bytes`.
bool DecodeIndexValue(std::string_view bytes, uint64_t* id_hash, std::string_view* field,
                      std::string_view* value);

}  // namespace hotrow::keying
