#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "cluster/coverage.h"
#include "common/status.h"

namespace hotrow::cluster {

// The partitions the `?local=true&standby=...` request being served on this thread asks for
// (CONTRACT.md "cluster.standby_replicas"); empty for any other request. Set by the HTTP layer
// when it reads `standby`, cleared before each request, and set around this instance's own
// in-process part of a second round (StandbyScope); read by Cluster::View.
const Partitions& StandbyRequest();
void SetStandbyRequest(Partitions partitions);
class StandbyScope {
 public:
  explicit StandbyScope(Partitions partitions);
  ~StandbyScope();
  StandbyScope(const StandbyScope&) = delete;
  StandbyScope& operator=(const StandbyScope&) = delete;

 private:
  Partitions previous_;
};
// The offsets the same request asks this instance's store to hold at least, per partition (the
// owner's last known positions: Cluster::NoteOwnerPositions); empty for any other request. Set
// with the partitions: by SetStandbyRequest from what ParseStandbyParam read last on this thread,
// and by StandbyScope.
const std::map<store::TopicPartition, int64_t>& StandbyRequestPositions();
// A StandbyScope with positions.
class StandbyPositionsScope {
 public:
  explicit StandbyPositionsScope(std::map<store::TopicPartition, int64_t> positions);
  ~StandbyPositionsScope();
  StandbyPositionsScope(const StandbyPositionsScope&) = delete;
  StandbyPositionsScope& operator=(const StandbyPositionsScope&) = delete;

 private:
  std::map<store::TopicPartition, int64_t> previous_;
};
// `standby=t:0,t:3@1500` (Kafka topic names hold neither ':' nor ',' nor '@'): the partitions,
// each with the offset its owner last reported (`@N`, optional), or InvalidArgument. The offsets
// are kept on this thread for the SetStandbyRequest that follows (the HTTP layer passes the
// partitions on). And the form, with the offsets of `positions` that name a partition asked.
Result<Partitions> ParseStandbyParam(std::string_view text);
std::string StandbyParam(const Partitions& partitions,
                         const std::map<store::TopicPartition, int64_t>& positions = {});

}  // namespace hotrow::cluster
