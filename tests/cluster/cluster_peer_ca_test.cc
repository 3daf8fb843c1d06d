// cluster.peer_ca is read at start and at SIGHUP only, through the real binary (CONTRACT.md,
// "Cluster mode in production settings"): two `hotrow serve` in one group over HTTPS, each with a
// CA file of its own, over `hotrow embedded-kafka` fed by `hotrow produce`.
//
// Instance A's CA file is overwritten with garbage and A gets a SIGHUP: the reload fails and is
// counted. Then B is restarted; while it is down A's fan-outs fail, which drops every peer client
// A kept for B, so that after B is back A asks it through clients made after the failed reload.
// They must verify B with the CA read before it: A's answers are complete again. The same with
// A's CA file replaced by a valid file naming another CA and no SIGHUP: nothing changes until a
// SIGHUP, after which A trusts only the new CA and no longer accepts B.

// GCC 12 reports a false -Wrestrict in std::string's inlined copies of "literal" + string
// (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster::cluster_peer_ca_test {
namespace {

using hotrow::testing::ChildProcess;
using hotrow::testing::ReadFile;
using hotrow::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kA = 0, kB = 1;
// More failed requests than the idle connections kept per peer (16, http/peer_transport.h): each
// failure closes the connection it used, so afterwards none made before remains.
constexpr int kDrainingRequests = 20;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

class ClusterPeerCaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::MakeCa(dir_, "ca1");
    testing::MakeLeaf(dir_, "ca1", "leaf1");
    testing::MakeCa(dir_, "ca2");
    kafka_ = hotrow::testing::StartEmbeddedKafka(4, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    std::string peers;
    for (int i = 0; i < 2; ++i) {
      ports_.push_back(hotrow::testing::FreePort());
      peers += (i == 0 ? "" : ", ") + std::string("127.0.0.1:") + std::to_string(ports_[i]);
    }
    for (int i = 0; i < 2; ++i) {
      WriteFile(CaFile(i), ReadFile(dir_.Sub("ca1.crt")));
      std::ofstream(Config(i)) << "kafka:\n  brokers: " << bootstrap_
                               << "\n  topics: [events]\n  group_id: peer-ca\n"
                               << "store:\n  path: " << dir_.Sub("store-" + std::to_string(i))
                               << "\n"
                               << "keying:\n  salts: 2\n"
                               << "http:\n  listen: 127.0.0.1:" << ports_[i]
                               << "\n  tls_cert: " << dir_.Sub("leaf1.crt")
                               << "\n  tls_key: " << dir_.Sub("leaf1.key") << "\n"
                               << "query:\n  threads: 1\n"
                               << "cluster:\n  peers: [" << peers << "]\n  peer_ca: " << CaFile(i)
                               << "\n  peer_timeout_ms: 1000\n";
    }
    serves_.resize(2);
    for (int i = 0; i < 2; ++i) StartServe(i);
    ChildProcess produce({hotrow::testing::HotrowBinary(), "produce", "--brokers", bootstrap_,
                          "--topic", "events", "--count", "2000", "--rate", "0", "--devices", "10"},
                         dir_.Sub("produce.log"));
    ASSERT_EQ(produce.Wait(60s), 0) << ReadFile(dir_.Sub("produce.log"));
  }

  void TearDown() override {
    for (auto& serve : serves_) {
      if (serve && serve->Running()) serve->Signal(SIGTERM);
    }
    for (auto& serve : serves_) {
      if (serve) serve->Wait(15s);
    }
    if (kafka_) {
      kafka_->Signal(SIGTERM);
      kafka_->Wait(15s);
    }
  }

  std::string CaFile(int i) const { return dir_.Sub("peer-ca-" + std::to_string(i) + ".pem"); }
  std::string Config(int i) const { return dir_.Sub("hotrow-" + std::to_string(i) + ".yaml"); }

  void StartServe(int i) {
    serves_[i] = std::make_unique<ChildProcess>(
        std::vector<std::string>{hotrow::testing::HotrowBinary(), "serve", "--config", Config(i)},
        dir_.Sub("serve-" + std::to_string(i) + ".log"));
  }

  std::string Logs() const {
    std::string out;
    for (int i = 0; i < 2; ++i) {
      const std::string log = ReadFile(dir_.Sub("serve-" + std::to_string(i) + ".log"));
      out += "--- serve " + std::to_string(i) + "\n" +
             log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
    }
    return out;
  }

  // A's /v1/cluster (A's own certificate is from ca1 throughout).
  json ClusterView() const {
    const testing::Answer a = testing::Get(ports_[kA], "/v1/cluster", "", dir_.Sub("ca1.crt"));
    return a.status == 200 ? a.json() : json();
  }

  // What A says of B in its /v1/cluster: answered, or the error.
  json PeerB() const {
    const json view = ClusterView();
    if (!view.is_object() || view.at("instances").size() != 2) return json();
    return view.at("instances")[1];
  }

  // A answers for the whole group, B's partitions through B.
  bool CompleteThroughB() const {
    const json b = PeerB();
    if (!b.is_object() || !b.value("answered", false)) return false;
    const testing::Answer a =
        testing::Get(ports_[kA], "/v1/events/dev-000001/latest?n=20", "", dir_.Sub("ca1.crt"));
    if (a.status != 200) return false;
    const json j = a.json();
    return j.value("complete", false) && j.at("events").size() == 20;
  }

  // A's hotrow_access_reloads_total{outcome=...}.
  std::optional<double> Reloads(const std::string& outcome) const {
    const testing::Answer m = testing::Get(ports_[kA], "/metrics", "", dir_.Sub("ca1.crt"));
    if (m.status != 200) return std::nullopt;
    return hotrow::testing::MetricValue(hotrow::testing::ParsePrometheusText(m.body),
                                        "hotrow_access_reloads_total", {{"outcome", outcome}});
  }

  // Stops B, makes A fail to reach it until no client A made before is left, starts B again.
  void RestartBDrainingAsClients() {
    serves_[kB]->Signal(SIGTERM);
    ASSERT_EQ(serves_[kB]->Wait(15s), 0) << Logs();
    for (int i = 0; i < kDrainingRequests; ++i) {
      const json b = PeerB();
      ASSERT_TRUE(b.is_object()) << Logs();
      ASSERT_FALSE(b.value("answered", true)) << b.dump();
    }
    StartServe(kB);
  }

  hotrow::testing::TempDir dir_;
  std::unique_ptr<ChildProcess> kafka_;
  std::string bootstrap_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<ChildProcess>> serves_;
};

TEST_F(ClusterPeerCaTest, TheCaIsReadAtStartAndAtSighupOnly) {
  ASSERT_TRUE(WaitFor([&] { return CompleteThroughB(); }, 90s, 100ms)) << Logs();
  ASSERT_EQ(Reloads("failed"), 0.0);

  // 1. A broken CA file at SIGHUP: refused and counted, the CA held before stays for every
  // client, including those made after it.
  WriteFile(CaFile(kA), "this is not a certificate\n");
  serves_[kA]->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return Reloads("failed") == 1.0; }, 30s)) << Logs();
  EXPECT_EQ(Reloads("ok"), 0.0);
  ASSERT_NO_FATAL_FAILURE(RestartBDrainingAsClients());
  EXPECT_TRUE(WaitFor([&] { return CompleteThroughB(); }, 60s, 100ms)) << PeerB().dump() << "\n"
                                                                       << Logs();

  // 2. A valid CA file naming another CA, without SIGHUP: not read, nothing changes.
  WriteFile(CaFile(kA), ReadFile(dir_.Sub("ca2.crt")));
  ASSERT_NO_FATAL_FAILURE(RestartBDrainingAsClients());
  EXPECT_TRUE(WaitFor([&] { return CompleteThroughB(); }, 60s, 100ms)) << PeerB().dump() << "\n"
                                                                       << Logs();

  // 3. The same file read at a SIGHUP: A now trusts only ca2, which did not sign B's certificate.
  serves_[kA]->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return Reloads("ok") == 1.0; }, 30s)) << Logs();
  json refused;
  EXPECT_TRUE(WaitFor(
      [&] {
        refused = PeerB();
        return refused.is_object() && !refused.value("answered", true);
      },
      30s, 100ms))
      << refused.dump();
  EXPECT_NE(refused.value("error", "").find("SSLServerVerification"), std::string::npos)
      << refused.dump();
}

}  // namespace
}  // namespace hotrow::cluster::cluster_peer_ca_test
