#include "service/server.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "access/credentials.h"
#include "common/host_port.h"
#include "common/logging.h"
#include "service/config_check.h"
#include "service/file_limit.h"
#include "service/timeout_extender.h"

namespace hotrow::service {
namespace {

// A fault hook for the tests of the watchdog (tests/service/notify_test.cc), which need a store
// writer wedged inside a write of a `hotrow serve` process: with $HOTROW_TEST_HOLD_WRITES naming a
// file, every store write waits at its start while that file exists. Unset (always, outside
// those tests): no hook at all.
std::function<void(const store::WriteBatchInput&)> WriteHoldFromEnvironment() {
  const char* path = std::getenv("HOTROW_TEST_HOLD_WRITES");
  if (path == nullptr || *path == '\0') return nullptr;
  spdlog::warn("HOTROW_TEST_HOLD_WRITES={}: store writes wait while that file exists", path);
  return [file = std::string(path)](const store::WriteBatchInput&) {
    while (::access(file.c_str(), F_OK) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
}

// The same for the store's open (tests/service/notify_test.cc, which needs a start that takes as
// long as it likes): with $HOTROW_TEST_HOLD_OPEN naming a file, the start waits before it opens
// the store while that file exists.
void HoldOpenFromEnvironment() {
  const char* path = std::getenv("HOTROW_TEST_HOLD_OPEN");
  if (path == nullptr || *path == '\0') return;
  spdlog::warn("HOTROW_TEST_HOLD_OPEN={}: the store's open waits while that file exists", path);
  while (::access(path, F_OK) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// A fault hook for StandbyStopTest (tests/cluster/standby_stop_test.cc), which asks a stopping
// `hotrow serve` for its followed partitions after its group consumer stopped and before its HTTP
// server stops: with $HOTROW_TEST_HOLD_STOP naming a file, Stop waits there while that file
// exists. Unset (always, outside that test): nothing waits.
void HoldStopForTest() {
  const char* path = std::getenv("HOTROW_TEST_HOLD_STOP");
  if (path == nullptr || *path == '\0') return;
  spdlog::warn("stop: held while {} exists (HOTROW_TEST_HOLD_STOP)", path);
  while (::access(path, F_OK) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(const config::Config& config) {
  std::unique_ptr<Server> server(new Server());
  server->config_ = config;
  spdlog::info("hotrow starting: {}", config.Summary());
  // Connections hold descriptors, not threads: the soft limit is raised to the hard one, and a
  // configuration that cannot fit stops here (exit 2).
  HOTROW_RETURN_IF_ERROR(FitFileLimit(config, /*raise=*/true));
  // A bad token, TLS or CA file stops the start before the store is opened and the consumer
  // group joined. The one object that holds them is handed to the HTTP server and the peers.
  access::CredentialsOptions credentials;
  credentials.token_file = config.http.token_file;
  credentials.tls_cert_file = config.http.tls_cert;
  credentials.tls_key_file = config.http.tls_key;
  credentials.peer_ca_file = config.cluster.peer_ca;
  credentials.peer_token_file = config.cluster.peer_token_file;
  Result<std::unique_ptr<access::Credentials>> opened = access::Credentials::Open(credentials);
  if (!opened.ok()) return opened.status();
  server->credentials_ = std::move(opened).value();

  // A store.path this user cannot write is the configuration's to mend (exit 2, not restarted by
  // the unit), not a failed open restarted every RestartSec.
  HOTROW_RETURN_IF_ERROR(CheckStorePath(config.store.path));
  store::StoreOptions store_options = config.ToStoreOptions();
  store_options.write_hook = WriteHoldFromEnvironment();
  Result<std::unique_ptr<store::EventStore>> store = [&] {
    // A cold, large store may take longer to open than the manager's start timeout allows: it is
    // told, every 10 s while the open lasts, to wait longer.
    TimeoutExtender extender("opening the store at " + store_options.path);
    HoldOpenFromEnvironment();
    return store::EventStore::Open(store_options);
  }();
  if (!store.ok()) {
    const Status& st = store.status();
    const std::string message = "store at " + store_options.path + ": " + st.message();
    switch (st.code()) {
      case Status::Code::kIncompatible:
        return Status::Incompatible(message);
      case Status::Code::kCorruption:
        return Status::Corruption(message);
      case Status::Code::kNoSpace:
        return Status::NoSpace(message);
      case Status::Code::kInvalidArgument:
        return Status::InvalidArgument(message);
      default:
        return Status::IOError(message);
    }
  }
  server->store_ = std::move(store).value();
  const store::StoreStats stats = server->store_->Stats();
  spdlog::info("store: opened {}: {} buckets, {} events in the hot window", store_options.path,
               stats.buckets.size(), stats.events);

  HOTROW_RETURN_IF_ERROR(server->StartCluster(config));
  // In cluster mode each query reads through its own view of the ownership (cluster::QueryView),
  // handed to the engine by the HTTP handlers: only the partitions this instance serves.
  const query::QueryOptions query_options = config.ToQueryOptions();
  server->engine_ = std::make_unique<query::QueryEngine>(server->store_.get(), query_options);
  server->cluster_->set_engine(server->engine_.get());
  if (server->cluster_->enabled()) {
    server->cache_ownership_ = std::make_unique<CacheOwnership>(
        server->ownership_.get(), server->engine_.get(), server->store_.get());
  }
  server->metrics_ = std::make_unique<http::Metrics>();
  // Before ingestion starts: the hub is told of every batch written from then on.
  server->hub_ = std::make_unique<live::StreamHub>(server->store_.get(), server->engine_.get(),
                                                   config.ToStreamHubOptions());
  server->store_->AddWriteObserver(server->hub_.get());

  ingest::IngestOptions ingest_options = config.ToIngestOptions();
  ingest_options.ownership = server->ownership_.get();
  if (server->cluster_->enabled()) ingest_options.route_by_key = config.cluster.route_by_key;
  const bool standby = server->cluster_->enabled() && config.cluster.standby_replicas > 0;
  if (standby) {
    // CONTRACT.md "cluster.standby_replicas": a member's death moves only its partitions, so the
    // survivors keep serving theirs through the rebalance.
    ingest_options.properties.emplace("partition.assignment.strategy", "cooperative-sticky");
    server->handover_ = std::make_unique<ingest::StandbyHandover>();
    ingest_options.handover = server->handover_.get();
  }
  Result<std::unique_ptr<ingest::Ingestor>> ingestor =
      ingest::Ingestor::Start(ingest_options, server->store_.get());
  if (!ingestor.ok()) {
    spdlog::error("ingest: cannot start: {}", ingestor.status().ToString());
    return ingestor.status();
  }
  server->ingestor_ = std::move(ingestor).value();
  server->cluster_->set_ingestor(server->ingestor_.get());
  if (standby) {
    ingest::OwnershipOptions followed;
    followed.max_staleness_ms = config.cluster.max_staleness_ms;
    server->followed_ =
        std::make_unique<ingest::PartitionOwnership>(server->store_.get(), followed);
    if (server->cache_ownership_) server->cache_ownership_->set_followed(server->followed_.get());
    ingest::IngestOptions standby_options = ingest_options;
    standby_options.ownership = server->followed_.get();
    standby_options.route_by_key = ingest::KeyPartitioner::kOff;
    standby_options.instance_id.clear();
    standby_options.dead_letter_topic.clear();  // the owner dead-letters its rejects
    standby_options.standby.on = true;
    standby_options.standby.peers = config.cluster.peers;
    standby_options.standby.self = config.http.listen;
    standby_options.standby.replicas = config.cluster.standby_replicas;
    Result<std::unique_ptr<ingest::Ingestor>> follower =
        ingest::Ingestor::Start(standby_options, server->store_.get());
    if (!follower.ok()) {
      spdlog::error("ingest: cannot start the standby consumer: {}", follower.status().ToString());
      return follower.status();
    }
    server->standby_ingestor_ = std::move(follower).value();
    server->cluster_->set_standby(server->followed_.get(), server->standby_ingestor_.get());
  }

  HOTROW_RETURN_IF_ERROR(http::CheckOpenListen(config.http.listen, !config.http.token_file.empty(),
                                               config.http.allow_open));
  if (server->credentials_->has_token()) {
    server->auth_ =
        std::make_unique<http::Authenticator>(server->credentials_.get(), server->metrics_.get());
  }
  http::HttpServerOptions http_options = config.ToHttpOptions();
  http::HttpBackend backend;
  backend.store = server->store_.get();
  backend.engine = server->engine_.get();
  backend.ingestor = server->ingestor_.get();
  backend.metrics = server->metrics_.get();
  backend.auth = server->auth_.get();
  backend.cluster = server->cluster_.get();
  backend.credentials = server->credentials_.get();
  backend.hub = server->hub_.get();
  Result<std::unique_ptr<http::HttpServer>> http = http::HttpServer::Start(http_options, backend);
  if (!http.ok()) {
    spdlog::error("{}", http.status().message());
    return http.status();  // ~Server stops the ingestor and closes the store
  }
  server->http_ = std::move(http).value();

  Server* self = server.get();
  server->housekeeping_ = std::thread([self] {
    pthread_setname_np(pthread_self(), "housekeeping");
    self->Housekeeping();
  });
  std::string topics;
  for (const auto& t : config.kafka.topics) topics += (topics.empty() ? "" : ",") + t;
  spdlog::info("hotrow started: HTTP on {}, consuming {} from {}", server->http_->url(), topics,
               config.kafka.brokers);
  return server;
}

Status Server::StartCluster(const config::Config& config) {
  ingest::OwnershipOptions ownership;
  ownership.max_staleness_ms = config.cluster.max_staleness_ms;
  ownership_ = std::make_unique<ingest::PartitionOwnership>(store_.get(), ownership);
  cluster::ClusterOptions options;
  options.peers = config.cluster.peers;
  options.self = config.http.listen;
  options.peer_timeout_ms = config.cluster.peer_timeout_ms;
  options.credentials = credentials_.get();
  options.group_id = config.kafka.group_id;
  options.topics = config.kafka.topics;
  options.brokers = config.kafka.brokers;
  options.kafka_properties = config.kafka.properties;
  options.route_by_key = config.cluster.route_by_key;
  HOTROW_RETURN_IF_ERROR(CheckPeers(config, credentials_->has_token(), credentials_->tls()));
  cluster_ = std::make_unique<cluster::Cluster>(options, ownership_.get(), store_.get());
  return Status::Ok();
}

Server::~Server() {
  Status st = Stop();
  if (!st.ok()) spdlog::error("stop: {}", st.ToString());
}

Status Server::ReloadAccess() {
  Status reloaded = credentials_->Reload();
  metrics_->RecordAccessReload(reloaded.ok());
  if (reloaded.ok() && http_) http_->AccessReloaded();
  return reloaded;
}

std::string Server::http_address() const { return http_ ? http_->address() : ""; }

ingest::IngestLiveness Server::ingest_liveness() const {
  return ingestor_ ? ingestor_->Liveness() : ingest::IngestLiveness{};
}

std::optional<ingest::IngestLiveness> Server::standby_liveness() const {
  if (!standby_ingestor_) return std::nullopt;
  return standby_ingestor_->Liveness();
}

Status Server::ProbeHttp(int timeout_ms) const {
  if (!http_) return Status::IOError("the HTTP server is not running");
  return http::ProbeHealthz(*http_, timeout_ms);
}

ingest::IngestStats Server::ingest_stats() const {
  return ingestor_ ? ingestor_->Stats() : ingest::IngestStats{};
}

Status Server::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return Status::Ok();
    stopped_ = true;
  }
  Status result;
  // With standbys (CONTRACT.md "cluster.standby_replicas"): the heads stop naming the followed
  // partitions first, so no peer's answer chooses this instance as a standby from now on; those
  // that chose it just before are served in their second round while the HTTP server answers: the
  // standby consumer keeps the followed partitions fresh until the HTTP server has stopped.
  if (cluster_ && followed_) cluster_->StopNamingStandbys();
  if (ingestor_) {
    // The owned partitions are revoked: the standby's ownership adopts those it follows and the
    // standby consumer continues them from the store's offset (standby_handover.h).
    spdlog::info("stop: stopping ingestion (writing the open batch and its offsets)");
    result = ingestor_->Stop();
    if (!result.ok()) spdlog::error("stop: ingestion: {}", result.ToString());
  }
  // The group's records are durable; the standby's are stored with their offsets, so whatever it
  // has read and not written is read again, whenever it stops.
  ingestion_stopped_.store(true);
  HoldStopForTest();
  if (http_) {
    spdlog::info("stop: stopping the HTTP server");
    http_->Stop();
  }
  if (standby_ingestor_) {
    if (cluster_ && followed_) {
      cluster_->set_standby(followed_.get(), nullptr);
      followed_->SetReadiness(false, "this instance is stopping");
    }
    Status st = standby_ingestor_->Stop();
    if (!st.ok()) spdlog::error("stop: standby ingestion: {}", st.ToString());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (housekeeping_.joinable()) housekeeping_.join();
  const ingest::IngestStats last = ingest_stats();
  http_.reset();
  if (cluster_) cluster_->set_ingestor(nullptr);  // its freshness thread asks the ingestor
  if (cluster_ && followed_) cluster_->set_standby(followed_.get(), nullptr);
  standby_ingestor_.reset();
  ingestor_.reset();
  if (hub_) {
    store_->RemoveWriteObserver(hub_.get());
    hub_.reset();
  }
  cache_ownership_.reset();
  engine_.reset();
  if (store_) {
    spdlog::info("stop: closing the store ({} events stored by this process)", last.events_stored);
    store_.reset();
    spdlog::info("stop: done");
  }
  return result;
}

void Server::TellHubOwnedPartitions() {
  // Owned and caught up with what the broker held at the assignment: a new owner's catch-up is a
  // backlog, not live (CONTRACT.md "Live streams", cluster mode). Followed partitions are not in
  // the owned snapshot.
  std::vector<store::TopicPartition> owned;
  for (const ingest::OwnedPartition& p : ownership_->Snapshot().partitions) {
    if (!p.rebuilding()) owned.push_back({p.topic, p.partition});
  }
  hub_->SetOwnedPartitions(owned);
}

void Server::TellHubServedPartitions() {
  // One instance alone: every partition it is assigned, whatever its state; what the store holds
  // of earlier assignments is not named in new streams' positions.
  std::vector<store::TopicPartition> served;
  for (const ingest::OwnedPartition& p : ownership_->Snapshot().partitions) {
    served.push_back({p.topic, p.partition});
  }
  hub_->SetServedPartitions(served);
}

void Server::Housekeeping() {
  using namespace std::chrono_literals;
  RateLimiter errors(1, 60000);
  auto last_progress = std::chrono::steady_clock::now();
  uint64_t last_stored = ingestor_ ? ingestor_->Stats().events_stored : 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, 1s, [&] { return stopping_; });
    if (stopping_) break;
    lock.unlock();

    Result<size_t> dropped = store_->DropExpiredBuckets();
    uint64_t suppressed = 0;
    if (!dropped.ok()) {
      if (errors.Allow(&suppressed)) {
        spdlog::error("housekeeping: dropping expired buckets failed: {} ({} more suppressed)",
                      dropped.status().ToString(), suppressed);
      }
    } else if (*dropped > 0) {
      spdlog::info("housekeeping: dropped {} expired bucket(s)", *dropped);
    }

    if (cache_ownership_ != nullptr) cache_ownership_->Poll();
    if (cluster_ != nullptr && cluster_->enabled()) {
      TellHubOwnedPartitions();
    } else if (hub_ != nullptr) {
      TellHubServedPartitions();
    }

    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress >= 10s) {
      const double seconds = std::chrono::duration<double>(now - last_progress).count();
      const ingest::IngestStats in = ingest_stats();
      const store::StoreStats st = store_->Stats();
      int64_t lag = 0;
      for (const auto& p : in.partitions) lag += p.lag;
      uint64_t rejected = 0;
      for (const auto& [reason, count] : in.rejected) rejected += count;
      spdlog::info(
          "progress: {:.0f} events/s, lag {}, {} partitions, {} buckets, {} events in the window, "
          "{} rejected, RSS {} MiB",
          static_cast<double>(in.events_stored - last_stored) / seconds, lag, in.partitions.size(),
          st.buckets.size(), st.events, rejected, http::ResidentBytes() >> 20);
      last_stored = in.events_stored;
      last_progress = now;
    }
    lock.lock();
  }
}

}  // namespace hotrow::service
