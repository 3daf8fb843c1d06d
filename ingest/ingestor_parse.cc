// The writer threads' first step: parse and key the records of a batch, each writer those of its
// own partitions, so that the poller only polls and batches (see WriterLane).
#include <spdlog/spdlog.h>

#include <string>

#include "ingest/ingestor_impl.h"
#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::ingest::internal {

void DestroyMessage(void* message) {
  rd_kafka_message_destroy(static_cast<rd_kafka_message_t*>(message));
}

void IngestorImpl::ParseBatch(WriterLane* lane, Batch* batch) {
  if (batch->raw.empty()) return;
  // Taken once a batch: the store checks the window again when it writes.
  const int64_t window_start = store_->WindowStartMs();
  const int64_t max_time = store_->options().wall_clock->NowMs() + options_.max_future_ms;
  std::vector<store::Row>& rows = batch->input.rows;
  rows.reserve(rows.size() + batch->raw.size());
  uint64_t index_absent = 0, index_not_scalar = 0, index_too_long = 0;
  ParsedRecord& parsed = lane->parsed;
  for (const RawRecord& record : batch->raw) {
    lane->parser.Parse(RecordView{record.value, record.key, record.kafka_ts_ms}, window_start,
                       max_time, &parsed);
    if (!parsed.ok()) {
      if (Reject(record, parsed.reject, parsed.detail)) ++batch->dead_letters;
      continue;
    }
    const TopicPartition& tp = *record.tp;
    keying::RowKey key;
    key.salt = store_->salter().SaltOf(tp.topic, tp.partition, record.offset, parsed.id);
    key.id_hash = keying::IdHash(parsed.id);
    key.ts_ms = parsed.ts_ms;
    key.topic = record.topic_number;
    key.partition = tp.partition;
    key.offset = record.offset;
    store::Row& row = rows.emplace_back();
    row.key.resize(keying::kRowKeySize);
    keying::EncodeRowKeyTo(key, row.key.data());
    keying::EncodeRowValueTo(parsed.id, record.value, &row.value);
    row.index = std::move(parsed.index);
    index_absent += parsed.index_absent;
    index_not_scalar += parsed.index_not_scalar;
    index_too_long += parsed.index_too_long;
  }
  if (index_absent + index_not_scalar + index_too_long != 0) {
    index_absent_.fetch_add(index_absent, std::memory_order_relaxed);
    index_not_scalar_.fetch_add(index_not_scalar, std::memory_order_relaxed);
    index_too_long_.fetch_add(index_too_long, std::memory_order_relaxed);
  }
  // The rows hold copies: the messages (and the fetch buffers they pin) can go now, before the
  // write.
  batch->ReleaseRaw();
}

bool IngestorImpl::Reject(const RawRecord& record, const char* reason, const std::string& detail) {
  const TopicPartition& tp = *record.tp;
  rejected_[ReasonIndex(reason)].fetch_add(1, std::memory_order_relaxed);
  uint64_t suppressed = 0;
  if (reject_log_.Allow(&suppressed)) {
    spdlog::warn("ingest: rejected {}@{}: {}: {}{}", Describe(tp), record.offset, reason, detail,
                 suppressed > 0 ? " (" + std::to_string(suppressed) + " similar not logged)"
                                : std::string());
  }
  if (dead_letters_ == nullptr) return false;
  Status s = dead_letters_->Produce(record.key, record.value, reason, detail, tp.topic,
                                    tp.partition, record.offset);
  if (!s.ok()) {
    NoteError(s.ToString());
    return false;
  }
  dead_lettered_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace hotrow::ingest::internal
