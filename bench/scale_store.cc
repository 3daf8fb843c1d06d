#include "bench/scale_store.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

namespace hotrow::bench::scale {

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Die(const std::string& what) {
  std::fprintf(stderr, "scale_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string DeviceId(size_t n) {
  char id[32];
  std::snprintf(id, sizeof(id), "dev-%08zu", n);
  return id;
}
std::string BigId(int n) { return "big-" + std::to_string(n); }
std::string SmallId(int n) {
  char id[32];
  std::snprintf(id, sizeof(id), "hundred-%02d", n);
  return id;
}

// Bytes this process read from the block device so far (/proc/self/io read_bytes).
uint64_t DiskReadBytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  return 0;
}

// Reads every file under `dir` once, so that a restart and the bare walk it is compared with both
// find the store in the page cache.
void WarmPageCache(const std::string& dir) {
  std::vector<char> buffer(1 << 20);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    }
  }
}

// Resident memory of the process now (/proc/self/statm), bytes.
uint64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

std::unique_ptr<store::EventStore> OpenStore(const Subject& s) {
  auto opened = store::EventStore::Open(s.options);
  if (!opened.ok()) Die(opened.status().ToString());
  return std::move(*opened);
}

void Build(Subject* s, const std::string& dir, const DataSpec& spec) {
  const auto start = Clock::now();
  s->clock = std::make_unique<ManualClock>(spec.now_ms);
  s->options.path = dir + "/store-" + s->name;
  s->options.wall_clock = s->clock.get();
  // For comparisons at a smaller size: partitioned index and filters (1) or not (0).
  if (const char* env = std::getenv("HOTROW_SCALE_PARTITIONED"); env != nullptr) {
    s->options.partitioned_index = std::string(env) == "1";
  }
  // Built as a bulk load: no WAL (the close flushes every memtable, and everything measured is
  // read after the reopen below, from table files, as with the WAL), kBuildWriters writer
  // threads by partition as the Ingestor splits them, larger batches, and the next chunk
  // generated while this one is written. Compactions run as they do under ingest, so the
  // store's shape is a running service's. The reopened store writes with the WAL again.
  s->options.write_ahead_log = false;
  s->store = OpenStore(*s);
  s->gen = std::make_unique<Generator>(s->events, spec.now_ms, spec.span_ms,
                                       *s->store->TopicNumber("events"));
  auto generate = [s](size_t begin) {
    return s->gen->Batches(*s->store, begin, std::min(s->events, begin + kChunkEvents),
                           kBuildWriters, kBuildBatchEvents);
  };
  double write_s = 0;
  auto next = std::async(std::launch::async, generate, size_t{0});
  for (size_t begin = 0; begin < s->events; begin += kChunkEvents) {
    const auto lists = next.get();
    if (begin + kChunkEvents < s->events) {
      next = std::async(std::launch::async, generate, begin + kChunkEvents);
    }
    const auto t = Clock::now();
    std::vector<std::thread> writers;
    for (const auto& list : lists) {
      writers.emplace_back([s, &list] {
        for (const store::WriteBatchInput& batch : list) {
          if (batch.rows.empty()) continue;
          store::WriteOutcome outcome;
          const Status st = s->store->Write(batch, &outcome);
          if (!st.ok()) Die(st.ToString());
          if (outcome.stored != batch.rows.size()) Die("a batch was not stored whole");
        }
      });
    }
    for (std::thread& w : writers) w.join();
    write_s += Since(t);
    if (begin % 10'000'000 == 0 && begin > 0) {
      std::printf("  %s: %zu events written (%.0f s)\n", s->name.c_str(), begin, Since(start));
      std::fflush(stdout);
    }
  }
  s->write_events_per_s = static_cast<double>(s->events) / write_s;
  s->store.reset();
  s->options.write_ahead_log = true;
  s->store = OpenStore(*s);
  s->store->WaitForCompactions();
  s->build_s = Since(start);
  std::printf("%s: %zu events built in %.0f s (written at %.0f events/s)\n", s->name.c_str(),
              s->events, s->build_s, s->write_events_per_s);
  std::fflush(stdout);
}

// Every row of the store, read with a cursor over each salt of each bucket: the floor of any walk.
uint64_t BareWalk(store::EventStore* store) {
  uint64_t rows = 0;
  for (const auto& bucket : store->Buckets()) {
    for (int salt = 0; salt < store->salter().salts(); ++salt) {
      auto it = bucket->NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++rows;
      if (!it->status().ok()) Die(it->status().ToString());
    }
  }
  return rows;
}

}  // namespace hotrow::bench::scale
