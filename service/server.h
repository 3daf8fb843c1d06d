#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "access/credentials.h"
#include "cluster/cluster.h"
#include "common/status.h"
#include "config/config.h"
#include "http/auth.h"
#include "http/metrics.h"
#include "http/server.h"
#include "ingest/ingestor.h"
#include "live/stream_hub.h"
#include "query/query_engine.h"
#include "service/cache_ownership.h"
#include "store/event_store.h"

namespace hotrow::service {

// One running hotrow service: the store, the query engine, the HTTP API, ingestion and a
// housekeeping thread, wired from a Config. `hotrow serve` runs one; `hotrow demo` runs one in
// process beside its embedded broker and producer.
//
// Operation:
// - Start opens the store, starts the query engine (whose last-N cache is rebuilt from the store
//   in the background), the ingestor and the HTTP server, then the housekeeping thread, which
//   drops expired buckets every second (in cluster mode it also tells the cache of partitions no
//   longer owned) and logs a one-line progress every 10 s (events/s, lag, buckets, resident
//   memory).
// - Stop stops fetching and writes the open batch with its offsets (Ingestor::Stop), stops the
//   HTTP server (running scans are cut), stops housekeeping and closes the store, in that order:
//   once ingestion has stopped, everything consumed is durable. With standbys, the heads stop
//   naming followed partitions first, and the standby consumer stops only after the HTTP server
//   (it keeps what a peer's second round may ask for fresh until then).
//
// Thread-safety: Stop() from one thread; the accessors from any.
class Server {
 public:
  // Fails with the store's Status (Incompatible, Corruption, IOError...) prefixed with the store
  // path, InvalidArgument for options the ingestor or the HTTP server refuse, IOError when the
  // HTTP address cannot be bound. Whatever was started is stopped again on failure.
  static Result<std::unique_ptr<Server>> Start(const config::Config& config);
  ~Server();  // Stop()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The address the HTTP API is bound to, "127.0.0.1:8080" (the real port when 0 was asked).
  std::string http_address() const;
  // Re-reads http.token_file, http.tls_cert / http.tls_key, cluster.peer_ca and
  // cluster.peer_token_file (on SIGHUP): the HTTP server's next handshakes and token checks and the
  // peers' next requests use them. All or
  // nothing: on failure everything old stays (for peer clients made afterwards too) and the
  // error, naming the file, is returned. Counted in /metrics (hotrow_access_reloads_total).
  Status ReloadAccess();
  ingest::IngestStats ingest_stats() const;
  // For the service manager's watchdog (service/watchdog.h): where ingestion's threads are, and
  // whether the HTTP API answers its own GET /healthz within `timeout_ms`.
  ingest::IngestLiveness ingest_liveness() const;
  // The standby consumer's (cluster.standby_replicas), nullopt when it runs none.
  std::optional<ingest::IngestLiveness> standby_liveness() const;
  Status ProbeHttp(int timeout_ms) const;
  // True once Stop() has stopped ingestion: everything consumed is then in the store's log.
  bool ingestion_stopped() const { return ingestion_stopped_.load(); }

  // Stops everything, in the order above. Returns the first error (a failed last write).
  // Idempotent.
  Status Stop();

 private:
  Server() = default;
  void Housekeeping();
  // Cluster mode: tells the streams' hub the partitions this instance serves as owner (each
  // housekeeping round, so a change reaches the streams within about a second).
  void TellHubOwnedPartitions();
  // Outside cluster mode: the partitions assigned, which new streams' positions name.
  void TellHubServedPartitions();
  // Makes ownership_ and cluster_ (cluster.peers); InvalidArgument when this instance's
  // http.listen is not among the peers, or when a token would go to a peer beyond loopback over
  // plain HTTP.
  Status StartCluster(const config::Config& config);

  config::Config config_;
  // The token and TLS files, read once and on ReloadAccess; handed to the HTTP server, its token
  // gate and the cluster's peer clients, and outlives them all.
  std::unique_ptr<access::Credentials> credentials_;
  std::unique_ptr<store::EventStore> store_;
  // Which partitions this instance answers for (fed by the ingestor) and its peers
  // (cluster/cluster.h); both outlive the engine, the ingestor and the HTTP server that use them.
  std::unique_ptr<ingest::PartitionOwnership> ownership_;
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<query::QueryEngine> engine_;
  // The live streams' hub: a write observer of store_ from its start until ingestion stopped.
  std::unique_ptr<live::StreamHub> hub_;
  // Cluster mode: frees the cache's rows of partitions no longer owned (housekeeping polls it).
  std::unique_ptr<CacheOwnership> cache_ownership_;
  std::unique_ptr<http::Metrics> metrics_;
  std::unique_ptr<ingest::Ingestor> ingestor_;
  // cluster.standby_replicas: the partitions followed and their consumer, and the hand-over
  // between it and ingestor_ (ingest/standby_handover.h), which outlives both.
  std::unique_ptr<ingest::StandbyHandover> handover_;
  std::unique_ptr<ingest::PartitionOwnership> followed_;
  std::unique_ptr<ingest::Ingestor> standby_ingestor_;
  std::unique_ptr<http::Authenticator> auth_;  // null without http.token_file; outlives http_
  std::unique_ptr<http::HttpServer> http_;

  std::thread housekeeping_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  bool stopped_ = false;   // guarded by mu_
  std::atomic<bool> ingestion_stopped_{false};
};

}  // namespace hotrow::service
