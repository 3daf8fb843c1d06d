// The monitor thread of IngestorImpl (high watermarks for lag), errors, Stats() and Ready().
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "common/time_format.h"
#include "ingest/ingestor_impl.h"
#include "ingest/kafka_broker_offsets.h"

namespace hotrow::ingest::internal {

void IngestorImpl::MonitorLoop() {
  NameThread("hotrow-monitor");
  while (true) {
    {
      std::unique_lock<std::mutex> lock(monitor_mu_);
      monitor_cv_.wait_for(lock, std::chrono::milliseconds(kMonitorIntervalMs),
                           [this] { return stop_polling_.load(); });
    }
    if (stop_polling_.load()) return;
    std::vector<TopicPartition> assigned;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      for (const auto& [tp, info] : partitions_) {
        if (info.assigned) assigned.push_back(tp);
      }
    }
    std::lock_guard<std::mutex> consumer_lock(consumer_mu_);
    for (const TopicPartition& tp : assigned) {
      // The watermarks librdkafka's fetcher last saw. Its broker threads keep fetching (until
      // their prefetch queue is full) even when the poller is stuck. Not
      // rd_kafka_query_watermark_offsets: in 2.0 it ignores its timeout while a broker is down.
      int64_t low = -1, high = -1;
      rd_kafka_resp_err_t err =
          rd_kafka_get_watermark_offsets(consumer_, tp.topic.c_str(), tp.partition, &low, &high);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR || high < 0) continue;
      std::lock_guard<std::mutex> lock(stats_mu_);
      PartitionInfo& info = partitions_[tp];
      if (low >= 0) info.low_watermark = low;
      info.high_watermark = high;
    }
    if (paused_flag_.load()) AskPausedEnds(assigned);
  }
}

void IngestorImpl::AskPausedEnds(const std::vector<TopicPartition>& assigned) {
  // librdkafka does not fetch a paused partition, so its watermark stays where the last fetch
  // left it while records keep arriving: the lag an operator watches on a full disk or a slow
  // store would stand still. Asked of the broker instead (one ListOffsets per leader), within
  // the monitor's interval. Not through broker_offsets_, which the poller may replace meanwhile.
  std::map<TopicPartition, int64_t> ends;
  Status s = NewKafkaBrokerOffsets(consumer_, /*answers_offsets_for_times=*/false)
                 ->EndOffsets(assigned, static_cast<int>(kMonitorIntervalMs), &ends);
  if (!s.ok())
    return;  // the fetcher's watermark stands; the broker's trouble is reported elsewhere
  std::lock_guard<std::mutex> lock(stats_mu_);
  for (const auto& [tp, end] : ends) {
    auto it = partitions_.find(tp);
    if (it != partitions_.end())
      it->second.high_watermark = std::max(it->second.high_watermark, end);
  }
}

void IngestorImpl::OnOffsetCommit(rd_kafka_t* /*rk*/, rd_kafka_resp_err_t err,
                                  rd_kafka_topic_partition_list_t* /*offsets*/, void* opaque) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
  auto* self = static_cast<IngestorImpl*>(opaque);
  uint64_t suppressed = 0;
  if (self->error_log_.Allow(&suppressed)) {
    spdlog::warn(
        "ingest: committing offsets to the group failed (only lag monitors see "
        "them; the store holds the truth): {}",
        rd_kafka_err2str(err));
  }
}

void IngestorImpl::OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<IngestorImpl*>(opaque);
  std::string message = std::string("kafka: ") +
                        rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err)) + ": " + reason;
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    char fatal[512];
    rd_kafka_resp_err_t ferr = rd_kafka_fatal_error(rk, fatal, sizeof(fatal));
    message += std::string(" (fatal: ") + rd_kafka_err2name(ferr) + ": " + fatal + ")";
  }
  // librdkafka retries on its own; the service stays up and logs.
  self->NoteError(message);
}

void IngestorImpl::NoteError(const std::string& message) {
  uint64_t suppressed = 0;
  if (error_log_.Allow(&suppressed)) {
    if (suppressed > 0) {
      spdlog::error("{} ({} other errors not logged)", message, suppressed);
    } else {
      spdlog::error("{}", message);
    }
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  last_error_ = message;
}

IngestStats IngestorImpl::Stats() const {
  IngestStats s;
  s.records_consumed = records_consumed_.load();
  s.events_stored = events_stored_.load();
  s.duplicates = duplicates_.load();
  for (size_t i = 0; i < kReasonCount; ++i) s.rejected[kRejectReasons[i]] = rejected_[i].load();
  s.lost_to_retention = lost_to_retention_.load();
  s.skipped_cold = skipped_cold_.load();
  s.route_broken = route_broken_.load();
  s.index_absent = index_absent_.load();
  s.index_not_scalar = index_not_scalar_.load();
  s.index_too_long = index_too_long_.load();
  s.batches_discarded = batches_discarded_.load();
  s.rebalances = rebalances_.load();
  s.group_rejoins = group_rejoins_.load();
  s.consumers_left = consumers_left_.load();
  s.batches_written = batches_written_.load();
  s.batch_events_sum = batch_events_sum_.load();
  s.batch_write_seconds_sum = static_cast<double>(batch_write_us_sum_.load()) / 1e6;
  s.dead_lettered = dead_lettered_.load();
  s.out_of_disk = out_of_disk_.load();
  const bool paused = paused_flag_.load();
  int64_t total_lag = 0;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    for (const auto& [tp, info] : partitions_) {
      if (!info.assigned) continue;
      PartitionStats p;
      p.topic = tp.topic;
      p.partition = tp.partition;
      // Before this process wrote anything: where it started; for a start at the beginning or
      // the end, the broker's log start or end.
      if (info.written_next >= 0) {
        p.next_offset = info.written_next;
      } else if (info.start_offset >= 0) {
        p.next_offset = info.start_offset;
      } else if (info.start_offset == RD_KAFKA_OFFSET_BEGINNING) {
        p.next_offset = info.low_watermark;
      } else if (info.start_offset == RD_KAFKA_OFFSET_END) {
        p.next_offset = info.high_watermark;
      }
      // The monitor reads the watermark librdkafka's fetcher last saw, up to a second old; the
      // writer's offsets are newer. Both figures are read under one lock, and the end of the
      // partition is at least what was written: a stale watermark below it is raised to it, so
      // that high_watermark >= next_offset and lag >= 0 always hold in one reading.
      p.high_watermark = info.high_watermark;
      if (p.high_watermark >= 0 && p.next_offset > p.high_watermark) {
        p.high_watermark = p.next_offset;
      }
      p.lag = p.high_watermark >= 0 && p.next_offset >= 0
                  ? std::max<int64_t>(0, p.high_watermark - p.next_offset)
                  : 0;
      p.paused = paused;
      p.lost_to_retention = info.lost_to_retention;
      p.skipped_cold = info.skipped_cold;
      total_lag += p.lag;
      s.partitions.push_back(std::move(p));
    }
    s.last_error = last_error_;
    s.held_partitions = held_partitions_.load();
    s.schema_fetches_waiting = fetch_stats_->waiting.load(std::memory_order_relaxed);
    s.schema_fetch_failures = fetch_stats_->failures.load(std::memory_order_relaxed);
    if (s.held_partitions > 0) {
      s.registry_wait = registry_wait_;
      s.registry_wait_ms = std::max<int64_t>(0, NowMs() - registry_wait_since_ms_);
    }
  }
  s.assigned = !s.partitions.empty();
  s.stalled = total_lag > 0 && NowMs() - last_progress_ms_.load() > options_.stall_after_ms;
  return s;
}

Status IngestorImpl::Ready() const {
  IngestStats s = Stats();
  if (s.out_of_disk) return Status::NoSpace("ingestion paused: the disk is full");
  if (!s.assigned && !standby()) {
    const int64_t since = unassigned_since_ms_.load();
    const int64_t waited_s = since >= 0 ? std::max<int64_t>(0, NowMs() - since) / 1000 : 0;
    return Status::Busy("waiting for the group's assignment since " + std::to_string(waited_s) +
                        " s (group " + options_.group_id + ")");
  }
  if (s.held_partitions > 0) {
    return Status::Busy("waiting for the schema registry since " +
                        std::to_string(s.registry_wait_ms / 1000) + " s (" +
                        std::to_string(s.held_partitions) + " partition(s) held): " +
                        s.registry_wait);
  }
  if (s.stalled) {
    int64_t lag = 0;
    for (const auto& p : s.partitions) lag += p.lag;
    return Status::Busy("ingestion stalled: lag " + std::to_string(lag) +
                        " records and nothing written for " +
                        FormatDurationMs(NowMs() - last_progress_ms_.load()) +
                        (s.last_error.empty() ? "" : "; last error: " + s.last_error));
  }
  return Status::Ok();
}

IngestLiveness IngestorImpl::Liveness() const {
  IngestLiveness live;
  live.poll_began_ms = poll_began_ms_.load(std::memory_order_relaxed);
  for (const auto& lane : lanes_) {
    const int64_t began = lane->write_began_ms.load(std::memory_order_relaxed);
    if (began != 0 && (live.oldest_write_began_ms == 0 || began < live.oldest_write_began_ms)) {
      live.oldest_write_began_ms = began;
    }
  }
  return live;
}

}  // namespace hotrow::ingest::internal
