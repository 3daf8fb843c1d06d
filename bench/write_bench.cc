// How close are hotrow's batch writes (rows + offsets + counters, one atomic WriteBatch, sorted into
// bucket column families) to a raw RocksDB WriteBatch of the same keys and values?

#include <benchmark/benchmark.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cstdio>

#include "bench/bench_support.h"

namespace hotrow::bench {
namespace {

constexpr size_t kBatchEvents = 5000;

const std::vector<GeneratedEvent>& Events() {
  static const auto* events = new std::vector<GeneratedEvent>(GenerateEvents(DataSpec()));
  return *events;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void BM_HotrowBatchWrite(benchmark::State& state) {
  const auto& events = Events();
  ManualClock clock(DataSpec().now_ms);
  double best = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ScratchDir dir;
    store::StoreOptions options;
    options.path = dir.path() + "/store";
    options.wall_clock = &clock;
    options.salts = 16;
    auto store = std::move(store::EventStore::Open(options).value());
    auto batches = MakeBatches(store.get(), events, kBatchEvents);
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) {
      store::WriteOutcome outcome;
      if (!store->Write(batch, &outcome).ok()) state.SkipWithError("write failed");
    }
    const double s = Seconds(start);
    best = std::max(best, static_cast<double>(events.size()) / s);
    state.PauseTiming();
    store.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
  state.counters["batch_events"] = kBatchEvents;
  Record("hotrow_write_events_per_s", best);
}

void BM_RawRocksDbWriteBatch(benchmark::State& state) {
  const auto& events = Events();
  ManualClock clock(DataSpec().now_ms);
  double best = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ScratchDir dir;
    // The same keys and values, made by the codec, written with no buckets, offsets or counters.
    std::vector<store::WriteBatchInput> batches;
    {
      store::StoreOptions options;
      options.path = dir.path() + "/keys";
      options.wall_clock = &clock;
      auto store = std::move(store::EventStore::Open(options).value());
      batches = MakeBatches(store.get(), events, kBatchEvents);
    }
    rocksdb::Options options;
    options.create_if_missing = true;
    options.write_buffer_size = 32 << 20;
    for (auto c : rocksdb::GetSupportedCompressions()) {
      if (c == rocksdb::kLZ4Compression) options.compression = c;
    }
    rocksdb::DB* raw = nullptr;
    if (!rocksdb::DB::Open(options, dir.path() + "/raw", &raw).ok()) std::abort();
    std::unique_ptr<rocksdb::DB> db(raw);
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) {
      rocksdb::WriteBatch wb;
      for (const auto& row : batch.rows) wb.Put(row.key, row.value);
      if (!db->Write(rocksdb::WriteOptions(), &wb).ok()) state.SkipWithError("write failed");
    }
    const double s = Seconds(start);
    best = std::max(best, static_cast<double>(events.size()) / s);
    state.PauseTiming();
    db.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
  Record("raw_write_events_per_s", best);
}

BENCHMARK(BM_RawRocksDbWriteBatch)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HotrowBatchWrite)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  using hotrow::bench::PrintRatio;
  std::printf("\n1M events, 100-byte payloads, 16 salts, batches of %zu; best of 3 runs\n",
              hotrow::bench::kBatchEvents);
  PrintRatio("hotrow batch write / raw WriteBatch (events/s)", "hotrow_write_events_per_s",
             "raw_write_events_per_s");

  using namespace hotrow::bench;
  const double hotrow = Recorded("hotrow_write_events_per_s"), raw = Recorded("raw_write_events_per_s");
  Report report("write_bench", "Store writes",
                "1M events (5000 ids plus one chatty id, 100-byte JSON payloads, 9 minutes of event time, "
                "16 partitions) written in batches of " + std::to_string(kBatchEvents) +
                    ", best of 3. hotrow's `EventStore::Write` checks every key against its partition's "
                    "stored offset and the window, sorts rows into bucket column families and writes "
                    "rows, offsets and counters in one `WriteBatch`; the baseline writes the same keys "
                    "and values to one column family with a plain RocksDB `WriteBatch`.");
  report.Columns({"writer", "events/s", "ratio to raw"});
  report.Row({"hotrow `EventStore::Write`", Rate(hotrow), Fixed(hotrow / raw, 2)});
  report.Row({"raw RocksDB `WriteBatch` (baseline)", Rate(raw), "1"});
  report.Write();
  return 0;
}
