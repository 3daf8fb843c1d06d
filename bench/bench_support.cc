#include "bench/bench_support.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <utility>

#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::bench {

std::vector<GeneratedEvent> GenerateEvents(const DataSpec& spec) {
  std::mt19937_64 rng(42);
  std::vector<GeneratedEvent> out;
  out.reserve(spec.events);
  std::vector<int64_t> next_offset(static_cast<size_t>(spec.partitions), 0);
  const size_t hot_every = spec.hot_events > 0 ? spec.events / spec.hot_events : 0;
  for (size_t i = 0; i < spec.events; ++i) {
    GeneratedEvent e;
    if (hot_every != 0 && i % hot_every == 0) {
      e.id = "dev-hot";
    } else {
      char id[32];
      std::snprintf(id, sizeof(id), "dev-%06zu", 1 + rng() % spec.ids);
      e.id = id;
    }
    e.ts_ms = spec.now_ms - spec.span_ms +
              static_cast<int64_t>(i * static_cast<size_t>(spec.span_ms) / spec.events);
    e.partition = static_cast<int32_t>(i % static_cast<size_t>(spec.partitions));
    e.offset = next_offset[static_cast<size_t>(e.partition)]++;
    char payload[160];
    int n = std::snprintf(
        payload, sizeof(payload),
        "{\"event_id\":\"%s\",\"ts\":%lld,\"temp\":%.2f,\"humidity\":%.2f,\"battery\":%d}",
        e.id.c_str(), static_cast<long long>(e.ts_ms), 15.0 + (rng() % 2000) / 100.0,
        30.0 + (rng() % 4000) / 100.0, static_cast<int>(rng() % 100));
    e.payload.assign(payload, static_cast<size_t>(n));
    e.payload.resize(100, ' ');  // 100-byte payloads, as the issue asks
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<store::WriteBatchInput> MakeBatches(store::EventStore* store,
                                                const std::vector<GeneratedEvent>& events,
                                                size_t batch_events) {
  std::vector<store::WriteBatchInput> batches;
  const uint16_t topic = *store->TopicNumber("events");
  for (size_t i = 0; i < events.size(); i += batch_events) {
    store::WriteBatchInput batch;
    for (size_t j = i; j < std::min(events.size(), i + batch_events); ++j) {
      const GeneratedEvent& e = events[j];
      keying::RowKey key{store->salter().SaltOf("events", e.partition, e.offset, e.id),
                         keying::IdHash(e.id),
                         e.ts_ms,
                         topic,
                         e.partition,
                         e.offset};
      batch.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(e.id, e.payload)});
      auto& next = batch.next_offsets[store::TopicPartition{"events", e.partition}];
      next = std::max(next, e.offset + 1);
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

const char* StateName(StoreState state) {
  return state == StoreState::kAsIngested ? "as ingested" : "compacted";
}

std::unique_ptr<store::EventStore> BuildStore(const store::StoreOptions& given,
                                              const std::vector<GeneratedEvent>& events,
                                              size_t batch_events, StoreState state) {
  store::StoreOptions options = given;
  if (state == StoreState::kAsIngested) options.write_buffer_bytes = kBurstWriteBufferBytes;
  auto opened = store::EventStore::Open(options);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    std::abort();
  }
  std::unique_ptr<store::EventStore> store = std::move(opened).value();
  // Each partition's events in order, batch_events at a time, the partitions in turn.
  std::map<int32_t, std::vector<GeneratedEvent>> by_partition;
  for (const GeneratedEvent& e : events) by_partition[e.partition].push_back(e);
  std::vector<GeneratedEvent> ordered;
  ordered.reserve(events.size());
  for (size_t at = 0; ordered.size() < events.size(); at += batch_events) {
    for (const auto& [partition, list] : by_partition) {
      for (size_t i = at; i < std::min(list.size(), at + batch_events); ++i) {
        ordered.push_back(list[i]);
      }
    }
  }
  // Every batch is one partition's: MakeBatches cuts `ordered` where the partitions change.
  std::vector<GeneratedEvent> run;
  auto write = [&] {
    for (const auto& batch : MakeBatches(store.get(), run, batch_events)) {
      store::WriteOutcome outcome;
      const Status st = store->Write(batch, &outcome);
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        std::abort();
      }
    }
    run.clear();
  };
  for (const GeneratedEvent& e : ordered) {
    if (!run.empty() && run.back().partition != e.partition) write();
    run.push_back(e);
  }
  write();
  if (state == StoreState::kAsIngested) return store;
  store.reset();
  store = std::move(store::EventStore::Open(options).value());
  store->WaitForCompactions();
  return store;
}

std::string SortedRunsText(const store::EventStore& store) {
  const store::StoreStats stats = store.Stats();
  int least = 0, most = 0, total = 0;
  for (size_t i = 0; i < stats.buckets.size(); ++i) {
    const int runs = stats.buckets[i].sorted_runs;
    least = i == 0 ? runs : std::min(least, runs);
    most = std::max(most, runs);
    total += runs;
  }
  return std::to_string(least) + "-" + std::to_string(most) + " sorted runs per bucket (" +
         std::to_string(total) + " in " + std::to_string(stats.buckets.size()) + " buckets)";
}

ScratchDir::ScratchDir() {
  const char* base = getenv("HOTROW_BENCH_DIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/hotrow-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

double Percentile(std::vector<double>* samples, double p) {
  if (samples->empty()) return 0;
  std::sort(samples->begin(), samples->end());
  size_t idx = static_cast<size_t>(p / 100.0 * static_cast<double>(samples->size() - 1) + 0.5);
  return (*samples)[std::min(idx, samples->size() - 1)];
}

std::map<int, ThreadCpu> SampleThreadCpu() {
  std::map<int, ThreadCpu> threads;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string tid_text = entry.path().filename().string();
    const int tid = std::atoi(tid_text.c_str());
    if (tid <= 0) continue;
    // The CPU clock of another thread of this process, as pthread_getcpuclockid makes it from the
    // kernel's thread id: (~tid << 3) | CPUCLOCK_PERTHREAD (4) | CPUCLOCK_SCHED (2).
    const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
    timespec ts{};
    if (clock_gettime(clock, &ts) != 0) continue;  // ended meanwhile
    ThreadCpu& t = threads[tid];
    std::ifstream comm(entry.path() / "comm");
    std::getline(comm, t.name);
    t.seconds = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  }
  return threads;
}

std::map<int, ThreadCpu> ThreadCpuSince(const std::map<int, ThreadCpu>& before,
                                        const std::map<int, ThreadCpu>& after) {
  std::map<int, ThreadCpu> spent;
  for (const auto& [tid, now] : after) {
    ThreadCpu& t = spent[tid];
    t.name = now.name;
    auto it = before.find(tid);
    t.seconds = now.seconds - (it != before.end() ? it->second.seconds : 0);
  }
  return spent;
}

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

namespace {
std::map<std::string, double>& Figures() {
  static std::map<std::string, double> figures;
  return figures;
}
}  // namespace

void Record(const std::string& name, double value) { Figures()[name] = value; }

double Recorded(const std::string& name) {
  auto it = Figures().find(name);
  return it == Figures().end() ? 0 : it->second;
}

void PrintRatio(const std::string& what, const std::string& numerator,
                const std::string& denominator) {
  const double a = Recorded(numerator), b = Recorded(denominator);
  if (a == 0 || b == 0) return;
  std::printf("RATIO %-48s %12.4g / %-12.4g = %.3f\n", what.c_str(), a, b, a / b);
}

std::string OutPath(const std::string& file) {
  const char* dir = std::getenv("HOTROW_BENCH_OUT");
  std::filesystem::path out = dir != nullptr && *dir != '\0' ? dir : "bench/out";
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  return (out / file).string();
}

bool WriteOut(const std::string& file, const std::string& contents) {
  const std::string path = OutPath(file);
  std::ofstream out(path, std::ios::trunc);
  out << contents;
  out.close();
  if (!out) {
    std::fprintf(stderr, "bench: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

Report::Report(std::string bench, std::string heading, std::string setup)
    : bench_(std::move(bench)), heading_(std::move(heading)), setup_(std::move(setup)) {}

void Report::Columns(std::vector<std::string> names) {
  rows_.insert(rows_.begin(), std::move(names));
}

void Report::Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

void Report::Note(std::string text) { notes_.push_back(std::move(text)); }

bool Report::Write() const {
  std::string md = "### " + heading_ + " (`bench/" + bench_ + "`)\n\n" + setup_ + "\n\n";
  for (size_t r = 0; r < rows_.size(); ++r) {
    md += "|";
    for (const std::string& cell : rows_[r]) md += " " + cell + " |";
    md += "\n";
    if (r == 0) {
      md += "|";
      for (size_t c = 0; c < rows_[0].size(); ++c) md += "---|";
      md += "\n";
    }
  }
  for (const std::string& note : notes_) md += "\n" + note + "\n";
  return WriteOut(bench_ + ".md", md + "\n");
}

std::string Fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string Rate(double per_second) {
  if (per_second >= 1e6) return Fixed(per_second / 1e6, 2) + " M/s";
  if (per_second >= 1e3) return Fixed(per_second / 1e3, 1) + " k/s";
  return Fixed(per_second, 0) + " /s";
}

}  // namespace hotrow::bench
