#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/coverage.h"
#include "common/status.h"

// The group's view per partition in GET /v1/cluster (CONTRACT.md "Standby replicas"): for each
// topic:partition, the instance that owns it and the instances that follow it as a standby, each
// with its lag and whether it serves, and the instance an answer would take it from now. Read from
// the instances' `/v1/cluster?local=true` statuses (their "owned" and "followed" lists). Pure;
// tested in tests/cluster/cluster_coverage_test.cc and, through HTTP, cluster_fanout_test.cc.
namespace hotrow::cluster {

// One instance's hold on one partition, as its status says.
struct PartitionHolding {
  std::string address;  // the instance (its entry of cluster.peers)
  bool serving = false;
  bool rebuilding = false;  // owners only: reading its window from Kafka after the assignment
  int64_t lag = 0;          // records between its stored position and the high watermark
  int64_t staleness_ms = -1;
  std::string why;  // why it does not serve; empty when it serves
};

// What one instance's status said it owns and follows. `answered` false: it gave no status
// (unreachable, refused, not a status), so it holds nothing in the view.
struct InstanceHoldings {
  std::string address;
  bool answered = false;
  std::vector<std::pair<store::TopicPartition, PartitionHolding>> owned;
  std::vector<std::pair<store::TopicPartition, PartitionHolding>> followed;
};

// Reads the "owned" and "followed" lists of a /v1/cluster?local=true answer of the instance at
// `address` into `out` (answered set). InvalidArgument when the body is not such an answer.
Status ReadHoldings(std::string_view status, const std::string& address, InstanceHoldings* out);

struct PartitionHolders {
  store::TopicPartition partition;
  // The instances that say they own it: one, none (its owner did not answer, or the group has not
  // assigned it), or two while a hand-over is seen from both sides.
  std::vector<PartitionHolding> owners;
  std::vector<PartitionHolding> standbys;  // in the order of the instances (this one first)
  // The instance an answer takes it from: the owner that serves, else the first standby that
  // serves (the order ChooseStandbys asks in); empty when none serves.
  std::string served_by;
  bool from_standby = false;  // served_by is a standby
  int serving_copies = 0;     // owners and standbys that serve it
};

// One entry per partition of `all` (the brokers' metadata) and of every partition an instance
// owns or follows, sorted by (topic, partition).
std::vector<PartitionHolders> CollectHolders(const Partitions& all,
                                             const std::vector<InstanceHoldings>& instances);

// ,"by_partition":[{"topic":T,"partition":P,"owner":HOLDING|null[,"other_owners":[HOLDING...]],
// "standbys":[HOLDING...],"served_by":A|null,"from_standby":B,"serving_copies":N}...]
// where HOLDING is {"address":A,"serving":B,"lag":N,"staleness_ms":N[,"rebuilding":B]
// [,"why":W]} ("rebuilding" for owners only, "why" when not serving). "owner" is the owner that
// serves, else the first.
void AppendHoldersJson(const std::vector<PartitionHolders>& holders, std::string* out);

}  // namespace hotrow::cluster
