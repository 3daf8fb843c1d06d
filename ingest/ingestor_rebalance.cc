// Rebalances of IngestorImpl (on the poller thread, inside consumer_poll or consumer_close).
#include "ingest/ingestor_impl.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <vector>

namespace hotrow::ingest::internal {

void IngestorImpl::OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t* partitions, void* opaque) {
  auto* self = static_cast<IngestorImpl*>(opaque);
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
  // Where each partition starts: the store's offset; else the group's committed one; else the
  // first record of the hot window (offsets-for-times); else auto.offset.reset, with cold
  // records dropped as expired on their timestamps. With several instances in a group, each
  // with its own store, the committed offset may be ahead of the store's (another instance
  // consumed the partition meanwhile): the larger one wins, so no record lands in two stores.
  const std::map<TopicPartition, int64_t> stored = store_->StoredOffsets();
  TopicPartitionListPtr committed(rd_kafka_topic_partition_list_copy(partitions));
  rd_kafka_resp_err_t err = rd_kafka_committed(consumer_, committed.get(), kAssignQueryTimeoutMs);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    NoteError(std::string("kafka consumer: cannot fetch committed offsets: ") +
              rd_kafka_err2str(err) + "; using the store's offsets only");
  }
  std::vector<const char*> source(static_cast<size_t>(partitions->cnt), "store");
  TopicPartitionListPtr by_time(rd_kafka_topic_partition_list_new(partitions->cnt));
  const int64_t window_start = store_->WindowStartMs();
  for (int i = 0; i < partitions->cnt; ++i) {
    rd_kafka_topic_partition_t& p = partitions->elems[i];
    auto it = stored.find(TopicPartition{p.topic, p.partition});
    int64_t from_store = it != stored.end() ? it->second : -1;
    int64_t from_group = -1;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_t* c =
          rd_kafka_topic_partition_list_find(committed.get(), p.topic, p.partition);
      if (c != nullptr && c->err == RD_KAFKA_RESP_ERR_NO_ERROR && c->offset >= 0) {
        from_group = c->offset;
      }
    }
    if (from_group > from_store) source[static_cast<size_t>(i)] = "group";
    p.offset = std::max(from_store, from_group);
    if (p.offset < 0) {
      rd_kafka_topic_partition_list_add(by_time.get(), p.topic, p.partition)->offset = window_start;
    }
  }
  if (by_time->cnt > 0) {
    rd_kafka_resp_err_t terr =
        rd_kafka_offsets_for_times(consumer_, by_time.get(), kAssignQueryTimeoutMs);
    if (terr != RD_KAFKA_RESP_ERR_NO_ERROR) {
      NoteError(std::string("kafka consumer: offsets-for-times failed: ") + rd_kafka_err2str(terr) +
                "; falling back to auto.offset.reset");
    }
    for (int i = 0; i < partitions->cnt; ++i) {
      rd_kafka_topic_partition_t& p = partitions->elems[i];
      if (p.offset >= 0) continue;
      rd_kafka_topic_partition_t* t =
          rd_kafka_topic_partition_list_find(by_time.get(), p.topic, p.partition);
      if (terr == RD_KAFKA_RESP_ERR_NO_ERROR && t != nullptr &&
          t->err == RD_KAFKA_RESP_ERR_NO_ERROR && t->offset >= 0) {
        p.offset = t->offset;
        source[static_cast<size_t>(i)] = "time";
      } else {
        // The broker cannot tell (the embedded one always answers -1) or has nothing that new.
        p.offset = reset_offset_;
        source[static_cast<size_t>(i)] = "auto.offset.reset";
      }
    }
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
    cursor.expected = p.offset >= 0 ? p.offset : -1;
    spdlog::info("ingest: assigned {} from {} ({})", Describe(tp), DescribeOffset(p.offset),
                 source[static_cast<size_t>(i)]);
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
  if (paused_) rd_kafka_pause_partitions(consumer_, partitions);
}

void IngestorImpl::OnRevoke(rd_kafka_topic_partition_list_t* partitions, bool cooperative) {
  const bool lost = rd_kafka_assignment_lost(consumer_) != 0;
  // Finish what was read from these partitions before giving them up: write it, durably, and
  // tell the group, so that the next owner starts exactly after it.
  DrainAndWait();
  TopicPartitionListPtr commit(rd_kafka_topic_partition_list_new(partitions->cnt));
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    for (int i = 0; i < partitions->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = partitions->elems[i];
      auto it = partitions_.find(TopicPartition{p.topic, p.partition});
      if (it == partitions_.end()) continue;
      if (it->second.written_next >= 0) {
        rd_kafka_topic_partition_list_add(commit.get(), p.topic, p.partition)->offset =
            it->second.written_next;
      }
      it->second.assigned = false;
    }
  }
  if (lost) {
    spdlog::warn("ingest: {} partition(s) lost (the group moved on without us); not committing",
                 partitions->cnt);
  } else if (commit->cnt > 0) {
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
