// Access control through the real `hotrow serve` binary: the refusal to listen beyond loopback
// without a token (exit 2, one line), an unreadable token file at start-up (exit 2 naming it),
// and token rotation on SIGHUP (the old token 401 after, the new one 200; a bad file keeps the
// old token).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using testing::ChildProcess;
using testing::FreePort;
using testing::ReadFile;
using testing::WriteFile;
using testing::WaitFor;

// A config whose broker is never reached: the HTTP side does not need it.
void WriteConfig(const testing::TempDir& dir, const std::string& listen) {
  WriteFile(dir.Sub("hotrow.yaml"),
            "kafka:\n  brokers: 127.0.0.1:1\n  topics: [events]\n"
            "store:\n  path: " +
                dir.Sub("store") + "\nhttp:\n  listen: " + listen + "\n");
}

int GetStatus(int port, const std::string& token) {
  httplib::Client client("127.0.0.1", port);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  httplib::Result res = client.Get("/v1/stats", headers);
  return res ? res->status : -1;
}

TEST(AccessE2ETest, RefusesToListenOpenlyWithoutATokenInOneLine) {
  testing::TempDir dir;
  WriteConfig(dir, "0.0.0.0:" + std::to_string(FreePort()));
  ChildProcess serve({testing::HotrowBinary(), "serve", "--config", dir.Sub("hotrow.yaml")},
                     dir.Sub("err"));
  EXPECT_EQ(serve.Wait(), 2);
  const std::string err = ReadFile(dir.Sub("err"));
  EXPECT_NE(err.find("is not a loopback address and no http.token_file is set"), std::string::npos)
      << err;
}

TEST(AccessE2ETest, AnEmptyOrMissingTokenFileExitsTwoNamingIt) {
  testing::TempDir dir;
  WriteConfig(dir, "127.0.0.1:" + std::to_string(FreePort()));
  WriteFile(dir.Sub("empty-token"), "\n");
  for (const std::string& file : {dir.Sub("empty-token"), dir.Sub("no-such-token")}) {
    ChildProcess serve({testing::HotrowBinary(), "serve", "--config", dir.Sub("hotrow.yaml"),
                        "--set", "http.token_file=" + file},
                       dir.Sub("err"));
    EXPECT_EQ(serve.Wait(), 2) << file;
    const std::string err = ReadFile(dir.Sub("err"));
    EXPECT_NE(err.find(file), std::string::npos) << err;
  }
}

TEST(AccessE2ETest, SighupRotatesTheToken) {
  testing::TempDir dir;
  const int port = FreePort();
  WriteConfig(dir, "127.0.0.1:" + std::to_string(port));
  const std::string token_file = dir.Sub("token");
  WriteFile(token_file, "old-token\n");
  ChildProcess serve({testing::HotrowBinary(), "serve", "--config", dir.Sub("hotrow.yaml"), "--set",
                      "http.token_file=" + token_file},
                     dir.Sub("serve.log"));
  ASSERT_TRUE(WaitFor([&] { return GetStatus(port, "old-token") == 200 || !serve.Running(); },
                      std::chrono::seconds(60), std::chrono::milliseconds(50)))
      << ReadFile(dir.Sub("serve.log"));
  ASSERT_EQ(GetStatus(port, "old-token"), 200) << ReadFile(dir.Sub("serve.log"));
  EXPECT_EQ(GetStatus(port, "new-token"), 401);

  // `hotrow query --token-file`: let in with the token in force, 401 (exit 1) without it.
  const std::string server = "http://127.0.0.1:" + std::to_string(port);
  WriteFile(dir.Sub("client-token"), "old-token");
  auto query = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {
        testing::HotrowBinary(), "query", "latest", "dev-1", "--server", server};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildProcess q(argv, dir.Sub("query.err"));
    std::string line;
    while (q.ReadLine(&line)) {
    }
    return q.Wait();
  };
  EXPECT_EQ(query({"--token-file", dir.Sub("client-token")}), 0) << ReadFile(dir.Sub("query.err"));
  EXPECT_EQ(query({}), 1);
  EXPECT_NE(ReadFile(dir.Sub("query.err")).find("401"), std::string::npos);
  EXPECT_EQ(query({"--token-file", dir.Sub("no-such-file")}), 2);
  EXPECT_NE(ReadFile(dir.Sub("query.err")).find("no-such-file"), std::string::npos);

  WriteFile(token_file, "new-token\n");
  serve.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return GetStatus(port, "new-token") == 200; }))
      << ReadFile(dir.Sub("serve.log"));
  EXPECT_EQ(GetStatus(port, "old-token"), 401);

  // A bad file on SIGHUP: an error in the log, the token in force stays.
  WriteFile(token_file, "");
  serve.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(dir.Sub("serve.log")).find("keeping the old token") != std::string::npos;
  })) << ReadFile(dir.Sub("serve.log"));
  EXPECT_EQ(GetStatus(port, "new-token"), 200);
  EXPECT_TRUE(serve.Running());
  EXPECT_EQ(ReadFile(dir.Sub("serve.log")).find("new-token"), std::string::npos);

  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(), 0) << ReadFile(dir.Sub("serve.log"));
}

}  // namespace
}  // namespace hotrow
