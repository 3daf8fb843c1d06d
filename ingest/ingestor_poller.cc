// The poller thread of IngestorImpl: poll, parse, key, batch, hand over.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "common/time_format.h"
#include "ingest/ingestor_impl.h"
#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::ingest::internal {

void IngestorImpl::PollLoop() {
  NameThread("hotrow-poll");
  while (!stop_polling_.load(std::memory_order_relaxed)) {
    poll_began_ms_.store(SteadyNowMs(), std::memory_order_relaxed);
    if (options_.before_poll_for_test) options_.before_poll_for_test();
    WatchJoin();
    if (standby()) FollowStandbySet();
    PushPending();
    UpdatePause();
    if (held_partitions_.load(std::memory_order_relaxed) > 0) {
      // A schema fetch finished: the records waiting for it may decode now, not at the backoff.
      if (fetch_stats_->completed.load(std::memory_order_relaxed) != fetches_seen_) {
        next_retry_steady_ms_ = 0;
      }
      RetryHeld();
    }
    const int64_t now = NowMs();
    int64_t until_due = kPollMaxMs;
    for (const auto& lane : lanes_) until_due = std::min(until_due, lane->batcher.MsUntilDue(now));
    if (held_partitions_.load(std::memory_order_relaxed) > 0) {
      until_due = std::min(until_due, next_retry_steady_ms_ - SteadyNowMs());
    }
    const int timeout = static_cast<int>(std::max<int64_t>(until_due, 0));
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(consumer_, timeout);
    // Then take what is already fetched without blocking.
    for (int n = 1; msg != nullptr; ++n) {
      touched_lane_ = nullptr;
      if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        HandleConsumerError(msg);
        rd_kafka_message_destroy(msg);
      } else if (!HandleMessage(msg)) {
        rd_kafka_message_destroy(msg);
      }
      if (touched_lane_ != nullptr && touched_lane_->batcher.Full()) CloseBatch(touched_lane_);
      if (stop_polling_.load(std::memory_order_relaxed) || AnyPending()) break;
      if (n % 64 == 0) {
        const int64_t t = NowMs();
        if (std::any_of(lanes_.begin(), lanes_.end(),
                        [t](const auto& lane) { return lane->batcher.Due(t); })) {
          break;
        }
      }
      msg = rd_kafka_consumer_poll(consumer_, 0);
    }
    const int64_t t = NowMs();
    for (auto& lane : lanes_) {
      if (lane->batcher.Full() || lane->batcher.Due(t)) CloseBatch(lane.get());
    }
  }
  // Stop: write the open batch and everything pending, then leave the group. Closing the consumer
  // revokes the assignment through OnRebalance, which commits the written offsets. Held records
  // are never written (Kafka delivers them again); they go before the consumer does.
  for (auto& [tp, cursor] : cursors_) cursor.held.clear();
  UpdateHeld();
  DrainAndWait();
  close_timed_out_ = !CloseConsumer(consumer_);
}

PartitionCursor* IngestorImpl::Cursor(const char* topic, int32_t partition) {
  if (last_cursor_ != nullptr && last_cursor_->tp.partition == partition &&
      last_cursor_->tp.topic == topic) {
    return last_cursor_;
  }
  TopicPartition tp{topic, partition};
  auto it = cursors_.find(tp);
  if (it == cursors_.end()) {
    // A record of a partition not (or no longer) assigned, still in librdkafka's queue: never
    // tracked, never written; its owner reads it.
    return nullptr;
  }
  last_cursor_ = &it->second;
  return last_cursor_;
}

bool IngestorImpl::ResolveTopicNumber(PartitionCursor* cursor) {
  int64_t backoff_ms = 100;
  while (true) {
    Result<uint16_t> number = store_->TopicNumber(cursor->tp.topic);
    if (number.ok()) {
      cursor->topic_number = *number;
      for (auto& [tp, other] : cursors_) {
        if (tp.topic == cursor->tp.topic) other.topic_number = *number;
      }
      return true;
    }
    NoteError("store: cannot number topic " + cursor->tp.topic + ": " + number.status().ToString());
    if (stop_polling_.load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000);
  }
}

bool IngestorImpl::NeedsHeaders(const IngestOptions& options) {
  auto names_header = [](const std::string& f) { return f.rfind("@header.", 0) == 0; };
  return options.include_meta || names_header(options.id_field) || names_header(options.ts_field) ||
         std::any_of(options.index_fields.begin(), options.index_fields.end(), names_header);
}

bool IngestorImpl::HandleMessage(rd_kafka_message_t* msg) {
  records_consumed_.fetch_add(1, std::memory_order_relaxed);
  const char* topic = rd_kafka_topic_name(msg->rkt);
  PartitionCursor* cursor = Cursor(topic, msg->partition);
  if (cursor == nullptr) {
    uint64_t suppressed = 0;
    if (error_log_.Allow(&suppressed)) {
      spdlog::warn("ingest: dropped a record of {}/{}@{}: the partition is not assigned here",
                   topic, msg->partition, msg->offset);
    }
    return false;
  }
  const int64_t offset = msg->offset;
  if (cursor->topic_number < 0 && !ResolveTopicNumber(cursor)) {
    // Stopping with the store refusing: leave this record (and the partition) unhandled.
    records_consumed_.fetch_sub(1, std::memory_order_relaxed);
    stop_polling_.store(true);
    return false;
  }
  if (!cursor->held.empty() && !retrying_) {
    // Fetched before the pause took: behind the held record, in order.
    records_consumed_.fetch_sub(1, std::memory_order_relaxed);
    cursor->held.emplace_back(msg);
    return true;
  }
  if (cursor->expected >= 0 && offset != cursor->expected) {
    if (offset > cursor->expected) {
      CountGap(cursor, offset);
    } else {
      // The partition went back (recreated, or its offsets reset by hand): records below the
      // store's offset for it will count as duplicates, not be stored again.
      NoteError("ingest: " + Describe(cursor->tp) + " went back from offset " +
                std::to_string(cursor->expected) + " to " + std::to_string(offset));
    }
  }
  cursor->expected = offset + 1;

  const int64_t now = NowMs();
  const int64_t wall_now = store_->options().wall_clock->NowMs();
  const int64_t window_start = store_->WindowStartMs();
  rd_kafka_timestamp_type_t ts_type;
  const int64_t kafka_ts = rd_kafka_message_timestamp(msg, &ts_type);

  // The run of cold records that may open a partition (a restart after a long outage, where the
  // broker could not say where the window starts) is skipped, not rejected. When the producers
  // set the Kafka timestamp to the event time, without a parse.
  if (cursor->cold_run && options_.record_ts_is_event_time && kafka_ts >= 0 &&
      kafka_ts < window_start) {
    SkipCold(cursor, msg, kafka_ts, "Kafka timestamp", window_start, now);
    return false;
  }

  RecordView view;
  if (msg->payload != nullptr) view.value = {static_cast<const char*>(msg->payload), msg->len};
  if (msg->key != nullptr) view.key = {static_cast<const char*>(msg->key), msg->key_len};
  view.kafka_ts_ms = kafka_ts;
  if (need_headers_) {
    headers_.clear();
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(msg, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* name = nullptr;
      const void* header_value = nullptr;
      size_t size = 0;
      for (size_t i = 0;
           rd_kafka_header_get_all(headers, i, &name, &header_value, &size) ==
           RD_KAFKA_RESP_ERR_NO_ERROR;
           ++i) {
        headers_.push_back({name, {static_cast<const char*>(header_value), size},
                            header_value == nullptr});
      }
    }
    view.headers = headers_;
  }
  if (decoder_ != nullptr) {
    const char* reason = kRejectNotJson;
    std::string detail;
    switch (DecodeRecord(decoder_.get(), view.value, &decoded_, &reason, &detail)) {
      case DecodeStatus::kOk:
        view.value = decoded_;
        view.ts_units_per_ms = decoder_->TimeUnitsPerMs();
        break;
      case DecodeStatus::kReject:
        Reject(cursor, msg, reason, detail, now);
        return false;
      case DecodeStatus::kWait:
        Hold(cursor, msg, detail);
        return true;
    }
  }
  if (options_.include_meta) {
    with_meta_.clear();
    AppendWithMeta(view.value, view.key, msg->key == nullptr, headers_, kafka_ts, &with_meta_);
    view.value = with_meta_;
  }
  parser_.Parse(view, window_start, wall_now + options_.max_future_ms, &parsed_);
  if (!parsed_.ok()) {
    // Else by the event time the parser reads: the window is defined by it.
    if (cursor->cold_run && parsed_.reject == kRejectExpired) {
      SkipCold(cursor, msg, parsed_.ts_ms, "event time", window_start, now);
    } else {
      Reject(cursor, msg, parsed_.reject, parsed_.detail, now);
    }
    return false;
  }
  // The first event inside the window ends the cold run: an older one after it is a late event,
  // rejected as expired.
  cursor->cold_run = false;
  if (cursor->route_partitions > 0 && !cursor->route_broken) {
    CheckRoute(cursor, msg, view.key, parsed_.id);
  }

  keying::RowKey key;
  key.salt = store_->salter().SaltOf(cursor->tp.topic, cursor->tp.partition, offset, parsed_.id);
  key.id_hash = keying::IdHash(parsed_.id);
  key.ts_ms = parsed_.ts_ms;
  key.topic = static_cast<uint16_t>(cursor->topic_number);
  key.partition = cursor->tp.partition;
  key.offset = offset;
  std::string encoded_key(keying::kRowKeySize, '\0');
  keying::EncodeRowKeyTo(key, encoded_key.data());
  std::string value;
  keying::EncodeRowValueTo(parsed_.id, view.value, &value);
  if (parsed_.index_absent + parsed_.index_not_scalar + parsed_.index_too_long != 0) {
    index_absent_.fetch_add(parsed_.index_absent, std::memory_order_relaxed);
    index_not_scalar_.fetch_add(parsed_.index_not_scalar, std::memory_order_relaxed);
    index_too_long_.fetch_add(parsed_.index_too_long, std::memory_order_relaxed);
  }
  cursor->lane->batcher.AddRow(cursor->tp, offset, std::move(encoded_key), std::move(value), now,
                               std::move(parsed_.index));
  touched_lane_ = cursor->lane;
  return false;
}

void IngestorImpl::Hold(PartitionCursor* cursor, rd_kafka_message_t* msg, const std::string& why) {
  // Not counted as consumed until handled; the record is expected again when retried.
  records_consumed_.fetch_sub(1, std::memory_order_relaxed);
  cursor->expected = msg->offset;
  const bool first = cursor->held.empty();
  cursor->held.emplace_front(msg);
  if (first && !retrying_) {
    PausePartition(cursor->tp, true);
    spdlog::warn("ingest: {} waits at offset {} for the schema registry: {}",
                 Describe(cursor->tp), msg->offset, why);
  }
  const bool was_waiting = held_partitions_.load() > 0;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    registry_wait_ = why;
    if (!was_waiting) registry_wait_since_ms_ = NowMs();
  }
  if (!was_waiting) {
    retry_backoff_ms_ = kRegistryRetryFirstMs;
    next_retry_steady_ms_ = SteadyNowMs() + retry_backoff_ms_;
  }
  UpdateHeld();
}

void IngestorImpl::RetryHeld() {
  if (SteadyNowMs() < next_retry_steady_ms_) return;
  fetches_seen_ = fetch_stats_->completed.load(std::memory_order_relaxed);
  bool still_waiting = false;
  for (auto& [tp, cursor] : cursors_) {
    if (cursor.held.empty()) continue;
    while (!cursor.held.empty()) {
      rd_kafka_message_t* msg = cursor.held.front().release();
      cursor.held.pop_front();
      touched_lane_ = nullptr;
      retrying_ = true;
      const bool kept = HandleMessage(msg);
      retrying_ = false;
      if (kept) break;  // held again, at the front
      rd_kafka_message_destroy(msg);
      if (touched_lane_ != nullptr && touched_lane_->batcher.Full()) CloseBatch(touched_lane_);
    }
    if (cursor.held.empty()) {
      spdlog::info("ingest: {} resumes: the schema registry answers again", Describe(tp));
      if (!paused_) PausePartition(tp, false);
    } else {
      still_waiting = true;
    }
  }
  if (still_waiting) {
    retry_backoff_ms_ = std::min(retry_backoff_ms_ * 2, kRegistryRetryMaxMs);
    next_retry_steady_ms_ = SteadyNowMs() + retry_backoff_ms_;
  }
  UpdateHeld();
}

void IngestorImpl::PausePartition(const TopicPartition& tp, bool pause) {
  TopicPartitionListPtr list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
  rd_kafka_resp_err_t err = pause ? rd_kafka_pause_partitions(consumer_, list.get())
                                  : rd_kafka_resume_partitions(consumer_, list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    NoteError(std::string("kafka consumer: cannot ") + (pause ? "pause " : "resume ") +
              Describe(tp) + ": " + rd_kafka_err2str(err));
  }
}

void IngestorImpl::UpdateHeld() {
  uint64_t held = 0;
  for (const auto& [tp, cursor] : cursors_) held += cursor.held.empty() ? 0 : 1;
  held_partitions_.store(held);
  if (held == 0) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    registry_wait_.clear();
  }
}

void IngestorImpl::CheckRoute(PartitionCursor* cursor, const rd_kafka_message_t* msg,
                              std::string_view key, std::string_view id) {
  const char* broke = nullptr;
  if (msg->key == nullptr || key != id) {
    broke = "its key is not its event id";
  } else if (PartitionForKey(options_.route_by_key, key, cursor->route_partitions) !=
             cursor->tp.partition) {
    broke = "its key belongs in another partition";
  }
  if (broke == nullptr) return;
  cursor->route_broken = true;
  route_broken_.fetch_add(1, std::memory_order_relaxed);
  if (options_.ownership != nullptr) {
    options_.ownership->RouteBroken(cursor->tp.topic, cursor->tp.partition);
  }
  spdlog::warn(
      "ingest: {}@{}: {} ({} of {} partitions): per-id queries ask every instance for this "
      "partition while it stays owned here (cluster.route_by_key)",
      Describe(cursor->tp), msg->offset, broke, KeyPartitionerName(options_.route_by_key),
      cursor->route_partitions);
}

void IngestorImpl::SkipCold(PartitionCursor* cursor, const rd_kafka_message_t* msg, int64_t time_ms,
                            const char* time_kind, int64_t window_start, int64_t now_ms) {
  // Not bad input: the record is simply too old to keep. Counted apart from `rejected`, never
  // dead-lettered, logged once per partition.
  skipped_cold_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    partitions_[cursor->tp].skipped_cold += 1;
  }
  if (!cursor->cold_logged) {
    cursor->cold_logged = true;
    spdlog::warn(
        "ingest: {} from offset {}: skipping the records older than the hot window that open the "
        "partition ({} {} < window start {}); counted in skipped_cold, not as rejected",
        Describe(cursor->tp), msg->offset, time_kind, FormatRfc3339Ms(time_ms),
        FormatRfc3339Ms(window_start));
  }
  cursor->lane->batcher.AddSkipped(cursor->tp, msg->offset, now_ms);
  touched_lane_ = cursor->lane;
}

void IngestorImpl::Reject(PartitionCursor* cursor, const rd_kafka_message_t* msg,
                          const char* reason, const std::string& detail, int64_t now_ms) {
  rejected_[ReasonIndex(reason)].fetch_add(1, std::memory_order_relaxed);
  uint64_t suppressed = 0;
  if (reject_log_.Allow(&suppressed)) {
    spdlog::warn("ingest: rejected {}@{}: {}: {}{}", Describe(cursor->tp), msg->offset, reason,
                 detail,
                 suppressed > 0 ? " (" + std::to_string(suppressed) + " similar not logged)"
                                : std::string());
  }
  if (dead_letters_ != nullptr) {
    std::string_view key, value;
    if (msg->key != nullptr) key = {static_cast<const char*>(msg->key), msg->key_len};
    if (msg->payload != nullptr) value = {static_cast<const char*>(msg->payload), msg->len};
    Status s = dead_letters_->Produce(key, value, reason, detail, cursor->tp.topic,
                                      cursor->tp.partition, msg->offset);
    if (s.ok()) {
      cursor->lane->batcher.AddDeadLetter();
      dead_lettered_.fetch_add(1, std::memory_order_relaxed);
    } else {
      NoteError(s.ToString());
    }
  }
  cursor->lane->batcher.AddSkipped(cursor->tp, msg->offset, now_ms);
  touched_lane_ = cursor->lane;
}

void IngestorImpl::CountGap(PartitionCursor* cursor, int64_t offset) {
  // Offsets the client skipped although the broker still has them (transaction markers,
  // compaction) are not lost: only the part below the broker's log start is.
  int64_t low = -1, high = -1;
  rd_kafka_get_watermark_offsets(consumer_, cursor->tp.topic.c_str(), cursor->tp.partition, &low,
                                 &high);
  int64_t lost = offset - cursor->expected;
  if (low >= 0) {
    if (low <= cursor->expected) {
      spdlog::info(
          "ingest: {} skipped offsets {}..{} that the broker did not deliver "
          "(transaction markers or compaction)",
          Describe(cursor->tp), cursor->expected, offset - 1);
      return;
    }
    lost = std::min(offset, low) - cursor->expected;
  }
  lost_to_retention_.fetch_add(static_cast<uint64_t>(lost), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    partitions_[cursor->tp].lost_to_retention += static_cast<uint64_t>(lost);
  }
  NoteError("ingest: " + Describe(cursor->tp) + ": " + std::to_string(lost) +
            " records lost to retention: expected offset " + std::to_string(cursor->expected) +
            ", the broker's log now starts at " + std::to_string(low) +
            " (the consumer fell behind retention or was down too long)");
}

void IngestorImpl::HandleConsumerError(const rd_kafka_message_t* msg) {
  std::string where;
  if (msg->rkt != nullptr) {
    where =
        std::string(rd_kafka_topic_name(msg->rkt)) + "/" + std::to_string(msg->partition) + ": ";
  }
  const char* text = rd_kafka_message_errstr(msg);
  NoteError("kafka consumer: " + where + (text != nullptr ? text : rd_kafka_err2str(msg->err)));
}

void IngestorImpl::CloseBatch(WriterLane* lane) {
  if (lane->batcher.empty()) return;
  std::unique_ptr<Batch> batch = lane->batcher.Take(next_seq_++);
  // Each part at the epoch its records were read at: its cursor's (a part whose cursor is gone
  // gets 0, never open, and is left out by the writer).
  for (auto& [tp, part] : batch->parts) {
    auto it = cursors_.find(tp);
    part.epoch = it != cursors_.end() ? it->second.epoch : 0;
  }
  lane->last_closed_seq = batch->seq;
  lane->pending.push_back(std::move(batch));
  PushPending();
}

void IngestorImpl::CloseBatches() {
  for (auto& lane : lanes_) CloseBatch(lane.get());
}

bool IngestorImpl::AnyPending() const {
  return std::any_of(lanes_.begin(), lanes_.end(),
                     [](const auto& lane) { return !lane->pending.empty(); });
}

void IngestorImpl::PushPending() {
  for (auto& lane_ptr : lanes_) {
    WriterLane* lane = lane_ptr.get();
    while (!lane->pending.empty()) {
      if (lane->queued.load() >= options_.queue_max_batches) {
        // This writer is behind. Wait a little for it first: a pause costs a refetch when
        // resumed, which only pays off when the writer is really stuck (a slow or full disk).
        std::unique_lock<std::mutex> lock(seq_mu_);
        seq_cv_.wait_for(lock, std::chrono::milliseconds(kBackpressureWaitMs), [this, lane] {
          return lane->queued.load() < options_.queue_max_batches || stop_polling_.load();
        });
        if (lane->queued.load() >= options_.queue_max_batches) break;  // UpdatePause pauses
      }
      lane->queued.fetch_add(1);
      lane->last_enqueued_seq = lane->pending.front()->seq;
      lane->queue.enqueue(std::move(lane->pending.front()));
      lane->pending.pop_front();
    }
  }
}

void IngestorImpl::UpdatePause() {
  // Pause as soon as a closed batch finds its writer's queue full (or the disk is full); resume
  // only once every writer has drained its queue to half, so that a writer just a little behind
  // does not make the consumer pause and resume (and refetch) for every batch.
  if (!paused_) {
    if (AnyPending() || out_of_disk_.load()) SetPaused(true);
  } else if (!AnyPending() && !out_of_disk_.load() &&
             std::all_of(lanes_.begin(), lanes_.end(), [this](const auto& lane) {
               return lane->queued.load() <= options_.queue_max_batches / 2;
             })) {
    SetPaused(false);
  }
}

void IngestorImpl::SetPaused(bool paused) {
  rd_kafka_topic_partition_list_t* assignment = nullptr;
  if (rd_kafka_assignment(consumer_, &assignment) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  TopicPartitionListPtr list(assignment);
  rd_kafka_resp_err_t err = paused ? rd_kafka_pause_partitions(consumer_, list.get())
                                   : rd_kafka_resume_partitions(consumer_, list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    NoteError(std::string("kafka consumer: cannot ") + (paused ? "pause" : "resume") + ": " +
              rd_kafka_err2str(err));
    return;
  }
  paused_ = paused;
  paused_flag_.store(paused);
  if (!paused) {  // the partitions held for the registry stay paused
    for (const auto& [tp, cursor] : cursors_) {
      if (!cursor.held.empty()) PausePartition(tp, true);
    }
  }
  if (paused) {
    spdlog::info("ingest: paused {} partition(s): {}", list->cnt,
                 out_of_disk_.load() ? "the disk is full" : "the writer is behind");
  } else {
    spdlog::info("ingest: resumed {} partition(s)", list->cnt);
  }
}

bool IngestorImpl::DrainAndWait(int64_t bound_ms) {
  // Every writer's batches, written: a revocation may take partitions of any writer.
  CloseBatches();
  const int64_t deadline = bound_ms >= 0 ? SteadyNowMs() + bound_ms : -1;
  std::vector<uint64_t> targets;
  for (const auto& lane : lanes_) targets.push_back(lane->last_closed_seq);
  std::unique_lock<std::mutex> lock(seq_mu_);
  while (true) {
    lock.unlock();
    PushPending();
    lock.lock();
    bool all_written = true;
    for (size_t i = 0; i < lanes_.size(); ++i) {
      const WriterLane& lane = *lanes_[i];
      if (lane.pending.empty() && lane.written_seq >= targets[i]) continue;
      all_written = false;
      if (lane.done.load()) {
        NoteError("ingest: writer " + std::to_string(i) + " has ended; its batches up to " +
                  std::to_string(targets[i]) +
                  " stay unwritten (Kafka delivers them again on "
                  "restart)");
        return false;
      }
    }
    if (all_written) return true;
    if (deadline >= 0 && SteadyNowMs() >= deadline) return false;
    seq_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

}  // namespace hotrow::ingest::internal
