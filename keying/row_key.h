#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hotrow::keying {

// The row key of one stored event. 31 bytes, fixed width, every integer big-endian:
//
//   0      1                 9                   17          19            23                  31
//   +------+-----------------+-------------------+-----------+-------------+-------------------+
//   | salt |    id_hash      |  UINT64_MAX - ts  |  ~topic   | ~partition  |      ~offset      |
//   |  u8  |      u64        |       u64         |    u16    |     u32     |        u64        |
//   +------+-----------------+-------------------+-----------+-------------+-------------------+
//   \______ prefix (9) ______/
//
// - salt spreads writes and scans over `salts` key ranges (see Salter). It is never random: the
//   same record always gets the same salt, so a replayed record lands on the very same key.
// - id_hash is a 64-bit hash of the event id (IdHash). The full id is kept in the value and
//   compared on read, so a hash collision can never return another id's event.
// - time is stored reversed so that a forward iterator meets the newest event first.
// - (topic, partition, offset) make the key unique and replays idempotent. They are stored
//   complemented, so that ties in time come out in the same direction as time: forward iteration is
//   newest first, then (topic, partition, offset) descending; backward iteration is the exact
//   opposite. `topic` is the store's number for the topic name, assigned once and kept.
//
// memcmp order of encoded keys therefore equals the logical order
//   (salt asc, id_hash asc, ts desc, topic desc, partition desc, offset desc),
// which KeyLess spells out. 31 bytes keeps keys under the 32-byte budget; padding to 32 would buy
// an alignment RocksDB does not use (it stores keys prefix-compressed and unaligned).
//
// The prefix (salt, id_hash) is what RocksDB's prefix bloom filter is built on, so a query for an
// absent id touches no data block.
inline constexpr size_t kRowKeySize = 31;
inline constexpr size_t kRowKeyPrefixSize = 9;
inline constexpr int kMaxSalts = 256;

struct RowKey {
  uint8_t salt = 0;
  uint64_t id_hash = 0;
  int64_t ts_ms = 0;      // REQUIRES: >= 0
  uint16_t topic = 0;     // the store's topic number
  int32_t partition = 0;  // REQUIRES: >= 0
  int64_t offset = 0;     // REQUIRES: >= 0

  friend bool operator==(const RowKey&, const RowKey&) = default;
};

// The logical order of keys, which memcmp of their encodings follows.
bool KeyLess(const RowKey& a, const RowKey& b);

// Writes the 31-byte encoding of `key` to `out`. REQUIRES: out has room for kRowKeySize bytes.
void EncodeRowKeyTo(const RowKey& key, char* out);
std::string EncodeRowKey(const RowKey& key);

// Parses an encoded key. Returns false when `bytes` is not kRowKeySize long or a field is out of
// its range (a negative time, partition or offset); `*key` is then unspecified.
bool DecodeRowKey(std::string_view bytes, RowKey* key);

// The 22 bytes that end both a row key and an index key (keying/index_key.h): UINT64_MAX - ts,
// ~topic, ~partition, ~offset, big-endian. One codec, so the two kinds of key order the same way.
inline constexpr size_t kKeyTailSize = 22;
struct KeyTail {
  int64_t ts_ms = 0;
  uint16_t topic = 0;
  int32_t partition = 0;
  int64_t offset = 0;
};
// REQUIRES: out has room for kKeyTailSize bytes; ts_ms, partition and offset >= 0.
void EncodeKeyTail(const KeyTail& tail, char* out);
// False when a field is out of its range (a negative time, partition or offset).
bool DecodeKeyTail(const char* p, KeyTail* tail);
// The tail's first field: the time reversed, so that the newest sorts first.
inline uint64_t ReverseTime(int64_t ts_ms) { return UINT64_MAX - static_cast<uint64_t>(ts_ms); }

// The 64-bit hash of an event id stored in the key. Stable across versions and machines (XXH3).
uint64_t IdHash(std::string_view id);

// A half-open key range [start, limit). An empty `limit` means "to the end of the key space".
struct KeyRange {
  std::string start;
  std::string limit;
};

// Every key of one id in one salt.
KeyRange IdKeyRange(uint8_t salt, uint64_t id_hash);

// The keys of one id in one salt whose time is in [from_ms, to_ms). Newest first within the range.
// REQUIRES: 0 <= from_ms < to_ms.
KeyRange IdTimeKeyRange(uint8_t salt, uint64_t id_hash, int64_t from_ms, int64_t to_ms);

// Every key in one salt (all ids, all times).
KeyRange SaltKeyRange(uint8_t salt);

// Reads big-endian integers; used by the codec and by store metadata. REQUIRES: 8 / 4 / 2 bytes.
uint64_t LoadBigEndian64(const char* p);
uint32_t LoadBigEndian32(const char* p);
uint16_t LoadBigEndian16(const char* p);
void StoreBigEndian64(uint64_t v, char* p);
void StoreBigEndian32(uint32_t v, char* p);
void StoreBigEndian16(uint16_t v, char* p);

}  // namespace hotrow::keying
