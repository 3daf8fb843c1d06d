// What do latest-10 queries over HTTP cost at 1, 8 and 32 concurrent clients while `hotrow serve`
// ingests at half of its maximum rate, next to the same clients with ingestion idle?
//
// Everything runs on this machine: the embedded broker (librdkafka's mock cluster) and a paced
// synthetic producer in this process, the real `hotrow serve` as a child process ($HOTROW_BIN,
// default build/hotrow) listening on an ephemeral port, and K cpp-httplib client threads here.
//
//  1. The maximum: a backlog of --backlog records is produced before serve starts; serve's rate is
//     timed from its first stored event to the last, read from /v1/stats `ingested`.
//  2. For each K: an ingest phase (the producer at 50% of that maximum, warmed up, then K clients
//     for --seconds), the lag drained, then an idle phase (the same K clients, no producer). Each
//     client keeps one keep-alive connection and asks latest-10 of uniformly random known ids.
//     The ingest rate achieved during the phase is read from `ingested` at its start and end.
//
// Devices are uniform (skew 0) so that every id is known after the backlog. The mock keeps about
// 100k message sets or 5 MiB per partition: the backlog and whatever lag builds up while clients
// starve ingestion are spread over --partitions (default 64, about 30k records each for the
// backlog), and the end of the run checks that serve stored every record delivered.
//
//   http_load_bench [--backlog N] [--partitions P] [--seconds S] [--devices D] [--clients K]
//
// --clients K runs the phases of K clients only (for profiling one of them).

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
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

constexpr int kClientCounts[] = {1, 8, 32};

struct Flags {
  int64_t backlog = 2'000'000;
  int partitions = 64;
  int seconds = 15;
  int devices = 10'000;
  int only_clients = 0;  // 0: every count of kClientCounts
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--backlog") == 0) flags.backlog = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--partitions") == 0) flags.partitions = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) flags.seconds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--devices") == 0) flags.devices = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--clients") == 0) flags.only_clients = std::atoi(argv[i + 1]);
  }
  return flags;
}

// Serve's /metrics, as text; empty when it does not answer.
std::string MetricsText(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(10));
  httplib::Result res = client.Get("/metrics");
  if (!res || res->status != 200) return "";
  return res->body;
}

// Serve's own view of latest-10 latency (from the query arriving at the handler to its answer
// being built, queueing and socket time excluded): the cumulative counts of the
// hotrow_query_seconds{kind="latest"} histogram in /metrics, by upper bound in seconds.
std::vector<std::pair<double, double>> ServerLatestBuckets(const std::string& metrics) {
  std::vector<std::pair<double, double>> out;
  std::istringstream lines(metrics);
  const std::string prefix = "hotrow_query_seconds_bucket{kind=\"latest\",le=\"";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t end = line.find('"', prefix.size());
    const std::string le = line.substr(prefix.size(), end - prefix.size());
    const double bound = le == "+Inf" ? INFINITY : std::atof(le.c_str());
    out.emplace_back(bound, std::atof(line.substr(line.rfind(' ') + 1).c_str()));
  }
  return out;
}

// A counter without labels in /metrics (a line "name value"); -1 when it is not there.
double ServerCounter(const std::string& metrics, const std::string& name) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::atof(line.c_str() + name.size() + 1);
  }
  return -1;
}

// The smallest histogram bound under which 99 % of the queries between `before` and `after` fell.
double ServerP99Bound(const std::vector<std::pair<double, double>>& before,
                      const std::vector<std::pair<double, double>>& after) {
  if (after.empty() || after.size() != before.size()) return NAN;
  const double total = after.back().second - before.back().second;
  for (size_t i = 0; i < after.size(); ++i) {
    if (after[i].second - before[i].second >= 0.99 * total) return after[i].first;
  }
  return NAN;
}

struct PhaseResult {
  double p50_us = 0;
  double p99_us = 0;
  double server_p99_le_s = NAN;  // serve's handler time: the histogram bound holding its p99
  double seeks_per_query = NAN;  // serve's store seeks (hotrow_query_seeks_total) per answer
  double qps = 0;
  uint64_t non200 = 0;         // other statuses and failed requests
  uint64_t short_answers = 0;  // sampled 200 answers with fewer than 10 events
  double ingest_per_s = 0;     // achieved during the phase (ingest phases only)
  double produced_per_s = 0;   // delivered by the producer during the phase
};

// What the clients ask: latest-10 of random known ids, or /healthz (the floor: the same clients,
// connections, server threads and machine, and no query).
enum class Ask { kLatest, kHealthz };

// One client thread: `ask` on one keep-alive connection until `deadline`.
void ClientLoop(int port, int devices, Ask ask, uint64_t seed, Clock::time_point deadline,
                std::vector<double>* micros, uint64_t* non200, uint64_t* short_answers) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(10));
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; Clock::now() < deadline; ++i) {
    const std::string path =
        ask == Ask::kHealthz
            ? std::string("/healthz")
            : "/v1/events/" + ingest::SyntheticEvents::DeviceId(static_cast<int>(rng() % devices)) +
                  "/latest?n=10";
    const Clock::time_point start = Clock::now();
    httplib::Result res = client.Get(path);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (!res || res->status != 200) {
      ++*non200;
      continue;
    }
    micros->push_back(us);
    // Checking every answer would spend the clients' CPU, which the server shares; one in 16 shows
    // the answers are whole.
    if (ask == Ask::kLatest && i % 16 == 0) {
      const json doc = json::parse(res->body, nullptr, false);
      if (doc.is_discarded() || doc.value("events", json::array()).size() != 10) ++*short_answers;
    }
  }
}

PhaseResult RunClients(int port, int clients, const Flags& flags, uint64_t seed,
                       Ask ask = Ask::kLatest) {
  std::vector<std::vector<double>> micros(static_cast<size_t>(clients));
  std::vector<uint64_t> non200(static_cast<size_t>(clients)), short_answers(non200.size());
  const std::string metrics_before = MetricsText(port);
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::seconds(flags.seconds);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < static_cast<size_t>(clients); ++c) {
    threads.emplace_back(ClientLoop, port, flags.devices, ask, seed * 1000 + c, deadline,
                         &micros[c], &non200[c], &short_answers[c]);
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  PhaseResult r;
  std::vector<double> all;
  for (size_t c = 0; c < micros.size(); ++c) {
    all.insert(all.end(), micros[c].begin(), micros[c].end());
    r.non200 += non200[c];
    r.short_answers += short_answers[c];
  }
  r.qps = static_cast<double>(all.size() + r.non200) / seconds;
  r.p50_us = Percentile(&all, 50);
  r.p99_us = Percentile(&all, 99);
  const std::string metrics_after = MetricsText(port);
  r.server_p99_le_s =
      ServerP99Bound(ServerLatestBuckets(metrics_before), ServerLatestBuckets(metrics_after));
  if (!all.empty()) {
    const std::string seeks = "hotrow_query_seeks_total";
    r.seeks_per_query =
        (ServerCounter(metrics_after, seeks) - ServerCounter(metrics_before, seeks)) /
        static_cast<double>(all.size());
  }
  return r;
}

// K clients while the producer runs at `rate`; the achieved ingest rate is measured over the
// clients' window. Returns after serve has caught up with everything produced.
PhaseResult IngestPhase(int port, const std::string& bootstrap, int clients, double rate,
                        const Flags& flags, int64_t* expected_ingested, Ask ask = Ask::kLatest) {
  std::unique_ptr<ingest::SyntheticProducer> producer =
      StartPacedProducer(bootstrap, rate, flags.devices, static_cast<uint64_t>(100 + clients));
  std::this_thread::sleep_for(kWarmup);
  const int64_t ingested_before = Ingested(port);
  const uint64_t delivered_before = producer->delivered();
  const Clock::time_point start = Clock::now();
  PhaseResult r = RunClients(port, clients, flags, static_cast<uint64_t>(clients), ask);
  const int64_t ingested_after = Ingested(port);
  const uint64_t delivered_after = producer->delivered();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  producer->Stop();
  const Status s = producer->Wait();
  if (!s.ok()) Die(s.ToString());
  if (ingested_before < 0 || ingested_after < 0) Die("/v1/stats did not answer during the phase");
  r.ingest_per_s = static_cast<double>(ingested_after - ingested_before) / seconds;
  r.produced_per_s = static_cast<double>(delivered_after - delivered_before) / seconds;
  *expected_ingested += static_cast<int64_t>(producer->delivered());
  if (!AwaitIngested(port, *expected_ingested, std::chrono::seconds(120))) {
    Die("serve did not catch up with the producer within 120 s");
  }
  return r;
}

void PrintPhase(const char* what, int clients, const PhaseResult& r, double target,
                Ask ask = Ask::kLatest) {
  std::printf(
      "%-6s K=%2d: %s p50 %8.0f us  p99 %8.0f us (in serve's handler: p99 <= %.1f ms)  "
      "%7.0f queries/s  %.1f seeks/query  non-200 %llu  short %llu",
      what, clients, ask == Ask::kHealthz ? "/healthz " : "latest-10", r.p50_us, r.p99_us,
      r.server_p99_le_s * 1000, r.qps, r.seeks_per_query, static_cast<unsigned long long>(r.non200),
      static_cast<unsigned long long>(r.short_answers));
  if (target > 0) {
    std::printf(" | ingest %.0f events/s (%.0f%% of the %.0f target; producer delivered %.0f/s)",
                r.ingest_per_s, 100 * r.ingest_per_s / target, target, r.produced_per_s);
  }
  std::printf("\n");
  std::fflush(stdout);
}

struct Row {
  int clients = 0;
  PhaseResult idle;
  PhaseResult load;
  std::optional<PhaseResult> floor;  // /healthz under the same ingest (K = kFloorClients)
};

// The client count whose ingesting phase is repeated with /healthz: the floor that
// docs/BENCHMARKS.md sets the latency figure against.
constexpr int kFloorClients = 8;

std::string Csv(const std::vector<Row>& rows, double target) {
  std::ostringstream csv;
  csv << "clients,idle_p50_us,idle_p99_us,idle_qps,idle_non200,load_p50_us,load_p99_us,load_qps,"
         "load_non200,ingest_target_per_s,ingest_achieved_per_s\n";
  for (const Row& r : rows) {
    csv << r.clients << ',' << r.idle.p50_us << ',' << r.idle.p99_us << ',' << r.idle.qps << ','
        << r.idle.non200 << ',' << r.load.p50_us << ',' << r.load.p99_us << ',' << r.load.qps << ','
        << r.load.non200 << ',' << target << ',' << r.load.ingest_per_s << '\n';
  }
  return csv.str();
}

std::string Markdown(const std::vector<Row>& rows, const Flags& flags, double max_rate,
                     double run_seconds) {
  std::ostringstream md;
  char line[1024];
  std::snprintf(line, sizeof(line),
                "### Latest-10 over HTTP under load (`bench/http_load_bench`)\n\n"
                "The real `hotrow serve` (default config, 16 salts) fed by the embedded broker "
                "(%d partitions) and a paced producer in the benchmark process, K cpp-httplib "
                "clients on keep-alive connections asking latest-10 of random ids among %d for "
                "%d s, all on this machine; serve's maximum ingest rate measured first in the same "
                "run over a backlog of %lld records: **%.0f k events/s**, so the target is "
                "%.0f k/s.\n\n",
                flags.partitions, flags.devices, flags.seconds,
                static_cast<long long>(flags.backlog), max_rate / 1000, max_rate / 2000);
  md << line
     << "| clients | idle p50 (ms) | idle p99 (ms) | idle queries/s | ingesting p50 (ms) | "
        "ingesting p99 (ms) | ingesting queries/s | seeks per query idle / ingesting | "
        "non-200 idle / ingesting | ingest achieved (k events/s, % of target) |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    std::snprintf(line, sizeof(line),
                  "| %d | %.2f | %.2f | %.0f | %.2f | %.2f | %.0f | %.1f / %.1f | %llu / %llu | "
                  "%.0f (%.0f %%) |\n",
                  r.clients, r.idle.p50_us / 1000, r.idle.p99_us / 1000, r.idle.qps,
                  r.load.p50_us / 1000, r.load.p99_us / 1000, r.load.qps, r.idle.seeks_per_query,
                  r.load.seeks_per_query, static_cast<unsigned long long>(r.idle.non200),
                  static_cast<unsigned long long>(r.load.non200), r.load.ingest_per_s / 1000,
                  200 * r.load.ingest_per_s / max_rate);
    md << line;
  }
  for (const Row& r : rows) {
    if (!r.floor) continue;
    std::snprintf(line, sizeof(line),
                  "\nThe floor, %d clients asking `/healthz` instead (no query; the same "
                  "connections, server threads and ingest): p50 %.2f ms, p99 %.2f ms at %.0f "
                  "requests/s, ingest %.0f k events/s (%.0f %% of target).\n",
                  r.clients, r.floor->p50_us / 1000, r.floor->p99_us / 1000, r.floor->qps,
                  r.floor->ingest_per_s / 1000, 200 * r.floor->ingest_per_s / max_rate);
    md << line;
  }
  std::snprintf(line, sizeof(line),
                "\n![HTTP latest-10 under load](img/http_load.png)\n\nRun time: %.0f s.\n",
                run_seconds);
  md << line;
  return md.str();
}

int Main(int argc, char** argv) {
  InitLogging("warn");
  const Flags flags = ParseFlags(argc, argv);
  const Clock::time_point run_start = Clock::now();
  const std::string binary = ServeBinary();

  auto kafka = ingest::EmbeddedKafka::Start("events", flags.partitions);
  if (!kafka.ok()) Die(kafka.status().ToString());
  const std::string bootstrap = (*kafka)->bootstrap();
  ScratchDir dir;

  ProduceBacklog(bootstrap, flags.backlog, flags.devices);
  ServeProcess serve(binary, WriteServeConfig(dir.path(), bootstrap, "http-load"),
                     dir.path() + "/serve.log");
  const int port = serve.AwaitPort();
  const double max_rate = MeasureMaxRate(port, flags.backlog);
  const double target = max_rate / 2;
  std::printf(
      "http_load_bench: serve's maximum ingest rate %.0f events/s (backlog of %lld records over "
      "%d partitions); ingest phases produce at %.0f events/s\n",
      max_rate, static_cast<long long>(flags.backlog), flags.partitions, target);
  std::fflush(stdout);

  int64_t expected = flags.backlog;
  std::vector<Row> rows;
  for (int clients : kClientCounts) {
    if (flags.only_clients != 0 && clients != flags.only_clients) continue;
    Row row;
    row.clients = clients;
    row.load = IngestPhase(port, bootstrap, clients, target, flags, &expected);
    PrintPhase("ingest", clients, row.load, target);
    if (clients == kFloorClients) {
      row.floor = IngestPhase(port, bootstrap, clients, target, flags, &expected, Ask::kHealthz);
      PrintPhase("ingest", clients, *row.floor, target, Ask::kHealthz);
    }
    row.idle = RunClients(port, clients, flags, static_cast<uint64_t>(1000 + clients));
    PrintPhase("idle", clients, row.idle, 0);
    rows.push_back(row);
  }

  if (rows.empty()) Die("--clients must be one of 1, 8 and 32");
  const int64_t ingested = Ingested(port);
  const int rc = serve.Stop();
  std::printf("serve stored %lld of the %lld records produced; SIGTERM exit code %d\n",
              static_cast<long long>(ingested), static_cast<long long>(expected), rc);
  if (ingested != expected) Die("serve did not store every record produced");

  Record("http_max_ingest_per_s", max_rate);
  Record("http_ingest_target_per_s", target);
  std::printf("\n");
  for (const Row& r : rows) {
    const std::string k = std::to_string(r.clients);
    Record("http_p50_us_ingesting_k" + k, r.load.p50_us);
    Record("http_p50_us_idle_k" + k, r.idle.p50_us);
    Record("http_p99_us_ingesting_k" + k, r.load.p99_us);
    Record("http_p99_us_idle_k" + k, r.idle.p99_us);
    Record("http_ingest_achieved_per_s_k" + k, r.load.ingest_per_s);
    PrintRatio("http latest-10 p50 ingesting / idle, K=" + k, "http_p50_us_ingesting_k" + k,
               "http_p50_us_idle_k" + k);
    PrintRatio("http latest-10 p99 ingesting / idle, K=" + k, "http_p99_us_ingesting_k" + k,
               "http_p99_us_idle_k" + k);
    PrintRatio("http ingest achieved / 50% target, K=" + k, "http_ingest_achieved_per_s_k" + k,
               "http_ingest_target_per_s");
    if (r.floor) {
      Record("http_p50_us_ingesting_healthz_k" + k, r.floor->p50_us);
      Record("http_p99_us_ingesting_healthz_k" + k, r.floor->p99_us);
      PrintRatio("http latest-10 p99 / /healthz p99, ingesting, K=" + k,
                 "http_p99_us_ingesting_k" + k, "http_p99_us_ingesting_healthz_k" + k);
    }
  }
  const double run_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  std::printf("http_load_bench: run time %.0f s\n", run_seconds);
  if (!WriteOut("http_load.csv", Csv(rows, target))) return 1;
  if (!WriteOut("http_load_bench.md", Markdown(rows, flags, max_rate, run_seconds))) return 1;
  return rc == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
