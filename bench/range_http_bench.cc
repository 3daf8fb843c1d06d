// How much of the engine's speed survives to the socket? A per-id range (8 ids of ~10k events each,
// limit 100000) over HTTP against the same range in-process, against itself with 1 query thread and
// against a full scan over HTTP; and a full scan over HTTP with 2 query threads against 1. The HTTP
// client discards the body as it arrives (it counts bytes, it does not parse), on the same machine:
// libcurl reading up to 1 MiB at a time, one kept connection for the ranges and one per scan, and
// for the scans also the curl tool with -o /dev/null for comparison (httplib's client reads 4 KiB
// at a time and took 120-150 ms of CPU per 80 MB scan, curl's 16 KiB reads 53-80 ms, libcurl's
// 1 MiB reads 16 ms, on the same 2 cores the server's threads need: with 2 query threads a hungry
// client caps the ratio, not the server).

#include <curl/curl.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "http/metrics.h"
#include "http/server.h"
#include "query/query_engine.h"
#include "wire/event_json.h"

namespace hotrow::bench {
namespace {

using Steady = std::chrono::steady_clock;
constexpr int kIds = 8;
constexpr int kRounds = 10;
constexpr int kScanRounds = 5;
constexpr int kAltRounds = 7;   // ranges against scans, alternated
constexpr int kCurlRanges = 12;  // ranges through one curl process

double Seconds(Steady::time_point start) {
  return std::chrono::duration<double>(Steady::now() - start).count();
}

struct Server {
  std::unique_ptr<query::QueryEngine> engine;
  http::Metrics metrics;
  std::unique_ptr<http::HttpServer> http;
};

std::unique_ptr<Server> StartServer(store::EventStore* store, int threads) {
  auto s = std::make_unique<Server>();
  query::QueryOptions q;
  q.threads = threads;
  s->engine = std::make_unique<query::QueryEngine>(store, q);
  http::HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  auto http = http::HttpServer::Start(options, {store, s->engine.get(), nullptr, &s->metrics});
  if (!http.ok()) {
    std::fprintf(stderr, "%s\n", http.status().ToString().c_str());
    std::abort();
  }
  s->http = std::move(http).value();
  return s;
}

// GETs `target` with curl (`-o /dev/null`: the body discarded as it arrives, read in curl's 16 KiB
// pieces, where httplib's client reads 4 KiB at a time) in a child process; returns the body's
// size in bytes, or aborts when curl fails. Its CPU shows in ChildCpuSeconds.
uint64_t CurlDiscarding(int port, const std::string& target) {
  const std::string command =
      "curl --silent --show-error --fail --max-time 120 -o /dev/null "
      "-w '%{size_download}' 'http://127.0.0.1:" +
      std::to_string(port) + target + "'";
  FILE* out = popen(command.c_str(), "r");
  unsigned long long bytes = 0;
  const bool read = out != nullptr && std::fscanf(out, "%llu", &bytes) == 1;
  if (out == nullptr || pclose(out) != 0 || !read) {
    std::fprintf(stderr, "curl GET %s failed\n", target.c_str());
    std::abort();
  }
  return bytes;
}

// GETs `target` with libcurl in this thread, reading up to 1 MiB per call and discarding the body
// as it arrives; returns the body's size in bytes and adds this thread's CPU seconds to `*cpu_s`
// (when not null). With `keep` (a handle of the caller's), successive GETs to a server reuse its
// connection (keep-alive), as a dashboard's client does; without, the GET has a connection of its
// own.
uint64_t LibcurlDiscarding(int port, const std::string& target, double* cpu_s,
                           CURL* keep = nullptr) {
  std::unique_ptr<CURL, void (*)(CURL*)> own(keep == nullptr ? curl_easy_init() : nullptr,
                                             curl_easy_cleanup);
  CURL* curl = keep != nullptr ? keep : own.get();
  if (curl == nullptr) std::abort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + target;
  uint64_t bytes = 0;
  using Write = size_t (*)(char*, size_t, size_t, void*);
  const Write count = [](char*, size_t size, size_t n, void* total) {
    *static_cast<uint64_t*>(total) += size * n;
    return size * n;
  };
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 1L << 20);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, count);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &bytes);
  curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 120L);
  timespec t0{}, t1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  const CURLcode rc = curl_easy_perform(curl);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  if (rc != CURLE_OK) {
    std::fprintf(stderr, "libcurl GET %s failed: %s\n", target.c_str(), curl_easy_strerror(rc));
    std::abort();
  }
  if (cpu_s != nullptr) *cpu_s += (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  return bytes;
}

// CPU seconds of the child processes waited for so far (the curl clients).
double ChildCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// CPU time (ns, from /proc/self/task/*/schedstat) of this process's threads, summed by role:
// "pool" (hotrow-query-*), "http" (the connection threads), "other" (the client and the rest).
// Unlike wall-clock rates, it does not depend on what else the machine runs.
std::map<std::string, double> CpuByRole() {
  std::map<std::string, double> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string comm;
    std::getline(std::ifstream(task.path() / "comm"), comm);
    double ns = 0;
    std::ifstream(task.path() / "schedstat") >> ns;
    const std::string role = comm.rfind("hotrow-query", 0) == 0 ? "pool"
                             : comm.rfind("http-", 0) == 0 && comm != "http-listen" ? "http"
                                                                                    : "other";
    out[role] += ns / 1e9;
  }
  return out;
}

}  // namespace
}  // namespace hotrow::bench

int main() {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  using hotrow::bench::Steady;
  using namespace hotrow;
  using namespace hotrow::bench;
  const auto run_start = Steady::now();
  DataSpec spec;
  spec.events = 400'000;
  spec.ids = 40;  // ~10k events per id
  spec.hot_events = 0;
  ScratchDir dir;
  ManualClock clock(spec.now_ms);
  store::StoreOptions options;
  options.path = dir.path() + "/store";
  options.wall_clock = &clock;
  options.salts = 16;
  auto store = std::move(store::EventStore::Open(options).value());
  for (const auto& batch : MakeBatches(store.get(), GenerateEvents(spec), 5000)) {
    store::WriteOutcome outcome;
    if (!store->Write(batch, &outcome).ok()) std::abort();
  }
  store.reset();
  store = std::move(store::EventStore::Open(options).value());
  // The steady state: closed buckets compacted to one sorted run, as a running service has them.
  store->WaitForCompactions();
  const std::string to = std::to_string(spec.now_ms + 1);

  // Per-id ranges, in-process (the sink only counts) and over HTTP from a server with 2 query
  // threads and from one with 1, each phase on its own so that its CPU can be told by thread.
  auto server2 = StartServer(store.get(), 2);
  auto server1 = StartServer(store.get(), 1);
  // Each engine rebuilds its last-N cache from the store at start, on a thread of its own: not
  // while the ranges are timed.
  server2->engine->WaitForCacheRebuild();
  server1->engine->WaitForCacheRebuild();
  auto id_of = [](int i) {
    char id[32];
    std::snprintf(id, sizeof(id), "dev-%06d", i);
    return std::string(id);
  };
  uint64_t in_events = 0, bytes = 0;
  auto start = Steady::now();
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 1; i <= kIds; ++i) {
      Status st = server2->engine->RangeTo(id_of(i), 0, spec.now_ms + 1, query::kMaxRangeLimit,
                                           query::Order::kDesc, [&](const query::Event&) {
                                             ++in_events;
                                             return true;
                                           });
      if (!st.ok()) std::abort();
    }
  }
  const double in_s = Seconds(start);
  const int ranges = kRounds * kIds;
  // Over HTTP: the wall time of every range, and the CPU per range of the connection threads,
  // of the pool and of the rest (the client, mostly).
  auto over_http = [&](Server* server, uint64_t* body_bytes) {
    // One connection for every range, as a dashboard keeps its connection.
    const std::unique_ptr<CURL, void (*)(CURL*)> client(curl_easy_init(), curl_easy_cleanup);
    const auto cpu_before = CpuByRole();
    const auto begin = Steady::now();
    for (int round = 0; round < kRounds; ++round) {
      for (int i = 1; i <= kIds; ++i) {
        const std::string target =
            "/v1/events/" + id_of(i) + "?from=0&to=" + to + "&limit=100000";
        const uint64_t got =
            LibcurlDiscarding(server->http->port(), target, nullptr, client.get());
        if (got == 0) std::abort();
        if (body_bytes != nullptr) *body_bytes += got;
      }
    }
    const double seconds = Seconds(begin);
    auto cpu = CpuByRole();
    for (auto& [role, s] : cpu) {
      const auto was = cpu_before.find(role);
      s = 1e3 * (s - (was == cpu_before.end() ? 0.0 : was->second)) / ranges;
    }
    return std::make_pair(seconds, cpu);
  };
  const auto [http_s, http_cpu] = over_http(server2.get(), &bytes);
  const auto [http1_s, http1_cpu] = over_http(server1.get(), nullptr);
  // Both read the same events: the rate over HTTP counts the in-process run's events.
  const double in_rate = static_cast<double>(in_events) / in_s;
  const double http_rate = static_cast<double>(in_events) / http_s;
  Record("range_inprocess_events_per_s", in_rate);
  Record("range_http_events_per_s", http_rate);
  Record("range_http_t1_events_per_s", static_cast<double>(in_events) / http1_s);
  for (const auto& [threads, cpu] : {std::pair{2, http_cpu}, std::pair{1, http1_cpu}}) {
    const std::string t = "_t" + std::to_string(threads);
    Record("range_http_cpu_ms" + t, cpu.at("http"));
    Record("range_pool_cpu_ms" + t, cpu.at("pool"));
    Record("range_client_cpu_ms" + t, cpu.at("other"));
  }
  std::printf("per-id range, %d ids x %d rounds, %.0f events each: in-process %.0f events/s, HTTP "
              "%.0f events/s (%.1f MB of JSON); CPU per range over HTTP, 2 threads: connection "
              "thread %.2f ms, pool %.2f ms, client %.2f ms; 1 thread: %.2f / %.2f / %.2f ms\n",
              kIds, kRounds, static_cast<double>(in_events) / ranges, in_rate, http_rate,
              static_cast<double>(bytes) / 1e6, http_cpu.at("http"), http_cpu.at("pool"),
              http_cpu.at("other"), http1_cpu.at("http"), http1_cpu.at("pool"),
              http1_cpu.at("other"));

  uint64_t scan_bytes = 0, scan_events = 0;  // of one full scan, as the in-process one encodes it
  // The same full scan in-process with 1 query thread (everything on this thread), its events
  // encoded as the HTTP scan encodes them, the text discarded: the CPU of reading and encoding,
  // which the HTTP figures below can be set against (the rest is HTTP and the socket).
  {
    query::QueryOptions q;
    q.threads = 1;
    query::QueryEngine engine(store.get(), q);
    const query::EventEncoder encode = [](const query::Event& e, std::string* out) {
      wire::AppendEventJson(e, out);
      out->push_back('\n');
    };
    uint64_t text_bytes = 0, events = 0;
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (int round = 0; round < kScanRounds; ++round) {
      Status st = engine.ScanEncoded(0, spec.now_ms + 1, query::kNoLimit, encode,
                                     [&](std::string_view text, int64_t n) {
                                       text_bytes += text.size();
                                       events += static_cast<uint64_t>(n);
                                       return true;
                                     });
      if (!st.ok()) std::abort();
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    const double ms = 1e3 * ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    scan_bytes = text_bytes / kScanRounds;
    scan_events = events / kScanRounds;
    Record("scan_encode_cpu_ms", ms / kScanRounds);
    std::printf("full scan in-process, read and encoded on one thread: %.0f ms CPU per scan "
                "(%.1f MB of JSON)\n",
                ms / kScanRounds, static_cast<double>(text_bytes) / kScanRounds / 1e6);
  }

  // Ranges against scans in alternated rounds (the ratios; the machine is shared, and a range
  // phase and a scan phase run minutes apart moved 10-20 %): each round times on the server with
  // 2 query threads the 8 ranges over libcurl (one kept connection) and one full scan over
  // libcurl, then 12 ranges through one curl process (ids 1..8 then 1..4, one connection,
  // bodies discarded) and one full scan through curl, which goes first alternating by round.
  std::vector<uint64_t> id_events(kIds + 1, 0);
  for (int i = 1; i <= kIds; ++i) {
    Status st = server2->engine->RangeTo(id_of(i), 0, spec.now_ms + 1, query::kMaxRangeLimit,
                                         query::Order::kDesc, [&](const query::Event&) {
                                           ++id_events[static_cast<size_t>(i)];
                                           return true;
                                         });
    if (!st.ok()) std::abort();
  }
  const int port2 = server2->http->port();
  auto ranges_libcurl = [&] {
    const std::unique_ptr<CURL, void (*)(CURL*)> client(curl_easy_init(), curl_easy_cleanup);
    uint64_t events = 0;
    const auto begin = Steady::now();
    for (int i = 1; i <= kIds; ++i) {
      const std::string target = "/v1/events/" + id_of(i) + "?from=0&to=" + to + "&limit=100000";
      if (LibcurlDiscarding(port2, target, nullptr, client.get()) == 0) std::abort();
      events += id_events[static_cast<size_t>(i)];
    }
    return static_cast<double>(events) / Seconds(begin);
  };
  auto ranges_curl = [&] {
    std::string command = "curl --silent --show-error --fail --max-time 120 -w '%{size_download}\\n'";
    uint64_t events = 0;
    for (int k = 0; k < kCurlRanges; ++k) {
      const int i = 1 + k % kIds;
      command += " -o /dev/null 'http://127.0.0.1:" + std::to_string(port2) + "/v1/events/" +
                 id_of(i) + "?from=0&to=" + to + "&limit=100000'";
      events += id_events[static_cast<size_t>(i)];
    }
    const auto begin = Steady::now();
    FILE* out = popen(command.c_str(), "r");
    int answers = 0;
    unsigned long long bytes = 0;
    while (out != nullptr && std::fscanf(out, "%llu", &bytes) == 1) answers += bytes > 0 ? 1 : 0;
    if (out == nullptr || pclose(out) != 0 || answers != kCurlRanges) {
      std::fprintf(stderr, "curl with %d ranges failed (%d answers)\n", kCurlRanges, answers);
      std::abort();
    }
    return static_cast<double>(events) / Seconds(begin);
  };
  auto scan_once = [&](bool with_curl) {
    const auto begin = Steady::now();
    const std::string target = "/v1/scan?from=0&to=" + to;
    const uint64_t got = with_curl ? CurlDiscarding(port2, target)
                                   : LibcurlDiscarding(port2, target, nullptr);
    if (got != scan_bytes) {
      std::fprintf(stderr, "the scan over HTTP sent %llu bytes, in-process %llu\n",
                   static_cast<unsigned long long>(got),
                   static_cast<unsigned long long>(scan_bytes));
      std::abort();
    }
    return static_cast<double>(scan_events) / Seconds(begin);
  };
  std::vector<double> libcurl_ratios, curl_ratios, range_rates, curl_range_rates;
  for (int round = 0; round < kAltRounds; ++round) {
    for (const bool with_curl : {false, true}) {
      double range = 0, scan = 0;
      for (int turn = 0; turn < 2; ++turn) {
        if ((turn + round) % 2 == 0) {
          range = with_curl ? ranges_curl() : ranges_libcurl();
        } else {
          scan = scan_once(with_curl);
        }
      }
      (with_curl ? curl_ratios : libcurl_ratios).push_back(range / scan);
      (with_curl ? curl_range_rates : range_rates).push_back(range);
    }
  }
  const double alt_libcurl = Percentile(&libcurl_ratios, 50);
  const double alt_curl = Percentile(&curl_ratios, 50);
  Record("alt_range_over_scan_libcurl", alt_libcurl);
  Record("alt_range_over_scan_curl", alt_curl);
  Record("alt_range_http_events_per_s", Percentile(&range_rates, 50));
  Record("alt_range_curl_events_per_s", Percentile(&curl_range_rates, 50));
  std::printf("ranges / scan over HTTP, 2 query threads, %d alternated rounds, median of the "
              "rounds' ratios: libcurl %.2f (ranges %.0f events/s), curl with %d ranges in one "
              "process %.2f (ranges %.0f events/s)\n",
              kAltRounds, alt_libcurl, Recorded("alt_range_http_events_per_s"), kCurlRanges,
              alt_curl, Recorded("alt_range_curl_events_per_s"));

  // Full scans over HTTP with 1 and 2 query threads, each client in turn: libcurl in this thread
  // (client "libcurl"), then the curl tool in a child process (client "curl").
  for (int threads : {1, 2}) {
    auto server = threads == 2 ? std::move(server2) : std::move(server1);
    for (const std::string client : {"libcurl", "curl"}) {
      double best = 0, client_cpu = 0;
      const auto cpu_before = CpuByRole();
      const double children_before = ChildCpuSeconds();
      for (int round = 0; round < kScanRounds; ++round) {
        const auto start = Steady::now();
        const std::string target = "/v1/scan?from=0&to=" + to;
        const uint64_t got = client == "curl"
                                 ? CurlDiscarding(server->http->port(), target)
                                 : LibcurlDiscarding(server->http->port(), target, &client_cpu);
        // The answer is the in-process scan's text, byte for byte in length: every event, once.
        if (got != scan_bytes) {
          std::fprintf(stderr, "the scan over HTTP sent %llu bytes, in-process %llu\n",
                       static_cast<unsigned long long>(got),
                       static_cast<unsigned long long>(scan_bytes));
          std::abort();
        }
        best = std::max(best, static_cast<double>(scan_events) / Seconds(start));
      }
      if (client == "curl") client_cpu = ChildCpuSeconds() - children_before;
      auto cpu = CpuByRole();
      for (auto& [role, seconds] : cpu) seconds -= cpu_before.count(role) ? cpu_before.at(role) : 0;
      const std::string key = client + "_t" + std::to_string(threads);
      Record("scan_http_" + key, best);
      // Per scan: CPU on the connection thread (the serial part) and on the pool threads.
      Record("scan_http_cpu_ms_" + key, 1e3 * cpu["http"] / kScanRounds);
      Record("scan_pool_cpu_ms_" + key, 1e3 * cpu["pool"] / kScanRounds);
      Record("scan_client_cpu_ms_" + key, 1e3 * client_cpu / kScanRounds);
      std::printf(
          "full scan over HTTP, query.threads=%d, client %s: %llu events, best of %d %.0f "
          "events/s; CPU per scan: connection thread %.0f ms, pool %.0f ms, client %.0f ms\n",
          threads, client.c_str(), static_cast<unsigned long long>(scan_events), kScanRounds, best,
          1e3 * cpu["http"] / kScanRounds, 1e3 * cpu["pool"] / kScanRounds,
          1e3 * client_cpu / kScanRounds);
    }
    server->http->Stop();
  }
  PrintRatio("per-id range events/s, HTTP / in-process", "range_http_events_per_s",
             "range_inprocess_events_per_s");
  PrintRatio("per-id range over HTTP, 2 query threads / 1", "range_http_events_per_s",
             "range_http_t1_events_per_s");
  // The median of the rounds' ratios, beside the medians of the rounds' range and scan rates.
  for (const auto& [client, ratio] : {std::pair{"libcurl", alt_libcurl}, {"curl", alt_curl}}) {
    const double range = Recorded(std::string("alt_range_") +
                                  (client == std::string("curl") ? "curl" : "http") +
                                  "_events_per_s");
    std::printf("RATIO %-48s %12.4g / %-12.4g = %.3f\n",
                (std::string("per-id range over HTTP / scan over HTTP, ") + client +
                 ", alternated (median)")
                    .c_str(),
                range, range / ratio, ratio);
  }
  PrintRatio("full scan over HTTP, 2 threads / 1", "scan_http_libcurl_t2", "scan_http_libcurl_t1");
  Report report("range_http_bench", "Ranges and scans over HTTP",
                "8 ids of about 10k events each (400k events, 16 salts), each read whole with "
                "`limit=100000` in-process (the sink counts) and over HTTP (libcurl on one kept "
                "connection, reading 1 MiB at a time, discarding the body) from a server with 2 "
                "query threads and one with 1, 10 rounds each, with the CPU per range by thread; "
                "and full scans over HTTP with `query.threads` 1 and 2 (best "
                "of 5, the answer's size checked against the in-process scan's) with two clients "
                "that discard the body: libcurl reading 1 MiB at a time (the ratio) and the curl "
                "tool with `-o /dev/null` (16 KiB at a time); with the CPU time per scan of the "
                "connection thread, of the pool and of the client.");
  report.Columns({"figure", "value"});
  report.Row({"range in-process", Rate(in_rate)});
  report.Row({"range over HTTP", Rate(http_rate)});
  report.Row({"range HTTP / in-process", Fixed(http_rate / in_rate, 2)});
  report.Row({"range over HTTP, 1 query thread", Rate(Recorded("range_http_t1_events_per_s"))});
  report.Row({"range over HTTP, 2 query threads / 1",
              Fixed(http_rate / Recorded("range_http_t1_events_per_s"), 2)});
  report.Row({"range over HTTP / scan over HTTP (libcurl, 2 threads), median of " +
                  std::to_string(kAltRounds) + " alternated rounds",
              Fixed(alt_libcurl, 2)});
  report.Row({"range over HTTP / scan over HTTP (curl: " + std::to_string(kCurlRanges) +
                  " ranges in one process; 2 threads), median of " + std::to_string(kAltRounds) +
                  " alternated rounds",
              Fixed(alt_curl, 2)});
  for (int threads : {1, 2}) {
    const std::string t = "_t" + std::to_string(threads);
    report.Row({"range CPU per range, " + std::to_string(threads) +
                    " thread(s): connection thread / pool / client",
                Fixed(Recorded("range_http_cpu_ms" + t), 2) + " / " +
                    Fixed(Recorded("range_pool_cpu_ms" + t), 2) + " / " +
                    Fixed(Recorded("range_client_cpu_ms" + t), 2) + " ms"});
  }
  for (const std::string client : {"libcurl", "curl"}) {
    const auto at = [&](const std::string& what, int threads) {
      return Recorded(what + client + "_t" + std::to_string(threads));
    };
    report.Row({"scan over HTTP (" + client + "), 1 / 2 threads",
                Rate(at("scan_http_", 1)) + " / " + Rate(at("scan_http_", 2))});
    report.Row(
        {"scan 2 / 1 (" + client + ")", Fixed(at("scan_http_", 2) / at("scan_http_", 1), 2)});
    report.Row({"scan CPU per scan (" + client + "), 1 thread: connection thread / client",
                Fixed(at("scan_http_cpu_ms_", 1), 0) + " / " +
                    Fixed(at("scan_client_cpu_ms_", 1), 0) + " ms"});
    report.Row({"scan CPU per scan (" + client + "), 2 threads: connection thread / pool / client",
                Fixed(at("scan_http_cpu_ms_", 2), 0) + " / " +
                    Fixed(at("scan_pool_cpu_ms_", 2), 0) + " / " +
                    Fixed(at("scan_client_cpu_ms_", 2), 0) + " ms"});
  }
  report.Row({"scan in-process, read + encode CPU per scan (1 thread)",
              Fixed(Recorded("scan_encode_cpu_ms"), 0) + " ms"});
  report.Write();
  std::printf("range_http_bench: run time %.0f s\n", Seconds(run_start));
  return 0;
}
