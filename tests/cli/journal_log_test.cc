// Log lines under systemd's journal (CONTRACT.md "Running as a service"): with $JOURNAL_STREAM
// naming the device and inode of hotrow's stderr, every line starts with its syslog priority
// ("<4>" a warning, "<3>" an error, "<6>" info; sd-daemon(3)) and carries no time stamp; without
// it, or naming another file, lines are as always (time first, no prefix).

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::journal_log_test {
namespace {

using testing::ChildProcess;
using testing::ReadFile;
using testing::WriteFile;

std::string DeviceInode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return std::to_string(static_cast<uintmax_t>(st.st_dev)) + ":" +
         std::to_string(static_cast<uintmax_t>(st.st_ino));
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Runs a `hotrow serve` that logs at three levels and fails fast: a warning (the retired
// http.threads'), infos, and the error of a store.path that is a file. Returns its stderr.
std::string RunFailingServe(const testing::TempDir& dir, const std::string& stderr_path,
                            const char* journal_stream) {
  WriteFile(dir.Sub("a-file"), "");
  if (journal_stream != nullptr) {
    setenv("JOURNAL_STREAM", journal_stream, 1);
  } else {
    unsetenv("JOURNAL_STREAM");
  }
  ChildProcess serve({testing::HotrowBinary(), "serve", "--set", "store.path=" + dir.Sub("a-file"),
                      "--set", "kafka.brokers=127.0.0.1:1", "--set", "http.threads=4"},
                     stderr_path);
  const int rc = serve.Wait();
  unsetenv("JOURNAL_STREAM");
  EXPECT_NE(rc, 0);
  return ReadFile(stderr_path);
}

const std::regex kTimeFirst(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} .*)");

TEST(JournalLogTest, PriorityPrefixesAndNoTimeWhenStderrIsTheJournalStream) {
  testing::TempDir dir;
  const std::string err = dir.Sub("stderr.log");
  WriteFile(err, "");  // made first, so that its device and inode can be named
  const std::string log = RunFailingServe(dir, err, DeviceInode(err).c_str());
  const std::vector<std::string> lines = Lines(log);
  ASSERT_FALSE(lines.empty());
  bool warn = false, info = false, error = false;
  for (const std::string& line : lines) {
    SCOPED_TRACE(line);
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(^<[0-7]>.*)"))) << log;
    EXPECT_FALSE(std::regex_match(line, std::regex(R"(^<[0-7]>\d{4}-.*)"))) << "no time stamp";
    warn |= line.rfind("<4>warning ", 0) == 0;
    info |= line.rfind("<6>info ", 0) == 0;
    error |= line.rfind("<3>error ", 0) == 0;
  }
  EXPECT_TRUE(warn) << log;
  EXPECT_TRUE(info) << log;
  EXPECT_TRUE(error) << log;
}

TEST(JournalLogTest, NoPrefixWithoutJournalStreamOrWhenItNamesAnotherFile) {
  testing::TempDir dir;
  const std::string other = dir.Sub("other");
  WriteFile(other, "");
  for (const char* stream : {static_cast<const char*>(nullptr), "garbage", "0:0"}) {
    SCOPED_TRACE(stream == nullptr ? "unset" : stream);
    const std::string err = dir.Sub("stderr-plain.log");
    WriteFile(err, "");
    const std::string log = RunFailingServe(dir, err, stream);
    for (const std::string& line : Lines(log)) {
      EXPECT_TRUE(std::regex_match(line, kTimeFirst)) << line;
    }
  }
  // Another file's device and inode: stderr is not the journal's stream.
  const std::string err = dir.Sub("stderr-other.log");
  WriteFile(err, "");
  const std::string log = RunFailingServe(dir, err, DeviceInode(other).c_str());
  ASSERT_FALSE(log.empty());
  for (const std::string& line : Lines(log))
    EXPECT_TRUE(std::regex_match(line, kTimeFirst)) << line;
}

}  // namespace
}  // namespace hotrow::journal_log_test
