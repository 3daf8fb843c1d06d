#include "ingest/ingestor.h"

#include <concurrentqueue/blockingconcurrentqueue.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/logging.h"
#include "common/time_format.h"
#include "ingest/batcher.h"
#include "ingest/dead_letter.h"
#include "ingest/kafka_conf.h"
#include "ingest/record_parser.h"
#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::ingest {
namespace {

using store::TopicPartition;

constexpr size_t kReasonCount = std::size(kRejectReasons);
// How often the monitor reads each assigned partition's high watermark.
constexpr int64_t kMonitorIntervalMs = 1000;
// The longest a poll blocks, so that stop requests and batch ages are seen promptly.
constexpr int kPollMaxMs = 100;
// librdkafka 2.0 stops fetching for a fixed second whenever its local queue holds
// queued.min.messages records (default 100000, counted across all partitions, as they share one
// queue) or queued.max.messages.kbytes (64 MiB of payload). When catching up, the queue fills,
// and a consumer that drains 100000 records in a fraction of a second then idles for the rest of
// it: this halved ingest throughput in bench/ingest_bench. With the count out of the way the byte
// limit governs: about 600000 small records, more than a second of work, and bounded memory
// (the payload plus ~300 bytes of librdkafka bookkeeping per record, ~250 MB for 100-byte
// records). kafka.properties can lower either.
constexpr const char* kQueuedMinMessages = "1000000";
// How long Stop() lets the consumer take to commit and leave the group.
constexpr int64_t kCloseTimeoutMs = 5000;
// How long a closed batch waits for room in the queue before the consumer pauses.
constexpr int64_t kBackpressureWaitMs = 250;
// Timeout of the blocking broker calls made while (re)assigning partitions.
constexpr int kAssignQueryTimeoutMs = 10000;
// After Stop(), a failing write is tried for about this long before the batch is given up
// (its offsets are then not stored: Kafka replays it on restart).
constexpr int64_t kStopWriteGraceMs = 3000;

size_t ReasonIndex(const char* reason) {
  for (size_t i = 0; i < kReasonCount; ++i) {
    if (std::strcmp(kRejectReasons[i], reason) == 0) return i;
  }
  return 0;
}

std::string Describe(const TopicPartition& tp) {
  return tp.topic + "/" + std::to_string(tp.partition);
}

std::string DescribeOffset(int64_t offset) {
  switch (offset) {
    case RD_KAFKA_OFFSET_BEGINNING:
      return "the beginning";
    case RD_KAFKA_OFFSET_END:
      return "the end";
    case RD_KAFKA_OFFSET_INVALID:
      return "the committed offset or auto.offset.reset";
    default:
      return "offset " + std::to_string(offset);
  }
}

// Sets the name of the calling thread (at most 15 characters show).
void NameThread(const char* name) { pthread_setname_np(pthread_self(), name); }

// What the poller keeps per assigned partition.
struct PartitionCursor {
  TopicPartition tp;
  int64_t expected = -1;  // the offset the next record should have; -1 when unknown
  int topic_number = -1;  // the store's number for tp.topic; -1 until resolved
};

// What Stats() reports per partition, shared between the threads under stats_mu_.
struct PartitionInfo {
  bool assigned = false;
  int64_t start_offset = -1;   // where consuming started: an offset or RD_KAFKA_OFFSET_*
  int64_t written_next = -1;   // next offset as written to the store by this process
  int64_t low_watermark = -1;  // the broker's log start, as last asked
  int64_t high_watermark = -1;
  uint64_t lost_to_retention = 0;
};

class IngestorImpl final : public Ingestor {
 public:
  IngestorImpl(const IngestOptions& options, store::EventStore* store)
      : options_(options),
        store_(store),
        parser_(ParserOptions{options.id_field, options.ts_field}),
        batcher_(options.batch_max_events, options.batch_max_ms),
        reject_log_(10, 10000),
        error_log_(10, 10000) {}

  ~IngestorImpl() override {
    Status s = Stop();
    (void)s;
  }

  Status Init();
  Status Stop() override;
  IngestStats Stats() const override;
  Status Ready() const override;

 private:
  // librdkafka callbacks; `opaque` is the IngestorImpl.
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* partitions, void* opaque);
  static void OnOffsetCommit(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t* offsets, void* opaque);
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);

  void PollLoop();
  void WriteLoop();
  void MonitorLoop();

  // Poller thread.
  void HandleMessage(const rd_kafka_message_t* msg);
  void HandleConsumerError(const rd_kafka_message_t* msg);
  void Reject(PartitionCursor* cursor, const rd_kafka_message_t* msg, const char* reason,
              const std::string& detail, int64_t now_ms);
  PartitionCursor* Cursor(const char* topic, int32_t partition);
  bool ResolveTopicNumber(PartitionCursor* cursor);
  void CountGap(PartitionCursor* cursor, int64_t offset);
  void CloseBatch();
  void PushPending();
  void UpdatePause();
  void DrainAndWait();
  void OnAssign(rd_kafka_topic_partition_list_t* partitions, bool cooperative);
  void OnRevoke(rd_kafka_topic_partition_list_t* partitions, bool cooperative);
  void SetPaused(bool paused);
  void CloseConsumer();

  // Writer thread.
  void WriteBatch(Batch* batch);
  void CommitAsync(const Batch& batch);

  void NoteError(const std::string& message);
  // Runs a thread's body; an exception escaping it (a bug or an allocation failure) is logged and
  // recorded, and the thread ends: the stall check then reports the stuck ingestion.
  template <typename Body>
  void Guarded(const char* thread, Body body) {
    try {
      body();
    } catch (const std::exception& e) {
      NoteError(std::string("ingest: the ") + thread + " thread failed: " + e.what());
    } catch (...) {
      NoteError(std::string("ingest: the ") + thread + " thread failed");
    }
  }
  int64_t NowMs() const { return options_.clock->NowMs(); }

  // Constant after construction.
  const IngestOptions options_;
  store::EventStore* const store_;
  int64_t reset_offset_ = RD_KAFKA_OFFSET_BEGINNING;  // auto.offset.reset as an offset

  // Owned by the poller thread.
  RecordParser parser_;
  Batcher batcher_;
  ParsedRecord parsed_;
  std::map<TopicPartition, PartitionCursor> cursors_;
  PartitionCursor* last_cursor_ = nullptr;
  std::deque<std::unique_ptr<Batch>> pending_;  // closed, not yet in the queue
  uint64_t next_seq_ = 1;
  uint64_t last_closed_seq_ = 0;
  bool paused_ = false;

  // The hand-over from poller to writer. queued_ counts batches in the queue or being written.
  moodycamel::BlockingConcurrentQueue<std::unique_ptr<Batch>> queue_;
  std::atomic<size_t> queued_{0};

  // Signalled by the writer after each batch; guards written_seq_.
  std::mutex seq_mu_;
  std::condition_variable seq_cv_;
  uint64_t written_seq_ = 0;
  std::atomic<bool> writer_done_{false};  // the writer thread has ended

  // Stop requests.
  std::atomic<bool> stop_polling_{false};
  std::atomic<bool> stop_writing_{false};
  std::atomic<int64_t> stop_requested_ms_{0};  // steady ms of the Stop() call; 0 before
  // Set by the writer when, stopping, it gives a batch up: no later batch may be written then,
  // or its offsets would skip the records of the one given up.
  bool abandoned_ = false;  // writer thread only
  std::mutex monitor_mu_;
  std::condition_variable monitor_cv_;

  // Counters, any thread.
  std::atomic<uint64_t> records_consumed_{0};
  std::atomic<uint64_t> events_stored_{0};
  std::atomic<uint64_t> duplicates_{0};
  std::atomic<uint64_t> rejected_[kReasonCount] = {};
  std::atomic<uint64_t> lost_to_retention_{0};
  std::atomic<uint64_t> batches_written_{0};
  std::atomic<uint64_t> batch_events_sum_{0};
  std::atomic<uint64_t> batch_write_us_sum_{0};
  std::atomic<uint64_t> dead_lettered_{0};
  std::atomic<bool> out_of_disk_{false};
  std::atomic<bool> paused_flag_{false};
  std::atomic<int64_t> last_progress_ms_{0};  // last write, or last assignment

  mutable std::mutex stats_mu_;
  std::map<TopicPartition, PartitionInfo> partitions_;  // GUARDED_BY(stats_mu_)
  std::string last_error_;                              // GUARDED_BY(stats_mu_)
  Status stop_status_;                                  // GUARDED_BY(stats_mu_)

  RateLimiter reject_log_;
  RateLimiter error_log_;

  std::unique_ptr<DeadLetterProducer> dead_letters_;
  // Declared after everything its callbacks touch, destroyed (in Stop) before them.
  rd_kafka_t* consumer_ = nullptr;
  std::thread poller_;
  std::thread writer_;
  std::thread monitor_;
  bool stopped_ = false;
  bool close_timed_out_ = false;  // set by the poller before it ends; read by Stop after the join
};

// ---------------------------------------------------------------------------------------------
// Start and stop.

Status IngestorImpl::Init() {
  KafkaConfPtr conf(rd_kafka_conf_new());
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(),
                                            {{"bootstrap.servers", options_.brokers},
                                             {"group.id", options_.group_id},
                                             {"client.id", "hotrow"},
                                             {"enable.auto.commit", "false"},
                                             {"enable.auto.offset.store", "false"},
                                             {"enable.partition.eof", "false"},
                                             {"auto.offset.reset", "earliest"},
                                             {"queued.min.messages", kQueuedMinMessages}},
                                            "consumer"));
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(), options_.properties, "consumer"));
  char value[64];
  size_t value_size = sizeof(value);
  if (rd_kafka_conf_get(conf.get(), "auto.offset.reset", value, &value_size) == RD_KAFKA_CONF_OK) {
    std::string reset(value);
    if (reset == "latest" || reset == "largest" || reset == "end") {
      reset_offset_ = RD_KAFKA_OFFSET_END;
    } else if (reset == "error") {
      reset_offset_ = RD_KAFKA_OFFSET_INVALID;
    } else {
      reset_offset_ = RD_KAFKA_OFFSET_BEGINNING;
    }
  }
  RouteKafkaLogs(conf.get());
  rd_kafka_conf_set_opaque(conf.get(), this);
  rd_kafka_conf_set_rebalance_cb(conf.get(), &IngestorImpl::OnRebalance);
  rd_kafka_conf_set_offset_commit_cb(conf.get(), &IngestorImpl::OnOffsetCommit);
  rd_kafka_conf_set_error_cb(conf.get(), &IngestorImpl::OnError);

  if (!options_.dead_letter_topic.empty()) {
    auto dlq = DeadLetterProducer::Create(options_.brokers, options_.dead_letter_topic,
                                          options_.properties);
    if (!dlq.ok()) return dlq.status();
    dead_letters_ = std::move(dlq).value();
  }

  char errstr[512];
  consumer_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr, sizeof(errstr));
  if (consumer_ == nullptr) {
    return Status::InvalidArgument(std::string("kafka consumer: ") + errstr);
  }
  conf.release();                         // owned by the handle
  rd_kafka_poll_set_consumer(consumer_);  // errors and logs are served by consumer_poll

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
  last_progress_ms_.store(NowMs());
  spdlog::info("ingest: consuming {} topic(s) from {} in group {}", options_.topics.size(),
               options_.brokers, options_.group_id);

  writer_ = std::thread([this] {
    Guarded("writer", [this] { WriteLoop(); });
    writer_done_.store(true);
    std::lock_guard<std::mutex> lock(seq_mu_);
    seq_cv_.notify_all();
  });
  poller_ = std::thread([this] { Guarded("poller", [this] { PollLoop(); }); });
  monitor_ = std::thread([this] { Guarded("monitor", [this] { MonitorLoop(); }); });
  return Status::Ok();
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
  if (writer_.joinable()) writer_.join();
  if (consumer_ != nullptr) {
    if (close_timed_out_) {
      // Destroying a handle whose group leave is stuck blocks until librdkafka's own timeouts
      // (a session timeout, 45 s by default), past the 10 s a stopping service has. The handle
      // is left to the process exit instead: its callbacks are served only by polling, which
      // has ended, so none reaches this object again.
      spdlog::warn("ingest: leaving the Kafka client to the process exit (brokers unreachable)");
    } else {
      rd_kafka_destroy(consumer_);
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

// ---------------------------------------------------------------------------------------------
// The poller thread: poll, parse, key, batch, hand over.

void IngestorImpl::PollLoop() {
  NameThread("hotrow-poll");
  while (!stop_polling_.load(std::memory_order_relaxed)) {
    PushPending();
    UpdatePause();
    const int64_t now = NowMs();
    const int timeout =
        static_cast<int>(std::clamp<int64_t>(batcher_.MsUntilDue(now), 0, kPollMaxMs));
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(consumer_, timeout);
    // Then take what is already fetched without blocking.
    for (int n = 1; msg != nullptr; ++n) {
      if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        HandleConsumerError(msg);
      } else {
        HandleMessage(msg);
      }
      rd_kafka_message_destroy(msg);
      if (batcher_.Full()) CloseBatch();
      if (stop_polling_.load(std::memory_order_relaxed) || !pending_.empty()) break;
      if (n % 64 == 0 && batcher_.Due(NowMs())) break;
      msg = rd_kafka_consumer_poll(consumer_, 0);
    }
    if (batcher_.Full() || batcher_.Due(NowMs())) CloseBatch();
  }
  // Stop: write the open batch and everything pending, then leave the group. Closing the consumer
  // revokes the assignment through OnRebalance, which commits the written offsets.
  DrainAndWait();
  CloseConsumer();
}

void IngestorImpl::CloseConsumer() {
  // rd_kafka_consumer_close can block for a session timeout or more when the brokers are gone;
  // closing through a queue lets Stop() give up after kCloseTimeoutMs.
  rd_kafka_queue_t* queue = rd_kafka_queue_new(consumer_);
  rd_kafka_error_t* error = rd_kafka_consumer_close_queue(consumer_, queue);
  if (error != nullptr) {
    spdlog::warn("ingest: closing the consumer: {}", rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
  } else {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kCloseTimeoutMs);
    while (!rd_kafka_consumer_closed(consumer_)) {
      if (std::chrono::steady_clock::now() >= deadline) {
        NoteError("ingest: leaving the consumer group timed out after " +
                  FormatDurationMs(kCloseTimeoutMs) +
                  " (brokers unreachable?); the group notices after its session timeout");
        close_timed_out_ = true;
        break;
      }
      // The revocation arrives as an event, served here by OnRebalance like any other; anything
      // else (a late consumer error) is dropped. (rd_kafka_queue_poll_callback aborts on an
      // event without a callback.)
      rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 100);
      if (event == nullptr) continue;
      if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_REBALANCE) {
        OnRebalance(consumer_, rd_kafka_event_error(event),
                    rd_kafka_event_topic_partition_list(event), this);
      }
      rd_kafka_event_destroy(event);
    }
  }
  rd_kafka_queue_destroy(queue);
}

PartitionCursor* IngestorImpl::Cursor(const char* topic, int32_t partition) {
  if (last_cursor_ != nullptr && last_cursor_->tp.partition == partition &&
      last_cursor_->tp.topic == topic) {
    return last_cursor_;
  }
  TopicPartition tp{topic, partition};
  auto it = cursors_.find(tp);
  if (it == cursors_.end()) {
    // A record of a partition we were not told about: track it from here on.
    it = cursors_.emplace(tp, PartitionCursor{tp, -1, -1}).first;
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

void IngestorImpl::HandleMessage(const rd_kafka_message_t* msg) {
  records_consumed_.fetch_add(1, std::memory_order_relaxed);
  const char* topic = rd_kafka_topic_name(msg->rkt);
  PartitionCursor* cursor = Cursor(topic, msg->partition);
  const int64_t offset = msg->offset;
  if (cursor->topic_number < 0 && !ResolveTopicNumber(cursor)) {
    // Stopping with the store refusing: leave this record (and the partition) unhandled.
    records_consumed_.fetch_sub(1, std::memory_order_relaxed);
    stop_polling_.store(true);
    return;
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

  // Cold records, after a long outage, are dropped on their Kafka timestamp alone, before a
  // parse. The margin (max_future) tolerates producers whose clocks run behind.
  if (kafka_ts >= 0 && kafka_ts < window_start - options_.max_future_ms) {
    Reject(cursor, msg, kRejectExpired,
           "Kafka timestamp " + FormatRfc3339Ms(kafka_ts) + " is before the hot window", now);
    return;
  }

  RecordView view;
  if (msg->payload != nullptr) view.value = {static_cast<const char*>(msg->payload), msg->len};
  if (msg->key != nullptr) view.key = {static_cast<const char*>(msg->key), msg->key_len};
  view.kafka_ts_ms = kafka_ts;
  parser_.Parse(view, window_start, wall_now + options_.max_future_ms, &parsed_);
  if (!parsed_.ok()) {
    Reject(cursor, msg, parsed_.reject, parsed_.detail, now);
    return;
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
  batcher_.AddRow(cursor->tp, offset, std::move(encoded_key), std::move(value), now);
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
      batcher_.AddDeadLetter();
      dead_lettered_.fetch_add(1, std::memory_order_relaxed);
    } else {
      NoteError(s.ToString());
    }
  }
  batcher_.AddSkipped(cursor->tp, msg->offset, now_ms);
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

void IngestorImpl::CloseBatch() {
  if (batcher_.empty()) return;
  std::unique_ptr<Batch> batch = batcher_.Take(next_seq_++);
  last_closed_seq_ = batch->seq;
  pending_.push_back(std::move(batch));
  PushPending();
}

void IngestorImpl::PushPending() {
  while (!pending_.empty()) {
    if (queued_.load() >= options_.queue_max_batches) {
      // The writer is behind. Wait a little for it first: a pause costs a refetch when resumed,
      // which only pays off when the writer is really stuck (a slow or full disk).
      std::unique_lock<std::mutex> lock(seq_mu_);
      seq_cv_.wait_for(lock, std::chrono::milliseconds(kBackpressureWaitMs), [this] {
        return queued_.load() < options_.queue_max_batches || stop_polling_.load();
      });
      if (queued_.load() >= options_.queue_max_batches) return;  // UpdatePause pauses
    }
    queued_.fetch_add(1);
    queue_.enqueue(std::move(pending_.front()));
    pending_.pop_front();
  }
}

void IngestorImpl::UpdatePause() {
  // Pause as soon as a closed batch finds the queue full (or the disk is full); resume only once
  // the writer has drained the queue to half, so that a writer just a little behind does not
  // make the consumer pause and resume (and refetch) for every batch.
  if (!paused_) {
    if (!pending_.empty() || out_of_disk_.load()) SetPaused(true);
  } else if (pending_.empty() && !out_of_disk_.load() &&
             queued_.load() <= options_.queue_max_batches / 2) {
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
  if (paused) {
    spdlog::info("ingest: paused {} partition(s): {}", list->cnt,
                 out_of_disk_.load() ? "the disk is full" : "the writer is behind");
  } else {
    spdlog::info("ingest: resumed {} partition(s)", list->cnt);
  }
}

void IngestorImpl::DrainAndWait() {
  CloseBatch();
  const uint64_t target = last_closed_seq_;
  std::unique_lock<std::mutex> lock(seq_mu_);
  while (true) {
    lock.unlock();
    PushPending();
    lock.lock();
    if (pending_.empty() && written_seq_ >= target) return;
    if (writer_done_.load()) {
      NoteError("ingest: the writer has ended; " + std::to_string(target - written_seq_) +
                " batches stay unwritten (Kafka delivers them again on restart)");
      return;
    }
    seq_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

// ---------------------------------------------------------------------------------------------
// Rebalances (on the poller thread, inside consumer_poll or consumer_close).

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

// ---------------------------------------------------------------------------------------------
// The writer thread.

void IngestorImpl::WriteLoop() {
  NameThread("hotrow-write");
  while (true) {
    std::unique_ptr<Batch> batch;
    if (!queue_.wait_dequeue_timed(batch, std::chrono::milliseconds(100))) {
      if (stop_writing_.load()) return;
      continue;
    }
    WriteBatch(batch.get());
    queued_.fetch_sub(1);
    {
      std::lock_guard<std::mutex> lock(seq_mu_);
      written_seq_ = batch->seq;
    }
    seq_cv_.notify_all();
  }
}

void IngestorImpl::WriteBatch(Batch* batch) {
  if (abandoned_) {
    spdlog::error(
        "ingest: stopping; a batch of {} records after an unwritten one is not written "
        "either (Kafka will deliver both again on restart)",
        batch->records);
    return;
  }
  if (batch->dead_letters > 0 && dead_letters_ != nullptr) {
    // Letters first: once the offsets are stored, the records are never read again.
    Status s = dead_letters_->Flush(10000);
    if (!s.ok()) NoteError(s.ToString());
  }
  int64_t backoff_ms = 100;
  while (true) {
    store::WriteOutcome outcome;
    const auto t0 = std::chrono::steady_clock::now();
    Status s = store_->Write(batch->input, &outcome);
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
      CommitAsync(*batch);
      return;
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
        abandoned_ = true;
        std::lock_guard<std::mutex> lock(stats_mu_);
        if (stop_status_.ok()) stop_status_ = s;
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, s.IsNoSpace() ? 1000 : 5000);
  }
}

void IngestorImpl::CommitAsync(const Batch& batch) {
  if (batch.input.next_offsets.empty()) return;
  TopicPartitionListPtr list(
      rd_kafka_topic_partition_list_new(static_cast<int>(batch.input.next_offsets.size())));
  for (const auto& [tp, next] : batch.input.next_offsets) {
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset = next;
  }
  // Only for lag monitors: the store's offsets are the truth. Failures are logged by
  // OnOffsetCommit.
  rd_kafka_commit(consumer_, list.get(), 1);
}

// ---------------------------------------------------------------------------------------------
// The monitor thread: high watermarks for lag, even when the poller is stuck.

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
  }
}

// ---------------------------------------------------------------------------------------------
// Errors and statistics.

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
      p.high_watermark = info.high_watermark;
      p.lag = p.high_watermark >= 0 && p.next_offset >= 0
                  ? std::max<int64_t>(0, p.high_watermark - p.next_offset)
                  : 0;
      p.paused = paused;
      p.lost_to_retention = info.lost_to_retention;
      total_lag += p.lag;
      s.partitions.push_back(std::move(p));
    }
    s.last_error = last_error_;
  }
  s.assigned = !s.partitions.empty();
  s.stalled = total_lag > 0 && NowMs() - last_progress_ms_.load() > options_.stall_after_ms;
  return s;
}

Status IngestorImpl::Ready() const {
  IngestStats s = Stats();
  if (s.out_of_disk) return Status::NoSpace("ingestion paused: the disk is full");
  if (!s.assigned) return Status::Busy("no Kafka partitions assigned (yet)");
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

}  // namespace

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
  auto ingestor = std::make_unique<IngestorImpl>(options, store);
  HOTROW_RETURN_IF_ERROR(ingestor->Init());
  return std::unique_ptr<Ingestor>(std::move(ingestor));
}

}  // namespace hotrow::ingest
