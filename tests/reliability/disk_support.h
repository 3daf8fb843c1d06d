#pragma once

// Helpers of the disk tests (disk_full_test, corrupt_store_test): a tmpfs mounted for one test,
// a hotrow command run to completion under a deadline, and `hotrow serve` as a child process
// whose HTTP address is read back from its log (it listens on an ephemeral port).

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace hotrow::testing {

// Reads a whole file; empty when it cannot be read.
std::string ReadWholeFile(const std::string& path);

// A tmpfs of `size_mb` MiB mounted at `path` (created when missing) for the life of the object.
// Unmounted on destruction, lazily when still busy.
class TmpfsMount {
 public:
  TmpfsMount(const std::string& path, int size_mb);
  ~TmpfsMount();
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  bool mounted() const { return mounted_; }
  // The mount(2) failure was EPERM/EACCES: not root, or a container without CAP_SYS_ADMIN.
  bool permission_denied() const { return permission_denied_; }
  const std::string& error() const { return error_; }
  // Free bytes of the filesystem.
  uint64_t FreeBytes() const;

 private:
  std::string path_;
  bool mounted_ = false;
  bool permission_denied_ = false;
  std::string error_;
};

// Writes `path` until the filesystem refuses (ENOSPC); returns the bytes written.
uint64_t FillUntilFull(const std::string& path);

// How a command ended: its exit code (128 + signal when killed by one, -1 when it outlived its
// deadline and was killed) and what it wrote on stderr.
struct CommandResult {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs `hotrow ARGS...` to completion, at most `timeout`. stderr goes to `stderr_path`.
CommandResult RunHotrow(const std::vector<std::string>& args, const std::string& stderr_path,
                        std::chrono::milliseconds timeout = std::chrono::seconds(60));

// `hotrow serve --config CONFIG` as a child process, its stderr in `log_path`. The config should
// set http.listen to 127.0.0.1:0; the bound address is read from the "HTTP on" log line.
class ServeProcess {
 public:
  ServeProcess(const std::string& config_path, const std::string& log_path);
  ~ServeProcess();

  // Waits until serve logs its HTTP address (true) or exits first (false).
  bool AwaitStarted(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Waits until /readyz answers 200.
  bool AwaitReady(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // GET target: (status, body); status -1 when there is no answer.
  std::pair<int, std::string> Get(const std::string& target) const;
  // /v1/stats parsed; an empty object when it cannot be had.
  nlohmann::json Stats() const;
  // SIGTERM, then the exit code (see ChildProcess::Wait).
  int Stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  bool Running() { return child_.Running(); }
  std::string Log() const { return ReadWholeFile(log_path_); }

 private:
  std::string log_path_;
  ChildProcess child_;
  std::string host_;
  int port_ = 0;
};

}  // namespace hotrow::testing
