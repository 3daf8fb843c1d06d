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

// What one instance said it answers for: the partitions it serves (owned, ready, fresh, window
// complete: ingest/partition_ownership.h), and those it owns but cannot vouch for.
struct PeerCoverage {
  bool answered =
      false;  // false: it did not answer in time, answered with an error, or was refused
  Partitions covered;
  Partitions stale;
};

// Every partition of the consumed topics, as the brokers' metadata last said, and the topics
// whose partition list is not known (never read, or the brokers reported an error for them).
struct GroupPartitions {
  Partitions partitions;                    // sorted
  std::vector<std::string> unknown_topics;  // sorted
};

struct CoverageDecision {
  // Every partition of the topics is covered by exactly one answering instance, and every topic's
  // partition list is known.
  bool complete = false;
  // The partitions no answering instance covers or owns, sorted.
  Partitions missing;
  // The partitions no answering instance covers but some answering instance owns without serving
  // (not ready, behind by more than cluster.max_staleness, or its window not whole), sorted.
  Partitions stale;
  // The topics whose partition list is unknown: as missing, whatever the instances cover.
  std::vector<std::string> unknown_topics;
  // For each covered partition, the index (in `peers`) of the one instance whose events count:
  // the first that covers it. An instance that covers a partition another one was chosen for
  // (a handoff seen from both sides) has its events of that partition dropped, never doubled.
  std::map<store::TopicPartition, size_t> owner;
  // The partitions answered by a standby (CONTRACT.md "cluster.standby_replicas"): their owners
  // did not serve them, an instance that follows them did. Sorted; set by MarkFromStandby.
  Partitions from_standby;
};

// `all` is what the brokers' metadata says (GroupPartitions); the partitions to cover are those
// and every partition an answering instance reports as assigned (covered or stale): a partition
// outside the metadata (metadata older than a new partition) counts as covered when an instance
// covers it and as stale when one owns it without serving it. A topic whose list is unknown makes the
// answer incomplete however many instances answer (CONTRACT.md: a partition list that cannot be
// read is not an empty list).
CoverageDecision DecideCoverage(const GroupPartitions& all, const std::vector<PeerCoverage>& peers);

// Standbys (CONTRACT.md "cluster.standby_replicas"): which instance to ask, in a second round,
// for each partition `decision` left uncovered (missing or stale) that some instance said it
// serves as a standby (`standby[i]`, sorted, from instance i's first answer). Each such partition
// goes to the first instance that serves it (index 0, this instance, before the peers); returns
// per instance the partitions to ask it for (empty: not asked), each partition once, so no
// partition is counted from two standbys.
std::vector<Partitions> ChooseStandbys(const CoverageDecision& decision,
                                       const std::vector<Partitions>& standby);
// Sets `decision->from_standby` to the partitions it gives to an answer at index `first` or
// later (the second round's answers, appended after the first round's).
void MarkFromStandby(CoverageDecision* decision, size_t first);

// One event of an instance's answer: the fields the merge orders by, and its JSON object as the
// instance wrote it (passed on byte for byte: the payload is never re-serialised).
struct PeerEvent {
  std::string id;  // its "event_id"
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

// {"t":[0,3],"u":[1]}: partitions grouped by topic, sorted.
void AppendPartitionsJson(Partitions partitions, std::string* out);
// ,"complete":true  or  ,"complete":false,"missing":{...},"stale":{...}[,"unknown_topics":[...]]
void AppendCoverageJson(const CoverageDecision& decision, std::string* out);

}  // namespace hotrow::cluster
