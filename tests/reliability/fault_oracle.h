#pragma once

// The fault run's ledger of produced records and the checks that hold for any answer of the HTTP
// API at any moment of the run, whatever has been ingested so far.
//
// Every produced record carries a unique sequence number in its payload ("seq"). An answer can
// therefore name the record it returns even before the producer has its acknowledgement (and so
// its offset): the consumer may store a record before the delivery report reaches the producer.
// Offsets seen in answers before their acknowledgement are checked later (CheckDeferred).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "query/query_engine.h"

namespace hotrow::testing::fault {

// One record as the fault run produced it.
struct ProducedRecord {
  int64_t seq = 0;
  std::string id;  // the event id; empty for bad records
  int64_t ts_ms = 0;
  int32_t partition = 0;
  int64_t offset = -1;        // -1 until acknowledged
  std::string value;          // the record value, exactly as produced
  std::string reject_reason;  // empty for a good record, else the kReject* reason hotrow must give
};

// Thread-safety: every method may be called from any thread.
class ProducedLog {
 public:
  explicit ProducedLog(std::string topic) : topic_(std::move(topic)) {}

  // Records `record` before it is produced. REQUIRES: its seq is new.
  void Register(const ProducedRecord& record);
  // The broker acknowledged `seq` at `offset`.
  void Acknowledge(int64_t seq, int64_t offset);

  // Good records acknowledged so far.
  size_t acked_good() const;
  // Every registered record, ordered by seq.
  std::vector<ProducedRecord> Snapshot() const;

  // Checks one event returned by the service: it must be a produced good record (found by the
  // "seq" in its payload) with the same id, time, topic, partition, offset and payload. Returns ""
  // when it is, else what differs.
  std::string CheckEvent(const query::Event& event);
  // Checks the offsets that CheckEvent saw before their acknowledgement, or at another offset
  // than the acknowledged one. "" when each is the acknowledged offset or a broker copy.
  std::string CheckDeferred() const;

  // The broker holds record `seq` a second time, at (partition, offset): a producer retry that
  // the embedded broker appended again although the producer is idempotent (seen with librdkafka
  // 2.0.2's mock cluster under injected faults). Kafka delivers the copy as a record of its own,
  // so hotrow must store it once like any other; the run learns of copies by reading the topic
  // back at the end.
  void AddBrokerCopy(int64_t seq, int32_t partition, int64_t offset);
  // (seq, partition, offset) of every broker copy.
  std::vector<std::tuple<int64_t, int32_t, int64_t>> BrokerCopies() const;
  // What the store must hold in the end: the good records acknowledged, and their broker copies.
  size_t stored_good() const;

 private:
  const std::string topic_;
  mutable std::mutex mu_;
  std::unordered_map<int64_t, ProducedRecord> by_seq_;  // guarded by mu_
  size_t acked_good_ = 0;                               // guarded by mu_
  // (seq, offset seen in an answer) for records not yet acknowledged then, or answered at
  // another offset than the acknowledged one; guarded by mu_.
  std::vector<std::pair<int64_t, int64_t>> deferred_;
  std::map<std::pair<int32_t, int64_t>, int64_t> copies_;  // (partition, offset) -> seq; mu_
  size_t good_copies_ = 0;                                 // guarded by mu_
};

// Parses the answer of /v1/events/... ({"event_id": ID, "events": [E...]}). On error, returns
// false and says why in `error`.
bool ParseEventsAnswer(const std::string& body, std::string* answered_id,
                       std::vector<query::Event>* events, std::string* error);
// Parses one NDJSON line of /v1/scan. A line {"error": ...} (a scan that failed after it started
// streaming) returns false with the message in `error`.
bool ParseScanLine(const std::string& line, query::Event* event, std::string* error);

// Invariants of one answer that hold at any moment while records arrive. Each returns "" when the
// answer is consistent, else the first problem found. Every event is also checked with
// log->CheckEvent.
//
// latest: at most n events of `id`, no record twice, newest first (ties by partition, offset).
std::string CheckLatestAnswer(const std::string& id, int n, const std::vector<query::Event>& events,
                              ProducedLog* log);
// range: at most `limit` events of `id` with from <= ts < to, no record twice, in `order`.
std::string CheckRangeAnswer(const std::string& id, int64_t from_ms, int64_t to_ms, int64_t limit,
                             query::Order order, const std::vector<query::Event>& events,
                             ProducedLog* log);
// scan: at most `limit` events (0: no limit) with from <= ts < to, no record twice, any order.
std::string CheckScanAnswer(int64_t from_ms, int64_t to_ms, int64_t limit,
                            const std::vector<query::Event>& events, ProducedLog* log);

}  // namespace hotrow::testing::fault
