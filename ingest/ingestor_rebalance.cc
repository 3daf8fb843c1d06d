// Rebalances of IngestorImpl (on the poller thread, inside consumer_poll or consumer_close).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/time_format.h"
#include "ingest/assignment_log.h"
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
      self->consumer_assigned_.store(true);
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

std::vector<StartOffsetInputs> IngestorImpl::GatherStartInputs(
    const rd_kafka_topic_partition_list_t* partitions, std::map<TopicPartition, int64_t>* ends) {
  std::vector<TopicPartition> tps;
  for (int i = 0; i < partitions->cnt; ++i) {
    tps.push_back(TopicPartition{partitions->elems[i].topic, partitions->elems[i].partition});
  }
  // Batched requests (the ends, offsets-for-times, and at times a check of its answer), within
  // one bound: the rebalance callback must return well within max.poll.interval.ms, and a slow
  // broker must not hold it for a timeout per partition.
  const int64_t deadline =
      SteadyNowMs() + std::min<int64_t>(kAssignQueryBudgetMs, max_poll_interval_ms_ / 3);
  auto remaining = [&] { return static_cast<int>(std::max<int64_t>(0, deadline - SteadyNowMs())); };
  // The ends first: when offsets-for-times then says that no record is newer than the window's
  // start, every record below an end asked before is older, and the partition starts there.
  Status s = broker_offsets_->EndOffsets(tps, remaining(), ends);
  if (!s.ok()) NoteError("kafka consumer: " + s.message());
  // A record may carry a Kafka timestamp up to max_future older than its event time (its
  // producer's clock behind the device's): the window's first record by event time is then no
  // earlier than the first record of window start - max_future by Kafka timestamp.
  const int64_t window_ts = store_->WindowStartMs() - options_.max_future_ms;
  std::map<TopicPartition, TimeOffset> window;
  if (remaining() > 0) {
    s = broker_offsets_->OffsetsForTimes(tps, window_ts, remaining(), &window);
    if (!s.ok()) {
      NoteError("kafka consumer: " + s.message() +
                "; cold records are skipped as they are read instead");
    }
  } else {
    NoteError("kafka consumer: no time left to ask offsets-for-times within " +
              FormatDurationMs(kAssignQueryBudgetMs) +
              "; cold records are skipped as they are read instead");
  }
  // "No record that new" moves a partition to its end, past every record before it: believed only
  // from a broker that can answer at all. One that also names no record for the time 0, although
  // the partition holds records (their timestamps are all at least 0), cannot: the embedded
  // broker says -1 for any time, and it is taken for a real one when its cluster id was not known
  // at start (WindowStartTest.ABrokerThatSaysMinusOneForAnyTimeIsNotBelieved).
  std::vector<TopicPartition> probe;
  for (const auto& [tp, answer] : window) {
    auto e = ends->find(tp);
    if (answer.kind == TimeOffset::Kind::kNoneNewer && e != ends->end() && e->second > 0) {
      probe.push_back(tp);
    }
  }
  if (!probe.empty()) {
    std::map<TopicPartition, TimeOffset> first;
    s = remaining() > 0 ? broker_offsets_->OffsetsForTimes(probe, 0, remaining(), &first)
                        : Status::IOError("no time left");
    size_t unbelieved = 0;
    for (const TopicPartition& tp : probe) {
      auto f = first.find(tp);
      if (!s.ok() || f == first.end() || f->second.kind != TimeOffset::Kind::kOffset) {
        window[tp] = TimeOffset::Unknown();
        ++unbelieved;
      }
    }
    if (unbelieved > 0) {
      NoteError("kafka consumer: the broker says no record of " + std::to_string(unbelieved) +
                " partition(s) is newer than the window's start, but names none for any time " +
                "either" + (s.ok() ? std::string() : " (" + s.message() + ")") +
                ": its offsets-for-times answers are not used; cold records are skipped as they "
                "are read instead");
    }
  }

  const std::map<TopicPartition, int64_t> stored = store_->StoredOffsets();
  std::vector<StartOffsetInputs> out(tps.size());
  for (size_t i = 0; i < tps.size(); ++i) {
    StartOffsetInputs& in = out[i];
    in.reset_offset = reset_offset_;
    auto st = stored.find(tps[i]);
    if (st != stored.end()) in.stored = st->second;
    auto w = window.find(tps[i]);
    if (w != window.end()) in.window = w->second;
    auto e = ends->find(tps[i]);
    if (e != ends->end()) in.end = e->second;
  }
  return out;
}

std::map<std::string, int32_t> IngestorImpl::PartitionCounts(const std::set<std::string>& topics,
                                                             int timeout_ms) {
  std::map<std::string, int32_t> counts;
  for (const std::string& topic : topics) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(consumer_, topic.c_str(), nullptr);
    if (rkt == nullptr) continue;
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(consumer_, 0, rkt, &md, timeout_ms);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr) {
      for (int i = 0; i < md->topic_cnt; ++i) {
        if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[i].partition_cnt > 0 &&
            topic == md->topics[i].topic) {
          counts[topic] = md->topics[i].partition_cnt;
        }
      }
    } else {
      NoteError("kafka consumer: no partition count for " + topic + " (cluster.route_by_key): " +
                rd_kafka_err2str(err));
    }
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
  }
  return counts;
}

void IngestorImpl::OnAssign(rd_kafka_topic_partition_list_t* partitions, bool cooperative) {
  if (options_.handover != nullptr && !standby()) {
    // Before the store's offsets are read: the standby consumer stops writing these first, so
    // that the offsets read below are where it stopped (standby_handover.h).
    std::vector<TopicPartition> taken;
    for (int i = 0; i < partitions->cnt; ++i) {
      taken.push_back(TopicPartition{partitions->elems[i].topic, partitions->elems[i].partition});
    }
    options_.handover->Take(taken, options_.ownership);
  }
  // Where each partition starts: see ChooseStartOffset (start_offset.h).
  std::map<TopicPartition, int64_t> ends;
  std::vector<StartOffsetInputs> inputs;
  if (partitions->cnt > 0) inputs = GatherStartInputs(partitions, &ends);
  std::vector<StartOffset> starts(static_cast<size_t>(partitions->cnt));
  // Per partition, the run its store records begin (store::PartitionRun::holds_from_ms), or none
  // when the start continues the store's run.
  const int64_t window_start = store_->WindowStartMs();
  const std::map<TopicPartition, store::PartitionRun> runs = store_->PartitionRuns();
  std::vector<std::optional<int64_t>> run_starts(static_cast<size_t>(partitions->cnt));
  for (int i = 0; i < partitions->cnt; ++i) {
    rd_kafka_topic_partition_t& p = partitions->elems[i];
    const StartOffset& start = starts[static_cast<size_t>(i)] =
        ChooseStartOffset(inputs[static_cast<size_t>(i)]);
    p.offset = start.offset;
    std::optional<int64_t>& run = run_starts[static_cast<size_t>(i)];
    if (start.reason == StartReason::kWindow || start.reason == StartReason::kEnd) {
      run = window_start;  // what came before the window's first record (or the end) is cold
    } else if (start.reason == StartReason::kReset) {
      // From the partition's first record, every record is held; after a jump to the end (or to
      // the group's commit), the records before it are not, and some may be in the window until
      // it has passed.
      run = start.window_complete ? store::PartitionRun::kHoldsAll : store_->NowMs();
    } else if (runs.count(TopicPartition{p.topic, p.partition}) == 0) {
      run = store_->NowMs();  // a store written before runs were recorded: not known to be whole
    }
    if (options_.ownership != nullptr) {
      // The end asked above; when unknown, learnt from the monitor instead
      // (PartitionOwnership::UpdatePosition).
      auto e = ends.find(TopicPartition{p.topic, p.partition});
      options_.ownership->Assigned(p.topic, p.partition, p.offset,
                                   e != ends.end() ? e->second : -1, run);
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
  // Routing by key: the partition counts the records are checked against (the group
  // rebalances when a topic grows, so an assignment knows the count that holds for it).
  std::map<std::string, int32_t> route_counts;
  const bool route = options_.route_by_key != KeyPartitioner::kOff &&
                     options_.ownership != nullptr && partitions->cnt > 0;
  if (route) {
    std::set<std::string> topics;
    for (int i = 0; i < partitions->cnt; ++i) topics.insert(partitions->elems[i].topic);
    route_counts = PartitionCounts(topics, 2000);
  }
  std::vector<AssignedStart> assigned;
  for (int i = 0; i < partitions->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = partitions->elems[i];
    const StartOffset& start = starts[static_cast<size_t>(i)];
    TopicPartition tp{p.topic, p.partition};
    cursors_.erase(tp);  // a fresh cursor (held records of an earlier assignment go)
    PartitionCursor& cursor = cursors_.try_emplace(tp).first->second;
    cursor.tp = tp;
    cursor.lane = lanes_[WriterFor(tp, lanes_.size())].get();
    if (standby()) {
      // Not opened when the group consumer took it meanwhile: its records are then never
      // written here, and the next check of the standby set revokes it.
      cursor.epoch = options_.handover->OpenUnlessOwned(tp, [&] { return fence_.Open(tp); });
    } else {
      cursor.epoch = fence_.Open(tp);
    }
    const std::optional<int64_t>& run = run_starts[static_cast<size_t>(i)];
    run ? cursor.lane->batcher.MarkRunStart(tp, *run) : cursor.lane->batcher.ClearRunStart(tp);
    cursor.expected = p.offset >= 0 ? p.offset : -1;
    cursor.cold_run = start.may_read_cold;
    if (route) {
      auto count = route_counts.find(tp.topic);
      cursor.route_partitions = count != route_counts.end() ? count->second : 0;
      if (cursor.route_partitions > 0) {
        // Resumed at the store's offset: what the store holds from before was not checked by this
        // process, and may be in the window until its latest event time (at most max_future
        // ahead of now) has left it. Otherwise the store holds none of the window from before.
        const int64_t checked_from = start.reason == StartReason::kStore
                                         ? store_->NowMs() + options_.max_future_ms
                                         : INT64_MIN;
        options_.ownership->RouteChecked(tp.topic, tp.partition, cursor.route_partitions,
                                         checked_from);
      }
    }
    assigned.push_back(AssignedStart{tp, start});
  }
  // One line for the whole assignment, however many partitions (assignment_log.h).
  if (!assigned.empty()) {
    spdlog::info("ingest: {}", DescribeAssignment(std::move(assigned), standby()));
  }
  last_cursor_ = nullptr;
  last_progress_ms_.store(NowMs());
  if (!cursors_.empty()) unassigned_since_ms_.store(-1);

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
  if (partitions->cnt > 0) {
    rd_kafka_resp_err_t perr = paused_ ? rd_kafka_pause_partitions(consumer_, partitions)
                                       : rd_kafka_resume_partitions(consumer_, partitions);
    if (perr != RD_KAFKA_RESP_ERR_NO_ERROR) {
      NoteError(std::string("kafka consumer: cannot ") + (paused_ ? "pause" : "resume") +
                " assigned partitions: " + rd_kafka_err2str(perr));
    }
  }
}

bool IngestorImpl::RevocationIsLost() {
  // Lost: librdkafka says so, or this consumer is no longer a member at all. The second catches
  // a revocation that librdkafka queued as an ordinary one (a rebalance began) before it found
  // the poller stuck past max.poll.interval.ms and left the group: by the time the poller serves
  // it, the partitions may belong to another instance already.
  if (standby()) return false;  // no member: it gives up only what it chose to
  bool lost = rd_kafka_assignment_lost(consumer_) != 0;
  if (!lost) {
    char* member = rd_kafka_memberid(consumer_);
    lost = member == nullptr || member[0] == '\0';
    if (member != nullptr) rd_kafka_mem_free(consumer_, member);
  }
  if (options_.revocation_lost_for_test && options_.revocation_lost_for_test()) lost = true;
  return lost;
}

void IngestorImpl::GiveUp(const std::vector<TopicPartition>& partitions, const std::string& why) {
  if (partitions.empty()) return;
  // First the fence: once Close returns, no writer writes or commits these partitions, and a
  // write of them under way has finished.
  fence_.Close(partitions);
  const std::set<TopicPartition> drop(partitions.begin(), partitions.end());
  auto topic_name = [this](uint16_t number) { return TopicName(number); };
  size_t records = 0, batches = 0;
  for (auto& lane : lanes_) {
    const size_t open = lane->batcher.DropOpen(drop, topic_name);
    records += open;
    batches += open > 0 ? 1 : 0;
    for (auto it = lane->pending.begin(); it != lane->pending.end();) {
      const size_t dropped = DropPartitions(it->get(), drop, topic_name);
      records += dropped;
      batches += dropped > 0 ? 1 : 0;
      it = (*it)->parts.empty() ? lane->pending.erase(it) : std::next(it);
    }
    // DrainAndWait waits for the last batch closed: one still pending, else the last enqueued.
    lane->last_closed_seq =
        lane->pending.empty() ? lane->last_enqueued_seq : lane->pending.back()->seq;
  }
  batches_discarded_.fetch_add(batches);
  spdlog::warn(
      "ingest: gave up {} partition(s) {}: {} records read from them and not yet handed to a "
      "writer are dropped, the writers leave them out of queued batches, nothing of them is "
      "committed; the partitions' next owner reads them",
      partitions.size(), why, records);
}

void IngestorImpl::OnRevoke(rd_kafka_topic_partition_list_t* partitions, bool cooperative) {
  std::vector<TopicPartition> revoked;
  for (int i = 0; i < partitions->cnt; ++i) {
    revoked.push_back(TopicPartition{partitions->elems[i].topic, partitions->elems[i].partition});
  }
  const bool lost = RevocationIsLost();
  if (lost) {
    // Involuntary: another instance may own these partitions already. Nothing read from them is
    // written any more, nothing committed; what was read from the others is kept.
    GiveUp(revoked, "lost (session timeout or fencing: the group moved on without us)");
  } else {
    // Finish what was read before giving the partitions up: write it, durably, and tell the
    // group, so that the next owner starts exactly after it. Within a bound: a store that
    // cannot write (a full disk) must not hold the group's rebalance.
    const int64_t bound_ms = std::min(options_.revoke_drain_ms, max_poll_interval_ms_ / 2);
    if (DrainAndWait(bound_ms)) {
      fence_.Close(revoked);
    } else {
      GiveUp(revoked, "on revocation: what was read from them could not be written within " +
                          FormatDurationMs(bound_ms));
    }
  }
  TopicPartitionListPtr commit(rd_kafka_topic_partition_list_new(std::max(1, partitions->cnt)));
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    for (const TopicPartition& tp : revoked) {
      auto it = partitions_.find(tp);
      if (it == partitions_.end()) continue;
      if (it->second.written_next >= 0) AddCommit(commit.get(), it->first, it->second.written_next);
      it->second.assigned = false;
    }
  }
  if (!lost && !standby() && commit->cnt > 0) {
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
  // The group consumer no longer writes them (its fence is closed): the standby may follow them,
  // and its ownership adopts their state before this one drops it (standby_handover.h).
  if (options_.handover != nullptr && !standby()) {
    options_.handover->Release(revoked, options_.ownership);
  }
  for (const TopicPartition& tp : revoked) {
    cursors_.erase(tp);
    // A standby's partition the group consumer took keeps answering until the owner serves it
    // (standby_handover.h).
    const bool taken = standby() && options_.handover->IsOwned(tp);
    if (options_.ownership != nullptr && !taken) {
      options_.ownership->Revoked(tp.topic, tp.partition);
    }
    spdlog::info("ingest: {} {}", standby() ? "stopped following" : "revoked", Describe(tp));
  }
  last_cursor_ = nullptr;
  UpdateHeld();  // the held records of revoked partitions went with their cursors
  if (cursors_.empty() && unassigned_since_ms_.load() < 0) {
    unassigned_since_ms_.store(NowMs());
    unassigned_since_steady_ms_ = SteadyNowMs();
  }

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
