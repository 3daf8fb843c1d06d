#pragma once

// The fault run's producer: a plain librdkafka producer that records every acknowledgement in a
// ProducedLog as it arrives.
//
// Why not ingest::testing::TestProducer: its Flush waits for a whole chunk at most 30 s, so one
// partition whose leader is down stalls every partition, and a chunk that outlives the 30 s has
// its late delivery reports written into the next chunk's slots. Here every record carries its
// seq as the delivery opaque, records to live brokers keep flowing while one is down, and Flush
// takes an explicit deadline.

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "tests/reliability/fault_oracle.h"

namespace hotrow::testing::fault {

// Thread-safety: Produce, Poll and Flush from one thread at a time; the counters from any.
class LedgerProducer {
 public:
  // Idempotent (retries never duplicate a record), with a short request timeout so that a request
  // lost with a downed broker is retried within seconds, and message.timeout.ms long enough that
  // no record of the run fails for good.
  LedgerProducer(const std::string& bootstrap, std::string topic, ProducedLog* log);
  ~LedgerProducer();
  LedgerProducer(const LedgerProducer&) = delete;
  LedgerProducer& operator=(const LedgerProducer&) = delete;

  // Registers `record` in the log, then queues it (nullopt key: a null key). Serves delivery
  // reports while the local queue is full. Returns false (and says why in `error`) when
  // librdkafka refuses the record.
  bool Produce(const ProducedRecord& record, const std::optional<std::string>& key,
               std::string* error);
  // Serves delivery reports for up to `timeout`.
  void Poll(std::chrono::milliseconds timeout);
  // Waits until every queued record is acknowledged or failed, or `timeout` passes; true when
  // nothing is left in flight.
  bool Flush(std::chrono::milliseconds timeout);

  uint64_t acknowledged() const { return acknowledged_.load(); }
  uint64_t failed() const { return failed_.load(); }
  // The first delivery error, or "".
  std::string first_error() const;

 private:
  static void OnDelivery(rd_kafka_t* rk, const rd_kafka_message_t* msg, void* opaque);

  const std::string topic_;
  ProducedLog* const log_;
  rd_kafka_t* rk_ = nullptr;
  std::atomic<uint64_t> acknowledged_{0};
  std::atomic<uint64_t> failed_{0};
  std::string first_error_;  // written by the polling thread only
};

}  // namespace hotrow::testing::fault
