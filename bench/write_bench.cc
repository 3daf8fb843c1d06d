// How close are hotrow's batch writes (rows + offsets + counters, one atomic WriteBatch, sorted into
// bucket column families) to a raw RocksDB WriteBatch of the same keys and values, and how do they
// scale with several writers (each writing its own partitions, as the Ingestor's writers do)?
//
// Beside each rate: CPU microseconds per stored event (getrusage of the whole process, RocksDB's
// background threads included), so that a figure holds on a machine with other cores. Then one
// more single-writer pass with RocksDB's perf context on, which says where a write's time goes.

#include <benchmark/benchmark.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/write_batch.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "bench/bench_support.h"

namespace hotrow::bench {
namespace {

constexpr size_t kBatchEvents = 5000;
constexpr int kManyWriters = 2;  // the machine's cores, for the N-writer figure

const std::vector<GeneratedEvent>& Events() {
  static const auto* events = new std::vector<GeneratedEvent>(GenerateEvents(DataSpec()));
  return *events;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// CPU seconds (user + system) of the whole process so far.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The events split by partition between `writers` writers (partition % writers), each writer's
// share in batches of kBatchEvents: the same keys whatever the writer count.
std::vector<std::vector<store::WriteBatchInput>> WriterBatches(store::EventStore* store,
                                                               int writers) {
  std::vector<std::vector<GeneratedEvent>> shares(static_cast<size_t>(writers));
  for (const GeneratedEvent& e : Events()) {
    shares[static_cast<size_t>(e.partition % writers)].push_back(e);
  }
  std::vector<std::vector<store::WriteBatchInput>> out;
  for (const auto& share : shares) out.push_back(MakeBatches(store, share, kBatchEvents));
  return out;
}

// One timed pass: `writers` threads, each writing its own batches. Returns events/s; adds the CPU
// seconds used to *cpu.
double WritePass(store::EventStore* store,
                 const std::vector<std::vector<store::WriteBatchInput>>& per_writer, double* cpu,
                 bool* failed) {
  const double cpu0 = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::atomic<bool> error{false};
  for (const auto& batches : per_writer) {
    threads.emplace_back([&, batches = &batches] {
      for (const auto& batch : *batches) {
        store::WriteOutcome outcome;
        if (!store->Write(batch, &outcome).ok() || outcome.stored != batch.rows.size()) {
          error = true;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double s = Seconds(start);
  *cpu += CpuSeconds() - cpu0;
  *failed = error.load();
  return static_cast<double>(Events().size()) / s;
}

void BM_HotrowBatchWrite(benchmark::State& state) {
  const int writers = static_cast<int>(state.range(0));
  ManualClock clock(DataSpec().now_ms);
  double best = 0, cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ScratchDir dir;
    store::StoreOptions options;
    options.path = dir.path() + "/store";
    options.wall_clock = &clock;
    options.salts = 16;
    auto store = std::move(store::EventStore::Open(options).value());
    auto batches = WriterBatches(store.get(), writers);
    state.ResumeTiming();
    bool failed = false;
    best = std::max(best, WritePass(store.get(), batches, &cpu, &failed));
    if (failed) state.SkipWithError("write failed");
    state.PauseTiming();
    store.reset();
    state.ResumeTiming();
  }
  const double cpu_us = 1e6 * cpu / static_cast<double>(state.iterations() * Events().size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * Events().size()));
  state.counters["batch_events"] = kBatchEvents;
  state.counters["cpu_us_per_event"] = cpu_us;
  const std::string name = "hotrow_write_" + std::to_string(writers) + "w";
  Record(name + "_events_per_s", best);
  Record(name + "_cpu_us", cpu_us);
}

void BM_RawRocksDbWriteBatch(benchmark::State& state) {
  const auto& events = Events();
  ManualClock clock(DataSpec().now_ms);
  double best = 0, cpu = 0;
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
    const double cpu0 = CpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) {
      rocksdb::WriteBatch wb;
      for (const auto& row : batch.rows) wb.Put(row.key, row.value);
      if (!db->Write(rocksdb::WriteOptions(), &wb).ok()) state.SkipWithError("write failed");
    }
    const double s = Seconds(start);
    cpu += CpuSeconds() - cpu0;
    best = std::max(best, static_cast<double>(events.size()) / s);
    state.PauseTiming();
    db.reset();
    state.ResumeTiming();
  }
  const double cpu_us = 1e6 * cpu / static_cast<double>(state.iterations() * events.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
  state.counters["cpu_us_per_event"] = cpu_us;
  Record("raw_write_events_per_s", best);
  Record("raw_write_cpu_us", cpu_us);
}

BENCHMARK(BM_RawRocksDbWriteBatch)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HotrowBatchWrite)
    ->Arg(1)
    ->Arg(kManyWriters)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Where one writer's time goes, by RocksDB's perf context (ns per event), over one pass.
struct Breakdown {
  double total = 0, wal = 0, memtable = 0, thread_wait = 0, pre_post = 0, delay = 0;
};

Breakdown PerfBreakdown() {
  ManualClock clock(DataSpec().now_ms);
  ScratchDir dir;
  store::StoreOptions options;
  options.path = dir.path() + "/store";
  options.wall_clock = &clock;
  auto store = std::move(store::EventStore::Open(options).value());
  auto batches = WriterBatches(store.get(), 1);
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableTimeExceptForMutex);
  rocksdb::get_perf_context()->Reset();
  const auto start = std::chrono::steady_clock::now();
  for (const auto& batch : batches[0]) {
    store::WriteOutcome outcome;
    if (!store->Write(batch, &outcome).ok()) std::abort();
  }
  const double s = Seconds(start);
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  const rocksdb::PerfContext& pc = *rocksdb::get_perf_context();
  const double n = static_cast<double>(Events().size());
  Breakdown b;
  b.total = 1e9 * s / n;
  b.wal = static_cast<double>(pc.write_wal_time) / n;
  b.memtable = static_cast<double>(pc.write_memtable_time) / n;
  b.thread_wait = static_cast<double>(pc.write_thread_wait_nanos) / n;
  b.pre_post = static_cast<double>(pc.write_pre_and_post_process_time) / n;
  b.delay = static_cast<double>(pc.write_delay_time) / n;
  return b;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  using namespace hotrow::bench;
  const Breakdown b = PerfBreakdown();
  const double own = b.total - b.wal - b.memtable - b.thread_wait - b.pre_post - b.delay;
  std::printf(
      "\none writer, ns per event (perf context): total %.0f = WAL %.0f + memtable insert %.0f + "
      "write-thread wait %.0f + pre/post %.0f + delay %.0f + hotrow's own (classify, bucket, "
      "WriteBatch) %.0f\n",
      b.total, b.wal, b.memtable, b.thread_wait, b.pre_post, b.delay, own);
  std::printf("\n1M events, 100-byte payloads, 16 salts, batches of %zu; best of 3 runs\n", kBatchEvents);
  const std::string many = "hotrow_write_" + std::to_string(kManyWriters) + "w";
  PrintRatio("hotrow batch write / raw WriteBatch (events/s)", "hotrow_write_1w_events_per_s",
             "raw_write_events_per_s");
  PrintRatio("store write, " + std::to_string(kManyWriters) + " writers / 1 writer (events/s)",
             many + "_events_per_s", "hotrow_write_1w_events_per_s");

  const double one = Recorded("hotrow_write_1w_events_per_s"), n = Recorded(many + "_events_per_s");
  const double raw = Recorded("raw_write_events_per_s");
  Report report("write_bench", "Store writes",
                "1M events (5000 ids plus one chatty id, 100-byte JSON payloads, 9 minutes of event time, "
                "16 partitions) written in batches of " + std::to_string(kBatchEvents) +
                    ", best of 3. hotrow's `EventStore::Write` checks every key against its partition's "
                    "stored offset and the window, sorts rows into bucket column families and writes "
                    "rows, offsets and counters in one `WriteBatch`; with N writers each thread writes "
                    "the batches of its own partitions (partition mod N), as the Ingestor's writers do. "
                    "The baseline writes the same keys and values to one column family with a plain "
                    "RocksDB `WriteBatch`. CPU is the process's (RocksDB's threads included).");
  report.Columns({"writer", "events/s", "CPU µs/event", "ratio"});
  report.Row({"hotrow `EventStore::Write`, 1 writer", Rate(one),
              Fixed(Recorded("hotrow_write_1w_cpu_us"), 2), Fixed(one / raw, 2) + " of raw"});
  report.Row({"hotrow `EventStore::Write`, " + std::to_string(kManyWriters) + " writers", Rate(n),
              Fixed(Recorded(many + "_cpu_us"), 2), Fixed(n / one, 2) + " of 1 writer"});
  report.Row({"raw RocksDB `WriteBatch` (baseline)", Rate(raw), Fixed(Recorded("raw_write_cpu_us"), 2),
              "1"});
  report.Note("One writer, ns per event by RocksDB's perf context: " + Fixed(b.total, 0) + " in all = WAL " +
              Fixed(b.wal, 0) + " + memtable insert " + Fixed(b.memtable, 0) + " + write-thread wait " +
              Fixed(b.thread_wait, 0) + " + pre/post " + Fixed(b.pre_post, 0) + " + delay " +
              Fixed(b.delay, 0) + " + hotrow's own (classify, bucket, build the WriteBatch) " +
              Fixed(own, 0) + ".");
  report.Write();
  return 0;
}
