#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/coverage.h"
#include "cluster/local_answer.h"

// The merge of the device-state queries over the group (CONTRACT.md "Device state and series"):
// every instance's `?local=true` answer, kept only for the partitions the coverage decision gives
// it (CoverageDecision::owner), merged into the answer one instance holding every partition would
// give. Pure; unit-tested through real instances in tests/cluster/cluster_devices_test.cc.
namespace hotrow::cluster {

// The newest event of every id, one page: ids in byte order, at most `limit`, `next` the cursor
// of the page after (none when no instance has more).
struct MergedLatestAll {
  std::vector<PeerEvent> events;
  std::optional<std::string> next;
};
// `per_instance[i]` is instance i's page (null: it did not answer or was refused). Each instance
// answered the same `after` and `limit`; an instance whose page was full (its `next` set) may hold
// ids after its page's last id that it did not send, so the merged page stops at the smallest such
// last id: no id is skipped.
MergedLatestAll MergeLatestAll(const std::vector<const PeerLatestAll*>& per_instance,
                               const CoverageDecision& decision, int64_t limit);

// The newest `n` events of each of `ids`, newest first in the contract's order (ts, then topic
// name, partition, offset, descending), each event once. `per_instance[i]` as above.
std::vector<std::vector<PeerEvent>> MergeLatestIds(
    const std::vector<std::string>& ids,
    const std::vector<const std::map<std::string, std::vector<PeerEvent>>*>& per_instance,
    const CoverageDecision& decision, int n);

// A series' steps over the group: count and skipped summed, min of mins, max of maxes, the sum
// summed (avg = sum / count), `last` the value of the newest event (ts, then topic name,
// partition, offset) over every instance. An instance's aggregates cannot be split by partition,
// so an instance that covers a partition the decision gives another one (a handoff seen from both
// sides) is left out whole, and the partitions given to it are added to `decision`'s missing.
// REQUIRES: every answer's step_ms is `step_ms`.
PeerSeries MergeSeries(const std::vector<const PeerSeries*>& per_instance,
                       const std::vector<Partitions>& covered, int64_t step_ms,
                       CoverageDecision* decision);

}  // namespace hotrow::cluster
