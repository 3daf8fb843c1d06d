// `hotrow demo` through the real binary: the curl lines it prints answer with events, run as
// printed (with curl when the machine has it, and always through an HTTP client reading the very
// URL of the line); SIGTERM exits 0 and removes the temporary data, or keeps --data.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cli {
namespace {

using testing::ChildProcess;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// True when `curl` is on the PATH.
bool HaveCurl() {
  ChildProcess which({"/bin/sh", "-c", "command -v curl"});
  return which.Wait() == 0;
}

// What the demo printed before "Stop with Ctrl-C.".
struct DemoOutput {
  std::vector<std::string> curl_lines;  // as printed, leading spaces removed
  std::string base_url;                 // from the "HTTP API:" line
  std::string data_dir;                 // from the "Data:" line
};

DemoOutput ReadDemoOutput(ChildProcess* demo, const std::string& log_path) {
  DemoOutput out;
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!demo->ReadLine(&line, std::chrono::seconds(90))) {
      ADD_FAILURE() << "demo ended its output early:\n" << ReadFile(log_path);
      break;
    }
    const size_t start = line.find_first_not_of(' ');
    const std::string text = start == std::string::npos ? "" : line.substr(start);
    if (text.rfind("curl '", 0) == 0) out.curl_lines.push_back(text);
    if (text.rfind("HTTP API:", 0) == 0) out.base_url = text.substr(text.find("http://"));
    if (text.rfind("Data:", 0) == 0) {
      std::string rest = text.substr(5);
      rest = rest.substr(rest.find_first_not_of(' '));
      out.data_dir = rest.substr(0, rest.find(' '));
    }
    if (text.rfind("Stop with Ctrl-C.", 0) == 0) break;
  }
  return out;
}

// The URL inside a printed `curl '...'` line.
std::string UrlOf(const std::string& curl_line) {
  const size_t open = curl_line.find('\'');
  const size_t close = curl_line.rfind('\'');
  return curl_line.substr(open + 1, close - open - 1);
}

// Fetches `url` ("http://host:port/path?query") as given.
std::pair<int, std::string> Fetch(const std::string& url) {
  const size_t path_at = url.find('/', std::string("http://").size());
  httplib::Client client(url.substr(0, path_at));
  client.set_url_encode(false);
  client.set_read_timeout(std::chrono::seconds(30));
  httplib::Result res = client.Get(url.substr(path_at));
  if (!res) return {-1, ""};
  return {res->status, res->body};
}

// The number of events in a latest/range answer or a scan; fails the test when the body is not
// one of those.
size_t CountEvents(const std::string& url, const std::string& body) {
  if (url.find("/v1/scan?") != std::string::npos) {
    size_t lines = 0;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line); ++lines) {
      nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      EXPECT_TRUE(e.is_object() && e.contains("event_id") && e.contains("payload")) << line;
    }
    return lines;
  }
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("events")) << body.substr(0, 300);
  if (!j.is_object() || !j.contains("events")) return 0;
  for (const auto& e : j["events"]) EXPECT_EQ(e["event_id"], j["event_id"]);
  return j["events"].size();
}

TEST(DemoTest, PrintedCurlLinesAnswerWithEventsAndSigtermCleansUp) {
  testing::TempDir dir;
  ChildProcess demo({testing::HotrowBinary(), "demo", "--listen", "127.0.0.1:0", "--rate", "2000"},
                    dir.Sub("demo.log"));
  const DemoOutput out = ReadDemoOutput(&demo, dir.Sub("demo.log"));
  ASSERT_EQ(out.curl_lines.size(), 3u) << ReadFile(dir.Sub("demo.log"));
  EXPECT_EQ(out.base_url.rfind("http://127.0.0.1:", 0), 0u) << out.base_url;
  EXPECT_NE(out.curl_lines[0].find("/latest?"), std::string::npos) << out.curl_lines[0];
  EXPECT_NE(out.curl_lines[1].find("?from="), std::string::npos) << out.curl_lines[1];
  EXPECT_NE(out.curl_lines[2].find("/v1/scan?"), std::string::npos) << out.curl_lines[2];
  ASSERT_FALSE(out.data_dir.empty());
  EXPECT_TRUE(Exists(out.data_dir)) << out.data_dir;

  for (const std::string& line : out.curl_lines) {
    const std::string url = UrlOf(line);
    EXPECT_EQ(url.rfind(out.base_url, 0), 0u) << line;
    auto [status, body] = Fetch(url);
    ASSERT_EQ(status, 200) << line << "\n" << body;
    EXPECT_GT(CountEvents(url, body), 0u) << line;
  }

  if (HaveCurl()) {
    for (const std::string& line : out.curl_lines) {
      ChildProcess curl({"/bin/sh", "-c", line + " --silent --show-error --fail"},
                        dir.Sub("curl.err"));
      std::string answer, part;
      while (curl.ReadLine(&part)) answer += part + "\n";
      EXPECT_EQ(curl.Wait(), 0) << line << "\n" << ReadFile(dir.Sub("curl.err"));
      EXPECT_GT(CountEvents(UrlOf(line), answer), 0u) << line << "\n" << answer;
    }
  } else {
    std::fprintf(stderr, "curl is not installed: the printed lines were fetched over HTTP only\n");
  }

  demo.Signal(SIGTERM);
  EXPECT_EQ(demo.Wait(std::chrono::seconds(15)), 0) << ReadFile(dir.Sub("demo.log"));
  EXPECT_FALSE(Exists(out.data_dir)) << out.data_dir << " should be removed at exit";
}

TEST(DemoTest, GivenDataDirectoryIsKept) {
  testing::TempDir dir;
  ChildProcess demo({testing::HotrowBinary(), "demo", "--listen", "127.0.0.1:0", "--rate", "500",
                     "--data", dir.Sub("data")},
                    dir.Sub("demo.log"));
  const DemoOutput out = ReadDemoOutput(&demo, dir.Sub("demo.log"));
  ASSERT_EQ(out.curl_lines.size(), 3u) << ReadFile(dir.Sub("demo.log"));
  EXPECT_EQ(out.data_dir, dir.Sub("data"));
  demo.Signal(SIGINT);
  EXPECT_EQ(demo.Wait(std::chrono::seconds(15)), 0) << ReadFile(dir.Sub("demo.log"));
  EXPECT_TRUE(Exists(dir.Sub("data/store"))) << ReadFile(dir.Sub("demo.log"));
}

TEST(DemoTest, BadFlagsExitTwo) {
  testing::TempDir dir;
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--listen", "nowhere"},
                                                {"--listen", "127.0.0.1:99999"},
                                                {"--rate", "-1"},
                                                {"--rate", "many"},
                                                {"--bogus"}}) {
    std::vector<std::string> argv = {testing::HotrowBinary(), "demo"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    ChildProcess demo(argv, dir.Sub("err"));
    EXPECT_EQ(demo.Wait(), 2) << flags[0] << " " << (flags.size() > 1 ? flags[1] : "");
    const std::string err = ReadFile(dir.Sub("err"));
    EXPECT_NE(err.find(flags[0]), std::string::npos) << err;
    std::remove(dir.Sub("err").c_str());
  }
}

}  // namespace
}  // namespace hotrow::cli
