#include "bench/wrk_load.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <thread>

#include "bench/serve_process.h"

namespace hotrow::bench {

std::string WriteExactLatestScript(const std::string& dir,
                                   const std::map<std::string, std::string>& expected) {
  std::string lua = "local expected = {\n";
  for (const auto& [id, events] : expected) {
    if (events.find("]==]") != std::string::npos) Die("an answer holds ]==]: " + id);
    lua += "  [\"" + id + "\"] = [==[" + events + "]==],\n";
  }
  lua += R"lua(}
local ids = {}
for id, _ in pairs(expected) do table.insert(ids, id) end
table.sort(ids)
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  math.randomseed(tonumber(args[1] or "1"))
  exact = 0; inexact = 0; bad = 0
end
request = function()
  return wrk.format("GET", "/v1/events/" .. ids[math.random(1, #ids)] .. "/latest?n=10")
end
response = function(status, headers, body)
  if status < 200 or status > 299 then bad = bad + 1; return end
  local id = body:match('^{"event_id":"([^"]*)"')
  local want = id and expected[id]
  if want and not body:find('"complete":false', 1, true) and body:find(want, 1, true) then
    exact = exact + 1
  else
    inexact = inexact + 1
  end
end
done = function(summary, latency, requests)
  local e, i, b = 0, 0, 0
  for _, t in ipairs(threads) do
    e = e + t:get("exact"); i = i + t:get("inexact"); b = b + t:get("bad")
  end
  b = b + summary.errors.connect + summary.errors.read + summary.errors.write +
      summary.errors.timeout
  io.write(string.format("COUNTS exact=%d inexact=%d bad=%d\n", e, i, b))
end
)lua";
  const std::string path = dir + "/latest_exact.lua";
  std::ofstream out(path, std::ios::trunc);
  out << lua;
  out.close();
  if (!out) Die("cannot write " + path);
  return path;
}

std::optional<std::string> EventsText(const std::string& body) {
  const size_t at = body.find("\"events\":[");
  const size_t end = body.rfind(']');
  if (at == std::string::npos || end == std::string::npos || end < at) return std::nullopt;
  return body.substr(at, end - at + 1);
}

double ProcessCpuSecondsOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // After the name: state is field 3; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

WrkCounts RunWrk(const std::string& script, const std::vector<int>& ports, int connections,
                 int seconds, int cpu, const std::vector<pid_t>& pids) {
  auto cpu_now = [&] {
    double total = 0;
    for (pid_t pid : pids) total += ProcessCpuSecondsOf(pid);
    return total;
  };
  const double cpu_before = cpu_now();
  std::vector<FILE*> runs;
  int seed = 1;
  for (int port : ports) {
    // wrk sizes its event loop for its own connections (10 + 3 per connection) and counts a
    // socket numbered past that as a connect error: with 4 connections, the descriptors this
    // process leaves open (its children's pipes, its clients' sockets) pushed every socket of wrk
    // past 22, and it answered nothing. So wrk starts with only 0, 1 and 2 open.
    const std::string wrk =
        (cpu >= 0 ? "taskset -c " + std::to_string(cpu) + " " : std::string()) + "wrk -t1 -c" +
        std::to_string(connections) + " -d" + std::to_string(seconds) + "s --timeout 10s -s " +
        script + " http://127.0.0.1:" + std::to_string(port) + " -- " + std::to_string(seed++);
    const std::string command =
        "bash -c 'for fd in /proc/$$/fd/*; do n=${fd##*/}; if [ \"$n\" -gt 2 ]; then "
        "eval \"exec $n>&-\"; fi; done; exec " +
        wrk + "' 2>&1";
    FILE* out = popen(command.c_str(), "r");
    if (out == nullptr) Die("cannot run " + command);
    runs.push_back(out);
  }
  WrkCounts counts;
  for (FILE* out : runs) {
    std::string text;
    char line[1024];
    bool counted = false;
    while (std::fgets(line, sizeof(line), out) != nullptr) {
      text += line;
      long long exact = 0, inexact = 0, bad = 0;
      unsigned long long requests = 0;
      double wrk_seconds = 0;
      if (std::sscanf(line, "COUNTS exact=%lld inexact=%lld bad=%lld", &exact, &inexact, &bad) ==
          3) {
        counts.exact += exact;
        counts.inexact += inexact;
        counts.bad += bad;
        counted = true;
      } else if (std::sscanf(line, " %llu requests in %lfs", &requests, &wrk_seconds) == 2) {
        counts.seconds = std::max(counts.seconds, wrk_seconds);
      }
    }
    if (pclose(out) != 0 || !counted) {
      Die("wrk failed (Debian package wrk: bash scripts/install-deps.sh): " + text);
    }
  }
  counts.cpu_seconds = cpu_now() - cpu_before;
  return counts;
}

bool PinProcess(pid_t pid, int cpu) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned c = 0; c < n; ++c) {
    if (cpu < 0 || static_cast<int>(c) == cpu) CPU_SET(c, &cpus);
  }
  bool all = true;
  std::error_code error;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(dir, error)) {
    const pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    all = sched_setaffinity(tid, sizeof(cpus), &cpus) == 0 && all;
  }
  return all && !error;
}

}  // namespace hotrow::bench
