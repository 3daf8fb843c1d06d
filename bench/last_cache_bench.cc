// What the last-N cache and the device queries cost against the store path computing the same
// answers, in process, over one store: 2M events, 100000 ids (about 10 events each) and one chatty
// id holding 1M of them, 16 salts, every event in the window.
//
// - ingest with the cache on / off: the same 2M events written in the same batches into two
//   stores, one with a cached engine attached (the cache told of every Write), batch by batch in
//   alternating order so that a slow spell of the machine falls on both (in process: the write
//   path without Kafka);
// - latest-10 of random ids: the cache against the store path (the same engine with the cache
//   off), in alternating rounds;
// - HTTP latest-10 queries/s with the cache on / off: two real HTTP servers on loopback over the
//   same store, one with query.last_cache 16 and one with 0, asked by the same keep-alive clients
//   in alternating rounds by wrk, idle (nothing ingests). With two cores or more the servers'
//   threads run on CPU 1 and wrk on CPU 0, as `taskset -c` would place a server and its load
//   generator: the figure is what a server answers on one core, not what the clients cost;
// - the latest of every id (every page of GET /v1/latest): the cache's walk, the store path
//   (query/latest_all.h), and a scan of the window keeping each id's newest event;
// - a series of the chatty id's 1M events into 600 points, against a range read of the same
//   events (events/s);
// - the cache's rebuild at start against one read of every row of the newest bucket, over this
//   store (100k ids) and over a second one of 1M ids (2M events, about 2 each); wall and CPU time;
// - the cache's bytes per id.

#include <httplib.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "bench/bench_support.h"
#include "http/metrics.h"
#include "http/server.h"
#include "keying/row_key.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Fail(int line, const std::string& why) {
  std::fprintf(stderr, "last_cache_bench: line %d: %s\n", line, why.c_str());
  std::abort();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds of this process (every thread) so far: beside wall time, what a figure costs on a
// machine that other work shares.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

query::QueryOptions CachedOptions() {
  query::QueryOptions options;
  options.last_cache = 16;
  options.last_cache_bytes = size_t{4} << 30;  // every id held: the walk of every id needs it
  return options;
}

store::StoreOptions BenchStoreOptions(const std::string& path, const hotrow::Clock* clock) {
  store::StoreOptions options;
  options.path = path;
  options.wall_clock = clock;
  options.salts = 16;
  return options;
}

// The calling thread's page faults (minor) and kernel CPU seconds so far.
struct ThreadUsage {
  uint64_t faults = 0;
  double kernel_s = 0;
};
ThreadUsage ThisThreadUsage() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return {static_cast<uint64_t>(usage.ru_minflt),
          usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6};
}

// Ingest with the cache on and off: `events` written in batches of 5000 into `off` (no observer)
// and `on` (a cached engine attached), each batch into both, in alternating order. Returns the
// seconds spent in the Writes of each, and the page faults and kernel time of the writing thread
// in them (the cache grows inside Write, and a page the process never touched costs a fault).
struct IngestTimes {
  double on_s = 0;
  double off_s = 0;
  ThreadUsage on_usage, off_usage;
};
IngestTimes WriteBothWays(const std::vector<GeneratedEvent>& events, store::EventStore* off,
                          store::EventStore* on) {
  const auto off_batches = MakeBatches(off, events, 5000);
  const auto on_batches = MakeBatches(on, events, 5000);
  IngestTimes times;
  for (size_t i = 0; i < off_batches.size(); ++i) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool cached = (turn == 0) == (i % 2 == 0);
      store::WriteOutcome outcome;
      const ThreadUsage before = ThisThreadUsage();
      const auto start = Clock::now();
      if (!(cached ? on : off)->Write(cached ? on_batches[i] : off_batches[i], &outcome).ok()) {
        Fail(__LINE__, "write");
      }
      (cached ? times.on_s : times.off_s) += SecondsSince(start);
      const ThreadUsage after = ThisThreadUsage();
      ThreadUsage& usage = cached ? times.on_usage : times.off_usage;
      usage.faults += after.faults - before.faults;
      usage.kernel_s += after.kernel_s - before.kernel_s;
    }
  }
  return times;
}

// The cache's rebuild at start against one read of every row of the newest bucket.
struct RebuildFigure {
  double rebuild_s = 0, rebuild_cpu_s = 0;
  double newest_s = 0, newest_cpu_s = 0;
  uint64_t newest_rows = 0;
  query::LastCacheStatus status;
};
RebuildFigure MeasureRebuild(store::EventStore* store,
                             std::unique_ptr<query::QueryEngine>* cached) {
  RebuildFigure f;
  auto start = Clock::now();
  double cpu = CpuSeconds();
  *cached = std::make_unique<query::QueryEngine>(store, CachedOptions());
  (*cached)->WaitForCacheRebuild();
  f.rebuild_s = SecondsSince(start);
  f.rebuild_cpu_s = CpuSeconds() - cpu;
  f.status = (*cached)->Cache();
  if (!f.status.rebuild.whole) Fail(__LINE__, "the rebuild stopped early");
  start = Clock::now();
  cpu = CpuSeconds();
  const auto buckets = store->Buckets();
  for (int salt = 0; salt < store->salter().salts(); ++salt) {
    auto it = buckets.back()->NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++f.newest_rows;
  }
  f.newest_s = SecondsSince(start);
  f.newest_cpu_s = CpuSeconds() - cpu;
  return f;
}

// The CPUs of the HTTP figure: the servers' threads on one, the clients on the other.
constexpr int kServerCpu = 1;
constexpr int kClientCpu = 0;

// Sets the CPUs of every thread of this process (and of the threads started from now on): the
// HTTP servers', the query engines' pools and RocksDB's, which were started before.
bool SetProcessCpus(const cpu_set_t& cpus) {
  bool all = true;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    all = sched_setaffinity(tid, sizeof(cpus), &cpus) == 0 && all;
  }
  return all;
}

// HTTP latest-10 of random ids ("dev-000001" to `ids`), asked by wrk with kHttpClients keep-alive
// connections on one thread against `port` for `seconds`, on kClientCpu when `pin`. wrk is the
// load generator because it costs the clients' CPU far less than cpp-httplib's client does: four
// httplib clients on one CPU ran out of it before a server answering from the cache did.
constexpr int kHttpClients = 4;
struct HttpRound {
  uint64_t answers = 0;
  double seconds = 0;  // as wrk counted them
};
HttpRound WrkLatestRound(int port, size_t ids, uint64_t seed, int seconds, bool pin,
                         const std::string& dir) {
  const std::string script = dir + "/latest.lua";
  if (!WriteOut(script, "math.randomseed(" + std::to_string(seed) +
                            ")\nrequest = function()\n  return wrk.format(\"GET\", "
                            "string.format(\"/v1/events/dev-%06d/latest?n=10\", math.random(1, " +
                            std::to_string(ids) + ")))\nend\n")) {
    Fail(__LINE__, "cannot write " + script);
  }
  const std::string taskset = pin ? "taskset -c " + std::to_string(kClientCpu) + " " : "";
  char command[512];
  std::snprintf(command, sizeof(command), "%swrk -t1 -c%d -d%ds -s %s http://127.0.0.1:%d 2>&1",
                taskset.c_str(), kHttpClients, seconds, script.c_str(), port);
  FILE* out = popen(command, "r");
  if (out == nullptr) Fail(__LINE__, "cannot run wrk");
  std::string text;
  char line[512];
  HttpRound round;
  while (std::fgets(line, sizeof(line), out) != nullptr) {
    text += line;
    unsigned long long answers = 0;
    double wrk_seconds = 0;
    if (std::sscanf(line, " %llu requests in %lfs", &answers, &wrk_seconds) == 2) {
      round.answers = answers;
      round.seconds = wrk_seconds;
    }
  }
  if (pclose(out) != 0 || round.answers == 0) {
    Fail(__LINE__, "wrk failed (installed by HOTROW_WITH_BENCH=1 bash scripts/install-deps.sh): " +
                       text);
  }
  if (text.find("Non-2xx") != std::string::npos || text.find("Socket errors") != std::string::npos)
    Fail(__LINE__, "an HTTP latest-10 failed: " + text);
  return round;
}

// Every page of the latest of every id; returns the events seen.
size_t LatestOfEveryId(query::QueryEngine* engine) {
  size_t events = 0;
  std::string after;
  for (;;) {
    Result<query::LatestAllPage> page = engine->LatestAll("", after, 100000);
    if (!page.ok()) Fail(__LINE__, page.status().ToString());
    events += page->events.size();
    if (!page->next) return events;
    after = *page->next;
  }
}

int Main() {
  DataSpec spec;
  spec.events = 2'000'000;
  spec.ids = 100'000;
  spec.hot_events = 1'000'000;
  ScratchDir dir;
  ManualClock clock(spec.now_ms);
  store::StoreOptions options = BenchStoreOptions(dir.path() + "/store", &clock);
  std::unique_ptr<store::EventStore> store = std::move(store::EventStore::Open(options).value());

  // Ingest with the cache on / off: the same batches into this store and into one with a cached
  // engine attached.
  IngestTimes ingest;
  uint64_t written_ids = 0;  // held by the cache told of the writes
  {
    std::unique_ptr<store::EventStore> with_cache = std::move(
        store::EventStore::Open(BenchStoreOptions(dir.path() + "/store-cached", &clock)).value());
    query::QueryEngine attached(with_cache.get(), CachedOptions());
    attached.WaitForCacheRebuild();
    ingest = WriteBothWays(GenerateEvents(spec), store.get(), with_cache.get());
    written_ids = attached.Cache().cache.ids;
  }
  store.reset();
  store = std::move(store::EventStore::Open(options).value());
  store->WaitForCompactions();

  // The rebuild at start, against one read of every row of the newest bucket.
  std::unique_ptr<query::QueryEngine> cached;
  const RebuildFigure rebuild = MeasureRebuild(store.get(), &cached);
  const query::LastCacheStatus& status = rebuild.status;
  if (status.cache.ids != written_ids) Fail(__LINE__, "the rebuild and the writes hold other ids");
  query::QueryEngine reads_store(store.get(), StorePathOptions());

  // Latest-10 of random ids, in alternating rounds.
  std::mt19937_64 rng(11);
  std::vector<std::string> ids;
  for (int i = 0; i < 20000; ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "dev-%06zu", static_cast<size_t>(1 + rng() % spec.ids));
    ids.push_back(id);
  }
  std::vector<double> cache_us, store_us;
  constexpr int kRounds = 20;
  const size_t per_round = ids.size() / kRounds;
  for (int round = 0; round < kRounds; ++round) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool use_cache = (turn == 0) == (round % 2 == 0);
      query::QueryEngine* engine = use_cache ? cached.get() : &reads_store;
      for (size_t i = round * per_round; i < (round + 1) * per_round; ++i) {
        const auto t = Clock::now();
        Result<std::vector<query::Event>> got = engine->Latest(ids[i], 10);
        if (!got.ok()) Fail(__LINE__, got.status().ToString());
        (use_cache ? cache_us : store_us)
            .push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
      }
    }
  }
  const double cache_p50 = Percentile(&cache_us, 50), store_p50 = Percentile(&store_us, 50);

  // HTTP latest-10 queries/s, cache on / off: two servers over this store, in alternating rounds,
  // every thread of this process on kServerCpu meanwhile.
  cpu_set_t all_cpus, server_cpu;
  CPU_ZERO(&server_cpu);
  CPU_SET(kServerCpu, &server_cpu);
  const bool can_pin = sysconf(_SC_NPROCESSORS_ONLN) >= 2 &&
                       sched_getaffinity(0, sizeof(all_cpus), &all_cpus) == 0 &&
                       CPU_ISSET(kServerCpu, &all_cpus) && CPU_ISSET(kClientCpu, &all_cpus);
  const bool pin = can_pin && SetProcessCpus(server_cpu);
  http::Metrics metrics_on, metrics_off;
  http::HttpServerOptions http_options;
  http_options.listen = "127.0.0.1:0";
  auto http_on = http::HttpServer::Start(
      http_options, http::HttpBackend{store.get(), cached.get(), nullptr, &metrics_on});
  auto http_off = http::HttpServer::Start(
      http_options, http::HttpBackend{store.get(), &reads_store, nullptr, &metrics_off});
  if (!http_on.ok() || !http_off.ok()) Fail(__LINE__, "an HTTP server did not start");
  for (size_t i = 0; i < 50; ++i) {  // the same answers from both
    const std::string path = "/v1/events/" + ids[i] + "/latest?n=10";
    httplib::Client on("127.0.0.1", (*http_on)->port()), off("127.0.0.1", (*http_off)->port());
    httplib::Result a = on.Get(path), b = off.Get(path);
    if (!a || !b || a->status != 200 || a->body != b->body)
      Fail(__LINE__, "answers differ: " + path);
  }
  uint64_t http_on_answers = 0, http_off_answers = 0;
  double http_on_s = 0, http_off_s = 0;
  constexpr int kHttpRounds = 6;
  constexpr int kHttpRoundSeconds = 2;
  for (int round = 0; round < kHttpRounds; ++round) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool on = (turn == 0) == (round % 2 == 0);
      const HttpRound r = WrkLatestRound((on ? *http_on : *http_off)->port(), spec.ids,
                                         static_cast<uint64_t>(round * 2 + turn),
                                         kHttpRoundSeconds, pin, dir.path());
      (on ? http_on_answers : http_off_answers) += r.answers;
      (on ? http_on_s : http_off_s) += r.seconds;
    }
  }
  (*http_on)->Stop();
  (*http_off)->Stop();
  if (can_pin && !SetProcessCpus(all_cpus)) Fail(__LINE__, "cannot unpin");
  const double http_on_qps = static_cast<double>(http_on_answers) / http_on_s;
  const double http_off_qps = static_cast<double>(http_off_answers) / http_off_s;

  // The latest of every id: the cache's walk, the store path, a scan of the window, in turns over
  // 3 rounds; each figure is its median (the first walk of a process is slower than the later
  // ones, and a slow spell of the machine would fall on one reader only).
  constexpr int kEveryRounds = 3;
  std::vector<double> every_cache, every_store, every_scan;
  std::map<std::string, query::Event> newest;
  for (int round = 0; round < kEveryRounds; ++round) {
    auto start = Clock::now();
    const size_t from_cache = LatestOfEveryId(cached.get());
    every_cache.push_back(SecondsSince(start));
    start = Clock::now();
    const size_t from_store = LatestOfEveryId(&reads_store);
    every_store.push_back(SecondsSince(start));
    start = Clock::now();
    newest.clear();
    const int64_t window_start = store->WindowStartMs();
    Status scanned =
        reads_store.Scan(window_start, spec.now_ms + 1, INT64_MAX, [&](const query::Event& e) {
          auto [it, added] = newest.try_emplace(e.id, e);
          if (!added && e.ts_ms > it->second.ts_ms) it->second = e;
          return true;
        });
    if (!scanned.ok()) Fail(__LINE__, scanned.ToString());
    every_scan.push_back(SecondsSince(start));
    if (from_cache != newest.size() || from_store != newest.size()) {
      Fail(__LINE__, "the latest of every id: " + std::to_string(from_cache) +
                         " ids from the cache, " + std::to_string(from_store) +
                         " from the store path, " + std::to_string(newest.size()) +
                         " from the scan");
    }
  }
  const double every_cache_s = Percentile(&every_cache, 50);
  const double every_store_s = Percentile(&every_store, 50);
  const double every_scan_s = Percentile(&every_scan, 50);
  const int64_t window_start = store->WindowStartMs();

  // A series of the chatty id's events into 600 points, against a range read of them.
  const int64_t from = window_start, to = spec.now_ms + 1;
  auto start = Clock::now();
  Result<query::SeriesAnswer> series =
      cached->Series("dev-hot", "temp", from, to, query::StepForMaxPoints(from, to, 600));
  const double series_s = SecondsSince(start);
  if (!series.ok()) Fail(__LINE__, series.status().ToString());
  uint64_t series_events = 0;
  for (const query::SeriesPoint& p : series->points) series_events += p.count;
  // A range reads at most kMaxRangeLimit events: the window is read in 20 slices of time.
  uint64_t range_events = 0;
  start = Clock::now();
  Status ranged = Status::Ok();
  constexpr int kSlices = 20;
  for (int i = 0; i < kSlices && ranged.ok(); ++i) {
    const int64_t a = from + (to - from) * i / kSlices, b = from + (to - from) * (i + 1) / kSlices;
    ranged = reads_store.RangeTo("dev-hot", a, b, query::kMaxRangeLimit, query::Order::kAsc,
                                 [&](const query::Event&) {
                                   ++range_events;
                                   return true;
                                 });
  }
  const double range_s = SecondsSince(start);
  if (!ranged.ok()) Fail(__LINE__, ranged.ToString());
  if (range_events != series_events + series->absent + series->not_number) {
    Fail(__LINE__, "the series counted " + std::to_string(series_events) +
                       " events, the range read " + std::to_string(range_events));
  }

  // The rebuild over a store of 1M ids: 2M events, about 2 each, no chatty id.
  cached.reset();
  store.reset();
  DataSpec million = spec;
  million.ids = 1'000'000;
  million.hot_events = 0;
  store::StoreOptions million_options = BenchStoreOptions(dir.path() + "/store-1m", &clock);
  RebuildFigure rebuild_1m;
  {
    std::unique_ptr<store::EventStore> s1m =
        std::move(store::EventStore::Open(million_options).value());
    for (const auto& batch : MakeBatches(s1m.get(), GenerateEvents(million), 5000)) {
      store::WriteOutcome outcome;
      if (!s1m->Write(batch, &outcome).ok()) Fail(__LINE__, "write");
    }
    s1m.reset();
    s1m = std::move(store::EventStore::Open(million_options).value());
    s1m->WaitForCompactions();
    std::unique_ptr<query::QueryEngine> engine_1m;
    rebuild_1m = MeasureRebuild(s1m.get(), &engine_1m);
  }

  const double bytes_per_id = static_cast<double>(status.cache.bytes) /
                              static_cast<double>(std::max<uint64_t>(1, status.cache.ids));
  const double bytes_per_id_1m =
      static_cast<double>(rebuild_1m.status.cache.bytes) /
      static_cast<double>(std::max<uint64_t>(1, rebuild_1m.status.cache.ids));
  const double ingest_on_rate = static_cast<double>(spec.events) / ingest.on_s;
  const double ingest_off_rate = static_cast<double>(spec.events) / ingest.off_s;
  Record("latest10_cache_p50_us", cache_p50);
  Record("latest10_store_p50_us", store_p50);
  Record("http_latest10_cache_qps", http_on_qps);
  Record("http_latest10_store_qps", http_off_qps);
  Record("every_cache_s", every_cache_s);
  Record("every_store_s", every_store_s);
  Record("every_scan_s", every_scan_s);
  Record("series_events_per_s", static_cast<double>(series_events) / series_s);
  Record("range_events_per_s", static_cast<double>(range_events) / range_s);
  Record("ingest_cache_on_events_per_s", ingest_on_rate);
  Record("ingest_cache_off_events_per_s", ingest_off_rate);
  Record("rebuild_100k_s", rebuild.rebuild_s);
  Record("newest_bucket_100k_s", rebuild.newest_s);
  Record("rebuild_100k_cpu_s", rebuild.rebuild_cpu_s);
  Record("newest_bucket_100k_cpu_s", rebuild.newest_cpu_s);
  Record("rebuild_1m_s", rebuild_1m.rebuild_s);
  Record("newest_bucket_1m_s", rebuild_1m.newest_s);
  Record("rebuild_1m_cpu_s", rebuild_1m.rebuild_cpu_s);
  Record("newest_bucket_1m_cpu_s", rebuild_1m.newest_cpu_s);
  std::printf("latest-10: cache p50 %.1f us p99 %.1f us | store path p50 %.1f us p99 %.1f us\n",
              cache_p50, Percentile(&cache_us, 99), store_p50, Percentile(&store_us, 99));
  std::printf("HTTP latest-10, wrk, %d connections%s: cache on %.0f/s, off %.0f/s\n", kHttpClients,
              pin ? " on CPU 0, servers on CPU 1" : ", not pinned", http_on_qps, http_off_qps);
  std::printf("latest of every id (%zu ids): cache %.3f s, store path %.3f s, scan %.3f s\n",
              newest.size(), every_cache_s, every_store_s, every_scan_s);
  std::printf("series of %llu events into %zu points: %.3f s; range read of %llu events: %.3f s\n",
              static_cast<unsigned long long>(series_events), series->points.size(), series_s,
              static_cast<unsigned long long>(range_events), range_s);
  std::printf(
      "ingest of %zu events: cache on %.3f s in Write (%llu page faults, %.3f s in the kernel), "
      "off %.3f s (%llu, %.3f s)\n",
      spec.events, ingest.on_s, static_cast<unsigned long long>(ingest.on_usage.faults),
      ingest.on_usage.kernel_s, ingest.off_s,
      static_cast<unsigned long long>(ingest.off_usage.faults), ingest.off_usage.kernel_s);
  for (const RebuildFigure* f :
       std::initializer_list<const RebuildFigure*>{&rebuild, &rebuild_1m}) {
    std::printf(
        "rebuild of %llu ids (%llu rows offered, %llu bytes, %.0f per id): %.3f s (CPU %.3f s); "
        "newest bucket (%llu rows): %.3f s (CPU %.3f s)\n",
        static_cast<unsigned long long>(f->status.cache.ids),
        static_cast<unsigned long long>(f->status.rebuild.rows),
        static_cast<unsigned long long>(f->status.cache.bytes),
        static_cast<double>(f->status.cache.bytes) /
            static_cast<double>(std::max<uint64_t>(1, f->status.cache.ids)),
        f->rebuild_s, f->rebuild_cpu_s, static_cast<unsigned long long>(f->newest_rows),
        f->newest_s, f->newest_cpu_s);
  }
  PrintRatio("latest-10 p50, cache / store path", "latest10_cache_p50_us", "latest10_store_p50_us");
  PrintRatio("HTTP latest-10 queries/s, cache on / off", "http_latest10_cache_qps",
             "http_latest10_store_qps");
  PrintRatio("latest of every id, cache / scan of the window", "every_cache_s", "every_scan_s");
  PrintRatio("latest of every id, store path / scan of the window", "every_store_s",
             "every_scan_s");
  PrintRatio("series events/s / range read events/s", "series_events_per_s", "range_events_per_s");
  PrintRatio("ingest events/s, cache on / off", "ingest_cache_on_events_per_s",
             "ingest_cache_off_events_per_s");
  PrintRatio("cache rebuild (100k ids) / one read of the newest bucket", "rebuild_100k_s",
             "newest_bucket_100k_s");
  PrintRatio("cache rebuild (100k ids) / newest bucket, CPU", "rebuild_100k_cpu_s",
             "newest_bucket_100k_cpu_s");
  PrintRatio("cache rebuild (1M ids) / one read of the newest bucket", "rebuild_1m_s",
             "newest_bucket_1m_s");
  PrintRatio("cache rebuild (1M ids) / newest bucket, CPU", "rebuild_1m_cpu_s",
             "newest_bucket_1m_cpu_s");

  Report report("last_cache_bench", "The last-N cache and the device queries",
                "2M events over 100000 ids (about 10 each) and one chatty id with 1M, 16 salts, "
                "`salt_by: record`, store reopened and compacted; one client thread in process, " +
                    std::to_string(kHttpClients) +
                    " keep-alive connections of wrk over HTTP (with two cores, the servers on one "
                    "and wrk on the other); `query.threads` = 2. The rebuild also over a "
                    "second store of 2M events over 1M ids (about 2 each). Each figure against the "
                    "store path computing the same answer in the same run.");
  report.Columns({"figure", "value", "baseline", "ratio"});
  report.Row({"latest-10 p50, cache / store path", Fixed(cache_p50, 1) + " µs",
              Fixed(store_p50, 1) + " µs", Fixed(cache_p50 / store_p50, 3)});
  report.Row({"HTTP latest-10 queries/s, idle, cache on / off", Rate(http_on_qps),
              Rate(http_off_qps), Fixed(http_on_qps / http_off_qps, 2)});
  report.Row({"latest of every id (" + std::to_string(newest.size()) + " ids), cache / scan",
              Fixed(every_cache_s, 3) + " s", Fixed(every_scan_s, 3) + " s",
              Fixed(every_cache_s / every_scan_s, 3)});
  report.Row({"latest of every id, store path / scan", Fixed(every_store_s, 3) + " s",
              Fixed(every_scan_s, 3) + " s", Fixed(every_store_s / every_scan_s, 3)});
  report.Row({"series of " + std::to_string(series_events) + " events into " +
                  std::to_string(series->points.size()) + " points / range read, events/s",
              Rate(static_cast<double>(series_events) / series_s),
              Rate(static_cast<double>(range_events) / range_s),
              Fixed((static_cast<double>(series_events) / series_s) /
                        (static_cast<double>(range_events) / range_s),
                    2)});
  report.Row({"ingest (in process, the store's Write), cache on / off, events/s",
              Rate(ingest_on_rate), Rate(ingest_off_rate),
              Fixed(ingest_on_rate / ingest_off_rate, 3)});
  report.Row({"ingest, page faults in Write, cache on / off (kernel time in Write)",
              std::to_string(ingest.on_usage.faults) + " (" + Fixed(ingest.on_usage.kernel_s, 3) +
                  " s)",
              std::to_string(ingest.off_usage.faults) + " (" +
                  Fixed(ingest.off_usage.kernel_s, 3) + " s)",
              ""});
  for (const RebuildFigure* f :
       std::initializer_list<const RebuildFigure*>{&rebuild, &rebuild_1m}) {
    report.Row({"cache rebuild (" + std::to_string(f->status.cache.ids) +
                    " ids) / one read of the newest bucket, wall (CPU)",
                Fixed(f->rebuild_s, 3) + " s (" + Fixed(f->rebuild_cpu_s, 3) + " s)",
                Fixed(f->newest_s, 3) + " s (" + Fixed(f->newest_cpu_s, 3) + " s)",
                Fixed(f->rebuild_s / f->newest_s, 1) + " (" +
                    Fixed(f->rebuild_cpu_s / f->newest_cpu_s, 1) + ")"});
  }
  report.Note("The cache held " + std::to_string(status.cache.ids) + " ids in " +
              std::to_string(status.cache.bytes >> 20) + " MiB: " + Fixed(bytes_per_id, 0) +
              " bytes per id at about 10 events of 100-byte payloads each; " +
              Fixed(bytes_per_id_1m, 0) + " bytes per id at about 2 events (the 1M-id store).");
  report.Write();
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main() { return hotrow::bench::Main(); }
