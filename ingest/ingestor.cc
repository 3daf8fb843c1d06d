#include "ingest/ingestor.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/time_format.h"
#include "ingest/ingestor_impl.h"
#include "ingest/kafka_broker_offsets.h"
#include "ingest/standby_set.h"

namespace hotrow::ingest {
namespace internal {

size_t ReasonIndex(const char* reason) {
  for (size_t i = 0; i < kReasonCount; ++i) {
    if (std::strcmp(kRejectReasons[i], reason) == 0) return i;
  }
  return 0;
}

std::string Describe(const TopicPartition& tp) {
  return tp.topic + "/" + std::to_string(tp.partition);
}

// Sets the name of the calling thread (at most 15 characters show).
void NameThread(const char* name) { pthread_setname_np(pthread_self(), name); }

// ---------------------------------------------------------------------------------------------
// Start and stop.

Result<KafkaConfPtr> IngestorImpl::ConsumerConf(int session_timeout_ms) {
  KafkaConfPtr conf(rd_kafka_conf_new());
  HOTROW_RETURN_IF_ERROR(
      SetKafkaProperties(conf.get(),
                         {{"bootstrap.servers", options_.brokers},
                          {"group.id", standby() ? options_.group_id + ".standby"
                                                 : options_.group_id},
                          {"client.id", standby() ? "hotrow-standby" : "hotrow"},
                          {"enable.auto.commit", "false"},
                          {"enable.auto.offset.store", "false"},
                          {"enable.partition.eof", "false"},
                          {"auto.offset.reset", "earliest"},
                          {"queued.min.messages", kQueuedMinMessages},
                          {"session.timeout.ms", std::to_string(session_timeout_ms)},
                          {"heartbeat.interval.ms", kHeartbeatIntervalMs}},
                         "consumer"));
  if (!options_.instance_id.empty() && !standby()) {
    HOTROW_RETURN_IF_ERROR(
        SetKafkaProperties(conf.get(), {{"group.instance.id", options_.instance_id}}, "consumer"));
  }
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(), options_.properties, "consumer"));
  RouteKafkaLogs(conf.get());
  rd_kafka_conf_set_opaque(conf.get(), this);
  rd_kafka_conf_set_rebalance_cb(conf.get(), &IngestorImpl::OnRebalance);
  rd_kafka_conf_set_offset_commit_cb(conf.get(), &IngestorImpl::OnOffsetCommit);
  rd_kafka_conf_set_error_cb(conf.get(), &IngestorImpl::OnError);
  return conf;
}

Result<rd_kafka_t*> IngestorImpl::CreateConsumer(int session_timeout_ms) {
  auto conf = ConsumerConf(session_timeout_ms);
  if (!conf.ok()) return conf.status();
  char errstr[512];
  rd_kafka_t* consumer =
      rd_kafka_new(RD_KAFKA_CONSUMER, conf.value().get(), errstr, sizeof(errstr));
  if (consumer == nullptr) {
    return Status::InvalidArgument(std::string("kafka consumer: ") + errstr);
  }
  conf.value().release();                // owned by the handle
  rd_kafka_poll_set_consumer(consumer);  // errors and logs are served by consumer_poll
  return consumer;
}

Status IngestorImpl::Subscribe() {
  TopicPartitionListPtr topics(
      rd_kafka_topic_partition_list_new(static_cast<int>(options_.topics.size())));
  for (const std::string& topic : options_.topics) {
    rd_kafka_topic_partition_list_add(topics.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
  }
  rd_kafka_resp_err_t err = rd_kafka_subscribe(consumer_, topics.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::InvalidArgument(std::string("kafka consumer: cannot subscribe: ") +
                                   rd_kafka_err2str(err));
  }
  return Status::Ok();
}

bool IngestorImpl::OnEmbeddedBroker(rd_kafka_t* consumer) {
  char* id = rd_kafka_clusterid(consumer, kClusterIdTimeoutMs);
  if (id == nullptr) return false;  // brokers unreachable for now: assume a real cluster
  const bool embedded =
      std::strncmp(id, kEmbeddedClusterIdPrefix, std::strlen(kEmbeddedClusterIdPrefix)) == 0;
  rd_kafka_mem_free(consumer, id);
  return embedded;
}

std::unique_ptr<BrokerOffsets> IngestorImpl::MakeBrokerOffsets() {
  // The embedded broker answers offsets-for-times with -1 whatever the time, which would read
  // as "no record is that new": it is not asked.
  std::unique_ptr<BrokerOffsets> real =
      NewKafkaBrokerOffsets(consumer_, /*answers_offsets_for_times=*/!embedded_);
  if (options_.broker_offsets_for_test) return options_.broker_offsets_for_test(std::move(real));
  return real;
}

Status IngestorImpl::Init() {
  auto probe = ConsumerConf(kSessionTimeoutMs);
  if (!probe.ok()) return probe.status();
  char value[64];
  size_t value_size = sizeof(value);
  if (rd_kafka_conf_get(probe.value().get(), "auto.offset.reset", value, &value_size) ==
      RD_KAFKA_CONF_OK) {
    std::string reset(value);
    if (reset == "latest" || reset == "largest" || reset == "end") {
      reset_offset_ = RD_KAFKA_OFFSET_END;
    } else if (reset == "error") {
      reset_offset_ = RD_KAFKA_OFFSET_INVALID;
    } else {
      reset_offset_ = RD_KAFKA_OFFSET_BEGINNING;
    }
  }
  value_size = sizeof(value);
  if (rd_kafka_conf_get(probe.value().get(), "max.poll.interval.ms", value, &value_size) ==
      RD_KAFKA_CONF_OK) {
    max_poll_interval_ms_ = std::max<int64_t>(1, std::atoll(value));
  }
  {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    std::error_code ec;
    std::filesystem::path path = std::filesystem::absolute(store_->options().path, ec);
    commit_metadata_ = std::string(kCommitMetadataPrefix) + host + ":" +
                       (ec ? store_->options().path : path.lexically_normal().string());
  }

  {
    FormatOptions format = options_.format;
    format.fetch_stats = fetch_stats_;
    format.ts_field = options_.ts_field;
    Result<std::unique_ptr<Decoder>> decoder = MakeDecoder(format);
    if (!decoder.ok()) return decoder.status();
    decoder_ = std::move(*decoder);
  }

  if (!options_.dead_letter_topic.empty()) {
    auto dlq = DeadLetterProducer::Create(options_.brokers, options_.dead_letter_topic,
                                          options_.properties);
    if (!dlq.ok()) return dlq.status();
    dead_letters_ = std::move(dlq).value();
  }

  auto consumer = CreateConsumer(kSessionTimeoutMs);
  if (!consumer.ok()) return consumer.status();
  consumer_ = *consumer;
  embedded_ = OnEmbeddedBroker(consumer_);
  // The embedded broker's coordinator waits session.timeout.ms - 1 s on every change of the
  // group and evicts a killed member only after a whole session (kEmbeddedSessionLadderMs says
  // more). The consumer has not joined the group yet, so it is made again with a shorter session
  // unless the user chose one.
  if (embedded_ && !standby() && options_.properties.count("session.timeout.ms") == 0) {
    rd_kafka_destroy(consumer_);
    consumer_ = nullptr;
    session_ladder_ = true;
    session_step_ = 0;
    consumer = CreateConsumer(kEmbeddedSessionLadderMs[0]);
    if (!consumer.ok()) return consumer.status();
    consumer_ = *consumer;
    spdlog::info("ingest: the brokers are hotrow's embedded broker: session.timeout.ms {}",
                 kEmbeddedSessionLadderMs[0]);
  }
  broker_offsets_ = MakeBrokerOffsets();
  if (standby()) {
    // No subscription: the poller assigns what the standby set names (FollowStandbySet).
    options_.handover->SetStandbyClose(
        [this](const std::vector<TopicPartition>& partitions) { fence_.Close(partitions); });
    options_.handover->SetStandbyOwnership(options_.ownership);
    options_.handover->SetStandbyFollows(
        [peers = options_.standby.peers, self = options_.standby.self,
         replicas = options_.standby.replicas](const TopicPartition& tp) {
          return Follows(peers, self, replicas, tp.topic, tp.partition, /*owned=*/false);
        });
  } else {
    HOTROW_RETURN_IF_ERROR(Subscribe());
  }
  last_progress_ms_.store(NowMs());
  unassigned_since_ms_.store(NowMs());
  unassigned_since_steady_ms_ = SteadyNowMs();
  if (standby()) {
    spdlog::info("ingest: following {} topic(s) from {} as a standby ({} replica(s) over {} peers)",
                 options_.topics.size(), options_.brokers, options_.standby.replicas,
                 options_.standby.peers.size());
  } else {
    spdlog::info("ingest: consuming {} topic(s) from {} in group {}", options_.topics.size(),
                 options_.brokers, options_.group_id);
  }

  for (auto& lane : lanes_) {
    lane->thread = std::thread([this, lane = lane.get()] {
      Guarded("writer", [this, lane] { WriteLoop(lane); });
      lane->done.store(true);
      std::lock_guard<std::mutex> lock(seq_mu_);
      seq_cv_.notify_all();
    });
  }
  spdlog::info("ingest: {} store writer(s)", lanes_.size());
  poller_ = std::thread([this] { Guarded("poller", [this] { PollLoop(); }); });
  monitor_ = std::thread([this] { Guarded("monitor", [this] { MonitorLoop(); }); });
  return Status::Ok();
}

void IngestorImpl::WatchJoin() {
  if (standby() || !cursors_.empty()) return;
  const int64_t now = SteadyNowMs();
  const int64_t waited = now - unassigned_since_steady_ms_;
  if (waited >= kWaitingLogMs && now - waiting_logged_steady_ms_ >= kWaitingLogMs) {
    waiting_logged_steady_ms_ = now;
    spdlog::warn("ingest: waiting for the group's assignment since {} (group {}{})",
                 FormatDurationMs(waited), options_.group_id,
                 session_ladder_ ? ", session.timeout.ms " +
                                       std::to_string(kEmbeddedSessionLadderMs[session_step_])
                                 : std::string());
  }
  if (session_ladder_ && session_step_ + 1 < std::size(kEmbeddedSessionLadderMs) &&
      waited >= int64_t{kJoinWaitSessions} * kEmbeddedSessionLadderMs[session_step_]) {
    RejoinWithLongerSession();
  }
}

void IngestorImpl::RejoinWithLongerSession() {
  const int from = kEmbeddedSessionLadderMs[session_step_];
  const int to = kEmbeddedSessionLadderMs[session_step_ + 1];
  // Made first: should it fail, the consumer in hand stays.
  auto next = CreateConsumer(to);
  if (!next.ok()) {
    NoteError("ingest: cannot make a consumer with a longer session: " + next.status().ToString());
    session_ladder_ = false;
    return;
  }
  spdlog::warn(
      "ingest: no partition from group {} after {} with session.timeout.ms {}: the embedded "
      "broker drops a member whose session is shorter than the wait another member's session "
      "imposes, and then never answers its join; joining again with session.timeout.ms {}",
      options_.group_id, FormatDurationMs(SteadyNowMs() - unassigned_since_steady_ms_), from, to);
  const bool closed = CloseConsumer(consumer_);
  {
    std::lock_guard<std::mutex> lock(consumer_mu_);
    // A close that timed out leaves the handle to the process exit (see Stop).
    if (closed) {
      DestroyConsumer(consumer_);
    } else {
      LeaveToProcessExit(consumer_);
    }
    consumer_ = *next;
    consumer_assigned_.store(false);
  }
  ++session_step_;
  group_rejoins_.fetch_add(1);
  broker_offsets_ = MakeBrokerOffsets();
  Status s = Subscribe();
  if (!s.ok()) NoteError(s.ToString());
  unassigned_since_steady_ms_ = SteadyNowMs();
}

Status IngestorImpl::Stop() {
  if (stopped_) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stop_status_;
  }
  stopped_ = true;
  stop_requested_ms_.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count());
  stop_polling_.store(true);
  {
    std::lock_guard<std::mutex> lock(monitor_mu_);
    monitor_cv_.notify_all();
  }
  if (monitor_.joinable()) monitor_.join();
  // The poller writes the open batch, waits for the writer, and closes the consumer.
  if (poller_.joinable()) poller_.join();
  stop_writing_.store(true);
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
  // No writer writes any more: the group consumer's takes need not close this fence.
  if (standby()) {
    options_.handover->SetStandbyClose(nullptr);
    options_.handover->SetStandbyOwnership(nullptr);
    options_.handover->SetStandbyFollows(nullptr);
  }
  if (consumer_ != nullptr) {
    if (close_timed_out_) {
      // Destroying a handle whose group leave is stuck blocks until librdkafka's own timeouts
      // (a session timeout, 45 s by default), past the 10 s a stopping service has. The handle
      // is left to the process exit instead: its callbacks are served only by polling, which
      // has ended, so none reaches this object again.
      spdlog::warn("ingest: leaving the Kafka client to the process exit (brokers unreachable)");
      LeaveToProcessExit(consumer_);
    } else {
      DestroyConsumer(consumer_);
    }
    consumer_ = nullptr;
  }
  if (dead_letters_ != nullptr) {
    Status s = dead_letters_->Flush(5000);
    if (!s.ok()) spdlog::error("ingest: {}", s.ToString());
    dead_letters_.reset();
  }
  spdlog::info("ingest: stopped after {} records consumed, {} events stored",
               records_consumed_.load(), events_stored_.load());
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stop_status_;
}

void IngestorImpl::DestroyConsumer(rd_kafka_t* consumer) {
  if (!standby() && !consumer_assigned_.load() && CooperativeAssignor()) {
    spdlog::warn(
        "ingest: leaving a consumer that never had an assignment to the process exit: "
        "librdkafka 2.0.2 aborts destroying a cooperative-sticky consumer in that state");
    LeaveToProcessExit(consumer);
    return;
  }
  rd_kafka_destroy(consumer);
}

void IngestorImpl::LeaveToProcessExit(rd_kafka_t* consumer) {
  // Its threads run on until the process exits, past this object and the logger: they must
  // not log (librdkafka calls the log callback from its own threads; it never logs at 0).
  rd_kafka_set_log_level(consumer, 0);
  consumers_left_.fetch_add(1);
}

bool IngestorImpl::CloseConsumer(rd_kafka_t* consumer) {
  // rd_kafka_consumer_close can block for a session timeout or more when the brokers are gone;
  // closing through a queue lets Stop() give up after kCloseTimeoutMs.
  bool closed = true;
  rd_kafka_queue_t* queue = rd_kafka_queue_new(consumer);
  rd_kafka_error_t* error = rd_kafka_consumer_close_queue(consumer, queue);
  if (error != nullptr) {
    spdlog::warn("ingest: closing the consumer: {}", rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
  } else {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kCloseTimeoutMs);
    while (!rd_kafka_consumer_closed(consumer)) {
      if (std::chrono::steady_clock::now() >= deadline) {
        NoteError("ingest: leaving the consumer group timed out after " +
                  FormatDurationMs(kCloseTimeoutMs) +
                  " (brokers unreachable?); the group notices after its session timeout");
        closed = false;
        break;
      }
      // The revocation arrives as an event, served here by OnRebalance like any other; anything
      // else (a late consumer error) is dropped. (rd_kafka_queue_poll_callback aborts on an
      // event without a callback.)
      rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 100);
      if (event == nullptr) continue;
      if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_REBALANCE) {
        OnRebalance(consumer, rd_kafka_event_error(event),
                    rd_kafka_event_topic_partition_list(event), this);
      }
      rd_kafka_event_destroy(event);
    }
  }
  rd_kafka_queue_destroy(queue);
  return closed;
}

}  // namespace internal

Result<std::unique_ptr<Ingestor>> Ingestor::Start(const IngestOptions& options,
                                                  store::EventStore* store) {
  if (store == nullptr) return Status::InvalidArgument("ingest: no store");
  if (options.brokers.empty()) return Status::InvalidArgument("kafka.brokers is empty");
  if (options.topics.empty()) return Status::InvalidArgument("kafka.topics is empty");
  for (const std::string& topic : options.topics) {
    if (topic.empty()) return Status::InvalidArgument("kafka.topics holds an empty name");
  }
  if (options.group_id.empty()) return Status::InvalidArgument("kafka.group_id is empty");
  if (options.batch_max_events < 1) {
    return Status::InvalidArgument("ingest.batch_max_events must be at least 1");
  }
  if (options.batch_max_ms < 1) {
    return Status::InvalidArgument("ingest.batch_max_ms must be at least 1ms");
  }
  if (options.max_future_ms < 0) return Status::InvalidArgument("ingest.max_future is negative");
  if (options.queue_max_batches < 1) {
    return Status::InvalidArgument("ingest: queue_max_batches must be at least 1");
  }
  if (options.clock == nullptr) return Status::InvalidArgument("ingest: no clock");
  if (options.writers < 0 || options.writers > static_cast<int>(internal::kMaxWriters)) {
    return Status::InvalidArgument("ingest.writers must be 0..16 (0: the machine's cores)");
  }
  if (options.standby.on && options.handover == nullptr) {
    return Status::InvalidArgument("ingest: a standby consumer needs the hand-over");
  }
  auto ingestor = std::make_unique<internal::IngestorImpl>(options, store);
  HOTROW_RETURN_IF_ERROR(ingestor->Init());
  return std::unique_ptr<Ingestor>(std::move(ingestor));
}

}  // namespace hotrow::ingest
