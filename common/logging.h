#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace hotrow {

// Sets up spdlog for the process: one line per message on stderr, with time, level and thread.
// `level` is one of trace, debug, info, warn, error; an unknown name means info. May be called
// again to change the level (the hotrow binary calls it first thing, so that nothing it links ever
// logs on stdout, which carries its commands' output).
//
// Under systemd (CONTRACT.md "Running as a service"): when $JOURNAL_STREAM names the device and
// inode of this process's stderr ("8:12345", as fstat(2) reports them), stderr is the journal's
// stream, so each line starts with its syslog priority as sd-daemon(3) describes ("<4>" for a
// warning, "<3>" an error, "<6>" info, "<7>" debug and trace, "<2>" critical) and carries no time
// of its own (the journal stamps each line); `journalctl -p warning` then shows the warnings.
// Otherwise (a terminal, a file, a pipe the journal does not read) lines are as above.
void InitLogging(std::string_view level = "info");

// Whether $JOURNAL_STREAM names the file open on `fd` (InitLogging asks it of stderr, fd 2).
bool IsJournalStream(int fd);

// Lets through at most `per_interval` events in each interval of `interval_ms`, and counts the
// rest so the next allowed message can say how many were suppressed. Used to rate-limit warnings
// about bad records and failing requests, which can arrive by the thousand.
//
// Thread-safety: Allow() may be called from any thread.
class RateLimiter {
 public:
  RateLimiter(int per_interval, int64_t interval_ms)
      : per_interval_(per_interval), interval_ms_(interval_ms) {}

  // True when this event may be logged. `*suppressed` is set to the number of events refused since
  // the last one allowed.
  bool Allow(uint64_t* suppressed);

 private:
  const int per_interval_;
  const int64_t interval_ms_;
  std::atomic<int64_t> window_start_ms_{0};
  std::atomic<int> in_window_{0};
  std::atomic<uint64_t> suppressed_{0};
};

}  // namespace hotrow
