#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "query/query_engine.h"
#include "store/event_store.h"

// The pure part of answering for the whole consumer group (CONTRACT.md "cluster.peers"):
// which instance's events count for which partition, what is missing, and the merge of the
// instances' answers. No I/O; unit-tested in tests/cluster/cluster_coverage_test.cc.
namespace hotrow::cluster {

using Partitions = std::vector<store::TopicPartition>;

// What one instance said it answers for: the partitions it owns with a complete, caught-up window.
struct PeerCoverage {
  bool answered = false;  // false: it did not answer in time, or answered with an error
  Partitions covered;
};

struct CoverageDecision {
  // Every partition of `all` is covered by exactly one answering instance.
  bool complete = false;
  // The partitions of `all` that no answering instance covers, sorted.
  Partitions missing;
  // For each covered partition, the index (in `peers`) of the one instance whose events count:
  // the first that covers it. An instance that covers a partition another one was chosen for
  // (a handoff seen from both sides) has its events of that partition dropped, never doubled.
  std::map<store::TopicPartition, size_t> owner;
};

// `all` is every partition of the consumed topics (the broker's metadata); a covered partition
// outside it (metadata older than a new partition) counts as well. With `all` empty (the brokers
// have not answered yet) the answer is complete only when every instance answered.
CoverageDecision DecideCoverage(const Partitions& all, const std::vector<PeerCoverage>& peers);

// One event of an instance's answer: the fields the merge orders by, and its JSON object as the
// instance wrote it (passed on byte for byte: the payload is never re-serialised).
struct PeerEvent {
  int64_t ts_ms = 0;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string json;
};

// Merges the events the instances answered (per_peer[i] from peers[i]), keeping only those of
// partitions `decision.owner` gives to their instance, in `order` (ts, then topic name, partition
// and offset, in the same direction), at most `limit`.
std::vector<PeerEvent> MergePeerEvents(std::vector<std::vector<PeerEvent>> per_peer,
                                       const CoverageDecision& decision, int64_t limit,
                                       query::Order order);

// Reads an instance's `?local=true` answer to latest or range: {"events": [E...], "partitions":
// {...}}. InvalidArgument when it is not one.
Status ParseLocalAnswer(std::string_view body, std::vector<PeerEvent>* events,
                        Partitions* covered);
// Reads one NDJSON line of a local scan: an event (`*is_event`), or the final
// {"complete": ..., "partitions": {...}} line (covered set in `*covered`).
Status ParseScanLine(std::string_view line, bool* is_event, PeerEvent* event, Partitions* covered);
// Reads the "partitions" member of an object (a /v1/cluster?local=true answer).
Status ParseServingPartitions(std::string_view body, Partitions* out);
// Reads {"t":[0,3]} (AppendPartitionsJson's form).
Status ParsePartitionsJson(std::string_view text, Partitions* out);

// {"t":[0,3],"u":[1]}: partitions grouped by topic, sorted.
void AppendPartitionsJson(Partitions partitions, std::string* out);

}  // namespace hotrow::cluster
