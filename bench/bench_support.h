#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::bench {

// The events every store and query benchmark uses: `events` events over `ids` ids
// ("dev-000001".. plus one chatty "dev-hot" holding `hot_events` of them), 100-byte JSON payloads,
// times spread evenly over the 9 minutes before `now_ms`, offsets 0.. over 16 partitions.
struct DataSpec {
  size_t events = 1'000'000;
  size_t ids = 5000;
  size_t hot_events = 20'000;
  int partitions = 16;
  int64_t now_ms = 1'700'000'000'000;
  int64_t span_ms = 9 * 60 * 1000;
};

struct GeneratedEvent {
  std::string id;
  int64_t ts_ms;
  int32_t partition;
  int64_t offset;
  std::string payload;
};

std::vector<GeneratedEvent> GenerateEvents(const DataSpec& spec);

// Encodes events into store rows in batches of `batch_events`, with next offsets per partition.
std::vector<store::WriteBatchInput> MakeBatches(store::EventStore* store,
                                                const std::vector<GeneratedEvent>& events,
                                                size_t batch_events);

// The state a benchmark reads a store in.
//  - kAsIngested: as a burst leaves it, served at once. The events are written as a consumer
//    catching up on a backlog hands them over (BuildStore: batches of one partition each, the
//    partitions in turn, so every bucket is written through the whole ingest), and the store is
//    neither reopened nor compacted: each bucket holds what its memtable kept and the L0 files
//    the write buffer's flushes made (several per bucket), as right after a burst, a restart or
//    a rebalance's catch-up. Its write buffer is kBurstWriteBufferBytes, an eighth of the
//    default, so that the benchmarks' stores of 0.4-1M events are left as a burst of 3-8M events
//    leaves a store with the default (a store much smaller than its write buffer keeps every
//    bucket in its memtable, which no large burst does).
//  - kCompacted: the same events (with the default write buffer), the store reopened and every
//    closed bucket compacted to one sorted run, as a running service has it a minute after a
//    bucket closes.
enum class StoreState { kAsIngested, kCompacted };
inline constexpr size_t kBurstWriteBufferBytes = size_t{8} << 20;
const char* StateName(StoreState state);  // "as ingested", "compacted"

// Opens a store with `options` (at a fresh options.path), writes `events` into it in batches of
// `batch_events` as described for `state`, and returns it in that state; aborts on failure.
std::unique_ptr<store::EventStore> BuildStore(const store::StoreOptions& options,
                                              const std::vector<GeneratedEvent>& events,
                                              size_t batch_events, StoreState state);

// The sorted runs (StoreStats) of the store's buckets, for a report: "min-max per bucket, total".
std::string SortedRunsText(const store::EventStore& store);

// A fresh directory under /tmp (or $HOTROW_BENCH_DIR), removed on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Peak resident set size of this process in bytes (VmHWM).
uint64_t PeakRssBytes();

// The CPU time of every thread of this process at one moment, by kernel thread id: its name
// (/proc/self/task/<tid>/comm, as the code named it: "hotrow-poll", "rocksdb:low", "rdk:main")
// and its CPU seconds (the thread's own CPU clock, ns resolution). A thread that ends between two
// samples takes its CPU with it: the benchmarks compare the sum with getrusage to see that.
struct ThreadCpu {
  std::string name;
  double seconds = 0;
};
std::map<int, ThreadCpu> SampleThreadCpu();
// CPU seconds each thread spent between `before` and `after` (a thread born in between counts
// from zero), by thread id.
std::map<int, ThreadCpu> ThreadCpuSince(const std::map<int, ThreadCpu>& before,
                                        const std::map<int, ThreadCpu>& after);
// CPU seconds (user + system) of the whole process so far (getrusage).
double ProcessCpuSeconds();

// Percentile (0..100) of `samples`, which it sorts.
double Percentile(std::vector<double>* samples, double p);

// Figures recorded by benchmarks, printed together with their ratios at the end of the run.
void Record(const std::string& name, double value);
double Recorded(const std::string& name);
void PrintRatio(const std::string& what, const std::string& numerator,
                const std::string& denominator);

// What a benchmark leaves for docs/BENCHMARKS.md. bench/run sets $HOTROW_BENCH_OUT (default
// bench/out) and, after all benchmarks ran, pastes every <bench>.md found there into the generated
// part of docs/BENCHMARKS.md (in bench/run's order) and runs bench/plots/*.gp, which read the CSVs
// and write docs/img/*.png.
std::string OutPath(const std::string& file);
// Writes `contents` to OutPath(file), replacing it; false (and a message on stderr) on failure.
bool WriteOut(const std::string& file, const std::string& contents);

// A benchmark's section of docs/BENCHMARKS.md: a heading, one paragraph saying what was measured
// against what, one table, and notes. Write() leaves it as OutPath("<bench>.md").
class Report {
 public:
  Report(std::string bench, std::string heading, std::string setup);
  void Columns(std::vector<std::string> names);
  void Row(std::vector<std::string> cells);
  void Note(std::string text);
  bool Write() const;

 private:
  std::string bench_, heading_, setup_;
  std::vector<std::vector<std::string>> rows_;  // rows_[0] holds the column names
  std::vector<std::string> notes_;
};

// Query options that read the store for every latest-N: the last-N cache off. For benchmarks that
// measure the store's read path (latest, scaling, adaptive salting, redis); the cache has its own
// (last_cache_bench).
inline query::QueryOptions StorePathOptions() {
  query::QueryOptions options;
  options.last_cache = 0;
  return options;
}

// Formatting for reports: Fixed(3.14159, 2) = "3.14"; Rate(443612) = "443.6 k/s".
std::string Fixed(double value, int decimals);
std::string Rate(double per_second);

}  // namespace hotrow::bench
