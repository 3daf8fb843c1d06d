#pragma once

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
// `standby=t:0,t:3` (Kafka topic names hold neither ':' nor ','): the partitions, or
// InvalidArgument; and the form.
Result<Partitions> ParseStandbyParam(std::string_view text);
std::string StandbyParam(const Partitions& partitions);

}  // namespace hotrow::cluster
