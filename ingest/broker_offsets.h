#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "common/status.h"
#include "ingest/start_offset.h"
#include "store/event_store.h"

namespace hotrow::ingest {

// What the assignment of partitions asks the brokers about them to choose where each starts
// (start_offset.h): the librdkafka boundary of that decision, so that tests can stand a broker in
// that answers offsets-for-times where the embedded one cannot.
//
// Each call is one batched request (per partition leader) and waits at most `timeout_ms`; a
// partition left out of the answer is unknown. An error of the whole request is a Status; the
// caller then knows nothing of any partition.
//
// Thread-safety: implementations may be called from one thread at a time.
class BrokerOffsets {
 public:
  virtual ~BrokerOffsets() = default;

  // The end of each partition: the offset the next record will get (the high watermark, or the
  // last stable offset for a read_committed consumer). `*ends` receives the partitions answered.
  virtual Status EndOffsets(const std::vector<store::TopicPartition>& partitions, int timeout_ms,
                            std::map<store::TopicPartition, int64_t>* ends) = 0;

  // offsets-for-times(`ts_ms`): per partition, the first record whose timestamp is `ts_ms` or
  // later, or TimeOffset::NoneNewer when the broker says there is none. `*answers` receives the
  // partitions answered; a broker that cannot answer leaves them all out.
  virtual Status OffsetsForTimes(const std::vector<store::TopicPartition>& partitions,
                                 int64_t ts_ms, int timeout_ms,
                                 std::map<store::TopicPartition, TimeOffset>* answers) = 0;
};

}  // namespace hotrow::ingest
