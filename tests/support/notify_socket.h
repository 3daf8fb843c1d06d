#pragma once

// A service manager's end of the sd_notify protocol, for the tests of what `hotrow serve` tells
// it (tests/service/): an AF_UNIX datagram socket bound as systemd binds $NOTIFY_SOCKET, and what
// arrived on it.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace hotrow::testing {

// One notification as it arrived.
struct Message {
  std::chrono::steady_clock::time_point at;
  std::string text;
  bool Has(const std::string& assignment) const {
    return ("\n" + text + "\n").find("\n" + assignment + "\n") != std::string::npos;
  }
};

// A manager's end of the protocol: an AF_UNIX datagram socket in the abstract namespace (no path
// length limit, nothing to clean up), named "@hotrow-notify-<pid>-<n>" in $NOTIFY_SOCKET's form.
class NotifySocket {
 public:
  NotifySocket() {
    static int counter = 0;
    name_ = "hotrow-notify-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name_.data(), name_.size());  // sun_path[0] = 0: abstract
    const socklen_t len =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_.size());
    bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) close(fd_);
  }
  bool bound() const { return bound_; }
  std::string env_value() const { return "@" + name_; }

  // The next message, or false when none came within `timeout`.
  bool Receive(Message* out, std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return false;
    out->at = std::chrono::steady_clock::now();
    out->text.assign(buf, static_cast<size_t>(n));
    received_.push_back(*out);
    return true;
  }

  // Reads until a message holding `assignment` comes ("READY=1"); false when `timeout` passed.
  bool AwaitMessage(const std::string& assignment, std::chrono::milliseconds timeout,
                    Message* found = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Message m;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !Receive(&m, left)) return false;
      if (m.Has(assignment)) {
        if (found != nullptr) *found = m;
        return true;
      }
    }
  }

  // Everything received so far, one message a line, for failure messages.
  std::string Transcript() const {
    std::string out;
    for (const Message& m : received_) out += "[" + m.text + "]\n";
    return out;
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
  std::vector<Message> received_;
};

}  // namespace hotrow::testing
