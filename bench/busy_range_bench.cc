// Is a range that one bucket fills read as fast as the query's threads allow? The range read of
// last_cache_bench's chatty id, alone: one id holding most events of a store (16 salts, 10
// buckets), read in 20 slices of time (each mostly inside one bucket, up to kMaxRangeLimit events),
// beside whole ranges of ids of ~10k events over every bucket; 2 query threads, in process, events
// counted by the sink. Wall time per round of each, in alternated rounds, medians, and the CPU of
// the process per event; the baseline is the same ranges on an engine with 1 query thread, whose
// rounds alternate with the 2-thread ones (a range that one bucket fills gains from the second
// thread only when that bucket's salts are read on both).
//
// With `--store DIR` the store is built once into DIR and reused by later runs, so that two builds
// of the query code can be timed against the same store in turns (A B A B):
//
//   busy_range_bench [--store DIR] [--rounds R] [--events N] [--only 1|2] [--state ingested]
//
// `--state ingested` reads the store as a burst leaves it (bench_support.h, StoreState: several L0
// files per bucket, nothing compacted; built fresh, never reused), else compacted.
//
// `--only T` times the engine with T query threads alone (no ratio): for a profiler, e.g.
// `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*RangeTo*'`, where the
// instructions and the hand-offs (pool submits, condition waits) of both engines would mix.

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "common/logging.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

using Steady = std::chrono::steady_clock;

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

int Main(int argc, char** argv) {
  InitLogging("warn");
  std::string store_dir;
  int rounds = 7;
  int only = 0;  // 0: both engines, in turns
  StoreState state = StoreState::kCompacted;
  DataSpec spec;
  spec.events = 1'000'000;
  spec.ids = 50;              // ~10k events each besides the chatty id
  spec.hot_events = 500'000;  // the chatty id "dev-hot"
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--store") == 0) store_dir = argv[i + 1];
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--only") == 0) only = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--state") == 0 && std::strcmp(argv[i + 1], "ingested") == 0) {
      state = StoreState::kAsIngested;
    }
    if (std::strcmp(argv[i], "--events") == 0) {
      spec.events = std::strtoull(argv[i + 1], nullptr, 10);
      spec.hot_events = spec.events / 2;
    }
  }
  std::unique_ptr<ScratchDir> scratch;
  if (store_dir.empty() || state == StoreState::kAsIngested) {
    scratch = std::make_unique<ScratchDir>();
    store_dir = scratch->path();
  }
  ManualClock clock(spec.now_ms);
  store::StoreOptions options;
  options.path = store_dir + "/store";
  options.wall_clock = &clock;
  options.salts = 16;
  std::unique_ptr<store::EventStore> store;
  if (std::filesystem::exists(options.path)) {
    store = std::move(store::EventStore::Open(options).value());
    store->WaitForCompactions();
  } else {
    store = BuildStore(options, GenerateEvents(spec), 5000, state);
  }
  std::printf("store %s: %s\n", StateName(state), SortedRunsText(*store).c_str());

  query::QueryOptions q;
  q.threads = 2;
  q.last_cache = 0;
  query::QueryEngine engine(store.get(), q);
  q.threads = 1;
  query::QueryEngine engine1(store.get(), q);
  const int64_t from = store->WindowStartMs(), to = spec.now_ms + 1;
  constexpr int kSlices = 20;
  constexpr int kIds = 8;
  auto busy_round = [&](query::QueryEngine* on) {
    uint64_t n = 0;
    for (int i = 0; i < kSlices; ++i) {
      const int64_t a = from + (to - from) * i / kSlices;
      const int64_t b = from + (to - from) * (i + 1) / kSlices;
      Status st = on->RangeTo("dev-hot", a, b, query::kMaxRangeLimit, query::Order::kAsc,
                              [&](const query::Event&) {
                                ++n;
                                return true;
                              });
      if (!st.ok()) std::abort();
    }
    return n;
  };
  auto whole_round = [&](query::QueryEngine* on) {
    uint64_t n = 0;
    for (int i = 1; i <= kIds; ++i) {
      char id[32];
      std::snprintf(id, sizeof(id), "dev-%06d", i);
      Status st = on->RangeTo(id, 0, to, query::kMaxRangeLimit, query::Order::kDesc,
                              [&](const query::Event&) {
                                ++n;
                                return true;
                              });
      if (!st.ok()) std::abort();
    }
    return n;
  };
  // [busy, whole] x [2 threads, 1 thread]
  std::vector<double> rate[2][2], cpu_ns[2][2], over_one[2];
  // Cursors made and seeks per round, the same in every round: deterministic.
  query::QueryWorkStats work[2][2];
  for (int round = 0; round < rounds; ++round) {
    for (int kind_turn = 0; kind_turn < 2; ++kind_turn) {
      const int kind = (kind_turn + round) % 2;  // 0: busy, 1: whole
      double got[2] = {0, 0};
      for (int thread_turn = 0; thread_turn < 2; ++thread_turn) {
        const int t = (thread_turn + round / 2) % 2;  // 0: 2 threads, 1: 1 thread
        // With --only, the other engine is not timed: zeros in its columns.
        if (only != 0 && only != 2 - t) {
          got[t] = 1;
          rate[kind][t].push_back(0);
          cpu_ns[kind][t].push_back(0);
          continue;
        }
        query::QueryEngine* on = t == 0 ? &engine : &engine1;
        const query::QueryWorkStats work0 = on->Work();
        const double cpu0 = ProcessCpuSeconds();
        const auto t0 = Steady::now();
        const uint64_t n = kind == 0 ? busy_round(on) : whole_round(on);
        const double s = std::chrono::duration<double>(Steady::now() - t0).count();
        got[t] = static_cast<double>(n) / s;
        rate[kind][t].push_back(got[t]);
        const query::QueryWorkStats work1 = on->Work();
        work[kind][t] = {work1.iterators_created - work0.iterators_created,
                         work1.seeks - work0.seeks, work1.rows_read - work0.rows_read};
        cpu_ns[kind][t].push_back(1e9 * (ProcessCpuSeconds() - cpu0) / static_cast<double>(n));
      }
      over_one[kind].push_back(got[0] / got[1]);
    }
  }
  Record("busy_range_events_per_s", Percentile(&rate[0][0], 50));
  Record("whole_range_events_per_s", Percentile(&rate[1][0], 50));
  Record("busy_range_t1_events_per_s", Percentile(&rate[0][1], 50));
  Record("whole_range_t1_events_per_s", Percentile(&rate[1][1], 50));
  std::printf(
      "2 query threads, median of %d alternated rounds: chatty id in %d slices %.0f "
      "events/s (%.0f ns CPU per event); %d whole ranges of ~10k-event ids %.0f events/s "
      "(%.0f ns CPU per event)\n",
      rounds, kSlices, Recorded("busy_range_events_per_s"), Percentile(&cpu_ns[0][0], 50), kIds,
      Recorded("whole_range_events_per_s"), Percentile(&cpu_ns[1][0], 50));
  std::printf(
      "1 query thread: chatty id %.0f events/s (%.0f ns CPU per event); whole ranges %.0f "
      "events/s (%.0f ns CPU per event)\n",
      Recorded("busy_range_t1_events_per_s"), Percentile(&cpu_ns[0][1], 50),
      Recorded("whole_range_t1_events_per_s"), Percentile(&cpu_ns[1][1], 50));
  for (int kind = 0; kind < 2; ++kind) {
    for (int t = 0; t < 2; ++t) {
      std::printf("%s, %d thread(s): %llu cursors made, %llu seeks, %llu rows read per round\n",
                  kind == 0 ? "chatty id in slices" : "whole ranges", 2 - t,
                  static_cast<unsigned long long>(work[kind][t].iterators_created),
                  static_cast<unsigned long long>(work[kind][t].seeks),
                  static_cast<unsigned long long>(work[kind][t].rows_read));
    }
  }
  // The medians of the rounds' ratios (each round's 2 and 1 thread runs back to back), beside the
  // medians of the 2-thread rates.
  Report report("busy_range_bench",
                "A range one bucket fills, and whole ranges, 2 query threads / 1",
                "1M events, 16 salts, 10 buckets: one chatty id with 500k events read in 20 slices "
                "of time (each mostly one bucket, as last_cache_bench's range read), and 8 whole "
                "ranges of ids of ~10k events; in process (`RangeTo`, the sink counts), an engine "
                "with 2 query threads against one with 1, in " +
                    std::to_string(rounds) + " alternated rounds; medians.");
  report.Columns({"figure", "2 threads", "1 thread", "2 / 1 (median of rounds)"});
  for (const auto& [kind, what] :
       {std::pair{0, "chatty id in 20 slices"}, std::pair{1, "whole ranges of ~10k-event ids"}}) {
    const double ratio = Percentile(&over_one[kind], 50);
    const double two = Percentile(&rate[kind][0], 50);
    std::printf("RATIO %-56s %12.4g / %-12.4g = %.3f\n",
                (std::string("range events/s, 2 query threads / 1, ") + what).c_str(), two,
                two / ratio, ratio);
    report.Row({std::string(what) + ", events/s (CPU per event)",
                Rate(two) + " (" + Fixed(Percentile(&cpu_ns[kind][0], 50), 0) + " ns)",
                Rate(Percentile(&rate[kind][1], 50)) + " (" +
                    Fixed(Percentile(&cpu_ns[kind][1], 50), 0) + " ns)",
                Fixed(ratio, 2)});
  }
  report.Write();
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
