#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cluster/cluster.h"
#include "http/query_slots.h"
#include "ingest/ingestor.h"
#include "ingest/partition_ownership.h"
#include "live/stream_hub.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::http {

// What an HTTP query asked for; the `kind` label of the query metrics.
enum class QueryKind { kLatest, kRange, kScan, kLatestAll, kLatestIds, kSeries };
// "latest", "range", "scan", "latest_all", "latest_ids", "series"
std::string_view QueryKindName(QueryKind kind);

// How a query ended; the `outcome` label.
enum class QueryOutcome {
  kOk,
  kBadRequest,  // 4xx: a bad parameter
  kBusy,        // 503: too many queries at once
  kError,       // the store failed, or a scan was cut short
  kCancelled,   // the client went away or the server is stopping
};
std::string_view QueryOutcomeName(QueryOutcome outcome);

// The Prometheus metrics of one hotrow process (GET /metrics), in the text exposition format
// written by prometheus-cpp's TextSerializer.
//
// Two sources:
// - events that only the HTTP layer sees (queries by kind and outcome, their latency, responses by
//   status code) are counted as they happen in a prometheus::Registry;
// - everything that the ingestor and the store already count (IngestStats, StoreStats) is read at
//   scrape time and turned into counters and gauges then, so the numbers in /metrics and
//   /v1/stats are the same numbers and nothing is counted twice.
//
// Thread-safety: every method may be called from any thread.
class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  void RecordQuery(QueryKind kind, QueryOutcome outcome, double seconds);
  // How a query got its slot (http/query_slots.h): a peer's (`?local=true`) or a client's, at
  // once, after waiting in the queue, or not at all (shed: answered 503).
  void RecordQuerySlot(bool peer, SlotOutcome outcome);
  void RecordHttpResponse(int status);
  // One bearer-token decision (http/auth.h): "ok", "missing", "malformed" or "wrong".
  void RecordAuth(std::string_view outcome);
  // One re-read of the access files (access/credentials.h, Reload, on SIGHUP): ok, or failed
  // (every old value kept).
  void RecordAccessReload(bool ok);
  // The transport's connections (http/transport.h), read at scrape time: open now, and refused
  // past http.max_connections since the start (hotrow_http_connections,
  // hotrow_http_connections_refused_total).
  void SetConnections(size_t open, uint64_t refused_total);

  // The whole exposition. `ingest` is null when this process does not ingest (then no ingest
  // metric is written).
  // `work` (null: not written) is the query engine's store work: cursors, seeks, rows read.
  // `ownership` (null: not written) is which partitions this instance owns in cluster mode, and
  // which are rebuilding with their progress, which are stale and how stale.
  // `peer_answers_refused` (null: not written) counts peers' answers refused for their group or
  // topics (cluster/cluster.h).
  // `cache` (null: not written) is the query engine's last-N cache.
  // `routed` (null: not written) counts how per-id queries were answered with
  // cluster.route_by_key (cluster/cluster.h, RouteCounts).
  // `streams` (null: not written) is the live streams' hub (live/stream_hub.h).
  // `standby` (null: not written) counts answers that took partitions from standbys
  // (cluster.standby_replicas); the partitions followed are `ownership->followed`.
  std::string Render(const ingest::IngestStats* ingest, const store::StoreStats& store,
                     const store::StoreOptions& store_options,
                     const query::QueryWorkStats* work = nullptr,
                     const ingest::OwnershipSnapshot* ownership = nullptr,
                     const uint64_t* peer_answers_refused = nullptr,
                     const query::LastCacheStatus* cache = nullptr,
                     const cluster::RouteCounts* routed = nullptr,
                     const live::StreamHubStats* streams = nullptr,
                     const cluster::StandbyCounts* standby = nullptr) const;

 private:
  struct Families;
  std::unique_ptr<Families> families_;
};

// The resident set size of this process in bytes, from /proc/self/statm; 0 when unknown.
uint64_t ResidentBytes();

}  // namespace hotrow::http
