// What does expiring a bucket of 1M events cost, and does its disk space come back?

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "bench/bench_support.h"

namespace hotrow::bench {
namespace {

void BM_DropBucketOf1M(benchmark::State& state) {
  DataSpec spec;
  spec.span_ms = 50 * 1000;  // every event inside one 1-minute bucket
  const auto events = GenerateEvents(spec);
  for (auto _ : state) {
    state.PauseTiming();
    ScratchDir dir;
    ManualClock clock(spec.now_ms);
    store::StoreOptions options;
    options.path = dir.path() + "/store";
    options.wall_clock = &clock;
    {
      auto store = std::move(store::EventStore::Open(options).value());
      for (const auto& batch : MakeBatches(store.get(), events, 5000)) {
        store::WriteOutcome outcome;
        if (!store->Write(batch, &outcome).ok()) std::abort();
      }
    }
    // Reopening replays the WAL into table files, so the bucket is on disk as SSTs.
    auto store = std::move(store::EventStore::Open(options).value());
    const uint64_t before = store->Stats().disk_bytes;
    const size_t buckets_before = store->Buckets().size();
    clock.Advance(options.ttl_ms + 2 * options.bucket_ms);
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    auto dropped = store->DropExpiredBuckets();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    state.PauseTiming();
    // File deletion happens in the background once the handle is gone; give it a bounded moment.
    uint64_t after = store->Stats().disk_bytes;
    for (int i = 0; i < 100 && after > before / 4; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      after = store->Stats().disk_bytes;
    }
    state.counters["drop_ms"] = ms;
    state.counters["disk_before_MB"] = static_cast<double>(before) / 1e6;
    state.counters["disk_after_MB"] = static_cast<double>(after) / 1e6;
    state.counters["buckets_dropped"] = static_cast<double>(dropped.ok() ? *dropped : 0);
    state.counters["buckets_before"] = static_cast<double>(buckets_before);
    Record("drop_ms", ms);
    Record("disk_before", static_cast<double>(before));
    Record("disk_after", static_cast<double>(after));
    state.ResumeTiming();
  }
}

BENCHMARK(BM_DropBucketOf1M)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  using hotrow::bench::Recorded;
  std::printf("\ndrop of a bucket of 1M events: %.2f ms; disk %.1f MB before, %.1f MB after\n",
              Recorded("drop_ms"), Recorded("disk_before") / 1e6, Recorded("disk_after") / 1e6);

  using namespace hotrow::bench;
  Report report("drop_bench", "Expiry",
                "The buckets holding the 1M events of the write benchmark expire at once: hotrow drops "
                "their column families (no tombstones, no compaction) and the files go when the last "
                "reader lets go.");
  report.Columns({"drop time", "disk before", "disk after"});
  report.Row({Fixed(Recorded("drop_ms"), 1) + " ms", Fixed(Recorded("disk_before") / 1e6, 1) + " MB",
              Fixed(Recorded("disk_after") / 1e6, 1) + " MB"});
  report.Write();
  return 0;
}
