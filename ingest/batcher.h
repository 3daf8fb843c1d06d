#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "store/event_store.h"

namespace hotrow::ingest {

// What a batch holds of one partition.
struct BatchPart {
  int64_t next_offset = 0;  // one past the last record of the partition in the batch
  size_t records = 0;       // its records: events and rejected ones
  // The partition's fence epoch when its records were read (PartitionFence::Open); 0 until the
  // poller closes the batch. A writer leaves the part out when the epoch is no longer open.
  uint64_t epoch = 0;
};

// One closed batch on its way to the store: the rows of the events it holds and, per partition,
// the next offset to consume after it. Rejected records add no row but still move their
// partition's offset, so a poison record never blocks a partition.
struct Batch {
  uint64_t seq = 0;              // 1, 2, 3... in the order batches were closed
  store::WriteBatchInput input;  // rows, next offsets and runs: one atomic store write
  std::map<store::TopicPartition, BatchPart> parts;  // the same partitions as input.next_offsets
  size_t records = 0;       // records handled: events and rejected ones, over every part
  size_t dead_letters = 0;  // rejected records of this batch produced to the dead-letter topic
  int64_t opened_ms = 0;    // when the first record was added

  // The parts' epochs, for PartitionFence::BeginWrite.
  std::map<store::TopicPartition, uint64_t> Epochs() const;
};

// Removes from `batch` every row, offset and record count of the partitions in `drop`, so that the
// rest can be written alone: the offsets of the partitions kept still cover exactly their rows.
// Rows are matched by the (topic number, partition) in their key; `topic_name` names a topic
// number (EventStore::TopicName). Returns the records removed. A batch left with no part is
// empty (records 0) and writes nothing.
size_t DropPartitions(Batch* batch, const std::set<store::TopicPartition>& drop,
                      const std::function<std::optional<std::string>(uint16_t)>& topic_name);

// Collects records into a Batch until it holds `max_records` records or is `max_ms` old.
//
// Thread-safety: not thread-safe; owned by the poller thread.
class Batcher {
 public:
  // REQUIRES: max_records >= 1, max_ms >= 1.
  Batcher(size_t max_records, int64_t max_ms) : max_records_(max_records), max_ms_(max_ms) {}

  // Adds one event row for the record at `offset` of `tp`. `now_ms` opens the batch's age clock
  // when it is the first record.
  void AddRow(const store::TopicPartition& tp, int64_t offset, std::string key, std::string value,
              int64_t now_ms, std::vector<keying::IndexEntry> index = {});
  // Counts a record that is not stored (rejected) but whose offset is handled.
  void AddSkipped(const store::TopicPartition& tp, int64_t offset, int64_t now_ms);
  // The next record of `tp` added begins a new run of the partition in the store (a start that
  // does not continue the store's offset): its batch records the run (store::PartitionRun), from
  // that record's offset, holding every record from `holds_from_ms` on. Replaces a mark not used
  // yet. ClearRunStart drops it (a start that continues the store's run).
  void MarkRunStart(const store::TopicPartition& tp, int64_t holds_from_ms);
  void ClearRunStart(const store::TopicPartition& tp) { run_marks_.erase(tp); }
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

  // Removes the partitions in `drop` from the open batch (DropPartitions); returns the records
  // removed.
  size_t DropOpen(const std::set<store::TopicPartition>& drop,
                  const std::function<std::optional<std::string>(uint16_t)>& topic_name);

  // Closes the open batch and returns it (possibly empty), numbered `seq`, with its next offsets
  // filled in; opens a new one.
  std::unique_ptr<Batch> Take(uint64_t seq);

 private:
  void Touch(const store::TopicPartition& tp, int64_t offset, int64_t now_ms);

  const size_t max_records_;
  const int64_t max_ms_;
  std::unique_ptr<Batch> open_ = std::make_unique<Batch>();
  // Runs to record with the next record of their partition: holds_from_ms by partition.
  std::map<store::TopicPartition, int64_t> run_marks_;
  // The part used last: records come in runs of one partition.
  std::map<store::TopicPartition, BatchPart>::iterator last_ = open_->parts.end();
};

}  // namespace hotrow::ingest
