// Cluster mode in production settings through the real binary (CONTRACT.md, "Cluster mode in
// production settings"): three `hotrow serve` in one group with HTTPS (http.tls_cert,
// http.tls_key, cluster.peer_ca) and a token, over `hotrow embedded-kafka` fed by
// `hotrow produce`. Every instance answers for the group completely; then every instance gets a
// new token, a new certificate from a new CA and a CA file naming only that CA, and a SIGHUP:
// the group answers completely again with no restart, and the old token is refused.

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
#include <string>
#include <vector>

#include "tests/cluster/cluster_instance.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster::cluster_tls_e2e_test {
namespace {

using hotrow::testing::ChildProcess;
using hotrow::testing::ReadFile;
using hotrow::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kInstances = 3;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

TEST(ClusterTlsE2ETest, HttpsTokenAndASighupRotationOnEveryInstance) {
  hotrow::testing::TempDir dir;
  testing::MakeCa(dir, "ca1");
  testing::MakeLeaf(dir, "ca1", "leaf1");
  testing::MakeCa(dir, "ca2");
  testing::MakeLeaf(dir, "ca2", "leaf2");
  const std::string token = dir.Sub("token"), cert = dir.Sub("cert.pem"), key = dir.Sub("key.pem"),
                    ca = dir.Sub("ca.pem");
  auto install = [&](const std::string& leaf, const std::string& authority, const std::string& t) {
    WriteFile(token, t + "\n");
    WriteFile(cert, ReadFile(dir.Sub(leaf + ".crt")));
    WriteFile(key, ReadFile(dir.Sub(leaf + ".key")));
    WriteFile(ca, ReadFile(dir.Sub(authority + ".crt")));
  };
  install("leaf1", "ca1", "token-one");

  std::string bootstrap;
  std::unique_ptr<ChildProcess> kafka =
      hotrow::testing::StartEmbeddedKafka(6, dir.Sub("kafka.log"), &bootstrap);
  ASSERT_NE(kafka, nullptr) << ReadFile(dir.Sub("kafka.log"));
  std::vector<int> ports;
  std::string peers;
  for (int i = 0; i < kInstances; ++i) {
    ports.push_back(hotrow::testing::FreePort());
    peers += (i == 0 ? "" : ", ") + std::string("127.0.0.1:") + std::to_string(ports[i]);
  }
  std::vector<std::unique_ptr<ChildProcess>> serves;
  auto logs = [&] {
    std::string out;
    for (int i = 0; i < kInstances; ++i) {
      const std::string log = ReadFile(dir.Sub("serve-" + std::to_string(i) + ".log"));
      out += "--- serve " + std::to_string(i) + "\n" +
             log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
    }
    return out;
  };
  for (int i = 0; i < kInstances; ++i) {
    const std::string config = dir.Sub("hotrow-" + std::to_string(i) + ".yaml");
    std::ofstream(config) << "kafka:\n  brokers: " << bootstrap
                          << "\n  topics: [events]\n  group_id: tls-e2e\n"
                          << "store:\n  path: " << dir.Sub("store-" + std::to_string(i)) << "\n"
                          << "keying:\n  salts: 2\n"
                          << "http:\n  listen: 127.0.0.1:" << ports[i]
                          << "\n  token_file: " << token << "\n  tls_cert: " << cert
                          << "\n  tls_key: " << key << "\n"
                          << "query:\n  threads: 1\n"
                          << "cluster:\n  peers: [" << peers << "]\n  peer_ca: " << ca << "\n";
    serves.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{hotrow::testing::HotrowBinary(), "serve", "--config", config},
        dir.Sub("serve-" + std::to_string(i) + ".log")));
  }
  {
    ChildProcess produce({hotrow::testing::HotrowBinary(), "produce", "--brokers", bootstrap,
                          "--topic", "events", "--count", "3000", "--rate", "0", "--devices", "20"},
                         dir.Sub("produce.log"));
    ASSERT_EQ(produce.Wait(60s), 0) << ReadFile(dir.Sub("produce.log"));
  }
  // Every instance, asked over HTTPS with the token, answers for the whole group.
  auto complete_everywhere = [&](const std::string& t, const std::string& authority) {
    for (int i = 0; i < kInstances; ++i) {
      const testing::Answer a = testing::Get(ports[i], "/v1/events/dev-000001/latest?n=20", t,
                                             dir.Sub(authority + ".crt"));
      if (a.status != 200) return false;
      const json j = a.json();
      if (!j.value("complete", false) || j.at("events").size() != 20) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitFor([&] { return complete_everywhere("token-one", "ca1"); }, 90s)) << logs();
  const json view = testing::Get(ports[0], "/v1/cluster", "token-one", dir.Sub("ca1.crt")).json();
  ASSERT_EQ(view.at("instances").size(), 3u) << view.dump();
  for (const json& instance : view.at("instances")) {
    EXPECT_TRUE(instance.at("answered").get<bool>()) << view.dump();
  }

  install("leaf2", "ca2", "token-two");
  for (auto& serve : serves) serve->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return complete_everywhere("token-two", "ca2"); }, 30s)) << logs();
  EXPECT_EQ(
      testing::Get(ports[1], "/v1/events/dev-000001/latest?n=1", "token-one", dir.Sub("ca2.crt"))
          .status,
      401);
  EXPECT_EQ(testing::Get(ports[1], "/healthz", "", dir.Sub("ca1.crt")).status, -1);

  for (auto& serve : serves) serve->Signal(SIGTERM);
  for (auto& serve : serves) EXPECT_EQ(serve->Wait(15s), 0) << logs();
  kafka->Signal(SIGTERM);
  kafka->Wait(15s);
}

}  // namespace
}  // namespace hotrow::cluster::cluster_tls_e2e_test
