// How long does a latest-10 query over HTTP take while `hotrow serve` ingests at 25, 50 and 75 %
// of its measured maximum, measured open-loop, next to `/healthz` under the same ingest (the
// floor: the same connections, server threads and machine, and no query) and next to idle?
//
// Open loop: requests fall due at a fixed rate (--rate) whatever the answers do, and each latency
// runs from the moment its request was due, not from when a connection was free to send it. A
// closed-loop client (http_load_bench) waits for each answer before it asks again, so one slow
// answer delays the requests behind it and keeps them out of its percentiles (coordinated
// omission); here they count. --connections keep-alive connections take the due requests in turn,
// so a slow answer holds up one connection, not the schedule.
//
// Everything runs on this machine: the embedded broker and a paced producer in this process, the
// real `hotrow serve` as a child process ($HOTROW_BIN, default build/hotrow). With two cores or
// more, serve runs on CPU 1 and this process (load generator, broker, producer) on CPU 0, as
// `taskset -c` would place them, so that the generator's own work does not queue behind serve's.
//
//  1. The maximum: a backlog of --backlog records is produced before serve starts; serve's rate is
//     timed from its first stored event to its last (/v1/stats `ingested`).
//  2. Idle: latest-10 of random known ids for --seconds, then /healthz for as long.
//  3. For 25, 50 and 75 % of the maximum: the producer at that rate, warmed up, then latest-10 and
//     /healthz as in 2; the producer stops and serve catches up before the next level.
//
//   http_latency_bench [--backlog N] [--partitions P] [--seconds S] [--devices D] [--rate R]
//                      [--connections C] [--no-pin]

#include <httplib.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/serve_process.h"
#include "common/logging.h"
#include "ingest/embedded_kafka.h"
#include "ingest/synthetic_producer.h"

namespace hotrow::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kLoadPercents[] = {25, 50, 75};
// The CPUs of serve and of this process when pinned.
constexpr int kServeCpu = 1;
constexpr int kGeneratorCpu = 0;

struct Flags {
  int64_t backlog = 1'000'000;
  int partitions = 64;
  int seconds = 15;
  int devices = 10'000;
  double rate = 400;  // requests due per second
  int connections = 16;
  bool pin = true;
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : "0";
    if (std::strcmp(argv[i], "--no-pin") == 0) flags.pin = false;
    if (std::strcmp(argv[i], "--backlog") == 0) flags.backlog = std::atoll(value);
    if (std::strcmp(argv[i], "--partitions") == 0) flags.partitions = std::atoi(value);
    if (std::strcmp(argv[i], "--seconds") == 0) flags.seconds = std::atoi(value);
    if (std::strcmp(argv[i], "--devices") == 0) flags.devices = std::atoi(value);
    if (std::strcmp(argv[i], "--rate") == 0) flags.rate = std::atof(value);
    if (std::strcmp(argv[i], "--connections") == 0) flags.connections = std::atoi(value);
  }
  if (flags.rate <= 0 || flags.connections <= 0 || flags.seconds <= 0) {
    Die("--rate, --connections and --seconds must be positive");
  }
  return flags;
}

enum class Ask { kLatest, kHealthz };

const char* AskName(Ask ask) { return ask == Ask::kLatest ? "latest-10" : "/healthz"; }

struct Latency {
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  uint64_t answered = 0;
  uint64_t failed = 0;         // other statuses and failed requests
  uint64_t short_answers = 0;  // sampled latest-10 answers with fewer than 10 events
  double ingest_per_s = 0;     // serve's achieved ingest rate over the phase
};

// One connection of the open-loop generator: takes the next due request of the schedule, waits
// until it is due, sends it, and records its latency from the due time.
struct Connection {
  std::vector<double> micros;
  uint64_t failed = 0;
  uint64_t short_answers = 0;
};

void RunConnection(int port, const Flags& flags, Ask ask, uint64_t seed, Clock::time_point start,
                   Clock::duration interval, uint64_t total, std::atomic<uint64_t>* next,
                   Connection* out) {
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake when due, not up to 50 us later
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(10));
  client.Get("/healthz");  // connected before the schedule starts
  std::mt19937_64 rng(seed);
  while (true) {
    const uint64_t i = next->fetch_add(1);
    if (i >= total) return;
    const std::string path =
        ask == Ask::kHealthz
            ? std::string("/healthz")
            : "/v1/events/" +
                  ingest::SyntheticEvents::DeviceId(static_cast<int>(rng() % flags.devices)) +
                  "/latest?n=10";
    const Clock::time_point due = start + interval * static_cast<int64_t>(i);
    std::this_thread::sleep_until(due);
    httplib::Result res = client.Get(path);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - due).count();
    if (!res || res->status != 200) {
      ++out->failed;
      continue;
    }
    out->micros.push_back(us);
    // One answer in 16 is checked whole; checking all would spend the generator's CPU.
    if (ask == Ask::kLatest && i % 16 == 0) {
      const json doc = json::parse(res->body, nullptr, false);
      if (doc.is_discarded() || doc.value("events", json::array()).size() != 10) {
        ++out->short_answers;
      }
    }
  }
}

Latency RunOpenLoop(int port, const Flags& flags, Ask ask, uint64_t seed) {
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(1.0 / flags.rate));
  const auto total = static_cast<uint64_t>(flags.rate * flags.seconds);
  std::atomic<uint64_t> next{0};
  std::vector<Connection> connections(static_cast<size_t>(flags.connections));
  const int64_t ingested_before = Ingested(port);
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(200);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < connections.size(); ++c) {
    threads.emplace_back(RunConnection, port, std::cref(flags), ask, seed * 1000 + c, start,
                         interval, total, &next, &connections[c]);
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int64_t ingested_after = Ingested(port);
  Latency r;
  std::vector<double> all;
  for (const Connection& c : connections) {
    all.insert(all.end(), c.micros.begin(), c.micros.end());
    r.failed += c.failed;
    r.short_answers += c.short_answers;
  }
  r.answered = all.size();
  r.p50_us = Percentile(&all, 50);
  r.p99_us = Percentile(&all, 99);
  r.p999_us = Percentile(&all, 99.9);
  if (ingested_before >= 0 && ingested_after >= 0) {
    r.ingest_per_s = static_cast<double>(ingested_after - ingested_before) / seconds;
  }
  return r;
}

struct Level {
  int percent = 0;  // of serve's maximum ingest rate; 0 for idle
  Latency latest;
  Latency healthz;
};

void PrintLatency(const Level& level, Ask ask, const Latency& r) {
  std::printf(
      "%3d %% ingest  %-9s p50 %7.0f us  p99 %7.0f us  p99.9 %7.0f us  answered %llu  failed "
      "%llu  short %llu  ingest %.0f events/s\n",
      level.percent, AskName(ask), r.p50_us, r.p99_us, r.p999_us,
      static_cast<unsigned long long>(r.answered), static_cast<unsigned long long>(r.failed),
      static_cast<unsigned long long>(r.short_answers), r.ingest_per_s);
  std::fflush(stdout);
}

// Both asks at one level; with `rate` > 0 a producer runs at it throughout, and serve has caught
// up with everything produced when this returns.
Level RunLevel(int port, const std::string& bootstrap, const Flags& flags, int percent,
               double rate, int64_t* expected_ingested) {
  Level level;
  level.percent = percent;
  std::unique_ptr<ingest::SyntheticProducer> producer;
  if (rate > 0) {
    producer =
        StartPacedProducer(bootstrap, rate, flags.devices, static_cast<uint64_t>(100 + percent));
    std::this_thread::sleep_for(kWarmup);
  }
  level.latest = RunOpenLoop(port, flags, Ask::kLatest, static_cast<uint64_t>(percent + 1));
  PrintLatency(level, Ask::kLatest, level.latest);
  level.healthz = RunOpenLoop(port, flags, Ask::kHealthz, static_cast<uint64_t>(percent + 2));
  PrintLatency(level, Ask::kHealthz, level.healthz);
  if (producer != nullptr) {
    producer->Stop();
    const Status s = producer->Wait();
    if (!s.ok()) Die(s.ToString());
    *expected_ingested += static_cast<int64_t>(producer->delivered());
    if (!AwaitIngested(port, *expected_ingested, std::chrono::seconds(120))) {
      Die("serve did not catch up with the producer within 120 s");
    }
  }
  return level;
}

std::string Markdown(const std::vector<Level>& levels, const Flags& flags, double max_rate,
                     bool pinned, double run_seconds) {
  std::ostringstream md;
  char line[1024];
  std::snprintf(
      line, sizeof(line),
      "### Latest-10 over HTTP under ingest, open-loop (`bench/http_latency_bench`)\n\n"
      "The real `hotrow serve` (default config) fed by the embedded broker (%d partitions) and a "
      "paced producer in the benchmark process; requests fall due at %.0f/s over %d keep-alive "
      "connections for %d s per row, each latency measured from its due time; latest-10 of random "
      "ids among %d. %s Serve's maximum ingest rate, measured first in the same run over a "
      "backlog of %lld records: **%.0f k events/s**.\n\n"
      "| ingest (%% of max) | asked | p50 (ms) | p99 (ms) | p99.9 (ms) | answered | failed | "
      "ingest achieved (k events/s) |\n|---|---|---|---|---|---|---|---|\n",
      flags.partitions, flags.rate, flags.connections, flags.seconds, flags.devices,
      pinned ? "Serve on CPU 1, the generator, broker and producer on CPU 0."
             : "Not pinned (one core, or --no-pin).",
      static_cast<long long>(flags.backlog), max_rate / 1000);
  md << line;
  for (const Level& level : levels) {
    for (Ask ask : {Ask::kLatest, Ask::kHealthz}) {
      const Latency& r = ask == Ask::kLatest ? level.latest : level.healthz;
      std::snprintf(line, sizeof(line), "| %d | %s | %.2f | %.2f | %.2f | %llu | %llu | %.0f |\n",
                    level.percent, AskName(ask), r.p50_us / 1000, r.p99_us / 1000,
                    r.p999_us / 1000, static_cast<unsigned long long>(r.answered),
                    static_cast<unsigned long long>(r.failed), r.ingest_per_s / 1000);
      md << line;
    }
  }
  std::snprintf(line, sizeof(line), "\nRun time: %.0f s.\n", run_seconds);
  md << line;
  return md.str();
}

// Pins this process's threads from now on (and the calling thread) to `cpu`.
bool PinTo(int cpu) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(cpu, &cpus);
  return sched_setaffinity(0, sizeof(cpus), &cpus) == 0;
}

int Main(int argc, char** argv) {
  InitLogging("warn");
  const Flags flags = ParseFlags(argc, argv);
  const Clock::time_point run_start = Clock::now();
  const std::string binary = ServeBinary();
  const bool pinned = flags.pin && sysconf(_SC_NPROCESSORS_ONLN) >= 2 && PinTo(kGeneratorCpu);

  auto kafka = ingest::EmbeddedKafka::Start("events", flags.partitions);
  if (!kafka.ok()) Die(kafka.status().ToString());
  const std::string bootstrap = (*kafka)->bootstrap();
  ScratchDir dir;

  ProduceBacklog(bootstrap, flags.backlog, flags.devices);
  ServeProcess serve(binary, WriteServeConfig(dir.path(), bootstrap, "http-latency"),
                     dir.path() + "/serve.log", pinned ? kServeCpu : -1);
  const int port = serve.AwaitPort();
  const double max_rate = MeasureMaxRate(port, flags.backlog);
  std::printf(
      "http_latency_bench: serve's maximum ingest rate %.0f events/s (backlog of %lld records "
      "over %d partitions); %s; requests due at %.0f/s over %d connections\n",
      max_rate, static_cast<long long>(flags.backlog), flags.partitions,
      pinned ? "serve on CPU 1, generator on CPU 0" : "not pinned", flags.rate,
      flags.connections);
  std::fflush(stdout);

  int64_t expected = flags.backlog;
  std::vector<Level> levels;
  levels.push_back(RunLevel(port, bootstrap, flags, 0, 0, &expected));
  for (int percent : kLoadPercents) {
    levels.push_back(RunLevel(port, bootstrap, flags, percent, max_rate * percent / 100, &expected));
  }
  const int64_t ingested = Ingested(port);
  const int rc = serve.Stop();
  std::printf("serve stored %lld of the %lld records produced; SIGTERM exit code %d\n",
              static_cast<long long>(ingested), static_cast<long long>(expected), rc);
  if (ingested != expected) Die("serve did not store every record produced");

  std::printf("\n");
  for (const Level& level : levels) {
    const std::string at = level.percent == 0 ? "idle" : std::to_string(level.percent) + "pct";
    Record("open_latest_p99_us_" + at, level.latest.p99_us);
    Record("open_latest_p999_us_" + at, level.latest.p999_us);
    Record("open_healthz_p99_us_" + at, level.healthz.p99_us);
  }
  for (int percent : kLoadPercents) {
    const std::string at = std::to_string(percent) + "pct";
    PrintRatio("open-loop latest-10 p99 / /healthz p99, " + at + " ingest",
               "open_latest_p99_us_" + at, "open_healthz_p99_us_" + at);
    PrintRatio("open-loop latest-10 p99, " + at + " ingest / idle", "open_latest_p99_us_" + at,
               "open_latest_p99_us_idle");
  }
  const double run_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  std::printf("http_latency_bench: run time %.0f s\n", run_seconds);
  if (!WriteOut("http_latency_bench.md", Markdown(levels, flags, max_rate, pinned, run_seconds))) {
    return 1;
  }
  return rc == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
