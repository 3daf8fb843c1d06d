// How fast do a range query returning 10k events and a full scan of 1M events run with 1 and with
// 2 query threads, next to one thread iterating every key bare?

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>

#include "bench/bench_support.h"
#include "common/time_format.h"
#include "keying/row_key.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

struct Fixture {
  ScratchDir dir;
  ManualClock clock{DataSpec().now_ms};
  std::unique_ptr<store::EventStore> store;
};

Fixture* f = nullptr;

// Closes the store before the process exits: RocksDB's compactions still running while the
// process's static objects are destroyed crash it ("double free or corruption").
void CloseFixture() {
  delete f;
  f = nullptr;
}

Fixture* Get() {
  if (f != nullptr) return f;
  f = new Fixture();
  store::StoreOptions options;
  options.path = f->dir.path() + "/store";
  options.wall_clock = &f->clock;
  options.salts = 16;
  f->store = std::move(store::EventStore::Open(options).value());
  for (const auto& batch : MakeBatches(f->store.get(), GenerateEvents(DataSpec()), 5000)) {
    store::WriteOutcome outcome;
    if (!f->store->Write(batch, &outcome).ok()) std::abort();
  }
  // Reopen: the write-ahead log is replayed into table files and no flush runs during the measure.
  f->store.reset();
  f->store = std::move(store::EventStore::Open(options).value());
  // The steady state: closed buckets compacted to one sorted run, as a running service has them.
  f->store->WaitForCompactions();
  return f;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void BM_Range10k(benchmark::State& state) {
  Fixture* f = Get();
  query::QueryOptions options;
  options.threads = static_cast<int>(state.range(0));
  query::QueryEngine engine(f->store.get(), options);
  // The engine rebuilds its last-N cache on the pool at start: not while the range is timed (the
  // rebuild held the 2-thread engine's pool worker and the range waited behind it).
  engine.WaitForCacheRebuild();
  const int64_t from = f->store->WindowStartMs(), to = f->clock.NowMs() + 1;
  double best = 0;
  size_t n = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto events = engine.Range("dev-hot", from, to, 10000, query::Order::kDesc);
    n = events.ok() ? events->size() : 0;
    best = std::max(best, static_cast<double>(n) / Seconds(start));
  }
  state.counters["events"] = static_cast<double>(n);
  state.counters["events_per_s"] = best;
  Record("range10k_t" + std::to_string(state.range(0)), best);
}

void BM_FullScan(benchmark::State& state) {
  Fixture* f = Get();
  query::QueryOptions options;
  options.threads = static_cast<int>(state.range(0));
  query::QueryEngine engine(f->store.get(), options);
  engine.WaitForCacheRebuild();  // as BM_Range10k
  double best = 0;
  int64_t n = 0;
  for (auto _ : state) {
    n = 0;
    const auto start = std::chrono::steady_clock::now();
    Status s = engine.Scan(0, kMaxTimeMs, query::kNoLimit, [&](const query::Event& e) {
      benchmark::DoNotOptimize(e.payload.data());
      ++n;
      return true;
    });
    if (!s.ok()) state.SkipWithError("scan failed");
    best = std::max(best, static_cast<double>(n) / Seconds(start));
  }
  state.counters["events"] = static_cast<double>(n);
  state.counters["events_per_s"] = best;
  Record("scan_t" + std::to_string(state.range(0)), best);
}

// The floor: one thread walking every key of every bucket and salt, decoding nothing.
void BM_BareSingleThreadScan(benchmark::State& state) {
  Fixture* f = Get();
  double best = 0;
  int64_t n = 0;
  for (auto _ : state) {
    n = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const auto& bucket : f->store->Buckets()) {
      for (int salt = 0; salt < 16; ++salt) {
        auto it = bucket->NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
        for (it->SeekToFirst(); it->Valid(); it->Next()) {
          benchmark::DoNotOptimize(it->value().data());
          ++n;
        }
      }
    }
    best = std::max(best, static_cast<double>(n) / Seconds(start));
  }
  state.counters["events"] = static_cast<double>(n);
  state.counters["events_per_s"] = best;
  Record("bare_scan", best);
}

BENCHMARK(BM_BareSingleThreadScan)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FullScan)->Arg(1)->Arg(2)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Range10k)->Arg(1)->Arg(2)->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  hotrow::bench::CloseFixture();
  using hotrow::bench::PrintRatio;
  std::printf("\n1M events, 16 salts; events/s, best run\n");
  PrintRatio("full scan, 2 threads / 1 thread", "scan_t2", "scan_t1");
  PrintRatio("full scan, 1 thread / bare single-thread walk", "scan_t1", "bare_scan");
  PrintRatio("full scan, 2 threads / bare single-thread walk", "scan_t2", "bare_scan");
  PrintRatio("range 10k, 2 threads / 1 thread", "range10k_t2", "range10k_t1");

  using namespace hotrow::bench;
  const double bare = Recorded("bare_scan");
  Report report("scan_bench", "Scans and ranges with 1 and all cores",
                "The 1M events of the write benchmark, 16 salts, best of 3 (range: best of 20). A full "
                "scan streams every event in time order; the range query returns 10k events of one "
                "busy id. The baseline is one thread walking every key of every bucket and salt, "
                "decoding nothing.");
  report.Columns({"query", "1 thread", "2 threads (all cores)", "2 / 1", "1 thread / bare walk"});
  report.Row({"full scan", Rate(Recorded("scan_t1")), Rate(Recorded("scan_t2")),
              Fixed(Recorded("scan_t2") / Recorded("scan_t1"), 2), Fixed(Recorded("scan_t1") / bare, 2)});
  report.Row({"range, 10k events", Rate(Recorded("range10k_t1")), Rate(Recorded("range10k_t2")),
              Fixed(Recorded("range10k_t2") / Recorded("range10k_t1"), 2), ""});
  report.Row({"bare single-thread key walk (baseline)", Rate(bare), "", "", "1"});
  report.Note("Rates are events returned per second.");
  report.Write();
  return 0;
}
