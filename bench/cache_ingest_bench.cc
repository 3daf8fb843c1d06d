// What the last-N cache costs the store's Write, in process: the same events written in the same
// batches of 5000 into two stores, one with the last-N cache attached (depth 16, a cap
// that holds every id) and one without, batch by batch in alternating order, in two phases:
//
// - filling from empty: the first `fill` events (every id's entry is made and grows to the depth),
//   with the writing thread's page faults (getrusage minflt / majflt) inside Write on each side;
// - steady state: the next `steady` events, every entry already at the depth (each row takes the
//   oldest's place).
//
// The cache is attached to the store as the query engine attaches it (a store::WriteObserver told
// of every Write), wrapped so that its own time inside Write is counted too (ns per row).
//
// Each round uses fresh stores; the ratio (events/s with the cache / without) is taken per round
// and per phase, and the medians reported. Also the cache's bytes per id at the end.
//
// By default the cache adds the rows on its own thread (LastCacheOptions::apply_thread): Write
// then only queues them, and the thread's time is reported beside it (ns per row), with the ratio
// it would be were that time spent inside Write (the CPU the cache costs, wherever it runs). The
// thread is waited for, untimed, before each Write of the store without the cache, so that it
// never takes that side's CPU. `--apply-thread 0` adds them inside Write (the earlier design).
//
//   cache_ingest_bench [--ids N] [--fill N] [--steady N] [--rounds R] [--apply-thread 0|1]
//                      [--max-queued-rows N]

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "query/last_cache.h"
#include "store/event_store.h"

namespace hotrow::bench {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Fail(int line, const std::string& what) {
  std::fprintf(stderr, "cache_ingest_bench:%d: %s\n", line, what.c_str());
  std::exit(1);
}

struct Faults {
  uint64_t minor = 0;
  uint64_t major = 0;
};
Faults ThreadFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return {static_cast<uint64_t>(usage.ru_minflt), static_cast<uint64_t>(usage.ru_majflt)};
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Side {
  double seconds = 0;
  double cpu_seconds = 0;    // the writing thread's CPU time inside Write
  double cache_seconds = 0;  // of which inside the cache's RowsWritten
  double apply_seconds = 0;  // the cache's thread's time adding the rows (beside Write)
  Faults faults;
};

// The cache as the query engine attaches it to the store (told of every Write), timed.
class TimedCache final : public store::WriteObserver {
 public:
  explicit TimedCache(const query::LastCacheOptions& options) : cache_(options) {
    cache_.SetKnownFrom(0);  // as a rebuild that read an empty store leaves it
  }
  void RowsWritten(std::span<const store::WrittenRow> rows) override {
    const auto start = Clock::now();
    cache_.RowsWritten(rows);
    seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  }
  void BucketsDropped(int64_t until_ms) override { cache_.BucketsDropped(until_ms); }
  double TakeSeconds() { return std::exchange(seconds_, 0.0); }
  query::LastCacheStats Stats() { return cache_.Stats(); }
  void WaitForApplied() { cache_.WaitForApplied(); }
  // The cache's thread's time adding rows since the last call.
  double TakeApplySeconds() {
    const uint64_t ns = cache_.Stats().apply_ns;
    return static_cast<double>(ns - std::exchange(apply_ns_, ns)) * 1e-9;
  }

 private:
  query::LastCache cache_;
  uint64_t apply_ns_ = 0;
  double seconds_ = 0;
};
struct Phase {
  Side on, off;
  double Ratio() const { return off.seconds / on.seconds; }  // events/s on / off
  // The writing thread's CPU time in Write, off / on: steadier than the wall time on a busy
  // machine, where a timed call also holds the time other processes took the CPU.
  double WriterCpuRatio() const { return off.cpu_seconds / on.cpu_seconds; }
  // The same with the cache's thread's CPU counted as the writer's: what the cache costs in CPU,
  // wherever it runs.
  double CpuRatio() const { return off.cpu_seconds / (on.cpu_seconds + on.apply_seconds); }
};

// Writes batches [from, to) into both stores, alternating which goes first.
Phase WriteBoth(const std::vector<store::WriteBatchInput>& off_batches,
                const std::vector<store::WriteBatchInput>& on_batches, size_t from, size_t to,
                store::EventStore* off, store::EventStore* on, TimedCache* cache) {
  Phase phase;
  cache->WaitForApplied();
  cache->TakeApplySeconds();
  for (size_t i = from; i < to; ++i) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool cached = (turn == 0) == (i % 2 == 0);
      Side& side = cached ? phase.on : phase.off;
      if (!cached) cache->WaitForApplied();  // untimed: the cache's thread never takes its CPU
      store::WriteOutcome outcome;
      const Faults before = ThreadFaults();
      const double cpu_start = ThreadCpuSeconds();
      const auto start = Clock::now();
      if (!(cached ? on : off)->Write(cached ? on_batches[i] : off_batches[i], &outcome).ok()) {
        Fail(__LINE__, "write");
      }
      side.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      side.cpu_seconds += ThreadCpuSeconds() - cpu_start;
      side.cache_seconds += cache->TakeSeconds();
      const Faults after = ThreadFaults();
      side.faults.minor += after.minor - before.minor;
      side.faults.major += after.major - before.major;
    }
  }
  cache->WaitForApplied();
  phase.on.apply_seconds = cache->TakeApplySeconds();
  return phase;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()
             ? 0
             : (v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

size_t Arg(int argc, char** argv, const char* name, size_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return static_cast<size_t>(std::atoll(argv[i + 1]));
  }
  return fallback;
}

int Main(int argc, char** argv) {
  const size_t ids = Arg(argc, argv, "--ids", 50'000);
  const size_t fill = Arg(argc, argv, "--fill", 1'000'000);
  const size_t steady = Arg(argc, argv, "--steady", 1'000'000);
  const size_t rounds = Arg(argc, argv, "--rounds", 3);
  const bool apply_thread = Arg(argc, argv, "--apply-thread", 1) != 0;
  const size_t max_queued = Arg(argc, argv, "--max-queued-rows", 65536);
  constexpr size_t kBatch = 5000;
  DataSpec spec;
  spec.events = fill + steady;
  spec.ids = ids;
  spec.hot_events = 0;
  const std::vector<GeneratedEvent> events = GenerateEvents(spec);
  const size_t fill_batches = (fill + kBatch - 1) / kBatch;

  std::vector<double> fill_ratios, steady_ratios;
  std::vector<Phase> fills, steadies;
  double bytes_per_id = 0;
  uint64_t held_ids = 0;
  uint64_t apply_faults = 0;
  for (size_t round = 0; round < rounds; ++round) {
    ScratchDir dir;
    ManualClock clock(spec.now_ms);
    auto open = [&](const std::string& name) {
      store::StoreOptions options;
      options.path = dir.path() + "/" + name;
      options.wall_clock = &clock;
      options.salts = 16;
      auto opened = store::EventStore::Open(options);
      if (!opened.ok()) Fail(__LINE__, opened.status().ToString());
      return std::move(opened).value();
    };
    std::unique_ptr<store::EventStore> off = open("off");
    std::unique_ptr<store::EventStore> on = open("on");
    query::LastCacheOptions cached;
    cached.depth = 16;
    cached.max_bytes = size_t{4} << 30;  // every id held
    cached.apply_thread = apply_thread;
    cached.max_queued_rows = max_queued;
    TimedCache cache(cached);
    on->AddWriteObserver(&cache);
    const auto off_batches = MakeBatches(off.get(), events, kBatch);
    const auto on_batches = MakeBatches(on.get(), events, kBatch);
    const Phase f =
        WriteBoth(off_batches, on_batches, 0, fill_batches, off.get(), on.get(), &cache);
    const Phase s = WriteBoth(off_batches, on_batches, fill_batches, off_batches.size(), off.get(),
                              on.get(), &cache);
    on->RemoveWriteObserver(&cache);
    const query::LastCacheStats stats = cache.Stats();
    held_ids = stats.ids;
    apply_faults = stats.apply_page_faults;
    bytes_per_id = stats.ids == 0 ? 0 : static_cast<double>(stats.bytes) / stats.ids;
    std::printf(
        "round %zu: fill on %.3f s (cache %.0f ns/row) off %.3f s ratio %.3f (faults on "
        "%llu+%llu major, off %llu+%llu major); steady on %.3f s (cache %.0f ns/row) off %.3f s "
        "ratio %.3f; writer CPU ratio fill %.3f steady %.3f; cache's thread fill %.0f steady %.0f "
        "ns/row CPU (CPU ratio with it fill %.3f steady %.3f, %llu page faults, %llu rows added by "
        "reads); %llu ids, %.0f bytes/id\n",
        round + 1, f.on.seconds, f.on.cache_seconds * 1e9 / static_cast<double>(fill),
        f.off.seconds, f.Ratio(), static_cast<unsigned long long>(f.on.faults.minor),
        static_cast<unsigned long long>(f.on.faults.major),
        static_cast<unsigned long long>(f.off.faults.minor),
        static_cast<unsigned long long>(f.off.faults.major), s.on.seconds,
        s.on.cache_seconds * 1e9 / static_cast<double>(steady), s.off.seconds, s.Ratio(),
        f.WriterCpuRatio(), s.WriterCpuRatio(), f.on.apply_seconds * 1e9 / static_cast<double>(fill),
        s.on.apply_seconds * 1e9 / static_cast<double>(steady), f.CpuRatio(), s.CpuRatio(),
        static_cast<unsigned long long>(stats.apply_page_faults),
        static_cast<unsigned long long>(stats.applied_by_readers),
        static_cast<unsigned long long>(stats.ids), bytes_per_id);
    std::fflush(stdout);
    fill_ratios.push_back(f.Ratio());
    steady_ratios.push_back(s.Ratio());
    fills.push_back(f);
    steadies.push_back(s);
  }
  const double fill_ratio = Median(fill_ratios);
  const double steady_ratio = Median(steady_ratios);
  std::vector<double> fill_cache_ns, steady_cache_ns;
  for (const Phase& f : fills) fill_cache_ns.push_back(f.on.cache_seconds * 1e9 / fill);
  for (const Phase& p : steadies) steady_cache_ns.push_back(p.on.cache_seconds * 1e9 / steady);
  std::vector<double> fill_apply_ns, steady_apply_ns, fill_cpu, steady_cpu, fill_wcpu, steady_wcpu;
  for (const Phase& f : fills) {
    fill_apply_ns.push_back(f.on.apply_seconds * 1e9 / fill);
    fill_cpu.push_back(f.CpuRatio());
    fill_wcpu.push_back(f.WriterCpuRatio());
  }
  for (const Phase& p : steadies) {
    steady_apply_ns.push_back(p.on.apply_seconds * 1e9 / steady);
    steady_cpu.push_back(p.CpuRatio());
    steady_wcpu.push_back(p.WriterCpuRatio());
  }
  std::vector<double> on_faults, off_faults;
  for (const Phase& f : fills) {
    on_faults.push_back(static_cast<double>(f.on.faults.minor + f.on.faults.major));
    off_faults.push_back(static_cast<double>(f.off.faults.minor + f.off.faults.major));
  }
  Record("cache_ingest_steady_ratio", steady_ratio);
  Record("cache_ingest_fill_ratio", fill_ratio);
  Record("one", 1.0);
  std::printf(
      "median of %zu rounds: steady state on / off %.3f, filling from empty %.3f; writer CPU "
      "%.3f, %.3f; with the cache's thread's CPU %.3f, %.3f\n",
      rounds, steady_ratio, fill_ratio, Median(steady_wcpu), Median(fill_wcpu), Median(steady_cpu),
      Median(fill_cpu));
  PrintRatio("ingest, cache on / off, steady state (entries at depth)", "cache_ingest_steady_ratio",
             "one");
  PrintRatio("ingest, cache on / off, filling from empty", "cache_ingest_fill_ratio", "one");

  Report report("cache_ingest_bench", "Ingest with the last-N cache on / off, steady and filling",
                "The same events in the same batches of 5000 written by EventStore::Write into two "
                "stores, one with the last-N cache attached as the engine attaches it (depth 16, "
                "every id held), "
                "batch by batch in alternating order; " +
                    std::to_string(ids) + " ids, " + std::to_string(fill) +
                    " events filling the cache from empty, then " + std::to_string(steady) +
                    " at steady state (every entry at the depth); 100-byte payloads; fresh stores "
                    "each round, median of " +
                    std::to_string(rounds) + " rounds.");
  report.Columns({"figure", "target", "median", "rounds"});
  auto list = [](const std::vector<double>& v, int decimals) {
    std::string s;
    for (double x : v) s += (s.empty() ? "" : ", ") + Fixed(x, decimals);
    return s;
  };
  report.Row({"ingest, cache on / off, steady state", "≥ 0.95", Fixed(steady_ratio, 3),
              list(steady_ratios, 3)});
  report.Row({"ingest, cache on / off, filling from empty", "≥ 0.92", Fixed(fill_ratio, 3),
              list(fill_ratios, 3)});
  report.Row({"the cache's time in Write, ns per row, steady state", "≤ 5 % of Write",
              Fixed(Median(steady_cache_ns), 0), list(steady_cache_ns, 0)});
  report.Row({"the cache's time in Write, ns per row, filling", "", Fixed(Median(fill_cache_ns), 0),
              list(fill_cache_ns, 0)});
  report.Row({"the cache's thread, ns per row, steady state", "", Fixed(Median(steady_apply_ns), 0),
              list(steady_apply_ns, 0)});
  report.Row({"the cache's thread, ns per row, filling", "", Fixed(Median(fill_apply_ns), 0),
              list(fill_apply_ns, 0)});
  report.Row({"the writing thread's CPU in Write, off / on, steady state", "",
              Fixed(Median(steady_wcpu), 3), list(steady_wcpu, 3)});
  report.Row({"the writing thread's CPU in Write, off / on, filling", "",
              Fixed(Median(fill_wcpu), 3), list(fill_wcpu, 3)});
  report.Row({"CPU with the cache's thread's counted as the writer's, off / on, steady state", "",
              Fixed(Median(steady_cpu), 3), list(steady_cpu, 3)});
  report.Row({"CPU with the cache's thread's counted as the writer's, off / on, filling", "",
              Fixed(Median(fill_cpu), 3), list(fill_cpu, 3)});
  report.Row({"page faults in Write while filling, cache on", "", Fixed(Median(on_faults), 0),
              list(on_faults, 0)});
  report.Row({"page faults in Write while filling, cache off", "", Fixed(Median(off_faults), 0),
              list(off_faults, 0)});
  report.Row({"page faults of the cache's thread (last round)", "",
              Fixed(static_cast<double>(apply_faults), 0), ""});
  report.Row({"cache bytes per id (" + std::to_string(held_ids) + " ids at the depth)", "",
              Fixed(bytes_per_id, 0), ""});
  report.Write();
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
