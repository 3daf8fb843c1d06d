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
#include <time.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "bench/bench_support.h"
#include "bench/http_discard.h"
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
constexpr int kAltRounds = 7;    // ranges against scans, alternated
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

std::string IdOf(int i) {
  char id[32];
  std::snprintf(id, sizeof(id), "dev-%06d", i);
  return std::string(id);
}

// Per-id ranges and full scans over HTTP on the store in both states (StoreState: as ingested,
// compacted), each with a server of 2 query threads and one of 1, in alternated rounds: each round
// times, for every (state, threads) in an order that rotates by round, the 8 ranges over libcurl
// (one kept connection) and then one full scan over libcurl. Ratios are medians of the rounds'
// ratios; CPU per range and per scan by thread role (the pool, the connection threads) beside them.
constexpr int kStateRounds = 7;

void StateTurns(store::EventStore* as_ingested, store::EventStore* compacted, int64_t now_ms,
                const std::vector<uint64_t>& id_events, uint64_t scan_events, uint64_t scan_bytes,
                std::vector<std::vector<std::string>>* rows) {
  const std::string to = std::to_string(now_ms + 1);
  struct Subject {
    StoreState state;
    int threads;
    std::unique_ptr<Server> server;
    std::vector<double> range_rate, scan_rate;
    double range_pool_ms = 0, range_http_ms = 0, scan_pool_ms = 0, scan_http_ms = 0;
  };
  std::vector<Subject> subjects;
  for (StoreState state : {StoreState::kAsIngested, StoreState::kCompacted}) {
    for (int threads : {2, 1}) {
      Subject s;
      s.state = state;
      s.threads = threads;
      s.server = StartServer(state == StoreState::kAsIngested ? as_ingested : compacted, threads);
      s.server->engine->WaitForCacheRebuild();
      subjects.push_back(std::move(s));
    }
  }
  auto cpu_ms = [](const std::map<std::string, double>& before, const std::string& role) {
    const auto now = CpuByRole();
    const auto was = before.find(role);
    return 1e3 * (now.at(role) - (was == before.end() ? 0.0 : was->second));
  };
  // [state][0: range t2 / scan t2, 1: range t2 / t1, 2: scan t2 / t1], per round.
  std::vector<double> ratios[2][3];
  for (int round = 0; round < kStateRounds; ++round) {
    for (size_t turn = 0; turn < subjects.size(); ++turn) {
      Subject& s = subjects[(turn + static_cast<size_t>(round)) % subjects.size()];
      const int port = s.server->http->port();
      const std::unique_ptr<CURL, void (*)(CURL*)> client(curl_easy_init(), curl_easy_cleanup);
      uint64_t events = 0;
      auto cpu_before = CpuByRole();
      auto begin = Steady::now();
      for (int i = 1; i <= kIds; ++i) {
        const std::string target = "/v1/events/" + IdOf(i) + "?from=0&to=" + to + "&limit=100000";
        if (LibcurlDiscarding(port, target, nullptr, client.get()) == 0) std::abort();
        events += id_events[static_cast<size_t>(i)];
      }
      s.range_rate.push_back(static_cast<double>(events) / Seconds(begin));
      s.range_pool_ms += cpu_ms(cpu_before, "pool") / (kIds * kStateRounds);
      s.range_http_ms += cpu_ms(cpu_before, "http") / (kIds * kStateRounds);
      cpu_before = CpuByRole();
      begin = Steady::now();
      if (LibcurlDiscarding(port, "/v1/scan?from=0&to=" + to, nullptr) != scan_bytes) {
        std::fprintf(stderr, "a scan over HTTP of the store %s lost or added events\n",
                     StateName(s.state));
        std::abort();
      }
      s.scan_rate.push_back(static_cast<double>(scan_events) / Seconds(begin));
      s.scan_pool_ms += cpu_ms(cpu_before, "pool") / kStateRounds;
      s.scan_http_ms += cpu_ms(cpu_before, "http") / kStateRounds;
    }
    for (int k = 0; k < 2; ++k) {
      const Subject& two = subjects[2 * static_cast<size_t>(k)];
      const Subject& one = subjects[2 * static_cast<size_t>(k) + 1];
      ratios[k][0].push_back(two.range_rate.back() / two.scan_rate.back());
      ratios[k][1].push_back(two.range_rate.back() / one.range_rate.back());
      ratios[k][2].push_back(two.scan_rate.back() / one.scan_rate.back());
    }
  }
  for (Subject& s : subjects) {
    const std::string key =
        std::string(s.state == StoreState::kAsIngested ? "ingested" : "compacted") + "_t" +
        std::to_string(s.threads);
    Record("state_range_http_" + key, Percentile(&s.range_rate, 50));
    Record("state_scan_http_" + key, Percentile(&s.scan_rate, 50));
    std::printf(
        "store %s, %d query thread(s), median of %d alternated rounds: ranges %.0f "
        "events/s (CPU per range: pool %.2f ms, connection thread %.2f ms), scan %.0f "
        "events/s (CPU per scan: pool %.0f ms, connection thread %.0f ms)\n",
        StateName(s.state), s.threads, kStateRounds, Recorded("state_range_http_" + key),
        s.range_pool_ms, s.range_http_ms, Recorded("state_scan_http_" + key), s.scan_pool_ms,
        s.scan_http_ms);
    rows->push_back(
        {std::string("store ") + StateName(s.state) + ", " + std::to_string(s.threads) +
             " query thread(s): range / scan over HTTP (CPU per range, per scan: pool / "
             "connection thread)",
         Rate(Recorded("state_range_http_" + key)) + " (" + Fixed(s.range_pool_ms, 2) + " / " +
             Fixed(s.range_http_ms, 2) + " ms) / " + Rate(Recorded("state_scan_http_" + key)) +
             " (" + Fixed(s.scan_pool_ms, 0) + " / " + Fixed(s.scan_http_ms, 0) + " ms)"});
  }
  for (int k = 0; k < 2; ++k) {
    const char* state = StateName(k == 0 ? StoreState::kAsIngested : StoreState::kCompacted);
    const char* what[3] = {"per-id range / full scan over HTTP, 2 query threads",
                           "per-id ranges over HTTP, 2 query threads / 1",
                           "full scans over HTTP, 2 query threads / 1"};
    const std::string key = std::string(k == 0 ? "ingested" : "compacted") + "_t2";
    const double numerator[3] = {Recorded("state_range_http_" + key),
                                 Recorded("state_range_http_" + key),
                                 Recorded("state_scan_http_" + key)};
    for (int f = 0; f < 3; ++f) {
      const double median = Percentile(&ratios[k][f], 50);
      std::printf("RATIO %-48s %12.4g / %-12.4g = %.3f\n",
                  (std::string(what[f]) + ", store " + state + ", alternated (median)").c_str(),
                  numerator[f], numerator[f] / median, median);
      rows->push_back({std::string(what[f]) + ", store " + state + ", median of " +
                           std::to_string(kStateRounds) + " alternated rounds",
                       Fixed(median, 2)});
    }
  }
  for (Subject& s : subjects) s.server->http->Stop();
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
  // The figures before the two states' section are of the compacted store, the steady state:
  // closed buckets compacted to one sorted run, as a running service has them.
  const std::vector<GeneratedEvent> events = GenerateEvents(spec);
  auto store = BuildStore(options, events, 5000, StoreState::kCompacted);
  ScratchDir ingested_dir;
  store::StoreOptions ingested_options = options;
  ingested_options.path = ingested_dir.path() + "/store";
  auto ingested = BuildStore(ingested_options, events, 5000, StoreState::kAsIngested);
  const std::string ingested_runs = SortedRunsText(*ingested);
  const std::string to = std::to_string(spec.now_ms + 1);

  // Per-id ranges, in-process (the sink only counts) and over HTTP from a server with 2 query
  // threads and from one with 1, each phase on its own so that its CPU can be told by thread.
  auto server2 = StartServer(store.get(), 2);
  auto server1 = StartServer(store.get(), 1);
  // Each engine rebuilds its last-N cache from the store at start, on a thread of its own: not
  // while the ranges are timed.
  server2->engine->WaitForCacheRebuild();
  server1->engine->WaitForCacheRebuild();
  const auto id_of = IdOf;
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
        const std::string target = "/v1/events/" + id_of(i) + "?from=0&to=" + to + "&limit=100000";
        const uint64_t got = LibcurlDiscarding(server->http->port(), target, nullptr, client.get());
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
  std::printf(
      "per-id range, %d ids x %d rounds, %.0f events each: in-process %.0f events/s, HTTP "
      "%.0f events/s (%.1f MB of JSON); CPU per range over HTTP, 2 threads: connection "
      "thread %.2f ms, pool %.2f ms, client %.2f ms; 1 thread: %.2f / %.2f / %.2f ms\n",
      kIds, kRounds, static_cast<double>(in_events) / ranges, in_rate, http_rate,
      static_cast<double>(bytes) / 1e6, http_cpu.at("http"), http_cpu.at("pool"),
      http_cpu.at("other"), http1_cpu.at("http"), http1_cpu.at("pool"), http1_cpu.at("other"));

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
    std::printf(
        "full scan in-process, read and encoded on one thread: %.0f ms CPU per scan "
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
    std::string command =
        "curl --silent --show-error --fail --max-time 120 -w '%{size_download}\\n'";
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
    const uint64_t got =
        with_curl ? CurlDiscarding(port2, target) : LibcurlDiscarding(port2, target, nullptr);
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
  std::printf(
      "ranges / scan over HTTP, 2 query threads, %d alternated rounds, median of the "
      "rounds' ratios: libcurl %.2f (ranges %.0f events/s), curl with %d ranges in one "
      "process %.2f (ranges %.0f events/s)\n",
      kAltRounds, alt_libcurl, Recorded("alt_range_http_events_per_s"), kCurlRanges, alt_curl,
      Recorded("alt_range_curl_events_per_s"));

  // Both store states, 2 and 1 query threads, in alternated rounds.
  std::printf("store as ingested: %s; compacted: %s\n", ingested_runs.c_str(),
              SortedRunsText(*store).c_str());
  std::vector<std::vector<std::string>> state_rows;
  StateTurns(ingested.get(), store.get(), spec.now_ms, id_events, scan_events, scan_bytes,
             &state_rows);
  // Still as ingested: nothing compacted it meanwhile (a flush the writes started may have ended).
  std::printf("store as ingested, after its turns: %s\n", SortedRunsText(*ingested).c_str());

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
    const double range =
        Recorded(std::string("alt_range_") + (client == std::string("curl") ? "curl" : "http") +
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
                "connection thread, of the pool and of the client; all on the compacted store "
                "(every closed bucket one sorted run). Then the store in both states (as ingested: "
                "written a partition's batch at a time with an 8 MiB write buffer, served at once, "
                "several L0 files per bucket; compacted), each with 2 and 1 query threads, in " +
                    std::to_string(kStateRounds) +
                    " alternated rounds of the 8 ranges and one scan over libcurl; medians.");
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
  report.Row({"store as ingested (before its turns)", ingested_runs});
  for (auto& row : state_rows) report.Row(std::move(row));
  report.Write();
  std::printf("range_http_bench: run time %.0f s\n", Seconds(run_start));
  return 0;
}
