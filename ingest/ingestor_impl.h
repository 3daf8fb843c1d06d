#pragma once

// Internal to ingest/: the implementation of Ingestor, shared by the files that hold its parts:
//   ingestor.cc            start, stop, the consumer's lifecycle
//   ingestor_rebalance.cc  assignments and revocations (start offsets: start_offset.h)
//   ingestor_poller.cc     the poller thread: poll, parse, key, batch, hand over
//   ingestor_writer.cc     the writer threads: store writes and offset commits
//   ingestor_stats.cc      the monitor thread, errors, Stats() and Ready()
// It includes librdkafka; nothing outside ingest/ may include it.

#include <concurrentqueue/blockingconcurrentqueue.h>
#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "ingest/batcher.h"
#include "ingest/broker_offsets.h"
#include "ingest/dead_letter.h"
#include "ingest/ingestor.h"
#include "ingest/kafka_conf.h"
#include "ingest/partition_fence.h"
#include "ingest/record_parser.h"
#include "ingest/schema_fetcher.h"

namespace hotrow::ingest::internal {

using store::TopicPartition;

inline constexpr size_t kReasonCount = std::size(kRejectReasons);
// How often the monitor reads each assigned partition's high watermark.
inline constexpr int64_t kMonitorIntervalMs = 1000;
// The longest a poll blocks, so that stop requests and batch ages are seen promptly.
inline constexpr int kPollMaxMs = 100;
// librdkafka 2.0 stops fetching for a fixed second whenever its local queue holds
// queued.min.messages records (default 100000, counted across all partitions, as they share one
// queue) or queued.max.messages.kbytes (64 MiB of payload). When catching up, the queue fills,
// and a consumer that drains 100000 records in a fraction of a second then idles for the rest of
// it: this halved ingest throughput in bench/ingest_bench. With the count out of the way the byte
// limit governs: about 600000 small records, more than a second of work, and bounded memory
// (the payload plus ~300 bytes of librdkafka bookkeeping per record, ~250 MB for 100-byte
// records). kafka.properties can lower either.
inline constexpr const char* kQueuedMinMessages = "1000000";
// The consumer's session timeout and heartbeat interval (kafka.properties may override them).
// librdkafka heartbeats from its own thread, which never waits for the poller or the store (a
// stuck poller is caught by max.poll.interval.ms instead), so the session timeout only needs to
// outlast a few lost heartbeats: 6 s is the smallest a Kafka broker accepts by default
// (group.min.session.timeout.ms). It bounds how long a restart waits after a kill -9 (the dead
// member must time out) and, on the embedded broker, after a clean stop too: its coordinator
// waits session.timeout.ms - 1 s for members to (re)join whenever the group changes.
inline constexpr int kSessionTimeoutMs = 6000;
inline constexpr const char* kHeartbeatIntervalMs = "500";
// Against the embedded broker (librdkafka 2.0.2's mock cluster, known by its cluster id) the
// session starts at 3 s: its coordinator ignores group.instance.id, evicts a killed member only
// after a session timeout and then waits session.timeout.ms - 1 s for the group to rejoin, so a
// restart after kill -9 took about 11.5 s with 6 s and about 5 s with 3 s (RestartTimeTest). No
// Kafka broker is concerned: they refuse a session under group.min.session.timeout.ms (6 s).
// That coordinator keeps one session for the group, the last joiner's, and checks every member
// against it, also a member waiting in its JoinGroup (which cannot heartbeat): when a member with
// a longer session (kafka-python's 10 s default, or 6 s) was the last to join or leave, the wait
// it imposes outlasts a 3 s member, which is dropped while it waits, and its JoinGroup is never
// answered until librdkafka gives it up after max.poll.interval.ms + 3 s (5 minutes by default):
// no partition meanwhile. So when no assignment comes for kJoinWaitSessions sessions, the
// consumer is made again with the next, longer session of the ladder
// (GroupJoinTest.JoinsAfterAMemberWithALongerSessionLeft).
inline constexpr int kEmbeddedSessionLadderMs[] = {3000, 10000, 45000};
inline constexpr int kJoinWaitSessions = 4;
// While no partition is assigned, a line says so after this long, and again at this interval.
inline constexpr int64_t kWaitingLogMs = 15000;
inline constexpr const char* kEmbeddedClusterIdPrefix = "mockCluster";
// How long start-up waits for the cluster id; unreachable brokers count as a real cluster.
inline constexpr int kClusterIdTimeoutMs = 2000;
// How long Stop() lets the consumer take to commit and leave the group.
inline constexpr int64_t kCloseTimeoutMs = 5000;
// How long a closed batch waits for room in the queue before the consumer pauses.
inline constexpr int64_t kBackpressureWaitMs = 250;
// The most the broker queries of one assignment take together (the partitions' ends, then
// offsets-for-times), capped at a third of max.poll.interval.ms: the rebalance callback must
// return well within it. A query cut short leaves its partitions unknown (a safe start).
inline constexpr int64_t kAssignQueryBudgetMs = 10000;
// The most writers IngestOptions::writers may ask for.
inline constexpr size_t kMaxWriters = 16;
// After Stop(), a failing write is tried for about this long before the batch is given up
// (its offsets are then not stored: Kafka replays it on restart).
inline constexpr int64_t kStopWriteGraceMs = 3000;
// Standby mode: how often the set followed is checked, and the partition counts read.
inline constexpr int64_t kFollowCheckMs = 1000;
inline constexpr int64_t kFollowCountsMs = 30000;

// The index of `reason` in kRejectReasons (0 when unknown).
size_t ReasonIndex(const char* reason);
// "topic/partition".
std::string Describe(const TopicPartition& tp);
// Every commit of a hotrow instance carries this prefix, then its store's identity.
inline constexpr const char kCommitMetadataPrefix[] = "hotrow store ";

// Sets the name of the calling thread (at most 15 characters show).
void NameThread(const char* name);

// Milliseconds of the steady clock, for internal bounds (never options.clock, which tests move).
inline int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One writer and what feeds it: the partitions of a stable share (WriterFor) are batched apart,
// queued apart and written by this lane's own thread, so that a batch carries only the offsets
// of its writer's partitions and writers never write the same partition.
struct WriterLane {
  WriterLane(int index, size_t batch_max_events, int64_t batch_max_ms)
      : index(index), batcher(batch_max_events, batch_max_ms) {}

  const int index;

  // Owned by the poller thread.
  Batcher batcher;
  std::deque<std::unique_ptr<Batch>> pending;  // closed, not yet in the queue
  uint64_t last_closed_seq = 0;
  uint64_t last_enqueued_seq = 0;

  // The hand-over from poller to this writer. `queued` counts batches in the queue or being
  // written.
  moodycamel::BlockingConcurrentQueue<std::unique_ptr<Batch>> queue;
  std::atomic<size_t> queued{0};
  uint64_t written_seq = 0;       // GUARDED_BY(IngestorImpl::seq_mu_)
  std::atomic<bool> done{false};  // the writer thread has ended
  // SteadyNowMs() when the store write under way began; 0 outside a write (Liveness()).
  std::atomic<int64_t> write_began_ms{0};

  // Owned by the writer thread. Set when, stopping, it gives a batch up: no later batch of this
  // writer may be written then, or its offsets would skip the records of the one given up.
  bool abandoned = false;
  std::thread thread;
};

// Which of `writers` writers owns `tp`: stable for the life of the process, whatever the
// assignment, so that a partition revoked and assigned again returns to the same writer.
// Partitions of one topic go round the writers in turn.
size_t WriterFor(const TopicPartition& tp, size_t writers);

// The writer count IngestOptions::writers asks for (0: the machine's cores), in 1..kMaxWriters.
size_t WriterCount(int requested);

struct KafkaMessageDeleter {
  void operator()(rd_kafka_message_t* msg) const { rd_kafka_message_destroy(msg); }
};
using KafkaMessagePtr = std::unique_ptr<rd_kafka_message_t, KafkaMessageDeleter>;

// Retrying the decode of a held partition (PartitionCursor::held): the first wait, and the most.
inline constexpr int64_t kRegistryRetryFirstMs = 200;
inline constexpr int64_t kRegistryRetryMaxMs = 5000;

// What the poller keeps per assigned partition.
struct PartitionCursor {
  TopicPartition tp;
  WriterLane* lane = nullptr;  // the writer that owns the partition
  uint64_t epoch = 0;          // its epoch in the fence (PartitionFence::Open)
  int64_t expected = -1;       // the offset the next record should have; -1 when unknown
  int topic_number = -1;       // the store's number for tp.topic; -1 until resolved
  // In the run of cold records that may open the partition (StartOffset::may_read_cold): records
  // older than the window are skipped as cold until the first one inside it.
  bool cold_run = false;
  bool cold_logged = false;  // a cold record of this partition was logged
  // Routing by key (IngestOptions::route_by_key): the topic's partition count its records are
  // checked against (0: not checked), and whether one broke the rule.
  int32_t route_partitions = 0;
  bool route_broken = false;
  // Records held while their schema cannot be fetched (IngestOptions::format): the first waits
  // for the registry, the rest behind it, in offset order. Empty when not held.
  std::deque<KafkaMessagePtr> held;
};

// What Stats() reports per partition, shared between the threads under stats_mu_.
struct PartitionInfo {
  bool assigned = false;
  int64_t start_offset = -1;   // where consuming started: an offset or RD_KAFKA_OFFSET_*
  int64_t written_next = -1;   // next offset as written to the store by this process
  int64_t low_watermark = -1;  // the broker's log start, as last asked
  int64_t high_watermark = -1;
  uint64_t lost_to_retention = 0;
  uint64_t skipped_cold = 0;
};

class IngestorImpl final : public Ingestor {
 public:
  IngestorImpl(const IngestOptions& options, store::EventStore* store)
      : options_(options),
        store_(store),
        parser_(ParserOptions{options.id_field, options.ts_field, options.index_fields}),
        need_headers_(NeedsHeaders(options)),
        reject_log_(10, 10000),
        error_log_(10, 10000) {
    const size_t writers = WriterCount(options.writers);
    for (size_t i = 0; i < writers; ++i) {
      lanes_.push_back(std::make_unique<WriterLane>(static_cast<int>(i), options.batch_max_events,
                                                    options.batch_max_ms));
    }
  }

  ~IngestorImpl() override {
    Status s = Stop();
    (void)s;
  }

  Status Init();
  Status Stop() override;
  IngestStats Stats() const override;
  Status Ready() const override;
  IngestLiveness Liveness() const override;

 private:
  // The consumer's configuration: hotrow's settings, then IngestOptions::properties.
  Result<KafkaConfPtr> ConsumerConf(int session_timeout_ms);
  // A consumer handle (not yet subscribed).
  Result<rd_kafka_t*> CreateConsumer(int session_timeout_ms);
  // Subscribes consumer_ to the topics.
  Status Subscribe();
  // Whether `consumer`'s brokers are librdkafka's mock cluster (hotrow embedded-kafka).
  static bool OnEmbeddedBroker(rd_kafka_t* consumer);
  // The BrokerOffsets of consumer_ (through IngestOptions::broker_offsets_for_test when set).
  std::unique_ptr<BrokerOffsets> MakeBrokerOffsets();

  // librdkafka callbacks; `opaque` is the IngestorImpl.
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* partitions, void* opaque);
  static void OnOffsetCommit(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t* offsets, void* opaque);
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);

  void PollLoop();
  void WriteLoop(WriterLane* lane);
  void MonitorLoop();
  void AskPausedEnds(const std::vector<TopicPartition>& assigned);

  // Poller thread.
  // Handles one record; true when it kept `msg` (held: PartitionCursor::held), which the caller
  // must then not destroy.
  bool HandleMessage(rd_kafka_message_t* msg);
  // Holds `msg` (its decode must wait for the registry): pauses its partition on the first.
  void Hold(PartitionCursor* cursor, rd_kafka_message_t* msg, const std::string& why);
  // Retries the held partitions when their backoff is due.
  void RetryHeld();
  // Pauses or resumes one partition.
  void PausePartition(const TopicPartition& tp, bool pause);
  // Recounts the held partitions for Stats() (after a hold, a release or a revocation).
  void UpdateHeld();
  // Whether a field names a header or the payload carries the metadata (record_meta.h).
  static bool NeedsHeaders(const IngestOptions& options);
  void HandleConsumerError(const rd_kafka_message_t* msg);
  void SkipCold(PartitionCursor* cursor, const rd_kafka_message_t* msg, int64_t time_ms,
                const char* time_kind, int64_t window_start, int64_t now_ms);
  // Closes `partitions` in the fence (waiting for the writes under way) and removes their records
  // from the open and pending batches of every lane; the writers leave them out of queued ones.
  // `why` ends the log line.
  void GiveUp(const std::vector<TopicPartition>& partitions, const std::string& why);
  // EventStore::TopicName, for DropPartitions.
  std::optional<std::string> TopicName(uint16_t number) const { return store_->TopicName(number); }
  void Reject(PartitionCursor* cursor, const rd_kafka_message_t* msg, const char* reason,
              const std::string& detail, int64_t now_ms);
  // Routing by key: a stored record whose key is not its id, or that the partitioner puts
  // elsewhere, makes its partition unroutable (before the record reaches a writer).
  void CheckRoute(PartitionCursor* cursor, const rd_kafka_message_t* msg, std::string_view key,
                  std::string_view id);
  // The partition count of each of `topics` (from the brokers' metadata, within `timeout_ms`);
  // a topic left out is not known.
  std::map<std::string, int32_t> PartitionCounts(const std::set<std::string>& topics,
                                                 int timeout_ms);
  PartitionCursor* Cursor(const char* topic, int32_t partition);
  bool ResolveTopicNumber(PartitionCursor* cursor);
  void CountGap(PartitionCursor* cursor, int64_t offset);
  void CloseBatch(WriterLane* lane);
  void CloseBatches();  // every lane's
  bool AnyPending() const;
  void PushPending();
  void UpdatePause();
  // Writes every batch of every lane (a revocation may take partitions of any writer). Returns
  // true once written; false when `bound_ms` (steady time; none when negative) passed first or a
  // writer has ended.
  bool DrainAndWait(int64_t bound_ms = -1);
  void OnAssign(rd_kafka_topic_partition_list_t* partitions, bool cooperative);
  void OnRevoke(rd_kafka_topic_partition_list_t* partitions, bool cooperative);
  // Whether the revocation being served is involuntary.
  bool RevocationIsLost();
  // The start inputs of `partitions` (their offsets are not read): the store's offsets, then the
  // brokers' answers within kAssignQueryBudgetMs.
  std::vector<StartOffsetInputs> GatherStartInputs(
      const rd_kafka_topic_partition_list_t* partitions, std::map<TopicPartition, int64_t>* ends);
  void SetPaused(bool paused);
  // Closes `consumer` (leaves the group); false when that timed out (the handle must then not be
  // destroyed: see Stop).
  bool CloseConsumer(rd_kafka_t* consumer);
  // Destroys a closed group consumer, or leaves it to the process exit when librdkafka 2.0.2
  // would abort destroying it: a cooperative-sticky consumer that joined a group but was never
  // given an assignment has no assignor state, and rd_kafka_destroy asserts one
  // (confluentinc/librdkafka#4312, fixed in 2.3.0). Its callbacks are served only by polling,
  // which no longer happens for it, so none reaches this object again.
  void DestroyConsumer(rd_kafka_t* consumer);
  // Leaves a closed consumer's handle, and its threads, to the process exit; counted.
  void LeaveToProcessExit(rd_kafka_t* consumer);
  // While nothing is assigned: logs the wait, and on the embedded broker makes the consumer again
  // with a longer session when the join does not complete (kEmbeddedSessionLadderMs).
  void WatchJoin();
  // Standby mode: follows the partitions StandbySet names now (assigns the new ones, revokes the
  // ones it no longer names, those the group consumer took included).
  void FollowStandbySet();
  bool standby() const { return options_.standby.on; }
  // partition.assignment.strategy names a cooperative assignor (librdkafka's default does not).
  bool CooperativeAssignor() const {
    auto it = options_.properties.find("partition.assignment.strategy");
    return it != options_.properties.end() && it->second.find("cooperative") != std::string::npos;
  }
  void RejoinWithLongerSession();

  // Writer threads.
  void WriteBatch(WriterLane* lane, Batch* batch);
  // Commits the next offsets of `partitions` of `batch`.
  void CommitAsync(const Batch& batch, const std::vector<TopicPartition>& partitions);
  // Adds `tp` at `offset` to `list`, with this store's commit metadata.
  void AddCommit(rd_kafka_topic_partition_list_t* list, const TopicPartition& tp,
                 int64_t offset) const;

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
  int64_t max_poll_interval_ms_ = 300000;             // max.poll.interval.ms
  bool embedded_ = false;  // the brokers are the embedded broker (OnEmbeddedBroker)
  // Metadata of this instance's offset commits, "hotrow store <host>:<store path>": tells an
  // operator reading the group's offsets which store made each commit (the start of a partition
  // never depends on a commit: start_offset.h).
  std::string commit_metadata_;

  // Owned by the poller thread.
  // The brokers are the embedded broker and the properties set no session: the session ladder
  // applies (kEmbeddedSessionLadderMs), at step session_step_.
  bool session_ladder_ = false;
  size_t session_step_ = 0;
  int64_t unassigned_since_steady_ms_ = 0;         // since when nothing is assigned (steady clock)
  int64_t waiting_logged_steady_ms_ = 0;           // the last line about the wait
  std::unique_ptr<BrokerOffsets> broker_offsets_;  // of consumer_
  RecordParser parser_;
  ParsedRecord parsed_;
  std::unique_ptr<Decoder> decoder_;  // null for JSON; made by Init
  const bool need_headers_;           // NeedsHeaders
  std::string decoded_;               // the JSON text of the record being handled
  std::string with_meta_;             // it with "_kafka" added (include_meta)
  std::vector<RecordHeader> headers_;  // the record's headers, when need_headers_
  bool retrying_ = false;             // HandleMessage is called by RetryHeld
  int64_t retry_backoff_ms_ = kRegistryRetryFirstMs;
  int64_t next_retry_steady_ms_ = 0;
  int64_t registry_wait_since_steady_ms_ = 0;
  uint64_t fetches_seen_ = 0;  // fetch_stats_->completed when the held records were last retried
  std::map<TopicPartition, PartitionCursor> cursors_;
  PartitionCursor* last_cursor_ = nullptr;
  WriterLane* touched_lane_ = nullptr;  // the lane of the record handled last, if it batched one
  uint64_t next_seq_ = 1;
  // Standby mode (IngestOptions::standby): the hand-over generation and steady times the set
  // followed was last checked at, and the topics' partition counts (topic -> count).
  uint64_t follow_generation_ = UINT64_MAX;
  int64_t next_follow_steady_ms_ = 0;
  int64_t next_counts_steady_ms_ = 0;
  std::map<std::string, int32_t> follow_counts_;
  bool paused_ = false;

  // The writers (IngestOptions::writers), each with its batcher and queue. Fixed after
  // construction; the threads are started by Init and joined by Stop.
  std::vector<std::unique_ptr<WriterLane>> lanes_;
  // Which partitions the writers may write and commit for (epochs per assignment).
  PartitionFence fence_;

  // Signalled by a writer after each batch; guards every lane's written_seq.
  std::mutex seq_mu_;
  std::condition_variable seq_cv_;
  // Serialises DeadLetterProducer::Flush between writers.
  std::mutex dead_letter_flush_mu_;

  // Stop requests.
  std::atomic<bool> stop_polling_{false};
  std::atomic<bool> stop_writing_{false};
  std::atomic<int64_t> stop_requested_ms_{0};  // steady ms of the Stop() call; 0 before
  std::mutex monitor_mu_;
  std::condition_variable monitor_cv_;

  // Counters, any thread.
  std::atomic<uint64_t> records_consumed_{0};
  std::atomic<uint64_t> events_stored_{0};
  std::atomic<uint64_t> duplicates_{0};
  std::atomic<uint64_t> rejected_[kReasonCount] = {};
  std::atomic<uint64_t> lost_to_retention_{0};
  std::atomic<uint64_t> skipped_cold_{0};
  std::atomic<uint64_t> route_broken_{0};  // records that broke the route_by_key rule
  std::atomic<uint64_t> index_absent_{0};
  std::atomic<uint64_t> index_not_scalar_{0};
  std::atomic<uint64_t> index_too_long_{0};
  std::atomic<uint64_t> batches_discarded_{0};
  std::atomic<uint64_t> rebalances_{0};  // callbacks served (OnRebalance), counted as they begin
  std::atomic<uint64_t> group_rejoins_{0};
  std::atomic<uint64_t> consumers_left_{0};
  // The group consumer in hand has been given an assignment (an assign callback), so its
  // assignor has a state; see DestroyConsumer.
  std::atomic<bool> consumer_assigned_{false};
  std::atomic<uint64_t> batches_written_{0};
  std::atomic<uint64_t> batch_events_sum_{0};
  std::atomic<uint64_t> batch_write_us_sum_{0};
  std::atomic<uint64_t> dead_lettered_{0};
  std::atomic<bool> out_of_disk_{false};
  std::atomic<bool> paused_flag_{false};
  std::atomic<int64_t> poll_began_ms_{0};  // SteadyNowMs() of the poller's latest iteration
  std::atomic<uint64_t> held_partitions_{0};
  // The decoder's schema fetcher counts here (schema_fetcher.h).
  const std::shared_ptr<SchemaFetchStats> fetch_stats_ = std::make_shared<SchemaFetchStats>();
  std::atomic<int64_t> last_progress_ms_{0};  // last write, or last assignment
  // By options_.clock: since when no partition is assigned; -1 while some are.
  std::atomic<int64_t> unassigned_since_ms_{0};

  mutable std::mutex stats_mu_;
  std::map<TopicPartition, PartitionInfo> partitions_;  // GUARDED_BY(stats_mu_)
  std::string last_error_;                              // GUARDED_BY(stats_mu_)
  std::string registry_wait_;                           // GUARDED_BY(stats_mu_)
  int64_t registry_wait_since_ms_ = 0;                  // GUARDED_BY(stats_mu_)
  Status stop_status_;                                  // GUARDED_BY(stats_mu_)

  RateLimiter reject_log_;
  RateLimiter error_log_;

  std::unique_ptr<DeadLetterProducer> dead_letters_;
  // Declared after everything its callbacks touch, destroyed (in Stop) before them. Replaced only
  // by the poller (RejoinWithLongerSession), while no partition is open in the fence (so no
  // writer commits through it), under consumer_mu_, which the monitor holds while it uses it.
  std::mutex consumer_mu_;
  rd_kafka_t* consumer_ = nullptr;
  std::thread poller_;
  std::thread monitor_;
  bool stopped_ = false;
  bool close_timed_out_ = false;  // set by the poller before it ends; read by Stop after the join
};

}  // namespace hotrow::ingest::internal
