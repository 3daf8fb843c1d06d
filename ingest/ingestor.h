#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "ingest/broker_offsets.h"
#include "ingest/key_route.h"
#include "ingest/decoder.h"
#include "ingest/partition_ownership.h"
#include "ingest/standby_handover.h"
#include "store/event_store.h"

namespace hotrow::ingest {

// Why a record was refused. Names are the `reason` label in /metrics and the keys of
// `rejected` in /v1/stats; see CONTRACT.md "Events on the wire".
inline constexpr const char* kRejectNotJson = "not_json";       // not JSON, or not an object
inline constexpr const char* kRejectNoId = "no_id";             // no event id in field or key
inline constexpr const char* kRejectIdTooLong = "id_too_long";  // id over 256 bytes
inline constexpr const char* kRejectIdNotUtf8 = "id_not_utf8";  // id is not valid UTF-8
inline constexpr const char* kRejectBadTime = "bad_time";       // unparsable time
inline constexpr const char* kRejectExpired = "expired";        // older than the hot window
inline constexpr const char* kRejectFuture = "future";          // beyond max_future
// ingest.format avro / protobuf (decoder.h):
inline constexpr const char* kRejectNotFramed = "not_framed";  // no Confluent magic byte + id
inline constexpr const char* kRejectUnknownSchema = "unknown_schema";  // the registry has no such id
inline constexpr const char* kRejectBadAvro = "bad_avro";          // does not read under its schema
inline constexpr const char* kRejectBadProtobuf = "bad_protobuf";  // does not read as its message
inline constexpr const char* kRejectTooLarge = "too_large";  // decodes past max_decoded_bytes
inline constexpr const char* kRejectReasons[] = {
    kRejectNotJson,   kRejectNoId,       kRejectIdTooLong,     kRejectBadTime,
    kRejectExpired,   kRejectFuture,     kRejectIdNotUtf8,     kRejectNotFramed,
    kRejectUnknownSchema, kRejectBadAvro, kRejectBadProtobuf, kRejectTooLarge};
// The reasons a record of ingest.format json can be rejected for (the others are the decoders').
inline constexpr const char* kJsonRejectReasons[] = {
    kRejectNotJson, kRejectNoId,  kRejectIdTooLong, kRejectBadTime,
    kRejectExpired, kRejectFuture, kRejectIdNotUtf8};

struct IngestOptions {
  // Bootstrap servers, "host:port,host:port". Required.
  std::string brokers;
  // Topics to consume. Required, at least one.
  std::vector<std::string> topics;
  // Consumer group. Default: "hotrow".
  std::string group_id = "hotrow";
  // group.instance.id (static membership): a restart with the same id within the session
  // timeout takes its partitions back without a rebalance, on brokers that support it (Kafka
  // 2.3+; the embedded broker ignores it). Unique per instance. Default: empty (dynamic member).
  std::string instance_id;
  // Passed to librdkafka as is (both consumer and dead-letter producer), after hotrow's own
  // settings, so a user may override them.
  std::map<std::string, std::string> properties;
  // A batch closes at this many events or this age, whichever first. Defaults: 5000, 200 ms.
  size_t batch_max_events = 5000;
  int64_t batch_max_ms = 200;
  // Dotted path of the event id in the record's JSON; absent means the record key. Default
  // "event_id".
  std::string id_field = "event_id";
  // Dotted path of the event time (ms integer or RFC 3339); absent means the Kafka timestamp.
  std::string ts_field = "ts";
  // Dotted paths of the indexed fields (index.fields); the store decides per bucket which it
  // keeps. Default: none.
  std::vector<std::string> index_fields;
  // How record values are encoded (ingest.format and its keys; decoder.h). Default: JSON.
  FormatOptions format;
  // Adds "_kafka": {"key", "headers", "timestamp"} to each stored payload (record_meta.h).
  // Default: false.
  bool include_meta = false;
  // Records further ahead of the clock are rejected as `future`. Also the margin of the window's
  // start in offsets-for-times: a record may carry a Kafka timestamp up to this much older than
  // its event time. Default: 1 minute.
  int64_t max_future_ms = 60 * 1000;
  // The producers set each record's Kafka timestamp to its event time. Then the run of records
  // older than the window that opens a partition (see Ingestor, "Cold records") is skipped on the
  // Kafka timestamp, without a parse; else (the default) on the event time the parser reads.
  // Default: false.
  bool record_ts_is_event_time = false;
  // When not empty, rejected records are produced here with the reason in header "hotrow-reason".
  std::string dead_letter_topic;
  // Lag above zero with nothing written for this long is a stall (/readyz 503). Default: 30 s.
  int64_t stall_after_ms = 30 * 1000;
  // Closed batches waiting for each writer. When one writer's queue is full, the consumer pauses
  // its partitions. Default: 8.
  size_t queue_max_batches = 8;
  // Store writers (0..16; 0 means the machine's cores, at most 16). The assigned partitions are
  // split between them by a stable function of (topic, partition); each has its own batcher and
  // queue, and its batches carry only its partitions' offsets. Default: 0.
  int writers = 0;
  // How long a voluntary revocation waits for the writers to write what was read from the
  // revoked partitions (capped at half of max.poll.interval.ms). Past it, the partitions are given
  // up with their unwritten records (nothing more is written for them) rather than holding the
  // group's rebalance, for example while the disk is full. Default: 10 s.
  int64_t revoke_drain_ms = 10 * 1000;
  // Clock for batch ages, stall detection and /readyz's waiting time. Not owned. Default: the
  // system clock.
  const Clock* clock = WallClock::Default();
  // Told of every assignment and revocation (which partitions this instance answers for, see
  // partition_ownership.h). Not owned; must outlive the Ingestor. Default: none.
  PartitionOwnership* ownership = nullptr;
  // cluster.standby_replicas: the hand-over of partitions between this instance's group consumer
  // and its standby consumer (standby_handover.h), given to both. Not owned; must outlive both.
  // Default: none (no standby consumer).
  StandbyHandover* handover = nullptr;
  // Standby mode (CONTRACT.md "cluster.standby_replicas"): this Ingestor joins no group and commits
  // nothing; its consumer (client.id hotrow-standby, group.id `group_id`.standby, never joined)
  // is assigned the partitions StandbySet (standby_set.h) names for `self` among `peers` with
  // `replicas`, less those `handover` says the group consumer owns, checked every second and at
  // once after each hand-over, with the partition counts read from the brokers every 30 s. They
  // are written exactly as owned ones (same keys, offsets in the same WriteBatch, the same start
  // rule and window runs). Requires `handover`. Default: off.
  struct Standby {
    bool on = false;
    std::vector<std::string> peers;
    std::string self;
    int replicas = 0;
  } standby;
  // cluster.route_by_key: with an ownership, every stored record is checked against the rule
  // that its key is its event id and `route_by_key` puts that key in its partition
  // (PartitionOwnership::RouteChecked, RouteBroken; ingest/key_route.h). Default: off.
  KeyPartitioner route_by_key = KeyPartitioner::kOff;
  // For tests: called by the poller thread before each poll (a test may block in it to freeze
  // the poller). Default: none.
  std::function<void()> before_poll_for_test;
  // For tests: given the librdkafka BrokerOffsets the start offsets are asked of, returns the one
  // to use instead (a fake that answers offsets-for-times where the embedded broker cannot).
  // Default: none.
  std::function<std::unique_ptr<BrokerOffsets>(std::unique_ptr<BrokerOffsets>)>
      broker_offsets_for_test;
  // For tests: asked on each revocation; true makes it handled as involuntary (lost), as
  // librdkafka's answer would. Default: none.
  std::function<bool()> revocation_lost_for_test;
};

struct PartitionStats {
  std::string topic;
  int32_t partition = 0;
  int64_t next_offset = -1;     // next offset to consume, as stored; -1 when none yet
  int64_t high_watermark = -1;  // the broker's end of the partition; -1 when unknown
  int64_t lag = 0;              // high_watermark - next_offset, or 0 when unknown
  bool paused = false;
  uint64_t lost_to_retention = 0;
  uint64_t skipped_cold = 0;
};

struct IngestStats {
  uint64_t records_consumed = 0;             // records polled, good or bad
  uint64_t events_stored = 0;                // events this process wrote to the store
  uint64_t duplicates = 0;                   // records the store had already (replays)
  std::map<std::string, uint64_t> rejected;  // every reason in kRejectReasons, with its count
  uint64_t lost_to_retention = 0;
  // Records older than the hot window in the run that opens a partition whose start the broker
  // could not place at the window (a restart after a long outage, a new store on the embedded
  // broker): skipped, not stored. Not bad input: not in `rejected`.
  uint64_t skipped_cold = 0;
  // Records stored whose key is not their event id, or that the cluster.route_by_key partitioner
  // puts in another partition: their partitions are asked as if unrouted (not rejected).
  uint64_t route_broken = 0;
  // Indexed fields of stored events that gave no index row (ParsedRecord): absent or null, an
  // object or array, or a value over 256 bytes. Not rejects: the event is stored.
  uint64_t index_absent = 0;
  uint64_t index_not_scalar = 0;
  uint64_t index_too_long = 0;
  // Batches some or all of whose records were not written because their partitions were lost
  // meanwhile (session timeout, fencing) or given up by a revocation that could not write them
  // in time: the partitions' new owner reads them.
  uint64_t batches_discarded = 0;
  // Rebalance callbacks served (assignments and revocations), counted as each begins.
  uint64_t rebalances = 0;
  // Times the group consumer was made again with a longer session (the embedded broker only).
  uint64_t group_rejoins = 0;
  // Kafka clients left to the process exit rather than destroyed (see IngestorImpl::Release).
  uint64_t consumers_left = 0;
  uint64_t batches_written = 0;
  uint64_t batch_events_sum = 0;       // events over every written batch
  double batch_write_seconds_sum = 0;  // time spent in store writes
  uint64_t dead_lettered = 0;
  std::vector<PartitionStats> partitions;
  bool assigned = false;     // at least one partition is assigned
  bool stalled = false;      // lag > 0 and nothing written for stall_after_ms
  bool out_of_disk = false;  // the last write failed for lack of space; consuming is paused
  // Partitions held because a record's schema could not be fetched (the registry is down or
  // answers 5xx): paused, their records kept, retried with backoff. 0 when none.
  uint64_t held_partitions = 0;
  std::string registry_wait;     // why, while held_partitions > 0: the registry's error
  int64_t registry_wait_ms = 0;  // how long, while held_partitions > 0
  // Schema fetches queued or under way (they run off the poller: schema_fetcher.h), and the
  // fetches that failed for a reason not the record's (unreachable, timed out, 5xx).
  uint64_t schema_fetches_waiting = 0;
  uint64_t schema_fetch_failures = 0;
  std::string last_error;    // the last write, consumer or group error, empty when none
};

// Consumes the configured topics in a consumer group and writes batches of events, with the
// offsets they cover, to the store: exactly once into the store across crashes and rebalances.
//
// Operation
// - The consumer runs with enable.auto.commit=false, enable.auto.offset.store=false,
//   enable.partition.eof=false, auto.offset.reset=earliest, queued.min.messages=1000000,
//   session.timeout.ms=6000 and heartbeat.interval.ms=500 (see ingestor_impl.h), and
//   group.instance.id=instance_id when set; IngestOptions::properties may override any of them.
// - Joining: on the embedded broker the session is 3 s unless the properties set one; when the
//   group gives no partition for 4 sessions, the consumer is made again with a longer session
//   (10 s, then 45 s), because that broker drops a member whose session is shorter than the wait
//   another member's session imposes (see kEmbeddedSessionLadderMs). Ready() says what it waits
//   for ("waiting for the group's assignment since 12 s").
// - Start offsets, set in the partition list given to assign (librdkafka 2.0's seek is unsafe),
//   by ChooseStartOffset (start_offset.h) from the store's offsets and what BrokerOffsets says:
//   the partitions' ends, then offsets-for-times(window start - max_future), each one batched
//   request, all within a total bound (kAssignQueryBudgetMs). The store's offset, never a group
//   commit; moved up to the window's first record when that is later, or to the end when no
//   record is newer than the window's start (believed only when the broker names a record for
//   the time 0 of a partition that holds records); with nothing stored and no answer,
//   auto.offset.reset (earliest unless overridden): a new owner rebuilds the window from Kafka.
// - Cold records: when the start may be before the window (the broker could not say where it
//   starts), the run of records older than the window that opens the partition is skipped,
//   counted in skipped_cold (not as rejected) and logged once per partition; older means by the
//   event time the parser reads, or by the Kafka timestamp without a parse when
//   record_ts_is_event_time. The first record inside the window ends the run; after it, an event
//   older than the window is rejected as expired.
// - Records are parsed (ingest/record_parser.h), keyed and batched; a batch closes at
//   batch_max_events records or batch_max_ms and is written with its next offsets in one atomic
//   store write, then the offsets are committed to the group asynchronously (for lag monitors).
//   Rejected records are counted, logged (rate-limited), dead-lettered when configured, and
//   their offsets advance with the batch.
// - Fencing (partition_fence.h): every assigned partition is opened at a new epoch, and each
//   batch carries, per partition, the epoch its records were read at. Before each store write
//   attempt the writer leaves out the partitions no longer open at that epoch, and it commits
//   only those still open after the write. Closing partitions waits for the writes under way.
// - On revocation the open batch is written and durable before the partitions are given up, and
//   the written offsets are committed for the next owner (synchronously; when stopping, before
//   the consumer leaves the group). When that takes longer than revoke_drain_ms (a full disk),
//   the revoked partitions are given up as on a loss, so that the group is not held.
// - On an involuntary loss (librdkafka flags the assignment lost, or the consumer is no longer a
//   member: session timeout, fencing, a poller stuck past max.poll.interval.ms) nothing more is
//   written or committed for the lost partitions: they are closed in the fence (a write under way
//   finishes first), and their records are removed from the open, pending and queued batches
//   (batches_discarded). The records of partitions still owned are kept, so nothing of them is
//   dropped or skipped. Records of partitions not assigned are never tracked.
// - A fetched offset beyond the expected one that the broker no longer has (retention overtook
//   the consumer) is counted in lost_to_retention and logged as an error.
// - Formats (decoder.h): with ingest.format avro or protobuf each value is decoded to JSON text
//   before the parser, and that text is what is stored. A record whose schema cannot be fetched
//   because the registry cannot be asked (unreachable, 5xx) is not rejected: its partition is
//   paused and its records from that one on are held in order (none written, so no offset moves
//   past it), the decode retried with backoff (200 ms doubling to 5 s); once it succeeds the held
//   records are handled and the partition resumed. Ready() says why meanwhile. A revocation
//   drops the held records (the next owner reads them from Kafka).
// - Backpressure: when the queue to the writer stays full (or the disk is full) the assigned
//   partitions are paused, and resumed once every queue has drained to half.
// - Several writers: a partition always goes to the same writer (WriterFor in ingestor_impl.h),
//   so no two concurrent store writes carry the same partition; the rules above hold per writer
//   (a revocation waits for every writer, a loss removes the lost partitions from every writer's
//   batches).
// - Write errors: kNoSpace sets out_of_disk and pauses; every failed write is retried with
//   backoff, never dropped. After Stop() a failing write is given up after a few seconds, with
//   its offsets unwritten, so Kafka delivers those records again on restart.
//
// Code: ingestor.cc (start, stop, joining), ingestor_poller.cc, ingestor_rebalance.cc,
// ingestor_writer.cc, ingestor_stats.cc, with the class in ingestor_impl.h, the start rule in
// start_offset.h and the fence in partition_fence.h.
//
// Threads: a poller (polls librdkafka, parses, keys, batches; serves rebalances), `writers`
// writers (each writes the batches of its own partitions to the store and commits their offsets)
// joined to it by one bounded moodycamel queue each, and
// a monitor (reads the high watermarks librdkafka's fetcher sees each second, for lag and stall
// detection even when the poller is stuck). All named hotrow-*, owned and joined by Stop(),
// which gives the consumer at most 5 s to commit and leave the group.
//
// Thread-safety: Stats() and Ready() may be called from any thread; Stop() from one.
// What Ingestor::Start checks of `options` before it talks to a broker: librdkafka's consumer
// accepts brokers, group id, instance id and every one of `options.properties` (a name it knows,
// a value it takes). InvalidArgument naming the property otherwise, as Start would fail; for
// `hotrow check-config`, which asks no broker.
Status CheckConsumerProperties(const IngestOptions& options);

// What a service manager's watchdog asks of ingestion (service/watchdog.h): the threads that must
// keep moving for the process to be useful. Times are milliseconds of std::chrono::steady_clock
// since its epoch.
struct IngestLiveness {
  // When the poller last began an iteration of its loop (it begins one at least every 100 ms while
  // it is not held inside librdkafka's poll, a rebalance or a hand-over); 0 before its first.
  int64_t poll_began_ms = 0;
  // When the oldest store write now under way began; 0 when no writer is inside a write. A writer
  // waiting between retries of a failed write (a full disk) is not inside one.
  int64_t oldest_write_began_ms = 0;
};

class Ingestor {
 public:
  // Creates the consumer and starts consuming. `store` is not owned and must outlive the
  // Ingestor. Fails with InvalidArgument for bad options or properties librdkafka refuses.
  static Result<std::unique_ptr<Ingestor>> Start(const IngestOptions& options,
                                                 store::EventStore* store);
  virtual ~Ingestor() = default;

  // Stops fetching, writes the open batch and its offsets, leaves the group and joins every
  // thread. Idempotent. Returns the first write error, if any.
  virtual Status Stop() = 0;

  // Also valid after Stop(), with the final counts.
  virtual IngestStats Stats() const = 0;

  // Ok when partitions are assigned, ingestion is not stalled and the disk is not full; else
  // a Status whose message says which (for /readyz): "the disk is full", "waiting for the
  // group's assignment since 12 s", "ingestion stalled: ...".
  virtual Status Ready() const = 0;

  // Where the poller and the writers are (IngestLiveness). Any thread; lock-free.
  virtual IngestLiveness Liveness() const = 0;
};

}  // namespace hotrow::ingest
