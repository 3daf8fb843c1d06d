#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/event_store.h"

// Helpers for the ingest tests: a plain producer and consumer (no hotrow code in between, so
// they can serve as oracles), and a reader of everything a store holds.
namespace hotrow::ingest::testing {

// One Kafka record as a test produces or reads it.
struct KafkaRecord {
  int32_t partition = 0;
  int64_t offset = -1;
  std::optional<std::string> key;    // nullopt: a null key
  std::optional<std::string> value;  // nullopt: a null value
  int64_t timestamp_ms = -1;         // Kafka timestamp
  std::map<std::string, std::string> headers;
};

// A plain librdkafka producer. Produce() queues; Flush() waits for delivery and fills in the
// offsets of everything produced since the last Flush, in Produce order.
class TestProducer {
 public:
  explicit TestProducer(const std::string& bootstrap);
  ~TestProducer();
  TestProducer(const TestProducer&) = delete;
  TestProducer& operator=(const TestProducer&) = delete;

  // `timestamp_ms` 0 stamps the current time.
  void Produce(const std::string& topic, int32_t partition, const std::optional<std::string>& key,
               const std::optional<std::string>& value, int64_t timestamp_ms = 0);
  // Returns the records produced since the last Flush with their offsets; fails the test when
  // any could not be delivered within 30 s.
  std::vector<KafkaRecord> Flush();

 private:
  static void OnDelivery(rd_kafka_t* rk, const rd_kafka_message_t* msg, void* opaque);
  rd_kafka_t* rk_ = nullptr;
  std::vector<KafkaRecord> pending_;
  size_t delivered_ = 0;
  size_t failed_ = 0;
};

// Reads every record of `topic` (all `partitions`) from the beginning until `count` records are
// read or `timeout_ms` passes, with a plain assigned consumer (no group).
std::vector<KafkaRecord> ConsumeAll(const std::string& bootstrap, const std::string& topic,
                                    int partitions, size_t count, int timeout_ms = 30000);

// The high watermark of each partition (the offset the next record will get).
std::map<int32_t, int64_t> HighWatermarks(const std::string& bootstrap, const std::string& topic,
                                          int partitions);
// The low watermark (log start) of one partition.
int64_t LowWatermark(const std::string& bootstrap, const std::string& topic, int32_t partition);

// The offsets committed by `group` for each partition of `topic` (-1 when none).
std::map<int32_t, int64_t> CommittedOffsets(const std::string& bootstrap, const std::string& group,
                                            const std::string& topic, int partitions);

// Commits `offsets` (partition -> offset) for `group` from a plain client without metadata (as an
// operator's tool would): it joins the group (the embedded broker takes commits only from a
// member), waits up to 30 s to be assigned every partition, commits and leaves.
rd_kafka_resp_err_t CommitOffsets(const std::string& bootstrap, const std::string& group,
                                  const std::string& topic,
                                  const std::map<int32_t, int64_t>& offsets);

// One row of a store, decoded.
struct StoredEvent {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string id;
  int64_t ts_ms = 0;
  uint8_t salt = 0;
  std::string payload;
  std::string key;  // the encoded row key
};

// Every row of every live bucket of `store`; fails the test (ADD_FAILURE) on a row that does not
// decode.
std::vector<StoredEvent> ReadStore(const store::EventStore& store);

// Sum of the next offsets a store holds for `topic`.
int64_t StoredOffsetSum(const store::EventStore& store, const std::string& topic);

// (partition, offset) of every stored event of `topic`, with how often each occurs.
std::map<std::pair<int32_t, int64_t>, int> OffsetCounts(const std::vector<StoredEvent>& events,
                                                        const std::string& topic);

// Checks that `counts` holds every offset [0, high) of every partition exactly once, except those
// in `absent` (which must not be there); returns a description of the first problems, empty when
// none.
std::string CheckExactlyOnce(const std::map<std::pair<int32_t, int64_t>, int>& counts,
                             const std::map<int32_t, int64_t>& high,
                             const std::set<std::pair<int32_t, int64_t>>& absent = {});

// Checks that `store` holds, for every partition of `topic` it has an offset for, each record
// below that offset exactly once, from offset 0: what a store that started at a partition's
// beginning must hold, whatever was lost, revoked or replayed meanwhile. (A hole below the stored
// offset is a record skipped for good: the store says it was handled.) Returns a description of
// the first problems, empty when none.
std::string CheckWholeFromZero(const store::EventStore& store, const std::string& topic);

// Consumer properties that make a group rebalance within a second or two on the embedded broker.
std::map<std::string, std::string> FastGroupProperties();

}  // namespace hotrow::ingest::testing
