#pragma once

// In-process instances of a group for the cluster tests: each a real store, ownership, cluster,
// query engine and HttpServer on a loopback port (HTTPS and a token when asked), with no ingestor:
// a test says which partitions an instance owns and how fresh they are, and writes its records.

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "access/credentials.h"
#include "cluster/cluster.h"
#include "common/clock.h"
#include "http/auth.h"
#include "http/metrics.h"
#include "http/server.h"
#include "ingest/partition_ownership.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster::testing {

struct InstanceOptions {
  std::string dir;                 // its store goes in dir/store
  int port = 0;                    // REQUIRES: free (hotrow::testing::FreePort)
  std::vector<std::string> peers;  // every instance's "127.0.0.1:port", this one included
  std::string group = "group";
  std::vector<std::string> topics = {"events"};
  std::string brokers = "127.0.0.1:1";  // where partitions are read (unreachable: unknown)
  access::CredentialsOptions credentials;
  int64_t peer_timeout_ms = 2000;
  int64_t max_staleness_ms = 5000;
  std::vector<std::string> index_fields;
  ingest::KeyPartitioner route_by_key = ingest::KeyPartitioner::kOff;  // cluster.route_by_key
  int64_t route_refresh_ms = 1000;
  const Clock* monotonic_clock = MonotonicClock::Default();  // the route map's age (ClusterOptions)
  // cluster.standby_replicas: the instance has a followed ownership (Follow) and reports it.
  bool standby = false;
  const Clock* clock = WallClock::Default();  // the store's and the ownership's
};

class Instance {
 public:
  // Starts it; fails the test (and returns null) when something does not start.
  static std::unique_ptr<Instance> Start(const InstanceOptions& options);
  ~Instance();

  store::EventStore* store() { return store_.get(); }
  ingest::PartitionOwnership* ownership() { return ownership_.get(); }
  // The partitions it follows as a standby; null without InstanceOptions::standby.
  ingest::PartitionOwnership* followed() { return followed_.get(); }
  Cluster* cluster() { return cluster_.get(); }
  access::Credentials* credentials() { return credentials_.get(); }
  http::HttpServer* http() { return http_.get(); }
  int port() const { return options_.port; }
  std::string address() const { return "127.0.0.1:" + std::to_string(options_.port); }

  // Owns `partition` of `topic`, its window whole (a run from the partition's first record) and
  // fresh (its position at the broker's end): it serves.
  void Serve(const std::string& topic, int32_t partition, int64_t next_offset = 0);
  // Follows `partition` of `topic` as a standby (REQUIRES: InstanceOptions::standby), its window
  // whole, caught up at `next_offset`: it serves as a standby.
  void Follow(const std::string& topic, int32_t partition, int64_t next_offset = 0);
  // Writes `events` in one batch, with their partitions' next offsets; `index` adds an index row
  // of each named field with the event's id as value.
  void Write(const std::vector<hotrow::testing::TestEvent>& events,
             const std::vector<std::string>& index = {});

 private:
  explicit Instance(InstanceOptions options) : options_(std::move(options)) {}
  InstanceOptions options_;
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<access::Credentials> credentials_;
  std::unique_ptr<ingest::PartitionOwnership> ownership_;
  std::unique_ptr<ingest::PartitionOwnership> followed_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<query::QueryEngine> engine_;
  std::unique_ptr<http::Metrics> metrics_;
  std::unique_ptr<http::Authenticator> auth_;
  std::unique_ptr<http::HttpServer> http_;
};

// GET `target` on `port` (https with `ca_file` when not empty, the bearer `token` when not
// empty). The status (-1: no answer) and the body.
struct Answer {
  int status = -1;
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};
Answer Get(int port, const std::string& target, const std::string& token = "",
           const std::string& ca_file = "");

// Runs the openssl CLI: a CA (name.key, name.crt) in `dir`, and a certificate for IP 127.0.0.1
// signed by it (leaf.key, leaf.crt). Fails the test when openssl fails.
void MakeCa(const hotrow::testing::TempDir& dir, const std::string& name);
void MakeLeaf(const hotrow::testing::TempDir& dir, const std::string& ca, const std::string& leaf);

}  // namespace hotrow::cluster::testing
