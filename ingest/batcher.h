#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "store/event_store.h"

namespace hotrow::ingest {

// A Kafka record batched as read, before its parse: the writer that owns its partition parses
// and keys it (so the poller does not), then releases `message`, whose bytes `key` and `value`
// are. Its partition's next offset is already in the batch: stored or rejected, it is handled.
struct RawRecord {
  std::string_view key;    // the record key; empty for a null key
  std::string_view value;  // the record value; empty for a null value
  int64_t offset = 0;
  int64_t kafka_ts_ms = -1;                   // -1 when the record has none
  const store::TopicPartition* tp = nullptr;  // the key of its entry in input.next_offsets
  void* message = nullptr;                    // released by the batch's release_message
  uint16_t topic_number = 0;                  // the store's number for tp->topic
};

// One closed batch on its way to the store: the rows of the events it holds and, per partition,
// the next offset to consume after it. Rejected records add no row but still move their
// partition's offset, so a poison record never blocks a partition.
//
// Records arrive either as rows (AddRow: parsed and keyed already) or raw (AddRaw), to be parsed
// into rows by the writer before the write; a batch releases the messages of its raw records
// when ReleaseRaw is called or when it is destroyed, whichever comes first.
struct Batch {
  Batch() = default;
  ~Batch() { ReleaseRaw(); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  // Releases the message of every raw record and empties `raw`.
  void ReleaseRaw();

  uint64_t seq = 0;              // 1, 2, 3... in the order batches were closed
  store::WriteBatchInput input;  // rows + next_offsets, written in one atomic store write
  std::vector<RawRecord> raw;    // records still to parse, in the order read
  void (*release_message)(void*) = nullptr;  // frees a RawRecord::message; may be null
  size_t records = 0;                        // records handled: events and rejected ones
  size_t dead_letters = 0;  // rejected records of this batch produced to the dead-letter topic
  int64_t opened_ms = 0;    // when the first record was added
  uint64_t epoch = 0;       // the ingestor's ownership epoch the records were read in
};

// Collects records into a Batch until it holds `max_records` records or is `max_ms` old.
//
// Thread-safety: not thread-safe; owned by the poller thread.
class Batcher {
 public:
  // REQUIRES: max_records >= 1, max_ms >= 1. `release_message` frees the messages of raw
  // records (AddRaw); null when there are none to free.
  Batcher(size_t max_records, int64_t max_ms, void (*release_message)(void*) = nullptr)
      : max_records_(max_records), max_ms_(max_ms), release_message_(release_message) {
    open_->release_message = release_message_;
  }

  // Adds one event row for the record at `offset` of `tp`. `now_ms` opens the batch's age clock
  // when it is the first record.
  void AddRow(const store::TopicPartition& tp, int64_t offset, std::string key, std::string value,
              int64_t now_ms, std::vector<keying::IndexEntry> index = {});
  // Adds one record to be parsed by the writer; the batch owns `message` (whose bytes `key` and
  // `value` are) from here on. Its offset counts as handled, like AddRow's and AddSkipped's.
  void AddRaw(const store::TopicPartition& tp, uint16_t topic_number, int64_t offset,
              int64_t kafka_ts_ms, std::string_view key, std::string_view value, void* message,
              int64_t now_ms);
  // Counts a record that is not stored (rejected) but whose offset is handled.
  void AddSkipped(const store::TopicPartition& tp, int64_t offset, int64_t now_ms);
  // Counts a dead letter produced for a record of this batch.
  void AddDeadLetter() { ++open_->dead_letters; }

  bool empty() const { return open_->records == 0; }
  size_t records() const { return open_->records; }
  // True when the batch holds max_records records.
  bool Full() const { return open_->records >= max_records_; }
  // True when the batch is not empty and at least max_ms old at `now_ms`.
  bool Due(int64_t now_ms) const { return !empty() && now_ms - open_->opened_ms >= max_ms_; }
  // Milliseconds until Due(), for a poll timeout; max_ms when empty, 0 when already due.
  int64_t MsUntilDue(int64_t now_ms) const;

  // Closes the open batch and returns it (possibly empty), numbered `seq`; opens a new one.
  std::unique_ptr<Batch> Take(uint64_t seq);

 private:
  void Touch(const store::TopicPartition& tp, int64_t offset, int64_t now_ms);

  const size_t max_records_;
  const int64_t max_ms_;
  void (*const release_message_)(void*);
  std::unique_ptr<Batch> open_ = std::make_unique<Batch>();
  // The entry of next_offsets used last: records come in runs of one partition.
  std::map<store::TopicPartition, int64_t>::iterator last_ = open_->input.next_offsets.end();
};

}  // namespace hotrow::ingest
