#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "store/event_store.h"

namespace hotrow::testing {

// One event as a test writes it: everything its stored key and value are built from.
struct TestEvent {
  std::string id;
  int64_t ts_ms = 0;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string payload;

  friend bool operator==(const TestEvent&, const TestEvent&) = default;
  friend auto operator<=>(const TestEvent&, const TestEvent&) = default;
};

// "id=... ts=... topic/partition@offset payload=...", with every byte of the id that is not
// printable ASCII escaped as \xNN, for failure messages.
std::string Describe(const TestEvent& event);
// `bytes` with non-printable bytes escaped as \xNN (and the length when it is long).
std::string EscapeBytes(std::string_view bytes);

// Builds the stored row of `event` the way ingest does: the salt from the store's salter, the
// store's number for the topic, the id hash in the key, the full id and the payload in the value.
Result<store::Row> MakeRow(store::EventStore* store, const TestEvent& event);

// Writes `events` in one Write call. With `with_offsets`, next_offsets holds, for every partition
// that appears in `events`, one past its highest offset there.
Status WriteEvents(store::EventStore* store, const std::vector<TestEvent>& events,
                   store::WriteOutcome* outcome, bool with_offsets = true);

// One row as found on disk, decoded.
struct StoredRow {
  TestEvent event;  // topic is the name found through TopicName
  uint8_t salt = 0;
  uint64_t id_hash = 0;
  uint16_t topic_number = 0;
  int64_t bucket_start_ms = 0;  // of the bucket it was read from
  int64_t bucket_end_ms = 0;
  size_t bytes = 0;  // key + value
};

// Reads every row of every live bucket, bucket by bucket (oldest first), each bucket in key order.
// Fails with Corruption naming the row when a key or value does not decode or a topic number has
// no name, and with the iterator's Status when it fails.
Result<std::vector<StoredRow>> ReadAllRows(const store::EventStore& store);

// One event an index posting (keying/index_key.h) lists.
struct PostedEvent {
  keying::IndexKey posting;  // the key of the posting that lists it
  std::string field;
  std::string value;
  keying::RowKey event;
};
// Every event every posting of `bucket` lists, once each posting's own rules hold: its key and
// value decode, the key's hash is IndexHash(field, value), the key is the place of its newest
// listed event, and every listed event lies in [PostingSpanStart(t), t] of that newest's time t
// and in the bucket. Corruption naming the first rule broken.
Result<std::vector<PostedEvent>> ReadPostings(const store::Bucket& bucket);

// Ids that stress the key codec and the read-time id check: ids sharing prefixes ("dev-1",
// "dev-10", "dev-100"), ids with NUL, '/', 0xFF and other raw bytes, ids of the maximum length
// (256 bytes) and one byte short of it, one-byte ids, and a few random byte strings. Never empty,
// never longer than keying::kMaxIdSize, no duplicates.
std::vector<std::string> TrickyIds(std::mt19937_64* rng);

// Ids that none of TrickyIds() equals but that resemble them (prefixes, extensions).
std::vector<std::string> AbsentIds();

// What GenerateEvents makes.
struct EventGenSpec {
  std::vector<std::string> ids;     // chosen with a skew: the first ids are the chattiest
  std::vector<std::string> topics;  // every event picks one at random
  int partitions = 1;               // per topic, 0..partitions-1
  int64_t bucket_ms = 1000;
  int64_t first_bucket_start_ms = 0;  // REQUIRES: a multiple of bucket_ms
  // Events per bucket, the i-th entry for the bucket starting at first + i * bucket_ms. 0 makes an
  // empty bucket, 1 a single-event bucket.
  std::vector<int> events_per_bucket;
  // Distinct times used within one bucket, so that many events tie. Always includes the bucket's
  // first and last millisecond.
  int times_per_bucket = 8;
  size_t payload_bytes = 16;  // roughly
};

// Events as EventGenSpec says, in a random order. Offsets are consecutive per (topic, partition)
// in the returned order, starting at `*next_offset` for that partition, which is advanced; so the
// events can be written in the returned order, batch after batch, with growing next offsets.
std::vector<TestEvent> GenerateEvents(const EventGenSpec& spec, std::mt19937_64* rng,
                                      std::map<store::TopicPartition, int64_t>* next_offset);

// Gives `events` consecutive offsets per (topic, partition) in their order, starting at
// `*next_offset` for that partition, which is advanced.
void AssignOffsets(std::vector<TestEvent>* events,
                   std::map<store::TopicPartition, int64_t>* next_offset);

// The seed of a randomised test: $HOTROW_TEST_SEED when set, else `fallback`.
uint64_t TestSeed(uint64_t fallback);

// The bytes of every regular file under `path`, recursively; 0 when it does not exist.
uint64_t DiskUsageBytes(const std::string& path);

}  // namespace hotrow::testing
