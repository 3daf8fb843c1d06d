#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/coverage.h"
#include "common/status.h"
#include "query/index_query.h"

// The wire form of an instance's `?local=true` answers (CONTRACT.md, "Cluster mode in production
// settings"), written by the answering instance and read by the one that fans out: what the
// instance vouches for, and who it is. Pure; tested in tests/cluster/cluster_coverage_test.cc.
namespace hotrow::cluster {

// What an instance says of itself with its events.
struct LocalHead {
  // The partitions it served for the whole query (before and after it ran), and those it owns but
  // does not serve (ingest/partition_ownership.h: not ready, not fresh, window not whole).
  Partitions partitions;
  Partitions stale;
  // The partitions it follows and serves as a standby (cluster.standby_replicas), sorted; not
  // counted from this answer, which holds none of their events: the asking instance may ask it
  // for them (`?local=true&standby=...`) when no owner served them.
  Partitions standby;
  // Who it is: its kafka.group_id and kafka.topics (sorted). An answer from an instance of another
  // group or other topics is refused (SameGroup).
  std::string group;
  std::vector<std::string> topics;
  // Index queries: the spans of its buckets made before the field was indexed.
  std::vector<query::UnindexedSpan> unindexed;
  // With cluster.route_by_key: the partitions it serves that it vouches for as routable
  // (ingest/partition_ownership.h, OwnedPartition::routable), and the partition count of each
  // topic their records were checked against. Empty otherwise (and then not written).
  Partitions routable;
  std::map<std::string, int32_t> route_partitions;
  // The next offset its store holds (everything before is stored) of each partition it served
  // for this answer, as it was once the answer was read: what a standby answering later must hold
  // at least (Cluster::NoteOwnerPositions, JudgeStandby). Only partitions whose offset is known.
  std::map<store::TopicPartition, int64_t> positions;
  // Every partition it owns served.
  bool complete = false;
  // In /v1/cluster?local=true answers only: whether the instance is ready (ingestion neither
  // stalled nor out of disk) and its lag in records over every owned partition.
  bool ready = true;
  int64_t lag = 0;
};

// ,"partitions":{...},"stale":{...},"group":G,"topics":[...][,"unindexed":[...]]
// [,"routable":{...},"route_partitions":{"t":N}][,"positions":{"t":[[P,OFFSET]...]}],"complete":B
void AppendLocalHead(const LocalHead& head, std::string* out);
// ,"unindexed":[{"from":MS,"to":MS}...]; nothing when empty.
void AppendUnindexedJson(const std::vector<query::UnindexedSpan>& spans, std::string* out);

// Reads a `?local=true` answer to latest or range (per id or index value): {"events": [E...],
// "partitions": ..., "stale": ..., "group": ..., "topics": ...}. InvalidArgument when it is not
// one.
Status ParseLocalAnswer(std::string_view body, std::vector<PeerEvent>* events, LocalHead* head);
// A `?local=true` answer to GET /v1/latest without ids (CONTRACT.md "Device state and series"):
// one page of the newest event of every id, ids in byte order, and the instance's `next`.
struct PeerLatestAll {
  std::vector<PeerEvent> events;
  std::optional<std::string> next;
};
Status ParseLocalLatestAll(std::string_view body, PeerLatestAll* out, LocalHead* head);
// A `?local=true` answer to the latest of many ids: {"ids": {"A": [E...], ...}, head...}.
Status ParseLocalLatestIds(std::string_view body,
                           std::map<std::string, std::vector<PeerEvent>>* out, LocalHead* head);

// One step of a `?local=true` series answer: every aggregate, the sum, and where `last` was found
// (what the merge orders the instances' `last` by).
struct PeerSeriesPoint {
  int64_t t_ms = 0;
  uint64_t count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
  double last = 0;
  int64_t last_ts_ms = 0;
  std::string last_topic;
  int32_t last_partition = 0;
  int64_t last_offset = 0;
};
struct PeerSeries {
  int64_t step_ms = 0;
  std::vector<PeerSeriesPoint> points;  // oldest first
  uint64_t absent = 0;
  uint64_t not_number = 0;
};
Status ParseLocalSeries(std::string_view body, PeerSeries* out, LocalHead* head);

// Reads one NDJSON line of a local scan: an event (`*is_event`), or the last line
// {"complete": ..., "partitions": ..., ...} into `head`.
Status ParseScanLine(std::string_view line, bool* is_event, PeerEvent* event, LocalHead* head);
// Reads a /v1/cluster?local=true answer's head (its other members are for people).
Status ParseClusterLocal(std::string_view body, LocalHead* head);
// Reads {"t":[0,3]} (AppendPartitionsJson's form).
Status ParsePartitionsJson(std::string_view text, Partitions* out);

// Ok when `peer` names the same group and topics as `self`; else InvalidArgument saying which
// differs (the answer is refused and counted).
Status SameGroup(const LocalHead& self, const LocalHead& peer);

}  // namespace hotrow::cluster
