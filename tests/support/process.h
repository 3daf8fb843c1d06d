#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hotrow::testing {

// Waits until `condition` holds, checking every `poll`; false when `timeout` passed first.
// Tests await conditions this way instead of sleeping for a guessed time.
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds timeout = std::chrono::seconds(30),
             std::chrono::milliseconds poll = std::chrono::milliseconds(10));

// The hotrow binary under test: $HOTROW_BIN, set by ctest.
std::string HotrowBinary();

// A loopback TCP port that was free a moment ago (for a child process to listen on), never
// the same twice in one process.
int FreePort();

// Where a child's lines for its parent come from (ChildProcess::ReadLine).
enum class ChildLines {
  // The child's stdout: for the hotrow binary, whose stdout is part of CONTRACT.md (the bootstrap
  // line, the demo's curl lines) and whose logs go to stderr.
  kStdout,
  // A pipe on the child's fd 3 (kChildProtocolFd), apart from its stdout and stderr, which both go
  // to `stderr_path`: for the test's own child programs, whose libraries (spdlog's default logger,
  // RocksDB's warnings through it) may print on stdout at any moment. They write their lines with
  // SayToParent (tests/support/child_protocol.h).
  kProtocolFd,
};

// A child process running a command, with its lines (ChildLines) readable one by one.
// Killed (SIGKILL) and reaped on destruction if still running.
class ChildProcess {
 public:
  // Starts argv[0] with arguments. stderr goes to `stderr_path` when not empty, else inherited.
  explicit ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path = "",
                        ChildLines lines = ChildLines::kStdout);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads one line from the child (ChildLines); false on EOF or when `timeout` passes first.
  bool ReadLine(std::string* line, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Sends a signal.
  void Signal(int sig);
  // Waits for exit; returns the exit code, 128+signal when killed, or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  bool Running();

 private:
  pid_t pid_ = -1;
  int lines_fd_ = -1;
  std::string buffer_;
  bool exited_ = false;
  int exit_code_ = -1;
};

// Starts `hotrow embedded-kafka --partitions P` (stderr to `log_path`) and reads the bootstrap
// address from its one line. Returns nullptr, with *bootstrap empty, when no such line came.
std::unique_ptr<ChildProcess> StartEmbeddedKafka(int partitions, const std::string& log_path,
                                                 std::string* bootstrap);

}  // namespace hotrow::testing
