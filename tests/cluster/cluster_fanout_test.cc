// The fan-out in process: a real HttpServer with a Cluster whose other peer accepts connections
// and never answers. The answer comes back (within the peer timeout, not the client's), says
// "complete": false, and /v1/cluster says the peer did not answer.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cluster/cluster.h"
#include "common/clock.h"
#include "http/metrics.h"
#include "http/server.h"
#include "ingest/partition_ownership.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster {
namespace {

using nlohmann::json;

// A loopback socket that listens (the kernel completes connections) but never reads or answers.
class SilentPeer {
 public:
  SilentPeer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 64), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentPeer() { close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ClusterFanoutTest, APeerThatNeverAnswersMakesTheAnswerIncompleteNotSlowForever) {
  testing::TempDir dir;
  ManualClock clock(1'700'000'000'000);
  store::StoreOptions store_options;
  store_options.path = dir.Sub("store");
  store_options.salts = 2;
  store_options.wall_clock = &clock;
  store_options.block_cache_bytes = 8 << 20;
  store_options.write_buffer_bytes = 8 << 20;
  auto store = store::EventStore::Open(store_options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();

  SilentPeer silent;
  ingest::PartitionOwnership ownership;
  ownership.Assigned("events", 0, 0, /*window_complete=*/true, /*high_watermark=*/0);
  ClusterOptions options;
  options.self = "127.0.0.1:0";
  options.peers = {options.self, silent.address()};
  options.peer_timeout_ms = 300;
  options.brokers = "127.0.0.1:1";  // no broker: the partition list stays unknown
  options.topics = {"events"};
  Cluster cluster(options, &ownership, store->get());
  query::QueryOptions q;
  q.threads = 1;
  q.partition_filter = [&cluster] { return cluster.Filter(); };
  query::QueryEngine engine(store->get(), q);
  http::Metrics metrics;
  http::HttpServerOptions http_options;
  http_options.listen = "127.0.0.1:0";
  http::HttpBackend backend{store->get(), &engine, nullptr, &metrics};
  backend.cluster = &cluster;
  auto http = http::HttpServer::Start(http_options, backend);
  ASSERT_TRUE(http.ok()) << http.status().ToString();

  httplib::Client client("127.0.0.1", (*http)->port());
  client.set_read_timeout(std::chrono::seconds(60));
  for (const std::string target : {"/v1/events/dev-1/latest?n=10",
                                   "/v1/events/dev-1?from=0&to=9999999999999"}) {
    httplib::Result res = client.Get(target);
    ASSERT_TRUE(res) << target << ": " << httplib::to_string(res.error());
    ASSERT_EQ(res->status, 200) << res->body;
    const json answer = json::parse(res->body);
    EXPECT_FALSE(answer.at("complete").get<bool>()) << res->body;
  }
  httplib::Result scan = client.Get("/v1/scan?from=0&to=9999999999999");
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->body, "{\"complete\":false,\"missing\":{}}\n");

  httplib::Result info = client.Get("/v1/cluster");
  ASSERT_TRUE(info);
  const json cluster_json = json::parse(info->body);
  EXPECT_FALSE(cluster_json.at("complete").get<bool>()) << info->body;
  ASSERT_EQ(cluster_json.at("instances").size(), 2u) << info->body;
  EXPECT_TRUE(cluster_json.at("instances")[0].at("answered").get<bool>());
  EXPECT_FALSE(cluster_json.at("instances")[1].at("answered").get<bool>()) << info->body;

  // The local answer needs no peer: this instance's partition, served.
  httplib::Result local = client.Get("/v1/events/dev-1/latest?n=10&local=true");
  ASSERT_TRUE(local);
  EXPECT_EQ(json::parse(local->body).at("partitions"), json::parse("{\"events\":[0]}"))
      << local->body;
  (*http)->Stop();
}

}  // namespace
}  // namespace hotrow::cluster
