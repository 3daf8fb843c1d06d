#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/coverage.h"
#include "cluster/local_answer.h"
#include "query/index_query.h"
#include "query/query_engine.h"

// Answering for the whole consumer group (CONTRACT.md, `cluster.peers`): this instance's part of
// a query and the fan-out to its peers, with the coverage decision and the merge. The HTTP layer
// (http/cluster_handlers.cc) only reads requests and writes these results.
namespace hotrow::cluster {

// One latest or range query (per id or per index value), as every instance runs it.
struct GroupQuery {
  // What a peer is asked: the path and query string, without `local` (added here).
  std::string peer_target;
  int64_t limit = 0;
  query::Order order = query::Order::kDesc;
  // The ids of a per-id query, by which it may be routed (Cluster::PlanRoute); empty: every
  // instance is asked (index queries).
  std::vector<std::string> route_ids;
  // This instance's events, read with `filter` (the query's view: Cluster::View) applied to every
  // read, and for index queries the unindexed spans.
  std::function<Status(const query::PartitionFilter& filter, std::vector<query::Event>* events,
                       std::vector<query::UnindexedSpan>* unindexed)>
      run;
};

// This instance's part: its events of the partitions serving in the query's one view of its
// ownership (Cluster::View), and what it says of itself from that same view (a `?local=true`
// answer's head).
struct LocalPart {
  Status status;
  std::vector<query::Event> events;
  LocalHead head;
};
LocalPart AnswerLocally(Cluster* cluster, const GroupQuery& q);

// Every instance's part (this one's in process, the peers' over HTTP in parallel), merged.
struct GroupAnswer {
  // Not ok only when this instance's part failed for a reason other than Busy.
  Status status;
  std::vector<PeerEvent> events;  // in the query's order, at most its limit
  // Every instance's unindexed spans that can hold events of the answer, in the query's order.
  std::vector<query::UnindexedSpan> unindexed;
  CoverageDecision coverage;
  // Instances asked whose answer was not had (no answer in time, an error, Busy, refused).
  size_t unanswered = 0;
  // A routed answer: an asked instance serves a partition the plan left out and no longer vouches
  // for as routable (the route map was older than that): asked again of every instance.
  bool unvouched = false;
};
GroupAnswer AnswerForGroup(Cluster* cluster, const GroupQuery& q);

// A query whose answer is not one list of events (the device queries, CONTRACT.md "Device state
// and series"), as every instance runs it: each writes its `?local=true` answer, which the asking
// instance reads back (its own included, in process) with `parse`.
struct GroupAsk {
  // What a peer is asked: the path and query string, without `local` (added here).
  std::string peer_target;
  // When not empty: peers are asked with a POST of this JSON body instead of a GET.
  std::string post_body;
  // As GroupQuery::route_ids.
  std::vector<std::string> route_ids;
  // This instance's `?local=true` answer body.
  std::function<Result<std::string>()> local;
  // Reads instance `index`'s answer (0: this one, i + 1: peers[i]; from GroupSize on, the same
  // instances' standby answers, round by round: AnswerSlots) into the caller's state and
  // its head into `head`; not ok refuses the answer (logged, and its partitions are missing).
  std::function<Status(size_t index, std::string_view body, LocalHead* head)> parse;
};
struct GroupAskAnswer {
  // Not ok only when this instance's part failed for a reason other than Busy.
  Status status;
  // Per instance (0: this one): whether its answer was read and accepted, and what it covered.
  std::vector<bool> accepted;
  std::vector<Partitions> covered;
  CoverageDecision coverage;
  size_t unanswered = 0;   // as GroupAnswer's
  bool unvouched = false;  // as GroupAnswer's
};
// Every instance's answer (the peers' over HTTP in parallel, this one's meanwhile), read and
// judged as AnswerForGroup does; the caller merges what `parse` kept.
GroupAskAnswer AskGroup(Cluster* cluster, const GroupAsk& ask);
size_t GroupSize(Cluster* cluster);  // this instance and its peers
// The standby rounds after the first (CONTRACT.md "cluster.standby_replicas"): the second asks
// one serving standby per partition left uncovered, the third another one for what the second's
// did not give.
inline constexpr size_t kStandbyRounds = 2;
// The indexes GroupAsk::parse may be called with: 0..GroupSize - 1 for the first round, then as
// many again for each standby round (round r's: index r * GroupSize + i for instance i).
size_t AnswerSlots(Cluster* cluster);

// One scan, as every instance runs it.
struct GroupScan {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  int64_t limit = query::kNoLimit;
  // True once the server is stopping: the scan ends at its next event.
  std::function<bool()> stopping;
};

// How a scan ended: `last_line` is its last NDJSON line ({"complete": ...}, or {"error": ...}
// when `status` is not ok); `cut` when the client went away (nothing more can be written).
struct ScanEnd {
  Status status;
  std::string last_line;
  bool cut = false;
};

// A `?local=true` scan: this instance's serving partitions; `line` gets each event's line (false
// from it: the client went away).
ScanEnd ScanLocally(Cluster* cluster, const GroupScan& scan,
                    const std::function<bool(std::string_view)>& line);
// The scan of the whole group: this instance's share first, then each peer's in turn, every
// event of a partition from the one instance the coverage decision gives it to. With a limit the
// answer is exact: `limit` events, or fewer only when fewer exist, and then complete only when
// every partition was covered.
ScanEnd ScanGroup(Cluster* cluster, const GroupScan& scan,
                  const std::function<bool(std::string_view)>& line);

// Reads a peer's `/v1/cluster?local=true` reply into `head`, checking who it is
// (Cluster::CheckPeer); false with `why` set otherwise.
bool ReadPeerStatus(Cluster* cluster, const PeerReply& reply, LocalHead* head, std::string* why);

// GET /v1/cluster?local=true (cluster/group_status.cc): this instance's ownership, readiness and
// freshness, the partitions it follows as a standby, with its head.
std::string LocalStatusJson(Cluster* cluster);
// GET /v1/cluster: every instance's status (reachable, ready, stale partitions, lag) and the
// group's coverage.
std::string GroupStatusJson(Cluster* cluster);

// `path` + "?" + `query` + "&local=true".
std::string WithLocal(const std::string& path, const std::string& query);

}  // namespace hotrow::cluster
