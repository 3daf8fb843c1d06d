#include "tests/support/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "tests/support/child_protocol.h"

namespace hotrow::testing {

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

std::string HotrowBinary() {
  const char* bin = getenv("HOTROW_BIN");
  return bin != nullptr ? bin : "hotrow";
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                           ChildLines lines) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int err = -1;
    if (!stderr_path.empty()) err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (lines == ChildLines::kStdout) {
      dup2(fds[1], STDOUT_FILENO);
    } else {
      // dup2 onto itself keeps O_CLOEXEC: clear it so that fd 3 survives the exec.
      if (fds[1] == kChildProtocolFd) {
        fcntl(kChildProtocolFd, F_SETFD, 0);
      } else {
        dup2(fds[1], kChildProtocolFd);
      }
      if (err >= 0) dup2(err, STDOUT_FILENO);
    }
    if (err >= 0) dup2(err, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  lines_fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (lines_fd_ >= 0) close(lines_fd_);
}

bool ChildProcess::ReadLine(std::string* line, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      *line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{lines_fd_, POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>(left.count()));
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = read(lines_fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void ChildProcess::Signal(int sig) {
  if (!exited_ && pid_ > 0) kill(pid_, sig);
}

bool ChildProcess::Running() {
  if (exited_) return false;
  int status;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

int ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (!WaitFor([&] { return !Running(); }, timeout, std::chrono::milliseconds(5))) return -1;
  return exit_code_;
}

int FreePort() {
  // The kernel may give the same port to two binds in a row once the first socket is closed: a
  // test asking for ports for a group of servers would then start two on one port. Never hand
  // out a port twice in one process.
  static std::mutex mu;
  static std::set<int> given;
  std::lock_guard<std::mutex> lock(mu);
  while (true) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    const int port = ntohs(addr.sin_port);
    close(fd);
    if (given.insert(port).second) return port;
  }
}

std::unique_ptr<ChildProcess> StartEmbeddedKafka(int partitions, const std::string& log_path,
                                                 std::string* bootstrap) {
  static const std::string kPrefix = "bootstrap=";
  bootstrap->clear();
  auto kafka = std::make_unique<ChildProcess>(
      std::vector<std::string>{HotrowBinary(), "embedded-kafka", "--partitions",
                               std::to_string(partitions)},
      log_path);
  std::string line;
  if (!kafka->ReadLine(&line) || line.rfind(kPrefix, 0) != 0) return nullptr;
  *bootstrap = line.substr(kPrefix.size());
  return kafka;
}

}  // namespace hotrow::testing
