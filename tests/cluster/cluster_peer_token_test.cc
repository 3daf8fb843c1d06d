// cluster.peer_token_file (CONTRACT.md "Query slots"): peers send their own token, and only a
// `?local=true` request that carries it takes the peers' query lane; one without it (any client
// can add local=true) is served in the clients' lane. In process: real HttpServers on loopback,
// the token rotated by a reload (SIGHUP) on every instance.

// GCC 12 reports a false -Wrestrict in std::string's inlined copies of "literal" + string
// (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "access/credentials.h"
#include "common/clock.h"
#include "ingest/embedded_kafka.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster::peer_token {
namespace {

using nlohmann::json;
using testing::Answer;
using testing::Get;
using testing::Instance;
using testing::InstanceOptions;
using TestEvent = hotrow::testing::TestEvent;

// The query slots `instance` gave in `lane` at once, from its /metrics.
int64_t Slots(Instance& instance, const std::string& lane) {
  const Answer a = Get(instance.port(), "/metrics");
  std::istringstream lines(a.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("hotrow_query_slots_total{", 0) != 0) continue;
    if (line.find("lane=\"" + lane + "\"") == std::string::npos ||
        line.find("outcome=\"immediate\"") == std::string::npos) {
      continue;
    }
    return static_cast<int64_t>(std::stod(line.substr(line.rfind(' ') + 1)));
  }
  return 0;
}

// A `?local=true` latest on `instance`, with `peer_token` in the peer header when not empty.
int AskLocal(Instance& instance, const std::string& peer_token) {
  httplib::Client client("127.0.0.1", instance.port());
  httplib::Headers headers;
  if (!peer_token.empty()) headers.emplace(access::kPeerTokenHeader, peer_token);
  httplib::Result res = client.Get("/v1/events/dev/latest?n=5&local=true", headers);
  return res ? res->status : -1;
}

TEST(ClusterPeerTokenTest, OnlyARequestWithThePeerTokenTakesThePeersLaneAndARotationMovesIt) {
  hotrow::testing::TempDir dir;
  auto kafka = ingest::EmbeddedKafka::Start("events", 2);
  ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
  const std::string token_file = dir.Sub("peer.token");
  hotrow::testing::WriteFile(token_file, "first-peer-token\n");
  std::vector<int> ports = {hotrow::testing::FreePort(), hotrow::testing::FreePort()};
  std::vector<std::string> peers;
  for (int port : ports) peers.push_back("127.0.0.1:" + std::to_string(port));
  std::vector<std::unique_ptr<Instance>> at;
  for (int i = 0; i < 2; ++i) {
    InstanceOptions o;
    o.dir = dir.Sub("i" + std::to_string(i));
    o.port = ports[static_cast<size_t>(i)];
    o.peers = peers;
    o.brokers = (*kafka)->bootstrap();
    o.credentials.peer_token_file = token_file;
    at.push_back(Instance::Start(o));
    ASSERT_NE(at.back(), nullptr);
  }
  const int64_t now = WallClock::Default()->NowMs();
  for (int i = 0; i < 2; ++i) {
    at[static_cast<size_t>(i)]->Serve("events", i);
    at[static_cast<size_t>(i)]->Write({{"dev", now - 1000 + i, "events", i, 0, "{}"}});
  }
  Instance& peer = *at[1];

  // A group answer: instance 0 asks instance 1 with the peer token, in the peers' lane.
  ASSERT_TRUE(hotrow::testing::WaitFor(
      [&] {
        const json j = Get(at[0]->port(), "/v1/events/dev/latest?n=5").json();
        return j.is_object() && j.value("complete", false) && j.at("events").size() == 2;
      },
      std::chrono::seconds(15)));
  int64_t peer_lane = Slots(peer, "peer"), client_lane = Slots(peer, "client");
  EXPECT_GT(peer_lane, 0);

  // A client's local=true without the token, or with a wrong one: the clients' lane.
  ASSERT_EQ(AskLocal(peer, ""), 200);
  ASSERT_EQ(AskLocal(peer, "not-the-peer-token"), 200);
  EXPECT_EQ(Slots(peer, "peer"), peer_lane);
  EXPECT_EQ(Slots(peer, "client"), client_lane + 2);
  // With it: the peers' lane.
  ASSERT_EQ(AskLocal(peer, "first-peer-token"), 200);
  EXPECT_EQ(Slots(peer, "peer"), ++peer_lane);

  // Rotated (the file rewritten, then a reload on every instance): the old token is a client's,
  // and the peers send the new one.
  hotrow::testing::WriteFile(token_file, "second-peer-token\n");
  for (auto& instance : at) ASSERT_TRUE(instance->credentials()->Reload().ok());
  client_lane = Slots(peer, "client");
  ASSERT_EQ(AskLocal(peer, "first-peer-token"), 200);
  EXPECT_EQ(Slots(peer, "peer"), peer_lane);
  EXPECT_EQ(Slots(peer, "client"), client_lane + 1);
  const json j = Get(at[0]->port(), "/v1/events/dev/latest?n=5").json();
  EXPECT_TRUE(j.value("complete", false)) << j.dump();
  EXPECT_EQ(Slots(peer, "peer"), peer_lane + 1);
}

}  // namespace
}  // namespace hotrow::cluster::peer_token
