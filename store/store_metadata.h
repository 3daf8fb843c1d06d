// Internal to store/: how the store's metadata and bucket column families are named and encoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "keying/salter.h"
#include "store/event_store.h"

namespace rocksdb {
class MergeOperator;
}

namespace hotrow::store {

// ---- Metadata layout (default column family) ----
//   "format"                                 -> "hotrow-store v1 salts=<n> salt_by=<record|id>"
//   "offset/" topic '\0' partition(BE32)     -> next offset to consume (BE64)
//   "run/" topic '\0' partition(BE32)        -> the partition's run (PartitionRun): first offset
//                                               (BE64), holds_from_ms (BE64 of the int64 plus 2^63)
//   "topic/" name                            -> topic number (BE16)
//   "stat/" bucket_start(BE64) salt(u8)      -> events(BE64) bytes(BE64), written as merge operands
//                                               that add (a Put value of an older store is the
//                                               base)
//   "clock"                                  -> the stream clock: highest event time written
//   (BE64),
//                                               written as merge operands that keep the highest
//   "index/" bucket_start(BE64)              -> the bucket's index.fields, '\n'-separated
//                                               (written before the bucket is made; absent for a
//                                               bucket made before the index existed: none)
inline constexpr char kFormatKey[] = "format";
inline constexpr char kOffsetPrefix[] = "offset/";
inline constexpr char kRunPrefix[] = "run/";
inline constexpr char kTopicPrefix[] = "topic/";
inline constexpr char kStatPrefix[] = "stat/";
inline constexpr char kClockKey[] = "clock";
inline constexpr char kIndexFieldsPrefix[] = "index/";
inline constexpr char kFormatVersion[] = "hotrow-store v1";
inline constexpr size_t kMaxTopics = 65536;

// The "format" value of a store made with these keying settings.
std::string FormatValue(int salts, keying::SaltBy by);
// `v` as 8 big-endian bytes.
std::string Be64(uint64_t v);
// "offset/" topic '\0' partition(BE32).
std::string OffsetKey(const TopicPartition& tp);
// "run/" topic '\0' partition(BE32), and its value; DecodeRun is false for a damaged value.
std::string RunKey(const TopicPartition& tp);
std::string EncodeRun(const PartitionRun& run);
bool DecodeRun(std::string_view value, PartitionRun* run);
// "stat/" bucket_start(BE64) salt(u8).
std::string StatKey(int64_t bucket_start, uint8_t salt);

// "index/" bucket_start(BE64), and the fields it records: kIndexPostingsMark, then each field
// after a '\n'. A value without the mark was written before index postings (keying/index_key.h):
// its bucket's index rows are legacy rows that nothing reads, so it indexes no field.
std::string IndexFieldsKey(int64_t bucket_start);
inline constexpr std::string_view kIndexPostingsMark{"\0postings", 9};
std::string EncodeIndexFields(const std::vector<std::string>& fields);
// The fields a bucket's index can be read for; `*legacy` (may be null) tells a legacy value.
std::vector<std::string> DecodeIndexFields(std::string_view value, bool* legacy = nullptr);

// The metadata column family's merge operator: "stat/" values add field by field, "clock" keeps the
// highest; so that writers of disjoint partitions write deltas in parallel, never read-modify-write.
// Any other key keeps the last operand. A value of the wrong size fails the merge (Corruption).
std::shared_ptr<rocksdb::MergeOperator> NewMetadataMergeOperator();

// Column family names: "b<start>_<end>", both 13+ digit ms, so that listing them restores buckets
// whatever bucket width was configured when each was made.
std::string BucketName(int64_t start_ms, int64_t end_ms);
bool ParseBucketName(const std::string& name, int64_t* start_ms, int64_t* end_ms);

// a / b rounded towards minus infinity. REQUIRES: b != 0.
int64_t FloorDiv(int64_t a, int64_t b);

}  // namespace hotrow::store
