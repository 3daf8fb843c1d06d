// `hotrow serve` without --config, through the real binary: it starts with every key at its
// documented default (the values of configs/hotrow.yaml), consumes the default topic, stores under
// the default relative path and answers with the default window.
//
// Two keys are set with --set because a test cannot take them as they are: http.listen (port 8080
// may be in use on a shared machine) and kafka.brokers (the test's own loopback broker). Everything
// else comes from the binary's defaults, and the start-up log line that names every key must equal
// the one of the shipped configs/hotrow.yaml with the same two overrides.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::config {
namespace {

using testing::ChildProcess;
using testing::FreePort;
using testing::ReadFile;
using testing::WaitFor;

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The shell word for `s`, for the `cd DIR && exec ...` line that gives serve its working directory.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What follows "hotrow starting: " in the log, up to the end of its line; empty when absent.
std::string StartingLine(const std::string& log) {
  const std::string marker = "hotrow starting: ";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  return log.substr(begin, log.find('\n', begin) - begin);
}

TEST(ServeDefaultsTest, ServeWithoutConfigRunsWithTheDocumentedDefaults) {
  testing::TempDir dir;
  std::string bootstrap;
  auto kafka = testing::StartEmbeddedKafka(2, dir.Sub("kafka.log"), &bootstrap);
  ASSERT_NE(kafka, nullptr) << ReadFile(dir.Sub("kafka.log"));
  const int port = FreePort();
  const std::vector<std::string> sets = {"http.listen=127.0.0.1:" + std::to_string(port),
                                         "kafka.brokers=" + bootstrap};

  // The binary, run from an empty working directory so that the default store.path
  // (./hotrow-data) lands inside the test's directory.
  const std::string cwd = dir.Sub("cwd");
  ASSERT_EQ(mkdir(cwd.c_str(), 0755), 0);
  std::string command =
      "cd " + ShellQuote(cwd) + " && exec " + ShellQuote(testing::HotrowBinary()) + " serve";
  for (const auto& s : sets) command += " --set " + ShellQuote(s);
  ChildProcess serve({"/bin/sh", "-c", command}, dir.Sub("serve.log"));

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(10));
  auto get = [&](const std::string& path) -> std::pair<int, std::string> {
    httplib::Result res = client.Get(path);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  };
  ASSERT_TRUE(WaitFor([&] { return get("/readyz").first == 200 || !serve.Running(); },
                      std::chrono::seconds(60), std::chrono::milliseconds(100)))
      << ReadFile(dir.Sub("serve.log"));
  ASSERT_TRUE(serve.Running()) << ReadFile(dir.Sub("serve.log"));

  // Every key as logged equals the shipped, fully commented config with the same overrides.
  Result<Config> shipped = LoadConfig(hotrow::testing::SourceDir() + "/configs/hotrow.yaml", sets);
  ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
  EXPECT_EQ(StartingLine(ReadFile(dir.Sub("serve.log"))), shipped->Summary())
      << ReadFile(dir.Sub("serve.log"));

  // The defaults at work: the default topic `events` is consumed into ./hotrow-data, and the
  // window is the default 10m in 1m buckets over 16 salts.
  ChildProcess produce({testing::HotrowBinary(), "produce", "--brokers", bootstrap, "--topic",
                        "events", "--count", "500", "--rate", "0"},
                       dir.Sub("produce.log"));
  ASSERT_EQ(produce.Wait(std::chrono::seconds(60)), 0) << ReadFile(dir.Sub("produce.log"));
  nlohmann::json stats;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto [status, body] = get("/v1/stats");
        if (status != 200) return false;
        stats = nlohmann::json::parse(body, nullptr, false);
        return stats.is_object() && stats.value("ingested", 0) >= 500;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(100)))
      << stats.dump();
  EXPECT_TRUE(IsDirectory(cwd + "/hotrow-data")) << "the default store.path is ./hotrow-data";
  EXPECT_EQ(stats["store"]["ttl_ms"], 600000);
  EXPECT_EQ(stats["store"]["bucket_ms"], 60000);
  EXPECT_EQ(stats["store"]["clock"], "wall");
  EXPECT_EQ(stats["salt_by"], "record");
  EXPECT_EQ(stats["salts"].size(), 16u);

  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(std::chrono::seconds(15)), 0) << ReadFile(dir.Sub("serve.log"));
  kafka->Signal(SIGTERM);
  kafka->Wait(std::chrono::seconds(15));
}

}  // namespace
}  // namespace hotrow::config
