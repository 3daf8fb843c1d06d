#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "access/credentials.h"
#include "cluster/coverage.h"
#include "cluster/local_answer.h"
#include "cluster/peer_client.h"
#include "cluster/route.h"
#include "cluster/standby_request.h"
#include "cluster/topic_metadata.h"
#include "common/clock.h"
#include "ingest/ingestor.h"
#include "ingest/partition_ownership.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::cluster {

struct ClusterOptions {
  // cluster.peers: the host:port of every instance of the group, this one included.
  // Default: empty (a single instance: queries answer from this store alone).
  std::vector<std::string> peers;
  // This instance's entry of `peers` (http.listen); it is answered in process, not over HTTP.
  std::string self;
  // The scheme, token and CAs peers are asked with (access/credentials.h), asked at every request.
  // Not owned; required when `peers` is set.
  const access::Credentials* credentials = nullptr;
  // A peer that has not connected or sent its next bytes within this long counts as not having
  // answered: its partitions are missing from the answer, which is never slow forever.
  // cluster.peer_timeout_ms. Default: 2 s.
  int64_t peer_timeout_ms = 2000;
  // Who this instance is: kafka.group_id and kafka.topics, named in its ?local=true answers and
  // compared with its peers'. Defaults: "hotrow", none.
  std::string group_id = "hotrow";
  std::vector<std::string> topics;
  // Where the topics' partitions are read (in the background: cluster/topic_metadata.h), and how
  // often once known. Defaults: none, 30 s.
  std::string brokers;
  std::map<std::string, std::string> kafka_properties;
  int64_t partitions_refresh_ms = 30000;
  // How often the ingestor's positions and readiness are read into the ownership. Default: 200 ms.
  int64_t freshness_refresh_ms = 200;
  // cluster.route_by_key (cluster/route.h): per-id queries ask the instances serving their ids'
  // partitions and those serving partitions not vouched for as routable. Default: off.
  ingest::KeyPartitioner route_by_key = ingest::KeyPartitioner::kOff;
  // How often the group's heads are read for routing (RouteMap), with route_by_key. A map whose
  // oldest head was asked for more than twice this long ago is not routed by. Default: 1 s.
  int64_t route_refresh_ms = 1000;
  // The clock the route map's age is counted on: monotonic, so that a wall clock set back cannot
  // make an old map look new. Not owned. Default: MonotonicClock::Default() (tests: a ManualClock).
  const Clock* monotonic_clock = MonotonicClock::Default();
};

// Answers that took partitions from standbys, and the partitions so taken (/metrics).
struct StandbyCounts {
  uint64_t answers = 0;
  uint64_t partitions = 0;
};

// How per-id queries were answered (with cluster.route_by_key): by the instances their plan
// named, by every instance, or by every instance after a routed answer came back incomplete.
struct RouteCounts {
  uint64_t routed = 0;
  uint64_t everyone = 0;
  uint64_t retried = 0;
};

// One query's view of this instance (CONTRACT.md "Group answers": one snapshot per query): its
// ownership taken once, when the query starts, and the filter built from it that every read of the
// query applies (the rows of the partitions serving in it). The head the answer carries is built
// from the same snapshot (Cluster::Head), so a partition that changes state while the query runs
// is reported as the reads saw it: served at the snapshot, its rows were read; else none were.
// Rows never leave the store while a query runs (a revoked partition's stay; the last-N cache
// falls back to the store for what it forgot), so what served at the snapshot was read whole.
struct QueryView {
  std::shared_ptr<const ingest::OwnershipSnapshot> ownership;
  query::PartitionFilter filter;
};

// One instance's part in answering for the whole consumer group (CONTRACT.md, `cluster.peers` and
// "Cluster mode in production settings"): its ownership and the freshness of each partition, the
// filter its query engine applies, the partitions the group must cover, and its peers' clients.
// The fan-out itself (ask, decide coverage, merge) is in cluster/group_query.h.
//
// Threads: hotrow-fresh (reads the ingestor's positions and readiness every
// freshness_refresh_ms), hotrow-metadata (TopicMetadata) and, with route_by_key, hotrow-route
// (reads the group's heads every route_refresh_ms), only with peers; all owned and joined by the
// destructor. Peers are asked on the HTTP server's runtime (PeerClients::Attach).
//
// Thread-safety: every method may be called from any thread, except set_ingestor and set_engine
// (once each, before queries).
class Cluster {
 public:
  // `ownership` and `store` are not owned and must outlive the Cluster.
  Cluster(const ClusterOptions& options, ingest::PartitionOwnership* ownership,
          store::EventStore* store);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Where positions and readiness are read from (Ingestor::Stats, Ready); not owned. Null:
  // neither ever changes. Returns once the freshness thread no longer uses the one before, which
  // may then be destroyed.
  void set_ingestor(const ingest::Ingestor* ingestor) {
    std::lock_guard<std::mutex> lock(ingestor_mu_);
    ingestor_ = ingestor;
  }
  // cluster.standby_replicas: the ownership of the partitions this instance follows as a standby
  // and the standby consumer that feeds it (positions and readiness, read with the ingestor's);
  // neither owned. Null: no standby. Once, before queries; `standby` may be set to null later
  // (as set_ingestor) before it is destroyed.
  void set_standby(ingest::PartitionOwnership* followed, const ingest::Ingestor* standby) {
    std::lock_guard<std::mutex> lock(ingestor_mu_);
    followed_ = followed;
    standby_ingestor_ = standby;
  }
  // What this instance's part of a scan is read from; not owned.
  void set_engine(query::QueryEngine* engine) { engine_ = engine; }
  query::QueryEngine* engine() const { return engine_; }

  // Whether peers are configured (queries fan out).
  bool enabled() const { return !options_.peers.empty(); }
  const ClusterOptions& options() const { return options_; }

  // This instance's ownership now, each partition judged (ingest/partition_ownership.h).
  // With standbys, its `followed` holds the partitions followed, less those its owned part serves.
  ingest::OwnershipSnapshot Local() const { return *LocalShared(); }
  // The same, shared between the queries of the next few milliseconds (PartitionOwnership::Shared).
  std::shared_ptr<const ingest::OwnershipSnapshot> LocalShared() const;
  int64_t max_staleness_ms() const { return ownership_->options().max_staleness_ms; }

  // The view one query reads through: a snapshot (LocalShared) and its filter. For a request
  // that names standby partitions (StandbyRequest on this thread: `?local=true&standby=...`), the
  // snapshot holds exactly those partitions, as this instance owns or follows them: the filter
  // reads those of them that serve, and the head names the rest stale.
  QueryView View();
  // What this instance says of itself for a query that read through a view of `snapshot`: the
  // partitions serving in it covered, the rest it owns stale.
  LocalHead Head(const ingest::OwnershipSnapshot& snapshot) const;

  // Every partition of the topics as last read, and the topics not known yet; never waits.
  GroupPartitions KnownPartitions() const;

  // Routing (cluster/route.h): the plan for a query of `ids`, or nullopt to ask every instance
  // (routing off, no recent map, or nothing to gain). The map is read in the background.
  std::optional<RoutePlan> PlanRoute(const std::vector<std::string>& ids) const;
  bool routing() const {
    return enabled() && options_.route_by_key != ingest::KeyPartitioner::kOff;
  }
  // A routed answer came back incomplete (a handoff the map had not seen): reads the map again
  // soon.
  void RouteMissed();
  void CountRoute(bool routed, bool retried);
  RouteCounts route_counts() const;
  // Standbys: an answer that took `partitions` (> 0) from standbys; counts for /metrics.
  void CountStandby(size_t partitions) {
    if (partitions == 0) return;
    standby_answers_.fetch_add(1, std::memory_order_relaxed);
    standby_partitions_.fetch_add(partitions, std::memory_order_relaxed);
  }
  uint64_t standby_answers() const { return standby_answers_.load(); }
  uint64_t standby_partitions() const { return standby_partitions_.load(); }
  // A stopping instance (service::Server::Stop): from now on its heads name no partition as a
  // standby, so no answer chooses it in a first round; a second round that chose it before is
  // still served (View) for as long as the followed partitions serve.
  void StopNamingStandbys() { naming_standbys_.store(false); }
  // Standbys judged by the owner's position (CONTRACT.md "cluster.standby_replicas"): keeps, per
  // partition, the highest position (LocalHead::positions) an answer of its owner reported to this
  // instance, from the first rounds' heads and the route map's reads.
  void NoteOwnerPositions(const LocalHead& owner);
  // A standby's answer (a second round's): its partitions whose position is below that, or not
  // given, move from `partitions` to `stale`: a client may have seen their newer events already.
  // Returns how many moved.
  size_t JudgeStandby(LocalHead* standby) const;
  // The positions NoteOwnerPositions kept of `partitions` (those it knows), sent with a standby
  // round's request so that the standby waits for its store to reach them (View).
  std::map<store::TopicPartition, int64_t> OwnerPositionsOf(const Partitions& partitions) const;
  // How long a standby request waits at most for its store to reach the owner's positions: a
  // standby follows live and is usually a batch behind. Then it answers what it holds, and the
  // asking instance judges it (JudgeStandby).
  static constexpr int64_t kStandbyCatchUpMs = 500;
  // The test hook of AnswerForGroup and AskGroup: runs between an answer's rounds (none: nothing).
  // Once, before queries.
  void set_between_rounds_for_test(std::function<void()> hook) {
    between_rounds_for_test_ = std::move(hook);
  }
  void BetweenRounds() const {
    if (between_rounds_for_test_) between_rounds_for_test_();
  }
  // The test hook of View: runs on the query's thread once its snapshot and filter are taken,
  // before any read of the query (none: nothing). A test flips a partition there, so that the
  // query's reads run after a flip its view did not see. May be set at any time.
  void set_view_taken_for_test(std::function<void()> hook) {
    std::lock_guard<std::mutex> lock(view_hook_mu_);
    view_taken_for_test_ = std::move(hook);
  }
  // The test hook of the route map's reads: runs once the heads are in, before the map is built
  // from them (none: nothing). Once, before the route thread's first read (in the constructor's
  // caller: set before any peer answers, as the first read waits for them).
  void set_route_heads_read_for_test(std::function<void()> hook) {
    std::lock_guard<std::mutex> lock(route_mu_);
    route_heads_read_for_test_ = std::move(hook);
  }
  // cluster.standby_replicas is on here (set_standby was given an ownership).
  bool has_standby() const { return followed_ != nullptr; }
  // The last map (for /v1/cluster).
  RouteMap route_map() const;
  // Its age now (its oldest head's, on monotonic_clock); nullopt when never read.
  std::optional<int64_t> route_map_age_ms() const;

  // This instance's group and topics, as its ?local=true answers name them.
  const LocalHead& identity() const { return identity_; }
  // Ok when a peer's answer comes from an instance of the same group and topics; else counts
  // it as refused and says why.
  Status CheckPeer(const LocalHead& peer);
  uint64_t peer_answers_refused() const { return refused_.load(); }

  PeerClients& peers() { return *peers_; }

 private:
  void RefreshFreshness();
  void RefreshRoute();
  // Only rows of the partitions serving in `snapshot`.
  query::PartitionFilter FilterOf(const ingest::OwnershipSnapshot& snapshot);

  // Constant after construction.
  const ClusterOptions options_;
  ingest::PartitionOwnership* const ownership_;
  store::EventStore* const store_;
  LocalHead identity_;
  std::mutex ingestor_mu_;                      // held while the ingestor is asked
  const ingest::Ingestor* ingestor_ = nullptr;  // GUARDED_BY(ingestor_mu_)
  // Standbys (set_standby); followed_ is constant once queries run.
  ingest::PartitionOwnership* followed_ = nullptr;
  const ingest::Ingestor* standby_ingestor_ = nullptr;  // GUARDED_BY(ingestor_mu_)
  query::QueryEngine* engine_ = nullptr;
  std::unique_ptr<PeerClients> peers_;
  std::unique_ptr<TopicMetadata> metadata_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> standby_answers_{0}, standby_partitions_{0};
  std::atomic<bool> naming_standbys_{true};
  std::function<void()> between_rounds_for_test_;
  mutable std::mutex view_hook_mu_;
  std::function<void()> view_taken_for_test_;  // GUARDED_BY(view_hook_mu_)
  mutable std::mutex positions_mu_;
  std::map<store::TopicPartition, int64_t> owner_positions_;  // GUARDED_BY(positions_mu_)

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                          // GUARDED_BY(mu_)
  std::map<std::string, uint16_t> topic_numbers_;  // GUARDED_BY(mu_)
  std::thread freshness_;

  // Routing.
  mutable std::mutex route_mu_;
  std::condition_variable route_wake_;
  RouteMap route_map_;                               // GUARDED_BY(route_mu_)
  bool route_stale_ = false;                         // GUARDED_BY(route_mu_): read it again now
  std::function<void()> route_heads_read_for_test_;  // GUARDED_BY(route_mu_)
  std::atomic<uint64_t> routed_{0}, everyone_{0}, retried_{0};
  std::thread route_;
};

}  // namespace hotrow::cluster
