// The fan-out in process (CONTRACT.md, `cluster.peers` and "Cluster mode in production
// settings"): real HttpServers on loopback, each with its own store, ownership and Cluster; the
// embedded broker only answers the partition metadata. A test says which partitions each instance
// owns and how fresh they are, writes their records, and checks what any instance answers for the
// group: never a silently short answer.

// GCC 12 reports a false -Wrestrict in std::string's inlined copies of "literal" + string
// (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ingest/embedded_kafka.h"
#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster {
namespace {

using nlohmann::json;
using testing::Answer;
using testing::Get;
using testing::Instance;
using testing::InstanceOptions;
using hotrow::testing::WriteFile;
using TestEvent = hotrow::testing::TestEvent;

constexpr int64_t kT0 = 1'700'000'000'000;

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

// A group of in-process instances over one embedded broker (for the metadata).
class ClusterFanoutTest : public ::testing::Test {
 protected:
  // Starts `n` instances; `adjust` may change each one's options.
  void StartGroup(int n, int partitions,
                  const std::function<void(int, InstanceOptions*)>& adjust = nullptr) {
    if (kafka_ == nullptr) {
      auto kafka = ingest::EmbeddedKafka::Start("events", partitions);
      ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
      kafka_ = std::move(kafka).value();
    }
    std::vector<int> ports;
    std::vector<std::string> peers;
    for (int i = 0; i < n; ++i) {
      ports.push_back(hotrow::testing::FreePort());
      peers.push_back("127.0.0.1:" + std::to_string(ports.back()));
    }
    for (int i = 0; i < n; ++i) {
      InstanceOptions o;
      o.dir = dir_.Sub("i" + std::to_string(instances_.size()));
      o.port = ports[i];
      o.peers = peers;
      o.brokers = kafka_->bootstrap();
      o.peer_timeout_ms = 2000;
      if (adjust) adjust(i, &o);
      auto instance = Instance::Start(o);
      ASSERT_NE(instance, nullptr);
      instances_.push_back(std::move(instance));
    }
  }
  Instance& at(int i) { return *instances_[static_cast<size_t>(i)]; }

  // Asks `instance` until its answer to `target` says complete (the metadata is read in the
  // background); the last answer.
  json AskUntilComplete(int instance, const std::string& target, const std::string& token = "",
                        const std::string& ca = "") {
    json last;
    hotrow::testing::WaitFor(
        [&] {
          const Answer a = Get(at(instance).port(), target, token, ca);
          last = a.json();
          return a.status == 200 && last.is_object() && last.value("complete", false);
        },
        std::chrono::seconds(15));
    return last;
  }

  hotrow::testing::TempDir dir_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  std::vector<std::unique_ptr<Instance>> instances_;
};

std::vector<TestEvent> Events(const std::string& id, const std::string& topic, int32_t partition,
                              int64_t first_ts, int count, int64_t first_offset = 0) {
  std::vector<TestEvent> out;
  for (int i = 0; i < count; ++i) {
    out.push_back({id, first_ts + i, topic, partition, first_offset + i,
                   "{\"n\":" + std::to_string(i) + "}"});
  }
  return out;
}

TEST_F(ClusterFanoutTest, APeerThatNeverAnswersMakesTheAnswerIncompleteNotSlowForever) {
  SilentPeer silent;
  StartGroup(1, 2, [&](int, InstanceOptions* o) {
    o->peers.push_back(silent.address());
    o->peer_timeout_ms = 300;
  });
  at(0).Serve("events", 0);
  // Partition 1 is the silent peer's: missing (once the partition list is read).
  hotrow::testing::WaitFor(
      [&] { return Get(at(0).port(), "/v1/cluster").json().value("missing", json()).size() > 0; },
      std::chrono::seconds(15));
  for (const std::string target :
       {"/v1/events/dev-1/latest?n=10", "/v1/events/dev-1?from=0&to=9999999999999"}) {
    const Answer a = Get(at(0).port(), target);
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_FALSE(a.json().at("complete").get<bool>()) << a.body;
  }
  const Answer info = Get(at(0).port(), "/v1/cluster");
  const json cluster_json = info.json();
  EXPECT_FALSE(cluster_json.at("complete").get<bool>()) << info.body;
  ASSERT_EQ(cluster_json.at("instances").size(), 2u) << info.body;
  EXPECT_TRUE(cluster_json.at("instances")[0].at("answered").get<bool>());
  EXPECT_FALSE(cluster_json.at("instances")[1].at("answered").get<bool>()) << info.body;

  // The local answer needs no peer: this instance's partition, served.
  const Answer local = Get(at(0).port(), "/v1/events/dev-1/latest?n=10&local=true");
  EXPECT_EQ(local.json().at("partitions"), json::parse("{\"events\":[0]}")) << local.body;
}

// HTTPS and a token on every instance; then every instance gets a new token, a new certificate
// signed by a new CA, and a CA file naming only the new CA, and reloads (what SIGHUP does): the
// peers use the new token, verify the new certificates against the new CA, and present the new
// certificate themselves, with no restart.
TEST_F(ClusterFanoutTest, HttpsAndTokenBetweenPeersAndAReloadOnEveryInstance) {
  testing::MakeCa(dir_, "ca1");
  testing::MakeLeaf(dir_, "ca1", "leaf1");
  testing::MakeCa(dir_, "ca2");
  testing::MakeLeaf(dir_, "ca2", "leaf2");
  const std::string token = dir_.Sub("token"), cert = dir_.Sub("cert.pem"),
                    key = dir_.Sub("key.pem"), ca = dir_.Sub("ca.pem");
  auto install = [&](const std::string& leaf, const std::string& authority, const std::string& t) {
    WriteFile(token, t + "\n");
    WriteFile(cert, hotrow::testing::ReadFile(dir_.Sub(leaf + ".crt")));
    WriteFile(key, hotrow::testing::ReadFile(dir_.Sub(leaf + ".key")));
    WriteFile(ca, hotrow::testing::ReadFile(dir_.Sub(authority + ".crt")));
  };
  install("leaf1", "ca1", "token-one");
  StartGroup(3, 3, [&](int, InstanceOptions* o) {
    o->credentials.token_file = token;
    o->credentials.tls_cert_file = cert;
    o->credentials.tls_key_file = key;
    o->credentials.peer_ca_file = ca;
  });
  const int64_t now = WallClock::Default()->NowMs();
  for (int i = 0; i < 3; ++i) {
    at(i).Serve("events", i);
    at(i).Write(Events("dev-1", "events", i, now - 1000 + 10 * i, 3));
  }
  const std::string latest = "/v1/events/dev-1/latest?n=20";
  json a = AskUntilComplete(0, latest, "token-one", dir_.Sub("ca1.crt"));
  ASSERT_TRUE(a.value("complete", false)) << a.dump();
  EXPECT_EQ(a.at("events").size(), 9u);
  EXPECT_EQ(Get(at(0).port(), latest, "token-one").status, -1);  // no plain HTTP on a TLS port

  install("leaf2", "ca2", "token-two");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(at(i).credentials()->Reload().ok());
  // The new certificate is presented: verified against the new CA, refused against the old one.
  EXPECT_EQ(Get(at(1).port(), "/healthz", "", dir_.Sub("ca1.crt")).status, -1);
  EXPECT_EQ(Get(at(1).port(), "/healthz", "", dir_.Sub("ca2.crt")).status, 200);
  EXPECT_EQ(Get(at(0).port(), latest, "token-one", dir_.Sub("ca2.crt")).status, 401);
  for (int i = 0; i < 3; ++i) {
    const Answer after = Get(at(i).port(), latest, "token-two", dir_.Sub("ca2.crt"));
    ASSERT_EQ(after.status, 200) << after.body;
    EXPECT_TRUE(after.json().value("complete", false)) << i << ": " << after.body;
    EXPECT_EQ(after.json().at("events").size(), 9u) << after.body;
  }
}

// One instance on HTTPS, its peer on plain HTTP: never complete, and the error says why.
TEST_F(ClusterFanoutTest, AMixedSetupIsAnErrorThatSaysSo) {
  testing::MakeCa(dir_, "ca");
  testing::MakeLeaf(dir_, "ca", "leaf");
  StartGroup(2, 2, [&](int i, InstanceOptions* o) {
    o->peer_timeout_ms = 500;
    if (i == 0) {
      o->credentials.tls_cert_file = dir_.Sub("leaf.crt");
      o->credentials.tls_key_file = dir_.Sub("leaf.key");
      o->credentials.peer_ca_file = dir_.Sub("ca.crt");
    }
  });
  at(0).Serve("events", 0);
  at(1).Serve("events", 1);
  for (int i = 0; i < 2; ++i) {
    const Answer a = Get(at(i).port(), "/v1/cluster", "", i == 0 ? dir_.Sub("ca.crt") : "");
    ASSERT_EQ(a.status, 200) << a.body;
    const json j = a.json();
    EXPECT_FALSE(j.at("complete").get<bool>()) << a.body;
    const json& peer = j.at("instances")[1];
    EXPECT_FALSE(peer.at("answered").get<bool>()) << a.body;
    EXPECT_NE(peer.at("error").get<std::string>().find("mixed setup"), std::string::npos) << a.body;
  }
}

// An owner that is not ready, or trails the broker by more than cluster.max_staleness, still
// answers, but its partitions are named "stale", never counted as covered.
TEST_F(ClusterFanoutTest, AStaleOrNotReadyOwnerIsNamedAndTheAnswerIsIncomplete) {
  ManualClock clock(kT0 + 600'000);
  StartGroup(2, 2, [&](int, InstanceOptions* o) {
    o->clock = &clock;
    o->max_staleness_ms = 5000;
  });
  at(0).Serve("events", 0);
  at(1).Serve("events", 1);
  at(0).Write(Events("dev-1", "events", 0, kT0 + 500'000, 2));
  at(1).Write(Events("dev-1", "events", 1, kT0 + 500'100, 2));
  const std::string latest = "/v1/events/dev-1/latest?n=10";
  ASSERT_TRUE(AskUntilComplete(0, latest).value("complete", false));

  // The broker holds 5 more records of partition 1 than instance 1 stored, for 4 s: still fresh.
  at(1).ownership()->UpdatePosition("events", 1, 2, 7);
  clock.Advance(4000);
  EXPECT_TRUE(Get(at(0).port(), latest).json().value("complete", false));
  // For 6 s: stale, named as such, and its events left out rather than counted.
  clock.Advance(2000);
  json a = Get(at(0).port(), latest).json();
  EXPECT_FALSE(a.value("complete", true)) << a.dump();
  EXPECT_EQ(a.at("stale"), json::parse("{\"events\":[1]}")) << a.dump();
  EXPECT_EQ(a.at("missing"), json::parse("{}")) << a.dump();
  EXPECT_EQ(a.at("events").size(), 2u) << a.dump();
  // Caught up again: complete.
  at(1).ownership()->UpdatePosition("events", 1, 7, 7);
  EXPECT_TRUE(Get(at(0).port(), latest).json().value("complete", false));

  // Not ready (a stalled writer, a full disk): every partition of it is stale at once.
  at(0).ownership()->SetReadiness(false, "ingestion stalled");
  a = Get(at(1).port(), latest).json();
  EXPECT_FALSE(a.value("complete", true)) << a.dump();
  EXPECT_EQ(a.at("stale"), json::parse("{\"events\":[0]}")) << a.dump();
  const json view = Get(at(1).port(), "/v1/cluster").json();
  EXPECT_FALSE(view.at("instances")[1].at("ready").get<bool>()) << view.dump();
  EXPECT_EQ(view.at("instances")[1].at("stale"), json::parse("{\"events\":[0]}")) << view.dump();
}

// The brokers never answer: the partition list is unknown, and answers stay incomplete even
// when every instance answers and covers what it owns.
TEST_F(ClusterFanoutTest, UnknownPartitionsAreMissingEvenWhenEveryInstanceAnswers) {
  StartGroup(2, 2, [&](int, InstanceOptions* o) { o->brokers = "127.0.0.1:1"; });
  at(0).Serve("events", 0);
  at(1).Serve("events", 1);
  for (int round = 0; round < 3; ++round) {
    const Answer a = Get(at(0).port(), "/v1/events/dev-1/latest?n=10");
    ASSERT_EQ(a.status, 200);
    const json j = a.json();
    EXPECT_FALSE(j.at("complete").get<bool>()) << a.body;
    EXPECT_EQ(j.at("unknown_topics"), json::parse("[\"events\"]")) << a.body;
  }
  std::string scan = Get(at(0).port(), "/v1/scan?from=0&to=9999999999999").body;
  EXPECT_NE(scan.find("\"complete\":false"), std::string::npos) << scan;
}

// index.fields grew with a rolling restart: instance 1's buckets do not index "site" yet. The
// merged answer names its unindexed spans, as instance 1 alone would.
TEST_F(ClusterFanoutTest, IndexFanOutNamesEveryInstancesUnindexedSpans) {
  const int64_t now = WallClock::Default()->NowMs();
  {
    // Instance 1's store before the restart that added "site": its bucket indexes nothing.
    store::StoreOptions before;
    before.path = dir_.Sub("i1") + "/store";
    before.salts = 2;
    before.block_cache_bytes = 8 << 20;
    before.write_buffer_bytes = 8 << 20;
    auto store = store::EventStore::Open(before);
    ASSERT_TRUE(store.ok());
    store::WriteOutcome outcome;
    ASSERT_TRUE(hotrow::testing::WriteEvents(store->get(), Events("s1", "events", 1, now - 900, 3),
                                             &outcome)
                    .ok());
    ASSERT_EQ(outcome.stored, 3u);
  }
  StartGroup(2, 2, [&](int, InstanceOptions* o) { o->index_fields = {"site"}; });
  at(0).Serve("events", 0);
  at(1).Serve("events", 1, 3);
  at(0).Write(Events("s1", "events", 0, now - 1000, 3), {"site"});
  json a = AskUntilComplete(0, "/v1/index/site/s1/latest?n=10");
  ASSERT_TRUE(a.value("complete", false)) << a.dump();
  EXPECT_EQ(a.at("events").size(), 3u) << a.dump();
  ASSERT_TRUE(a.contains("unindexed")) << a.dump();
  EXPECT_EQ(a.at("unindexed").size(), 1u) << a.dump();
  const json range =
      Get(at(0).port(), "/v1/index/site/s1?from=0&to=" + std::to_string(now + 60'000)).json();
  EXPECT_TRUE(range.contains("unindexed")) << range.dump();
}

// Scans with a limit across three instances, events tied in time across partitions, and a
// partition claimed by two instances (a handoff seen from both sides): exactly `limit` events,
// each once, or all of them when fewer exist.
TEST_F(ClusterFanoutTest, ScanWithALimitIsExactAcrossInstances) {
  StartGroup(3, 3);
  const int64_t now = WallClock::Default()->NowMs();
  for (int i = 0; i < 3; ++i) {
    at(i).Serve("events", i);
    std::vector<TestEvent> events;
    for (int k = 0; k < 4; ++k) {
      events.push_back({"dev-" + std::to_string(k), now - 1000, "events", i, k, "{}"});
    }
    at(i).Write(events);
  }
  // Instance 2 also still serves partition 0, with the same records: the coverage decision
  // gives partition 0 to instance 0, so instance 2's copy is dropped, and must not use up the
  // limit.
  at(2).Serve("events", 0);
  std::vector<TestEvent> copy;
  for (int k = 0; k < 4; ++k)
    copy.push_back({"dev-" + std::to_string(k), now - 1000, "events", 0, k, "{}"});
  at(2).Write(copy);
  const std::string range = "from=0&to=" + std::to_string(now + 60'000);
  ASSERT_TRUE(AskUntilComplete(0, "/v1/events/dev-0/latest?n=3").value("complete", false));
  for (int entry = 0; entry < 3; ++entry) {
    for (int limit : {1, 5, 9, 11, 12, 13, 100}) {
      const Answer a =
          Get(at(entry).port(), "/v1/scan?" + range + "&limit=" + std::to_string(limit));
      ASSERT_EQ(a.status, 200) << a.body;
      std::istringstream lines(a.body);
      std::set<std::pair<int, int64_t>> seen;
      json last;
      int events = 0;
      for (std::string line; std::getline(lines, line);) {
        const json j = json::parse(line);
        if (j.contains("complete")) {
          last = j;
          continue;
        }
        ++events;
        EXPECT_TRUE(
            seen.emplace(j.at("partition").get<int>(), j.at("offset").get<int64_t>()).second)
            << "twice: " << line;
      }
      EXPECT_EQ(events, std::min(limit, 12)) << "limit " << limit << " via " << entry << "\n"
                                             << a.body;
      EXPECT_TRUE(last.value("complete", false)) << a.body;
    }
  }
}

// Two topics tied in time, numbered against name order in one store ("b" seen first) and in name
// order in the other: a limit that cuts through the tie gives one answer on every instance, the
// contract's order (ts, then topic name, partition, offset, in the direction of ts).
TEST_F(ClusterFanoutTest, ALimitCuttingThroughTiesGivesOneAnswerEverywhere) {
  auto kafka = ingest::EmbeddedKafka::Start("a", 1);
  ASSERT_TRUE(kafka.ok());
  kafka_ = std::move(kafka).value();
  ASSERT_TRUE(kafka_->CreateTopic("b", 1).ok());
  StartGroup(2, 1, [&](int, InstanceOptions* o) { o->topics = {"a", "b"}; });
  const int64_t now = WallClock::Default()->NowMs();
  // Instance 0 serves both partitions and sees "b" first; instance 1 serves none.
  at(0).Serve("b", 0);
  at(0).Serve("a", 0);
  at(0).Write({{"dev", now - 500, "b", 0, 0, "{\"t\":\"b0\"}"},
               {"dev", now - 500, "b", 0, 1, "{\"t\":\"b1\"}"}});
  at(0).Write({{"dev", now - 500, "a", 0, 0, "{\"t\":\"a0\"}"},
               {"dev", now - 500, "a", 0, 1, "{\"t\":\"a1\"}"}});
  ASSERT_TRUE(AskUntilComplete(0, "/v1/events/dev/latest?n=1").value("complete", false));
  auto order = [&](int instance, const std::string& target) {
    std::vector<std::string> out;
    const json j = Get(at(instance).port(), target).json();
    for (const json& e : j.at("events")) out.push_back(e.at("payload").at("t").get<std::string>());
    return out;
  };
  const std::string to = std::to_string(now + 60'000);
  // Newest first, ties by topic name descending: b before a, offsets descending.
  for (int instance = 0; instance < 2; ++instance) {
    EXPECT_EQ(order(instance, "/v1/events/dev/latest?n=3"),
              (std::vector<std::string>{"b1", "b0", "a1"}))
        << instance;
    EXPECT_EQ(order(instance, "/v1/events/dev?from=0&to=" + to + "&limit=3&order=asc"),
              (std::vector<std::string>{"a0", "a1", "b0"}))
        << instance;
    EXPECT_EQ(order(instance, "/v1/events/dev?from=0&to=" + to + "&limit=300&order=desc"),
              (std::vector<std::string>{"b1", "b0", "a1", "a0"}))
        << instance;
  }
  EXPECT_EQ(order(0, "/v1/events/dev/latest?n=3&local=true"),
            (std::vector<std::string>{"b1", "b0", "a1"}));
}

// An instance of another consumer group among the peers: its answers are refused and counted,
// never merged.
TEST_F(ClusterFanoutTest, AnAnswerFromAnotherGroupIsRefusedAndCounted) {
  StartGroup(2, 2, [&](int i, InstanceOptions* o) {
    if (i == 1) o->group = "other";
  });
  at(0).Serve("events", 0);
  at(1).Serve("events", 1);
  const int64_t now = WallClock::Default()->NowMs();
  at(1).Write(Events("dev-1", "events", 1, now - 1000, 2));
  hotrow::testing::WaitFor(
      [&] { return Get(at(0).port(), "/v1/cluster").json().value("missing", json()).size() > 0; },
      std::chrono::seconds(15));
  const json a = Get(at(0).port(), "/v1/events/dev-1/latest?n=10").json();
  EXPECT_FALSE(a.value("complete", true)) << a.dump();
  EXPECT_TRUE(a.at("events").empty()) << a.dump();
  EXPECT_EQ(a.at("missing"), json::parse("{\"events\":[1]}")) << a.dump();
  const json view = Get(at(0).port(), "/v1/cluster").json();
  EXPECT_NE(view.at("instances")[1].at("error").get<std::string>().find("group \"other\""),
            std::string::npos)
      << view.dump();
  const std::string metrics = Get(at(0).port(), "/metrics").body;
  EXPECT_EQ(metrics.find("hotrow_cluster_peer_answers_refused_total 0"), std::string::npos);
  EXPECT_NE(metrics.find("hotrow_cluster_peer_answers_refused_total"), std::string::npos);
}

// GET /v1/cluster: per instance, reachable, ready, stale partitions and lag.
TEST_F(ClusterFanoutTest, TheClusterViewShowsReachableReadyStaleAndLag) {
  SilentPeer silent;
  StartGroup(2, 2, [&](int, InstanceOptions* o) {
    o->peers.push_back(silent.address());
    // The bound every peer gets, the live one too: long enough for it to answer on a loaded
    // machine under TSan (300 ms was not), paid once for the silent one.
    o->peer_timeout_ms = 5000;
  });
  at(0).Serve("events", 0);
  at(1).Serve("events", 1);
  at(1).ownership()->UpdatePosition("events", 1, 0, 40);  // 40 records behind
  at(1).ownership()->Assigned("events", 1, 0, 40);        // ...since its assignment: rebuilding
  const json view = Get(at(0).port(), "/v1/cluster").json();
  ASSERT_EQ(view.at("instances").size(), 3u) << view.dump();
  const json& self = view.at("instances")[0];
  EXPECT_TRUE(self.at("reachable").get<bool>());
  EXPECT_TRUE(self.at("ready").get<bool>());
  EXPECT_EQ(self.at("stale"), json::parse("{}"));
  const json& behind = view.at("instances")[1];
  EXPECT_TRUE(behind.at("reachable").get<bool>()) << view.dump();
  EXPECT_EQ(behind.at("lag").get<int64_t>(), 40) << view.dump();
  EXPECT_EQ(behind.at("stale"), json::parse("{\"events\":[1]}")) << view.dump();
  const json& silent_view = view.at("instances")[2];
  EXPECT_FALSE(silent_view.at("answered").get<bool>());
  EXPECT_TRUE(silent_view.contains("error"));
  EXPECT_FALSE(view.at("complete").get<bool>());
}

// The per-partition view (CONTRACT.md "Standby replicas", GET /v1/cluster "by_partition"): each
// partition's owner and standbys as their instances report them, with lag and serving, and the
// instance an answer takes it from.
TEST_F(ClusterFanoutTest, TheClusterViewShowsEachPartitionsOwnerAndStandbysWithTheirLag) {
  StartGroup(3, 4, [](int, InstanceOptions* o) { o->standby = true; });
  // events:0 owned by 0; followed by 1 (caught up) and by 2 (40 records behind).
  at(0).Serve("events", 0);
  at(1).Follow("events", 0);
  at(2).Follow("events", 0);
  at(2).followed()->UpdatePosition("events", 0, 0, 40);
  at(2).followed()->Assigned("events", 0, 0, 40);
  // events:1 owned by 1, rebuilding 40 records behind; followed by 0, which serves it meanwhile.
  at(1).Serve("events", 1);
  at(1).ownership()->UpdatePosition("events", 1, 0, 40);
  at(1).ownership()->Assigned("events", 1, 0, 40);
  at(0).Follow("events", 1);
  // events:2 owned by 2, no standby; events:3 held by nobody (only the metadata names it).
  at(2).Serve("events", 2);
  json view;
  hotrow::testing::WaitFor(
      [&] {
        view = Get(at(0).port(), "/v1/cluster").json();
        return view.is_object() && view.value("by_partition", json::array()).size() == 4;
      },
      std::chrono::seconds(15));
  ASSERT_EQ(view.value("by_partition", json::array()).size(), 4u) << view.dump();
  const json& parts = view.at("by_partition");
  const std::string a0 = at(0).address(), a1 = at(1).address(), a2 = at(2).address();

  const json& p0 = parts[0];
  EXPECT_EQ(p0.at("topic"), "events");
  EXPECT_EQ(p0.at("partition"), 0);
  EXPECT_EQ(p0.at("owner").at("address"), a0) << p0.dump();
  EXPECT_TRUE(p0.at("owner").at("serving").get<bool>()) << p0.dump();
  EXPECT_EQ(p0.at("owner").at("lag"), 0);
  ASSERT_EQ(p0.at("standbys").size(), 2u) << p0.dump();
  EXPECT_EQ(p0.at("standbys")[0].at("address"), a1);
  EXPECT_TRUE(p0.at("standbys")[0].at("serving").get<bool>()) << p0.dump();
  EXPECT_EQ(p0.at("standbys")[0].at("lag"), 0);
  EXPECT_EQ(p0.at("standbys")[1].at("address"), a2);
  EXPECT_FALSE(p0.at("standbys")[1].at("serving").get<bool>()) << p0.dump();
  EXPECT_EQ(p0.at("standbys")[1].at("lag"), 40);
  EXPECT_TRUE(p0.at("standbys")[1].contains("why")) << p0.dump();
  EXPECT_EQ(p0.at("served_by"), a0);
  EXPECT_FALSE(p0.at("from_standby").get<bool>());
  EXPECT_EQ(p0.at("serving_copies"), 2);

  const json& p1 = parts[1];
  EXPECT_EQ(p1.at("partition"), 1);
  EXPECT_EQ(p1.at("owner").at("address"), a1) << p1.dump();
  EXPECT_FALSE(p1.at("owner").at("serving").get<bool>()) << p1.dump();
  EXPECT_TRUE(p1.at("owner").at("rebuilding").get<bool>()) << p1.dump();
  EXPECT_EQ(p1.at("owner").at("lag"), 40);
  ASSERT_EQ(p1.at("standbys").size(), 1u) << p1.dump();
  EXPECT_EQ(p1.at("standbys")[0].at("address"), a0);
  EXPECT_TRUE(p1.at("standbys")[0].at("serving").get<bool>());
  EXPECT_EQ(p1.at("served_by"), a0);
  EXPECT_TRUE(p1.at("from_standby").get<bool>());
  EXPECT_EQ(p1.at("serving_copies"), 1);

  const json& p2 = parts[2];
  EXPECT_EQ(p2.at("owner").at("address"), a2) << p2.dump();
  EXPECT_EQ(p2.at("standbys"), json::array());
  EXPECT_EQ(p2.at("served_by"), a2);

  const json& p3 = parts[3];
  EXPECT_EQ(p3.at("partition"), 3);
  EXPECT_TRUE(p3.at("owner").is_null()) << p3.dump();
  EXPECT_EQ(p3.at("standbys"), json::array());
  EXPECT_TRUE(p3.at("served_by").is_null());
  EXPECT_EQ(p3.at("serving_copies"), 0);
  // The instances' rows are still there, each status with its followed partitions.
  ASSERT_EQ(view.at("instances").size(), 3u);
  EXPECT_EQ(view.at("instances")[2].at("status").at("followed").size(), 1u) << view.dump();
  EXPECT_FALSE(view.at("complete").get<bool>());  // events:3 has no holder
}

}  // namespace
}  // namespace hotrow::cluster
