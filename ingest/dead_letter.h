#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

struct rd_kafka_s;
struct rd_kafka_message_s;

namespace hotrow::ingest {

// The name of the header that carries the reject reason on a dead letter.
inline constexpr const char* kReasonHeader = "hotrow-reason";

// Produces rejected records to the dead-letter topic: the record's key and value as received, with
// headers hotrow-reason (one of kReject*), hotrow-source ("topic/partition@offset") and
// hotrow-detail (a one-line explanation).
//
// Delivery: Produce only queues; the writer calls Flush before it stores the offsets of a batch
// with dead letters, so a letter is delivered before its record's offset is made durable.
//
// Thread-safety: Produce from one thread and Flush from another may run at once.
class DeadLetterProducer {
 public:
  // `properties` are the user's kafka.properties (consumer-only ones are ignored by librdkafka
  // with a warning). InvalidArgument when librdkafka refuses them.
  static Result<std::unique_ptr<DeadLetterProducer>> Create(
      const std::string& brokers, const std::string& topic,
      const std::map<std::string, std::string>& properties);
  ~DeadLetterProducer();  // flushes for up to 5 s
  DeadLetterProducer(const DeadLetterProducer&) = delete;
  DeadLetterProducer& operator=(const DeadLetterProducer&) = delete;

  // Queues one dead letter. Waits (up to 10 s) when librdkafka's queue is full; IOError when it
  // stays full or the message is refused.
  Status Produce(std::string_view key, std::string_view value, const char* reason,
                 std::string_view detail, std::string_view source_topic, int32_t partition,
                 int64_t offset);

  // Waits until every queued letter is delivered or failed, up to `timeout_ms`. IOError when
  // some letter failed since the previous Flush or is still undelivered.
  Status Flush(int timeout_ms);

  const std::string& topic() const { return topic_; }
  uint64_t delivered() const { return delivered_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  DeadLetterProducer() = default;
  static void OnDelivery(rd_kafka_s* rk, const rd_kafka_message_s* msg, void* opaque);

  std::string topic_;
  rd_kafka_s* producer_ = nullptr;
  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> failed_{0};
  uint64_t failed_at_last_flush_ = 0;  // used by Flush only
};

}  // namespace hotrow::ingest
