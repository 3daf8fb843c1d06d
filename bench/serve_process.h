#pragma once

// What the benchmarks that run the real `hotrow serve` as child processes (http_load_bench,
// http_latency_bench, cluster_bench) share: the child process itself, stopping every child when the
// benchmark dies, polling, reading serve's JSON answers, its config, and the records it is fed.
//
// Thread-safety: the free functions may be called from any thread; one ServeProcess from its owning
// thread only.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace hotrow::ingest {
class SyntheticProducer;
}  // namespace hotrow::ingest

namespace hotrow::bench {

// Prints "<program>: what" on stderr, kills every ServeProcess still running (std::exit runs no
// destructors of locals) and exits with 1.
[[noreturn]] void Die(const std::string& what);

// Calls `condition` every `poll` until it holds (true) or `timeout` has passed (false).
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll = std::chrono::milliseconds(10));

// The whole file at `path`; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// The hotrow binary to run: $HOTROW_BIN, by default build/hotrow. Dies when it is not executable.
std::string ServeBinary();

// GET of `path` from the instance on 127.0.0.1:`port`: its body as sent; nullopt unless 200.
std::optional<std::string> GetBody(int port, const std::string& path);

// GET of a JSON document from the instance on 127.0.0.1:`port`; nullopt when it does not answer
// 200 with JSON.
std::optional<nlohmann::json> GetJson(int port, const std::string& path);

// Produces `count` records of `devices` uniform ids (skew 0) to topic "events" as fast as the
// broker at `bootstrap` takes them, on this thread; dies on failure.
void ProduceBacklog(const std::string& bootstrap, int64_t count, int devices);

// /v1/stats `ingested` of the instance on `port`: events it has stored; -1 when it does not answer.
int64_t Ingested(int port);

// Waits until the instance on `port` has stored `n` events; false after `timeout`.
bool AwaitIngested(int port, int64_t n, std::chrono::milliseconds timeout);

// Serve's end-to-end ingest rate over a backlog of `backlog` records produced before it started:
// from its first stored event to its last. Dies when it stores nothing within 120 s or not all
// within 5 minutes.
double MeasureMaxRate(int port, int64_t backlog);

// Writes `dir`/hotrow.yaml for one serve of topic "events" at `bootstrap` in group `group`, its
// store under `dir`, HTTP on an ephemeral loopback port; returns its path.
std::string WriteServeConfig(const std::string& dir, const std::string& bootstrap,
                             const std::string& group);

// How long a paced producer and serve's batches take to reach a steady state, before a benchmark
// starts timing queries beside them.
inline constexpr auto kWarmup = std::chrono::seconds(3);

// Starts a producer of `devices` uniform ids (skew 0) to topic "events" at `rate` records/s, in
// the background; dies on failure. The caller stops it (Stop, then Wait).
std::unique_ptr<ingest::SyntheticProducer> StartPacedProducer(const std::string& bootstrap,
                                                              double rate, int devices,
                                                              uint64_t seed);

// `hotrow serve --config FILE` as a child process, stdout and stderr to `log_path`. It dies with
// this process (PR_SET_PDEATHSIG), with Die(), and Stop() or the destructor ends it.
class ServeProcess {
 public:
  // `cpu` >= 0 pins the child to that CPU (sched_setaffinity), as `taskset -c cpu` would.
  ServeProcess(const std::string& binary, const std::string& config, std::string log_path,
               int cpu = -1);
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // False once serve has exited (it is then reaped, and never signalled again).
  bool Running();

  // The HTTP port serve bound (http.listen port 0), from its "listening on" log line; dies when
  // serve exits or has not printed it within 60 s.
  int AwaitPort();

  // SIGTERM, then waits up to 15 s (the contract asks 10 s); returns the exit code, -1 when it
  // had to be killed (or had exited already).
  int Stop();

  // Its process id; -1 once reaped.
  pid_t pid() const { return pid_; }

  // What serve has written to its log so far.
  std::string Log() const { return ReadFile(log_path_); }

 private:
  const std::string log_path_;
  pid_t pid_ = -1;  // -1 once reaped
};

}  // namespace hotrow::bench
