// The writer threads of IngestorImpl: store writes, then offset commits, each writer for the
// partitions of its own lane.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "common/thread_priority.h"
#include "ingest/ingestor_impl.h"

namespace hotrow::ingest::internal {

size_t WriterFor(const TopicPartition& tp, size_t writers) {
  // FNV-1a of the topic, then the partition: consecutive partitions of a topic take turns.
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : tp.topic) h = (h ^ c) * 1099511628211ULL;
  return static_cast<size_t>((h + static_cast<uint32_t>(tp.partition)) % writers);
}

size_t WriterCount(int requested) {
  size_t n = requested > 0 ? static_cast<size_t>(requested) : std::thread::hardware_concurrency();
  return std::clamp<size_t>(n, 1, kMaxWriters);
}

void IngestorImpl::WriteLoop(WriterLane* lane) {
  const std::string name = "hotrow-write" + std::to_string(lane->index);
  NameThread(name.c_str());
  RunAsBatchThread();
  while (true) {
    std::unique_ptr<Batch> batch;
    if (!lane->queue.wait_dequeue_timed(batch, std::chrono::milliseconds(100))) {
      if (stop_writing_.load()) return;
      continue;
    }
    WriteBatch(lane, batch.get());
    lane->queued.fetch_sub(1);
    {
      std::lock_guard<std::mutex> lock(seq_mu_);
      lane->written_seq = batch->seq;
    }
    seq_cv_.notify_all();
  }
}

void IngestorImpl::WriteBatch(WriterLane* lane, Batch* batch) {
  if (lane->abandoned) {
    spdlog::error(
        "ingest: stopping; a batch of {} records after an unwritten one is not written "
        "either (Kafka will deliver both again on restart)",
        batch->records);
    return;
  }
  if (batch->dead_letters > 0 && dead_letters_ != nullptr) {
    // Letters first: once the offsets are stored, the records are never read again.
    std::lock_guard<std::mutex> flush_lock(dead_letter_flush_mu_);
    Status s = dead_letters_->Flush(10000);
    if (!s.ok()) NoteError(s.ToString());
  }
  int64_t backoff_ms = 100;
  auto topic_name = [this](uint16_t number) { return TopicName(number); };
  while (true) {
    Status s;
    {
      // Ownership is checked before every attempt, under the fence (partition_fence.h): the
      // records of partitions revoked or lost since they were read are left out, the others
      // written, and only partitions still open afterwards are committed. A revocation or loss
      // that begins meanwhile waits until this block ends.
      PartitionFence::Write fence = fence_.BeginWrite(batch->Epochs());
      if (!fence.closed().empty()) {
        const size_t dropped = DropPartitions(batch, fence.closed(), topic_name);
        batches_discarded_.fetch_add(1);
        spdlog::warn(
            "ingest: {} records of {} partition(s) revoked or lost since they were read are not "
            "written{}",
            dropped, fence.closed().size(),
            batch->parts.empty() ? "" : "; the batch's other partitions are");
      }
      if (batch->parts.empty()) {
        // Nothing left to write. When this batch kept the disk marked full, the consumer is
        // paused on it, and with its partitions given up no other write may come to clear it:
        // resume, and let the next write tell.
        if (out_of_disk_.exchange(false)) {
          spdlog::info(
              "ingest: no write pending after the revoked partitions' batch was "
              "dropped; consuming resumes, the next write tells if the disk is full");
        }
        return;
      }
      store::WriteOutcome outcome;
      const auto t0 = std::chrono::steady_clock::now();
      lane->write_began_ms.store(SteadyNowMs(), std::memory_order_relaxed);
      s = store_->Write(batch->input, &outcome);
      lane->write_began_ms.store(0, std::memory_order_relaxed);
      const auto t1 = std::chrono::steady_clock::now();
      if (s.ok()) {
        batch_write_us_sum_.fetch_add(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()));
        batches_written_.fetch_add(1);
        batch_events_sum_.fetch_add(outcome.stored);
        events_stored_.fetch_add(outcome.stored);
        duplicates_.fetch_add(outcome.duplicate);
        rejected_[ReasonIndex(kRejectExpired)].fetch_add(outcome.expired);
        rejected_[ReasonIndex(kRejectFuture)].fetch_add(outcome.future);
        if (out_of_disk_.exchange(false)) spdlog::info("ingest: the store accepts writes again");
        {
          std::lock_guard<std::mutex> lock(stats_mu_);
          for (const auto& [tp, next] : batch->input.next_offsets) {
            PartitionInfo& info = partitions_[tp];
            info.written_next = std::max(info.written_next, next);
          }
        }
        last_progress_ms_.store(NowMs());
        // Before the fence's Write ends: a loss that began during the write waits for this
        // commit to be queued (ahead of the unassignment), and it names only partitions still
        // open, so nothing is committed for a partition once its loss is known.
        if (!standby()) CommitAsync(*batch, fence.StillOpen(batch->Epochs()));
        return;
      }
    }
    if (s.IsNoSpace()) {
      if (!out_of_disk_.exchange(true)) {
        spdlog::error("ingest: the disk is full; consuming is paused until a write succeeds: {}",
                      s.ToString());
      }
    }
    NoteError("store write of " + std::to_string(batch->records) +
              " records failed: " + s.ToString());
    const int64_t stop_ms = stop_requested_ms_.load();
    if (stop_ms != 0) {
      const int64_t now_steady = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count();
      if (now_steady - stop_ms > kStopWriteGraceMs) {
        spdlog::error(
            "ingest: stopping with a batch of {} records unwritten; its offsets are "
            "not stored, so Kafka will deliver it again on restart",
            batch->records);
        lane->abandoned = true;
        std::lock_guard<std::mutex> lock(stats_mu_);
        if (stop_status_.ok()) stop_status_ = s;
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, s.IsNoSpace() ? 1000 : 5000);
  }
}

void IngestorImpl::AddCommit(rd_kafka_topic_partition_list_t* list, const TopicPartition& tp,
                             int64_t offset) const {
  rd_kafka_topic_partition_t* p =
      rd_kafka_topic_partition_list_add(list, tp.topic.c_str(), tp.partition);
  p->offset = offset;
  // Owned by the list, which frees it with free().
  void* metadata = std::malloc(commit_metadata_.size());
  if (metadata == nullptr) return;
  std::memcpy(metadata, commit_metadata_.data(), commit_metadata_.size());
  p->metadata = metadata;
  p->metadata_size = commit_metadata_.size();
}

void IngestorImpl::CommitAsync(const Batch& batch, const std::vector<TopicPartition>& partitions) {
  if (partitions.empty()) return;
  TopicPartitionListPtr list(
      rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  for (const TopicPartition& tp : partitions) {
    auto it = batch.input.next_offsets.find(tp);
    if (it != batch.input.next_offsets.end()) AddCommit(list.get(), tp, it->second);
  }
  // Only for lag monitors: the store's offsets are the truth. Failures are logged by
  // OnOffsetCommit.
  rd_kafka_commit(consumer_, list.get(), 1);
}

}  // namespace hotrow::ingest::internal
