#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "keying/row_key.h"

namespace hotrow::keying {

// The row key of one secondary-index posting: "these events of one write have `field` =
// `value`". A write batch puts, per bucket and per (field, value), one posting listing the batch's
// events with that value (at most one per aligned second of time: kPostingSpanMs), not one row per
// event: a write's cost is per RocksDB entry far more than per byte, and one row per event doubled
// the cost of a write with one indexed field (docs/BENCHMARKS.md). 32 bytes, fixed width, every
// integer big-endian:
//
//   0      1                  9     10                  18          20            24            32
//   +------+------------------+-----+-------------------+-----------+-------------+-------------+
//   |  00  |    value_hash    | tag |  UINT64_MAX - ts  |  ~topic   | ~partition  |   ~offset   |
//   |  u8  |       u64        | 01  |       u64         |    u16    |     u32     |     u64     |
//   +------+------------------+-----+-------------------+-----------+-------------+-------------+
//   \______ prefix (9) _______/
//
// - byte 0, where a data key has its salt, is 0: postings are not salted. The events they list
//   are (each keeps its own salt in its data key); a posting per salt would multiply the entries
//   by the salts, and a query reads every salt of a value anyway.
// - value_hash = IndexHash(field, value): 64 bits of XXH3 over the field's path and its value's
//   text. The full field and value are kept in the row's value and compared on read, like the id.
// - the tail is that of the posting's newest event (reversed time, ~topic, ~partition, ~offset),
//   in the same order as data keys: forward iteration is newest posting first. An event is in one
//   posting per indexed field, so the tail makes the key unique. Every event of a posting lies in
//   the aligned second (kPostingSpanMs) of its newest: a posting keyed at time t holds events of
//   [PostingSpanStart(t), t], which lets a query stop reading postings in either direction.
//
// Why index keys can never be taken for data keys, nor data keys for index keys. A data key's
// byte 9 is the top byte of UINT64_MAX - ts with 0 <= ts <= INT64_MAX: always 0x80..0xFF. An
// index key has a tag below 0x02 there. Therefore:
// - no index key is a data key (and vice versa): the lengths differ (32 vs 31) and so does byte 9;
// - every per-id time range (IdTimeKeyRange) starts at prefix | (rev(to) + 1) >= prefix | 0x80,
//   so it holds no index key even when an index value_hash equals the id's hash; every posting
//   range (PostingKeyRange) ends at or below prefix | 0x02, so it holds no data key;
// - the first 9 bytes are (0, 64-bit hash), shaped as a data key's (salt, id hash), so the
//   prefix bloom filter serves index lookups exactly as it serves id lookups (a shared prefix
//   only costs a false positive);
// - full scans (SaltKeyRange) and whole-bucket walks meet both kinds and tell them apart with
//   IsIndexKey: the length alone decides (DecodeRowKey refuses 32 bytes).
//
// Tag 00 marks the index rows of stores written before postings (one row per event, salted like
// it, value id_hash | field_len | field | value). Nothing reads them: a bucket whose index was
// written that way indexes no field (store/store_metadata.h), and queries name it unindexed
// until it leaves the window. IsIndexKey still knows them, so that scans skip them.
inline constexpr size_t kIndexKeySize = 32;
inline constexpr size_t kIndexTagAt = kRowKeyPrefixSize;  // 9
inline constexpr unsigned char kIndexTag = 0x01;
inline constexpr unsigned char kLegacyIndexTag = 0x00;
// The longest value that is indexed, in bytes of its text; a longer one gets no index entry.
inline constexpr size_t kMaxIndexValueSize = 256;
// The longest field path that can be indexed (the length is one byte in the row's value).
inline constexpr size_t kMaxIndexFieldSize = 255;
// A posting's events lie in one aligned span of this many milliseconds.
inline constexpr int64_t kPostingSpanMs = 1000;

// The start of the aligned span of `ts_ms` (>= 0).
inline int64_t PostingSpanStart(int64_t ts_ms) { return ts_ms - ts_ms % kPostingSpanMs; }

// A posting's key: its value hash and its newest event's place.
struct IndexKey {
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
// Parses a posting's key. False when `bytes` is not one (wrong length or tag, a field out of
// range); a legacy index row (tag 00) is not one.
bool DecodeIndexKey(std::string_view bytes, IndexKey* key);
// True when `bytes` has the shape of an index key, a posting's or a legacy row's (length and
// tag); data keys never do.
bool IsIndexKey(std::string_view bytes);

// The key of the posting whose newest event has data key `newest`.
IndexKey IndexKeyFor(const RowKey& newest, uint64_t value_hash);

// The keys of the postings of one (field, value) hash that may list an event with time in
// [from_ms, to_ms): newest posting first. A posting keyed at t lists events of
// [PostingSpanStart(t), t], so the range runs from the span of `to_ms - 1` on. The events of
// the postings in it are still to be checked against [from_ms, to_ms).
// REQUIRES: 0 <= from_ms < to_ms.
KeyRange PostingKeyRange(uint64_t value_hash, int64_t from_ms, int64_t to_ms);

// The stored value of a posting:
//
//   +--------------+-------+---------------+-------+----------------------------+
//   | field_len u8 | field | value_len u16 | value | n data keys, 31 bytes each |
//   +--------------+-------+---------------+-------+----------------------------+
//
// Each event is listed by its full data key (keying/row_key.h): its salt, id hash, time, topic,
// partition and offset, so a query reads the event with one seek and filters by time and
// partition before it does. The field and value are compared with the query's, so that a 64-bit
// hash collision never returns another value's events.
// REQUIRES: field.size() <= kMaxIndexFieldSize, value.size() <= kMaxIndexValueSize.
void EncodePostingHeaderTo(std::string_view field, std::string_view value, std::string* out);
// Appends one event, by its encoded data key, to a posting whose header EncodePostingHeaderTo
// wrote. REQUIRES: data_key.size() == kRowKeySize.
void AppendPostingEvent(std::string_view data_key, std::string* out);
// False when `bytes` is not a posting's value (too short for what it announces, or a list that
// is not a whole number of data keys). The views point into `bytes`; `events` holds the data
// keys, kRowKeySize bytes each (DecodeRowKey reads one).
bool DecodePosting(std::string_view bytes, std::string_view* field, std::string_view* value,
                   std::string_view* events);

}  // namespace hotrow::keying
