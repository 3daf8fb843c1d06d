#pragma once

// Latest-10 load by `wrk` against one or more `hotrow serve` at once, counting only the answers
// that are 2xx, say complete (or carry no completeness: a single instance) and hold exactly the
// events expected: what cluster_bench's saturation figures count. wrk (Debian's, one thread per
// process, a Lua script) is the generator because it costs the clients' CPU far less than
// cpp-httplib's client does (last_cache_bench).
//
// Thread-safety: the functions may be called from one thread at a time.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hotrow::bench {

// Writes `dir`/latest_exact.lua: each request asks latest-10 of a random id of `expected`; an
// answer counts as exact when it is 200, has no "complete":false, and holds the id's expected
// events text ("events":[...], as the single instance answered it). Returns its path; dies on
// failure.
std::string WriteExactLatestScript(const std::string& dir,
                                   const std::map<std::string, std::string>& expected);

// The text `"events":[...]` of a latest-N answer's body, byte for byte as the server wrote it
// (what WriteExactLatestScript looks for; a reparsed and dumped document differs: key order,
// numbers); nullopt when the body has none.
std::optional<std::string> EventsText(const std::string& body);

struct WrkCounts {
  int64_t exact = 0;       // 2xx, complete, the expected events
  int64_t inexact = 0;     // 2xx, but incomplete or other events
  int64_t bad = 0;         // not 2xx, or a socket error
  double seconds = 0;      // the longest of the wrk runs, as wrk timed it
  double cpu_seconds = 0;  // CPU the servers asked (RunWrk's `pids`) used meanwhile
  double ExactPerSecond() const { return seconds > 0 ? exact / seconds : 0; }
  // Answers per CPU second of the servers: what outside load on a shared machine changes least.
  double ExactPerCpuSecond() const { return cpu_seconds > 0 ? exact / cpu_seconds : 0; }
};

// Runs one wrk per port at once, `connections` keep-alive connections each, for `seconds`, each
// on CPU `cpu` (taskset; -1: anywhere); the counts summed, and the CPU the processes `pids` used
// from before the first wrk started to after the last ended. Dies when wrk cannot run.
WrkCounts RunWrk(const std::string& script, const std::vector<int>& ports, int connections,
                 int seconds, int cpu, const std::vector<pid_t>& pids);

// User and system CPU seconds process `pid` has used (/proc/PID/stat); 0 when unknown.
double ProcessCpuSecondsOf(pid_t pid);

// Pins every thread of process `pid` to CPU `cpu` (-1: every CPU), as `taskset -a -p` does.
// False when some thread could not be pinned.
bool PinProcess(pid_t pid, int cpu);

}  // namespace hotrow::bench
