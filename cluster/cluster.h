#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "access/client_access.h"
#include "cluster/coverage.h"
#include "ingest/ingestor.h"
#include "ingest/partition_ownership.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace hotrow::query {
class ThreadPool;
}  // namespace hotrow::query

namespace hotrow::cluster {

struct ClusterOptions {
  // cluster.peers: the HTTP host:port of every instance of the group, this one included.
  // Default: empty (a single instance: queries answer from this store alone, as before).
  std::vector<std::string> peers;
  // This instance's entry of `peers` (http.listen); it is answered in process, not over HTTP.
  std::string self;
  // What peers are asked with: the same token as this server's. Default: none.
  access::ClientAccess access;
  // A peer that has not connected or sent its next bytes within this long counts as not having
  // answered: its partitions are missing from the answer, which is never slow forever.
  // cluster.peer_timeout_ms. Default: 2 s.
  int64_t peer_timeout_ms = 2000;
  // Where the partitions of the topics are read (ingest::ListTopicPartitions), at most every
  // partitions_refresh_ms. Defaults: none, 30 s.
  std::string brokers;
  std::vector<std::string> topics;
  std::map<std::string, std::string> kafka_properties;
  int64_t partitions_refresh_ms = 30000;
};

// One instance's part in answering for the whole consumer group (CONTRACT.md, `cluster.peers`):
// its ownership (which partitions it answers for, refreshed from the ingestor's positions), the
// filter its query engine applies, the partitions the group must cover, and keep-alive HTTP
// clients to its peers.
//
// Threads: a pool of named threads (hotrow-peer), owned and joined by the destructor, on which
// peers are asked in parallel.
//
// Thread-safety: every method may be called from any thread, except set_ingestor (once, before
// queries).
class Cluster {
 public:
  // `ownership` and `store` are not owned and must outlive the Cluster.
  Cluster(const ClusterOptions& options, ingest::PartitionOwnership* ownership,
          store::EventStore* store);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Where positions are read from (Ingestor::Stats); not owned. Null: positions never advance.
  void set_ingestor(const ingest::Ingestor* ingestor) { ingestor_ = ingestor; }

  // Whether peers are configured (queries fan out).
  bool enabled() const { return !options_.peers.empty(); }
  const ClusterOptions& options() const { return options_; }

  // This instance's ownership now, positions of rebuilding partitions refreshed first.
  ingest::OwnershipSnapshot Local();

  // The filter of one query: only rows of the partitions Local() serves.
  query::PartitionFilter Filter();

  // Every partition of the topics; the last list known when the brokers do not answer.
  Partitions AllPartitions();

  // One peer's answer to a request.
  struct Reply {
    std::string peer;
    bool answered = false;  // a 200 within the deadline
    int status = 0;         // HTTP status; 0 when none
    std::string body;
    std::string error;      // why not answered, for /v1/cluster and the log
  };
  // GETs `target` ("/v1/...?...") on every peer but this one, in parallel, each within
  // peer_timeout_ms, running `meanwhile` (this instance's own part) on the calling thread.
  // Replies in the order of options().peers, without this one.
  std::vector<Reply> AskPeers(const std::string& target,
                              const std::function<void()>& meanwhile = nullptr);

  // GETs `target` on `peer`, passing the body to `on_data` as it arrives (false from it stops).
  // False with `error` set when the peer did not answer 200 in time or the stream broke.
  bool StreamFrom(const std::string& peer, const std::string& target,
                  const std::function<bool(const char*, size_t)>& on_data, std::string* error);

 private:
  std::unique_ptr<httplib::Client> TakeClient(const std::string& peer);
  void ReturnClient(const std::string& peer, std::unique_ptr<httplib::Client> client);

  // Constant after construction.
  const ClusterOptions options_;
  ingest::PartitionOwnership* const ownership_;
  store::EventStore* const store_;
  const ingest::Ingestor* ingestor_ = nullptr;
  std::unique_ptr<query::ThreadPool> pool_;

  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<httplib::Client>>> idle_;  // GUARDED_BY(mu_)
  std::map<std::string, uint16_t> topic_numbers_;                             // GUARDED_BY(mu_)
  Partitions partitions_;                                                    // GUARDED_BY(mu_)
  int64_t partitions_read_ms_ = -1;                                          // GUARDED_BY(mu_)
};

}  // namespace hotrow::cluster
