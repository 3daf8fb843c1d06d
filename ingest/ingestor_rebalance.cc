// Rebalances of IngestorImpl (on the poller thread, inside consumer_poll or consumer_close).
#include <spdlog/spdlog.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ingest/ingestor_impl.h"
#include "ingest/start_offset.h"

namespace hotrow::ingest::internal {

void IngestorImpl::OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t* partitions, void* opaque) {
  auto* self = static_cast<IngestorImpl*>(opaque);
  self->rebalances_.fetch_add(1, std::memory_order_relaxed);
  const char* protocol = rd_kafka_rebalance_protocol(rk);
  const bool cooperative = protocol != nullptr && std::strcmp(protocol, "COOPERATIVE") == 0;
  switch (err) {
    case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
      self->OnAssign(partitions, cooperative);
      break;
    case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
      self->OnRevoke(partitions, cooperative);
      break;
    default:
      self->NoteError(std::string("kafka consumer: rebalance failed: ") + rd_kafka_err2str(err));
      if (cooperative) {
        rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, partitions);
        if (e != nullptr) rd_kafka_error_destroy(e);
      } else {
        rd_kafka_assign(rk, nullptr);
      }
      break;
  }
}

void IngestorImpl::OnAssign(rd_kafka_topic_partition_list_t* partitions, bool cooperative) {
  // Where each partition starts: see ChooseStartOffset (start_offset.h). Gathered here: the
  // store's offsets, the group's committed ones (with the metadata naming the store that
  // committed them) and offsets-for-times(window start), each in one request.
  const std::map<TopicPartition, int64_t> stored = store_->StoredOffsets();
  TopicPartitionListPtr committed(rd_kafka_topic_partition_list_copy(partitions));
  rd_kafka_resp_err_t err = rd_kafka_committed(consumer_, committed.get(), kAssignQueryTimeoutMs);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    NoteError(std::string("kafka consumer: cannot fetch committed offsets: ") +
              rd_kafka_err2str(err) + "; using the store's offsets only");
  }
  const int64_t window_start = store_->WindowStartMs();
  TopicPartitionListPtr by_time(rd_kafka_topic_partition_list_copy(partitions));
  for (int i = 0; i < by_time->cnt; ++i) by_time->elems[i].offset = window_start;
  rd_kafka_resp_err_t terr =
      rd_kafka_offsets_for_times(consumer_, by_time.get(), kAssignQueryTimeoutMs);
  if (terr != RD_KAFKA_RESP_ERR_NO_ERROR) {
    NoteError(std::string("kafka consumer: offsets-for-times failed: ") + rd_kafka_err2str(terr) +
              "; cold records are skipped on their timestamps instead");
  }
  std::vector<std::string> why(static_cast<size_t>(partitions->cnt));
  // Per partition, the run its store records begin (store::PartitionRun::holds_from_ms), or none
  // when the start continues the store's run.
  const std::map<TopicPartition, store::PartitionRun> runs = store_->PartitionRuns();
  std::vector<std::optional<int64_t>> run_starts(static_cast<size_t>(partitions->cnt));
  for (int i = 0; i < partitions->cnt; ++i) {
    rd_kafka_topic_partition_t& p = partitions->elems[i];
    StartOffsetInputs in;
    in.reset_offset = reset_offset_;
    auto it = stored.find(TopicPartition{p.topic, p.partition});
    if (it != stored.end()) in.stored = it->second;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_t* c =
          rd_kafka_topic_partition_list_find(committed.get(), p.topic, p.partition);
      if (c != nullptr && c->err == RD_KAFKA_RESP_ERR_NO_ERROR && c->offset >= 0) {
        in.committed = c->offset;
        const std::string metadata =
            c->metadata != nullptr
                ? std::string(static_cast<const char*>(c->metadata), c->metadata_size)
                : std::string();
        in.committed_by_other_store =
            metadata.rfind(kCommitMetadataPrefix, 0) == 0 && metadata != commit_metadata_;
      }
    }
    if (terr == RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_t* t =
          rd_kafka_topic_partition_list_find(by_time.get(), p.topic, p.partition);
      if (t != nullptr && t->err == RD_KAFKA_RESP_ERR_NO_ERROR && t->offset >= 0) {
        in.window_offset = t->offset;
      }
    }
    rd_kafka_get_watermark_offsets(consumer_, p.topic, p.partition, &in.low_watermark,
                                   &in.high_watermark);
    const StartOffset start = ChooseStartOffset(in);
    p.offset = start.offset;
    if (options_.ownership != nullptr) {
      int64_t low = -1, high = -1;  // asked of the broker: the cached watermarks may be stale
      if (rd_kafka_query_watermark_offsets(consumer_, p.topic, p.partition, &low, &high,
                                           kAssignQueryTimeoutMs) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        high = -1;  // learnt from the monitor instead (PartitionOwnership::UpdatePosition)
      }
      options_.ownership->Assigned(p.topic, p.partition, p.offset, high);
    }
    std::optional<int64_t>& run = run_starts[static_cast<size_t>(i)];
    if (start.reason == StartReason::kWindow) {
      run = window_start;  // what came before the window's first record is cold
    } else if (start.reason == StartReason::kReset) {
      // From the partition's first record, every record is held; after a jump to the end, the
      // records before it are not, and some may be in the window until it has passed.
      run = start.window_complete ? store::PartitionRun::kHoldsAll : store_->NowMs();
    } else if (runs.count(TopicPartition{p.topic, p.partition}) == 0) {
      run = store_->NowMs();  // a store written before runs were recorded: not known to be whole
    }
    why[static_cast<size_t>(i)] = std::string(StartReasonName(start.reason)) + ": " + start.why;
  }
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    for (int i = 0; i < partitions->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = partitions->elems[i];
      PartitionInfo& info = partitions_[TopicPartition{p.topic, p.partition}];
      info.assigned = true;
      info.start_offset = p.offset;
      info.written_next = -1;
    }
  }
  for (int i = 0; i < partitions->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = partitions->elems[i];
    TopicPartition tp{p.topic, p.partition};
    PartitionCursor& cursor = cursors_[tp];
    cursor.tp = tp;
    cursor.lane = lanes_[WriterFor(tp, lanes_.size())].get();
    const std::optional<int64_t>& run = run_starts[static_cast<size_t>(i)];
    run ? cursor.lane->batcher.MarkRunStart(tp, *run) : cursor.lane->batcher.ClearRunStart(tp);
    cursor.expected = p.offset >= 0 ? p.offset : -1;
    spdlog::info("ingest: assigned {} from {} ({})", Describe(tp), DescribeOffset(p.offset),
                 why[static_cast<size_t>(i)]);
  }
  last_cursor_ = nullptr;
  last_progress_ms_.store(NowMs());

  if (cooperative) {
    rd_kafka_error_t* e = rd_kafka_incremental_assign(consumer_, partitions);
    if (e != nullptr) {
      NoteError(std::string("kafka consumer: incremental assign failed: ") +
                rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
  } else {
    rd_kafka_resp_err_t aerr = rd_kafka_assign(consumer_, partitions);
    if (aerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
      NoteError(std::string("kafka consumer: assign failed: ") + rd_kafka_err2str(aerr));
    }
  }
  // librdkafka keeps an application's pause on a partition through its revocation and the
  // assignment that follows, and SetPaused only reaches the current assignment: a consumer that
  // resumed between an eager revoke and the next assignment (its writer caught up while it owned
  // nothing) would get back partitions still paused, and never read them again. So every
  // assigned partition is set to the consumer's state here.
  rd_kafka_resp_err_t perr = paused_ ? rd_kafka_pause_partitions(consumer_, partitions)
                                     : rd_kafka_resume_partitions(consumer_, partitions);
  if (perr != RD_KAFKA_RESP_ERR_NO_ERROR) {
    NoteError(std::string("kafka consumer: cannot ") + (paused_ ? "pause" : "resume") +
              " assigned partitions: " + rd_kafka_err2str(perr));
  }
}

void IngestorImpl::OnRevoke(rd_kafka_topic_partition_list_t* partitions, bool cooperative) {
  // Lost: librdkafka says so, or this consumer is no longer a member at all. The second catches
  // a revocation that librdkafka queued as an ordinary one (a rebalance began) before it found
  // the poller stuck past max.poll.interval.ms and left the group: by the time the poller serves
  // it, the partitions may belong to another instance already.
  bool lost = rd_kafka_assignment_lost(consumer_) != 0;
  if (!lost) {
    char* member = rd_kafka_memberid(consumer_);
    lost = member == nullptr || member[0] == '\0';
    if (member != nullptr) rd_kafka_mem_free(consumer_, member);
  }
  if (lost) {
    // Involuntary: another instance may own these partitions already. Nothing read from them
    // is written any more (the open batch, the closed ones not yet written), nothing committed.
    DiscardUnwritten(partitions->cnt);
  } else {
    // Finish what was read from these partitions before giving them up: write it, durably,
    // and tell the group, so that the next owner starts exactly after it.
    DrainAndWait();
  }
  TopicPartitionListPtr commit(rd_kafka_topic_partition_list_new(partitions->cnt));
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    for (int i = 0; i < partitions->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = partitions->elems[i];
      auto it = partitions_.find(TopicPartition{p.topic, p.partition});
      if (it == partitions_.end()) continue;
      if (it->second.written_next >= 0) {
        AddCommit(commit.get(), it->first, it->second.written_next);
      }
      it->second.assigned = false;
    }
  }
  if (!lost && commit->cnt > 0) {
    // Synchronous, so that the next owner starts after these offsets; asynchronous when
    // stopping, where closing the consumer waits for the commit (within kCloseTimeoutMs) and a
    // broker outage must not hold the process.
    const bool stopping = stop_polling_.load();
    rd_kafka_resp_err_t err = rd_kafka_commit(consumer_, commit.get(), stopping ? 1 : 0);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      spdlog::warn(
          "ingest: committing offsets of revoked partitions failed: {}; the next owner "
          "may replay records this store already holds",
          rd_kafka_err2str(err));
    }
  }
  for (int i = 0; i < partitions->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = partitions->elems[i];
    cursors_.erase(TopicPartition{p.topic, p.partition});
    if (options_.ownership != nullptr) options_.ownership->Revoked(p.topic, p.partition);
    spdlog::info("ingest: revoked {}/{}", p.topic, p.partition);
  }
  last_cursor_ = nullptr;

  if (cooperative) {
    rd_kafka_error_t* e = rd_kafka_incremental_unassign(consumer_, partitions);
    if (e != nullptr) {
      NoteError(std::string("kafka consumer: incremental unassign failed: ") +
                rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
  } else {
    rd_kafka_assign(consumer_, nullptr);
  }
}

}  // namespace hotrow::ingest::internal
