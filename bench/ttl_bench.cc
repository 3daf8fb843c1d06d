// hotrow against the usual "just use TTL" RocksDB design: rocksdb::DBWithTTL, keys `id|ts`
// (big-endian time, so one id range-scans), value = payload, no salt, no buckets. Both get the same
// events (bench_support's ids and payloads, restamped with the wall clock) with the same short
// window, 20 s, so that several windows pass in bench time: hotrow with store.ttl 20s, bucket 2s,
// wall clock, dropping expired buckets every second as the service's housekeeping does.
//
// Measured: ingest at full speed; then a steady 50k events/s for 4 windows per store: the rate
// achieved, write amplification (table bytes written by flushes and compactions / bytes handed to
// the store), disk at the end, and how many events older than the window each still returns
// (DBWithTTL drops expired entries only when a compaction happens to rewrite them).
//
// A plain main(): the steady phase is one long timed run per store, not a loop to repeat.

#include <rocksdb/convenience.h>
#include <rocksdb/statistics.h>
#include <rocksdb/utilities/db_ttl.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "bench/bench_support.h"
#include "bench/peer_support.h"
#include "common/logging.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

constexpr int64_t kWindowMs = 20'000;
constexpr int64_t kBucketMs = 2'000;
constexpr size_t kBatchEvents = 5000;   // hotrow's ingest.batch_max_events default
constexpr double kSteadyRate = 50'000;  // events/s: a window is then 1M events, ~140 MB of rows
constexpr int kSteadyWindows = 4;
constexpr double kSteadySeconds = kSteadyWindows * kWindowMs / 1000.0;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t WallMs() { return WallClock::Default()->NowMs(); }

// One event of the replayed stream: a pool event's id and payload with its own time and offset.
struct StreamEvent {
  const GeneratedEvent* source;
  int64_t ts_ms;
  int32_t partition;
  int64_t offset;
};

// The pool's events over and over, offsets continuing per partition, times at `rate` events/s.
class ReplayStream {
 public:
  ReplayStream(const std::vector<GeneratedEvent>& pool, double rate, int partitions)
      : pool_(pool), rate_(rate), next_offset_(static_cast<size_t>(partitions), 0) {}

  // The next `n` events, their times spread evenly over the span `n` events take at the rate.
  // Paced, that span follows the previous batch's, unless the writer has fallen behind the wall
  // clock: then it ends now, as a consumer that lags reads what arrived last. Unpaced (full speed),
  // it starts now. Returns the wall time at which the batch is due when paced (the end of its span).
  int64_t Next(size_t n, bool paced, std::vector<StreamEvent>* out) {
    const int64_t span_ms = static_cast<int64_t>(static_cast<double>(n) * 1000.0 / rate_);
    const int64_t now = WallMs();
    int64_t t0 = paced && next_t0_ms_ > 0 ? next_t0_ms_ : now;
    if (paced && t0 + span_ms < now) t0 = now - span_ms;
    out->clear();
    for (size_t j = 0; j < n; ++j) {
      const GeneratedEvent& e = pool_[next_index_++ % pool_.size()];
      auto& offset = next_offset_[static_cast<size_t>(e.partition)];
      out->push_back({&e, t0 + static_cast<int64_t>(j) * span_ms / static_cast<int64_t>(n), e.partition, offset++});
    }
    next_t0_ms_ = t0 + span_ms;
    return next_t0_ms_;
  }

 private:
  const std::vector<GeneratedEvent>& pool_;
  const double rate_;
  std::vector<int64_t> next_offset_;
  size_t next_index_ = 0;
  int64_t next_t0_ms_ = 0;
};

// A store under test: takes batches, returns the key + value bytes it was handed.
class Peer {
 public:
  virtual ~Peer() = default;
  virtual uint64_t Write(const std::vector<StreamEvent>& batch) = 0;
  // Called about once a second during a run.
  virtual void Housekeeping() {}
  virtual const std::string& path() const = 0;
};

class HotrowPeer final : public Peer {
 public:
  explicit HotrowPeer(const std::string& path) {
    store::StoreOptions options;
    options.path = path;
    options.ttl_ms = kWindowMs;
    options.bucket_ms = kBucketMs;
    options.salts = 16;
    store_ = std::move(store::EventStore::Open(options).value());
    topic_ = store_->TopicNumber("events").value();
  }

  uint64_t Write(const std::vector<StreamEvent>& batch) override {
    store::WriteBatchInput input;
    uint64_t bytes = 0;
    for (const StreamEvent& e : batch) {
      const std::string& id = e.source->id;
      keying::RowKey key{store_->salter().SaltOf("events", e.partition, e.offset, id), keying::IdHash(id),
                         e.ts_ms, topic_, e.partition, e.offset};
      input.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, e.source->payload)});
      bytes += input.rows.back().key.size() + input.rows.back().value.size();
      auto& next = input.next_offsets[store::TopicPartition{"events", e.partition}];
      next = std::max(next, e.offset + 1);
    }
    store::WriteOutcome outcome;
    if (!store_->Write(input, &outcome).ok()) std::abort();
    rejected_ += batch.size() - outcome.stored;
    return bytes;
  }

  // As the service's housekeeping thread does, once a second.
  void Housekeeping() override {
    if (!store_->DropExpiredBuckets().ok()) std::abort();
  }

  const std::string& path() const override { return store_->options().path; }
  store::EventStore* store() { return store_.get(); }
  uint64_t rejected() const { return rejected_; }

 private:
  std::unique_ptr<store::EventStore> store_;
  uint16_t topic_ = 0;
  uint64_t rejected_ = 0;
};

// `id|ts`, the time big-endian so that one id's events sort by time.
std::string TtlKey(std::string_view id, int64_t ts_ms) {
  std::string key(id);
  key.push_back('|');
  char be[8];
  keying::StoreBigEndian64(static_cast<uint64_t>(ts_ms), be);
  key.append(be, sizeof(be));
  return key;
}

int64_t TtlKeyTime(std::string_view key) {
  return key.size() < 8 ? -1 : static_cast<int64_t>(keying::LoadBigEndian64(key.data() + key.size() - 8));
}

// DBWithTTL as its documentation suggests using it: RocksDB's defaults, plus what hotrow's store
// also sets (LZ4, 32 MiB memtables, 2 background jobs) so that the comparison is about the design.
class TtlPeer final : public Peer {
 public:
  explicit TtlPeer(const std::string& path) : path_(path) {
    rocksdb::Options options;
    options.create_if_missing = true;
    options.write_buffer_size = 32 << 20;
    options.max_background_jobs = 2;
    for (auto c : rocksdb::GetSupportedCompressions()) {
      if (c == rocksdb::kLZ4Compression) options.compression = c;
    }
    statistics_ = rocksdb::CreateDBStatistics();
    options.statistics = statistics_;
    rocksdb::DBWithTTL* raw = nullptr;
    if (!rocksdb::DBWithTTL::Open(options, path, &raw, static_cast<int32_t>(kWindowMs / 1000)).ok()) std::abort();
    db_.reset(raw);
  }

  uint64_t Write(const std::vector<StreamEvent>& batch) override {
    rocksdb::WriteBatch wb;
    uint64_t bytes = 0;
    for (const StreamEvent& e : batch) {
      const std::string key = TtlKey(e.source->id, e.ts_ms);
      // The key has no offset: two events of one id in the same millisecond share it, and the
      // later silently replaces the earlier. Counted, since it is part of what the design costs.
      int64_t& last = last_ts_[e.source->id];
      if (last == e.ts_ms) ++overwritten_;
      last = e.ts_ms;
      wb.Put(key, e.source->payload);
      bytes += key.size() + e.source->payload.size();
    }
    if (!db_->Write(rocksdb::WriteOptions(), &wb).ok()) std::abort();
    return bytes;
  }

  const std::string& path() const override { return path_; }
  rocksdb::DB* db() { return db_.get(); }
  uint64_t Ticker(rocksdb::Tickers t) const { return statistics_->getTickerCount(t); }
  uint64_t overwritten() const { return overwritten_; }

 private:
  const std::string path_;
  std::shared_ptr<rocksdb::Statistics> statistics_;
  std::unique_ptr<rocksdb::DBWithTTL> db_;
  std::unordered_map<std::string, int64_t> last_ts_;
  uint64_t overwritten_ = 0;
};

struct RunFigures {
  uint64_t events = 0;
  uint64_t user_bytes = 0;
  double seconds = 0;
  std::vector<uint64_t> disk_per_second;  // the store's directory, sampled once a second
};

// Feeds `peer` batches of kBatchEvents: paced at kSteadyRate for `seconds`, or unpaced until
// `events` have gone in.
RunFigures Drive(Peer* peer, const std::vector<GeneratedEvent>& pool, bool paced, double seconds,
                 uint64_t events) {
  ReplayStream stream(pool, kSteadyRate, DataSpec().partitions);
  std::vector<StreamEvent> batch;
  RunFigures run;
  const auto start = Clock::now();
  auto next_tick = start;
  while (paced ? SecondsSince(start) < seconds : run.events < events) {
    const int64_t due_ms = stream.Next(kBatchEvents, paced, &batch);
    if (paced) {
      const int64_t wait_ms = due_ms - WallMs();
      if (wait_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
    run.user_bytes += peer->Write(batch);
    run.events += batch.size();
    if (Clock::now() >= next_tick) {
      peer->Housekeeping();
      if (paced) run.disk_per_second.push_back(DirectoryBytes(peer->path()));
      next_tick += std::chrono::seconds(1);
    }
  }
  run.seconds = SecondsSince(start);
  return run;
}

struct ReadBack {
  uint64_t returned = 0;
  uint64_t expired = 0;      // returned although older than the window
  int64_t oldest_age_ms = 0;  // age of the oldest event returned
};

// Everything hotrow returns for all time, through the query engine, as a client would see it.
ReadBack ReadHotrow(HotrowPeer* peer) {
  query::QueryEngine engine(peer->store(), query::QueryOptions());
  const int64_t now = WallMs(), window_start = now - kWindowMs;
  ReadBack r;
  int64_t oldest = now;
  std::mutex mu;  // the scan sink runs on one thread at a time, but say so to be safe
  Status s = engine.Scan(0, now + 60'000, query::kNoLimit, [&](const query::Event& e) {
    std::lock_guard lock(mu);
    ++r.returned;
    if (e.ts_ms < window_start) ++r.expired;
    oldest = std::min(oldest, e.ts_ms);
    return true;
  });
  if (!s.ok()) std::abort();
  r.oldest_age_ms = now - oldest;
  return r;
}

// Everything DBWithTTL returns from a full iteration.
ReadBack ReadTtl(TtlPeer* peer) {
  const int64_t now = WallMs(), window_start = now - kWindowMs;
  ReadBack r;
  int64_t oldest = now;
  std::unique_ptr<rocksdb::Iterator> it(peer->db()->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const int64_t ts = TtlKeyTime(std::string_view(it->key().data(), it->key().size()));
    ++r.returned;
    if (ts < window_start) ++r.expired;
    oldest = std::min(oldest, ts);
  }
  if (!it->status().ok()) std::abort();
  r.oldest_age_ms = now - oldest;
  return r;
}

void PrintRun(const std::string& name, const RunFigures& run) {
  std::printf("%-22s %9llu events in %6.1f s = %9.0f events/s, %s handed to the store\n", name.c_str(),
              static_cast<unsigned long long>(run.events), run.seconds, run.events / run.seconds,
              Mib(run.user_bytes).c_str());
}

// What every steady run records under `name`: rate, bytes in, table bytes out, disk, and what a
// full read returns.
void RecordSteady(const std::string& name, const RunFigures& run, const std::string& path,
                  uint64_t table_bytes, const ReadBack& read) {
  PrintRun(name + " steady", run);
  Record(name + "_steady_events_per_s", run.events / run.seconds);
  Record(name + "_user_bytes", static_cast<double>(run.user_bytes));
  Record(name + "_table_bytes", static_cast<double>(table_bytes));
  Record(name + "_write_amp", Recorded(name + "_table_bytes") / std::max(1.0, Recorded(name + "_user_bytes")));
  Record(name + "_disk_bytes", static_cast<double>(DirectoryBytes(path)));
  Record(name + "_wal_bytes", static_cast<double>(DirectoryBytes(path, ".log")));
  Record(name + "_returned", static_cast<double>(read.returned));
  Record(name + "_expired_returned", static_cast<double>(read.expired));
  Record(name + "_oldest_age_ms", static_cast<double>(read.oldest_age_ms));
  std::printf("%-7s full read returns %llu events, %llu of them older than the window; oldest %.1f s old\n",
              name.c_str(), static_cast<unsigned long long>(read.returned),
              static_cast<unsigned long long>(read.expired), read.oldest_age_ms / 1000.0);
}

RunFigures SteadyHotrow(const std::string& path, const std::vector<GeneratedEvent>& pool) {
  HotrowPeer hotrow(path);
  TableFileWatcher tables(path);
  const RunFigures run = Drive(&hotrow, pool, /*paced=*/true, kSteadySeconds, 0);
  hotrow.Housekeeping();
  tables.Stop();
  RecordSteady("hotrow", run, path, tables.TotalBytes(), ReadHotrow(&hotrow));
  if (hotrow.rejected() > 0) {
    std::printf("hotrow rejected %llu events (late beyond the window)\n",
                static_cast<unsigned long long>(hotrow.rejected()));
  }
  return run;
}

RunFigures SteadyTtl(const std::string& path, const std::vector<GeneratedEvent>& pool) {
  TtlPeer ttl(path);
  TableFileWatcher tables(path);
  const RunFigures run = Drive(&ttl, pool, /*paced=*/true, kSteadySeconds, 0);
  tables.Stop();
  RecordSteady("ttl", run, path, tables.TotalBytes(), ReadTtl(&ttl));
  // The watcher's figure against RocksDB's own counts, which only DBWithTTL exposes here.
  const uint64_t flush = ttl.Ticker(rocksdb::FLUSH_WRITE_BYTES), compact = ttl.Ticker(rocksdb::COMPACT_WRITE_BYTES);
  std::printf("DBWithTTL table bytes: %s seen by the watcher, %s in its LOG, %s in its statistics "
              "(flush %s + compaction %s)\n",
              Mib(tables.TotalBytes()).c_str(), Mib(TableBytesWrittenFromLog(path)).c_str(),
              Mib(flush + compact).c_str(), Mib(flush).c_str(), Mib(compact).c_str());
  Record("ttl_stat_table_bytes", static_cast<double>(flush + compact));
  Record("ttl_overwritten", static_cast<double>(ttl.overwritten()));
  Record("ttl_compaction_dropped", static_cast<double>(ttl.Ticker(rocksdb::COMPACTION_KEY_DROP_USER)));
  std::printf("DBWithTTL: %llu events overwritten by an equal id|ts key, %.0f expired entries dropped by compaction\n",
              static_cast<unsigned long long>(ttl.overwritten()), Recorded("ttl_compaction_dropped"));
  return run;
}

// disk per second of both steady runs, for bench/plots/peers_ttl_disk.gp.
void WriteDiskCsv(const RunFigures& hotrow, const RunFigures& ttl) {
  std::ofstream csv(OutPath("ttl_disk.csv"), std::ios::trunc);
  csv << "seconds,hotrow_mib,dbwithttl_mib\n";
  const size_t n = std::max(hotrow.disk_per_second.size(), ttl.disk_per_second.size());
  for (size_t i = 0; i < n; ++i) {
    auto mib = [&](const RunFigures& r) {
      return i < r.disk_per_second.size() ? Format("%.1f", r.disk_per_second[i] / 1048576.0) : std::string();
    };
    csv << i << "," << mib(hotrow) << "," << mib(ttl) << "\n";
  }
}

std::string Markdown(double seconds) {
  auto f = [](const std::string& name) { return Recorded(name); };
  auto row = [&](const std::string& what, const std::string& h, const std::string& t, double ratio) {
    return Format("| %s | %s | %s | %s |\n", what.c_str(), h.c_str(), t.c_str(),
                  ratio > 0 ? Format("%.2f", ratio).c_str() : "");
  };
  auto mib = [&](const std::string& name) { return Mib(static_cast<uint64_t>(f(name))); };
  auto expired = [&](const std::string& p) {
    return Format("%.0f of %.0f (oldest %.0f s old)", f(p + "_expired_returned"), f(p + "_returned"),
                  f(p + "_oldest_age_ms") / 1000.0);
  };
  std::string md = "### hotrow vs RocksDB DBWithTTL (`bench/ttl_bench`)\n\n";
  md += Format(
      "The same events (bench_support's ids and 100-byte payloads, restamped with the wall clock) with a "
      "20 s window: hotrow (`store.ttl` 20s, `store.bucket` 2s, 16 salts, expired buckets dropped every "
      "second) and `rocksdb::DBWithTTL` (ttl 20 s, keys `id|ts`, value = payload, LZ4, 32 MiB memtables, "
      "otherwise RocksDB's defaults); 1M events at full speed, then a steady %.0f k events/s for %d windows "
      "(%.0f s) each, batches of %zu. Write amplification = table bytes written by flushes and compactions "
      "(every `.sst` file seen in the database's directory, polled every 50 ms) / key + value bytes handed "
      "to the store.\n\n",
      kSteadyRate / 1e3, kSteadyWindows, kSteadySeconds, kBatchEvents);
  md += "| | hotrow | DBWithTTL | hotrow / DBWithTTL |\n|---|---|---|---|\n";
  md += row("ingest at full speed", Format("%.0f k events/s", f("hotrow_full_events_per_s") / 1e3),
            Format("%.0f k events/s", f("ttl_full_events_per_s") / 1e3),
            f("hotrow_full_events_per_s") / std::max(1.0, f("ttl_full_events_per_s")));
  md += row(Format("steady run, achieved rate (asked %.0f k/s)", kSteadyRate / 1e3),
            Format("%.1f k events/s", f("hotrow_steady_events_per_s") / 1e3),
            Format("%.1f k events/s", f("ttl_steady_events_per_s") / 1e3), 0);
  md += row("bytes handed to the store", mib("hotrow_user_bytes"), mib("ttl_user_bytes"), 0);
  md += row("table bytes written (flush + compaction)", mib("hotrow_table_bytes"), mib("ttl_table_bytes"), 0);
  md += row("**write amplification**", Format("%.2f", f("hotrow_write_amp")), Format("%.2f", f("ttl_write_amp")),
            f("hotrow_write_amp") / std::max(1e-9, f("ttl_write_amp")));
  md += row("disk after the run (of which write-ahead log)",
            mib("hotrow_disk_bytes") + " (" + mib("hotrow_wal_bytes") + ")",
            mib("ttl_disk_bytes") + " (" + mib("ttl_wal_bytes") + ")",
            f("hotrow_disk_bytes") / std::max(1.0, f("ttl_disk_bytes")));
  md += row("**events older than the window still returned** (full scan)", expired("hotrow"), expired("ttl"), 0);
  md += row("events lost to an equal key (same id, same ms)", "0 (offset in the key)",
            Format("%.0f", f("ttl_overwritten")), 0);
  md += Format("\nDBWithTTL's own statistics count %s of flush + compaction output (the watcher: %s). "
               "DBWithTTL dropped %.0f expired entries in compactions during the run. "
               "Run time: %.0f s.\n\n![disk of both over the steady run](img/peers_ttl_disk.png)\n",
               mib("ttl_stat_table_bytes").c_str(), mib("ttl_table_bytes").c_str(), f("ttl_compaction_dropped"), seconds);
  return md;
}

int Run() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows up as it happens under bench/run's tee
  InitLogging("warn");                       // not a line per dropped bucket
  const auto run_start = Clock::now();
  const auto pool = GenerateEvents(DataSpec());
  ScratchDir dir;

  // Full speed: 1M events into fresh stores, nothing expires yet.
  for (const char* name : {"hotrow", "ttl"}) {
    const std::string path = dir.path() + "/full_" + name;
    std::unique_ptr<Peer> peer;
    if (std::string(name) == "hotrow") peer = std::make_unique<HotrowPeer>(path);
    else peer = std::make_unique<TtlPeer>(path);
    const RunFigures run = Drive(peer.get(), pool, /*paced=*/false, 0, pool.size());
    PrintRun(std::string(name) + " full speed", run);
    Record(std::string(name) + "_full_events_per_s", run.events / run.seconds);
  }

  // Steady: several windows each, one store at a time so that they do not share the cores; each
  // is measured and read back right after its own run, while its window is current.
  const RunFigures hotrow_run = SteadyHotrow(dir.path() + "/steady_hotrow", pool);
  const RunFigures ttl_run = SteadyTtl(dir.path() + "/steady_ttl", pool);
  std::printf("write amplification: hotrow %.2f, DBWithTTL %.2f; disk after: hotrow %s (WAL %s), DBWithTTL %s (WAL %s)\n",
              Recorded("hotrow_write_amp"), Recorded("ttl_write_amp"),
              Mib(static_cast<uint64_t>(Recorded("hotrow_disk_bytes"))).c_str(),
              Mib(static_cast<uint64_t>(Recorded("hotrow_wal_bytes"))).c_str(),
              Mib(static_cast<uint64_t>(Recorded("ttl_disk_bytes"))).c_str(),
              Mib(static_cast<uint64_t>(Recorded("ttl_wal_bytes"))).c_str());

  PrintRatio("full-speed ingest hotrow / DBWithTTL (events/s)", "hotrow_full_events_per_s", "ttl_full_events_per_s");
  PrintRatio("write amplification hotrow / DBWithTTL", "hotrow_write_amp", "ttl_write_amp");
  PrintRatio("disk after the run hotrow / DBWithTTL (bytes)", "hotrow_disk_bytes", "ttl_disk_bytes");
  WriteDiskCsv(hotrow_run, ttl_run);
  const double seconds = SecondsSince(run_start);
  std::printf("run time %.0f s\n", seconds);
  return WriteOut("ttl_bench.md", Markdown(seconds)) ? 0 : 1;
}

}  // namespace
}  // namespace hotrow::bench

int main() { return hotrow::bench::Run(); }
