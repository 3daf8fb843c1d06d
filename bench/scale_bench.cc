// Does the cost of a query, a bucket drop and a restart stay flat when the window holds 100M events
// (a 10-minute window at 100k-200k events/s) against 1M?
//
// Two stores built in the same run, 1M events (the baseline) and HOTROW_SCALE_EVENTS (default
// 100M), each with 16 salts, `salt_by: record` and the default options, its events spread over the
// same 9 minutes of event time and 16 partitions: background ids with 100 events each on average
// (dev-00000001..), 8 planted ids with about 10k events each (big-0..7) and 32 with 100 each
// (hundred-00..31), spread evenly through the span. Each store is built as a bulk load (2 writer
// threads by partition, batches of 20000, no WAL, compactions as under ingest), then reopened (so
// it is read from table files, written with the WAL again) and its closed buckets compacted, as a
// running service has them. Then, the two taking turns where a ratio compares them:
//  - latest-10 on the store path (the last-N cache off), random background ids, 10 rounds of 1000
//    queries on each store, which goes first alternating; with the block reads of each query
//    (RocksDB's perf context: block-cache hits, blocks read from table files) and the bytes the
//    process read from the disk (/proc/self/io read_bytes: what the page cache did not hold);
//  - per-id ranges read whole (limit 100000) for the planted 10k-event ids and 100-event ids,
//    events/s, 5 alternated rounds, 2 query threads;
//  - a restart: the store closed, its files read once into the page cache, then opened with a
//    query engine with the last-N cache on until the cache's rebuild is done (ready), against a
//    bare walk of every row of the store (a cursor over each salt of each bucket, nothing decoded);
//  - a bucket drop with the cache on: the oldest bucket expired by the clock, DropExpiredBuckets
//    timed while a writer thread writes batches of 5000 new events; the longest Write during the
//    drop against the longest before it;
//  - RSS (the process, with only that store open) and disk per million events.
// The 100M store needs about 17 GB of disk at its peak, under $HOTROW_BENCH_DIR or /tmp; it is
// removed at the end. `bench/run scale` runs it; the default `bench/run` does not. The stores, their
// events and their build: bench/scale_store.h.
//
//   HOTROW_SCALE_EVENTS=10000000 [HOTROW_SCALE_PARTITIONED=0|1] [HOTROW_SCALE_BLOCK_CACHE_MB=n]
//   [HOTROW_SCALE_COMPRESSED_FROM=level] scale_bench
//   (the block cache and the first compressed level of the larger store only; the 1M store keeps
//   the defaults, as in the 100M run it is compared with)
//   ... [HOTROW_SCALE_MMAP=1] [HOTROW_SCALE_B_COMPRESSED_FROM=level] [HOTROW_SCALE_B_MMAP=0|1]
//   [HOTROW_SCALE_LATEST_ONLY=1] scale_bench
//   (B: a third store, the larger one's twin but for its first compressed level or its reads
//   through memory maps, in latest-10's turns: variant / the larger store, alternated;
//   LATEST_ONLY skips ranges, restart and drop)
//   HOTROW_SCALE_AB_PARTITIONED=1 [HOTROW_SCALE_EVENTS=n] scale_bench   (whole / partitioned)
//   HOTROW_SCALE_DROP_CACHE=0 scale_bench   (restart and drop with the last-N cache off)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/scale_store.h"
#include "common/logging.h"
#include "query/query_engine.h"
#include "store/block_reads.h"
#include "store/event_store.h"

namespace hotrow::bench::scale {
namespace {

// latest-10 on the store path, the two stores taking turns (kLatestRounds rounds of
// kLatestQueries random background ids on each, which goes first alternating), after an untimed
// warm-up of kLatestQueries queries on each; with the block reads and disk bytes of every query.
// HOTROW_SCALE_LATEST_ROUNDS=n: more rounds, so that a profiler attached has time to see them.
constexpr size_t kLatestQueries = 1000;

int LatestRounds() {
  const char* env = std::getenv("HOTROW_SCALE_LATEST_ROUNDS");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 10;
}

void LatestTurns(const std::vector<Subject*>& subjects) {
  std::vector<std::unique_ptr<query::QueryEngine>> engines;
  for (Subject* s : subjects) {
    engines.push_back(std::make_unique<query::QueryEngine>(s->store.get(), StorePathOptions()));
  }
  // HOTROW_SCALE_TIMERS=1: where the block reads' time goes (RocksDB's perf context timers).
  if (const char* env = std::getenv("HOTROW_SCALE_TIMERS"); env != nullptr && *env == '1') {
    store::CountBlockReadTimesOnThisThread();
  } else {
    store::CountBlockReadsOnThisThread();
  }
  std::mt19937_64 rng(11);
  const int rounds = LatestRounds();
  for (int round = -1; round < rounds; ++round) {  // round -1: the warm-up
    for (size_t turn = 0; turn < subjects.size(); ++turn) {
      const size_t k = (turn + static_cast<size_t>(std::max(round, 0))) % subjects.size();
      Subject* s = subjects[k];
      const store::BlockReads reads_before = store::BlockReadsOnThisThread();
      const uint64_t disk_before = DiskReadBytes();
      const uint64_t seeks_before = engines[k]->Work().seeks;
      for (size_t q = 0; q < kLatestQueries; ++q) {
        const std::string id = DeviceId(1 + rng() % s->gen->ids());
        const auto start = Clock::now();
        auto got = engines[k]->Latest(id, 10);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        if (!got.ok()) Die(got.status().ToString());
        if (got->empty()) Die("latest-10 of " + id + " found nothing: the data is not as planned");
        if (round >= 0) s->latest_us.push_back(us);
      }
      if (round < 0) continue;
      s->latest_reads += store::BlockReadsOnThisThread() - reads_before;
      s->latest_disk_bytes += DiskReadBytes() - disk_before;
      s->latest_seeks += engines[k]->Work().seeks - seeks_before;
      s->latest_queries += kLatestQueries;
    }
  }
}

// Whole ranges of the planted ids, the stores taking turns; events/s per round.
constexpr int kRangeRounds = 5;

void RangeTurns(const std::vector<Subject*>& subjects) {
  std::vector<std::unique_ptr<query::QueryEngine>> engines;
  query::QueryOptions q = StorePathOptions();
  q.threads = 2;
  for (Subject* s : subjects) {
    engines.push_back(std::make_unique<query::QueryEngine>(s->store.get(), q));
  }
  auto read_all = [](query::QueryEngine* engine, const std::string& id, int64_t to_ms) {
    uint64_t n = 0;
    const Status st = engine->RangeTo(id, 0, to_ms, query::kMaxRangeLimit, query::Order::kDesc,
                                      [&](const query::Event&) {
                                        ++n;
                                        return true;
                                      });
    if (!st.ok()) Die(st.ToString());
    return n;
  };
  for (int round = 0; round < kRangeRounds; ++round) {
    for (size_t turn = 0; turn < subjects.size(); ++turn) {
      const size_t k = (turn + static_cast<size_t>(round)) % subjects.size();
      Subject* s = subjects[k];
      const int64_t to = s->clock->NowMs() + 1;
      uint64_t events = 0;
      auto start = Clock::now();
      for (int i = 0; i < kBigIds; ++i) events += read_all(engines[k].get(), BigId(i), to);
      s->big_rate.push_back(static_cast<double>(events) / Since(start));
      s->big_events = events / kBigIds;
      events = 0;
      start = Clock::now();
      for (int i = 0; i < kSmallIds; ++i) events += read_all(engines[k].get(), SmallId(i), to);
      s->small_rate.push_back(static_cast<double>(events) / Since(start));
    }
  }
  // The block reads of a 10k-event range, read on one thread (the perf context counts per thread).
  q.threads = 1;
  store::CountBlockReadsOnThisThread();
  for (Subject* s : subjects) {
    query::QueryEngine engine(s->store.get(), q);
    const store::BlockReads before = store::BlockReadsOnThisThread();
    const uint64_t disk_before = DiskReadBytes();
    for (int i = 0; i < kBigIds; ++i) read_all(&engine, BigId(i), s->clock->NowMs() + 1);
    s->big_reads = store::BlockReadsOnThisThread() - before;
    s->big_disk_bytes = DiskReadBytes() - disk_before;
  }
}

// Restart to ready (open, then the last-N cache rebuilt) against a bare walk of the rows; then a
// bucket drop with the cache on while a writer writes; then RSS and disk. The store is closed on
// entry and on return.
void RestartAndDrop(Subject* s) {
  // A restarted process finds the store in the page cache where the machine has the memory for it
  // (24 GiB here, 6.5 GB at 100M). Left to chance, the open may read part of it from the disk and
  // the bare walk after it find it all cached (two runs: open 18 s and 36 s, walk 21.5 s in both);
  // the disk bytes each read are reported.
  WarmPageCache(s->options.path);
  const uint64_t disk_before_open = DiskReadBytes();
  auto start = Clock::now();
  s->store = OpenStore(*s);
  s->open_s = Since(start);
  // HOTROW_SCALE_DROP_CACHE=0: restart and drop with the last-N cache off, to see its share.
  query::QueryOptions engine_options;
  if (const char* env = std::getenv("HOTROW_SCALE_DROP_CACHE"); env != nullptr) {
    engine_options.last_cache = std::string(env) == "0" ? 0 : engine_options.last_cache;
  }
  auto engine = std::make_unique<query::QueryEngine>(s->store.get(), engine_options);
  engine->WaitForCacheRebuild();
  s->ready_s = Since(start);
  s->open_disk_bytes = DiskReadBytes() - disk_before_open;
  const uint64_t disk_before_walk = DiskReadBytes();
  start = Clock::now();
  s->walked_rows = BareWalk(s->store.get());
  s->walk_s = Since(start);
  s->walk_disk_bytes = DiskReadBytes() - disk_before_walk;
  s->disk_bytes = s->store->Stats().disk_bytes;
  std::printf(
      "%s: open %.2f s, ready (cache rebuilt) %.2f s, bare walk of %llu rows %.2f s; read from "
      "the disk: %.1f MB during the open, %.1f MB during the walk\n",
      s->name.c_str(), s->open_s, s->ready_s, static_cast<unsigned long long>(s->walked_rows),
      s->walk_s, s->open_disk_bytes / 1e6, s->walk_disk_bytes / 1e6);
  std::fflush(stdout);

  // The writer: batches of new events until told to stop, each Write timed.
  struct Timed {
    Clock::time_point start, end;
  };
  std::vector<Timed> writes;
  std::atomic<size_t> written{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop.load()) {
      const store::WriteBatchInput batch = s->gen->NewBatch(*s->store, s->clock->NowMs() - 1000);
      store::WriteOutcome outcome;
      const auto t = Clock::now();
      const Status st = s->store->Write(batch, &outcome);
      writes.push_back({t, Clock::now()});
      if (!st.ok()) Die(st.ToString());
      written.fetch_add(1);
      written.notify_all();
    }
  });
  auto wait_for = [&](size_t n) {
    for (size_t now = written.load(); now < n; now = written.load()) written.wait(now);
  };
  wait_for(20);
  const auto oldest = s->store->Buckets().front();
  s->clock->Advance(oldest->end_ms() + s->options.ttl_ms - s->clock->NowMs());
  const auto drop_start = Clock::now();
  auto dropped = s->store->DropExpiredBuckets();
  const auto drop_end = Clock::now();
  if (!dropped.ok()) Die(dropped.status().ToString());
  s->dropped = *dropped;
  s->drop_ms = 1e3 * std::chrono::duration<double>(drop_end - drop_start).count();
  wait_for(written.load() + 5);
  stop = true;
  writer.join();
  for (const Timed& w : writes) {
    const double ms = 1e3 * std::chrono::duration<double>(w.end - w.start).count();
    if (w.end <= drop_start) s->stall_before_ms = std::max(s->stall_before_ms, ms);
    if (w.start < drop_end && w.end > drop_start) {
      s->stall_during_ms = std::max(s->stall_during_ms, ms);
    }
  }
  std::printf(
      "%s: dropped %zu bucket(s) in %.1f ms; longest write during it %.1f ms, before it "
      "%.1f ms (%zu writes of %zu events)\n",
      s->name.c_str(), s->dropped, s->drop_ms, s->stall_during_ms, s->stall_before_ms,
      writes.size(), kBatchEvents);
  s->rss_bytes = RssBytes();
  engine.reset();
  s->store.reset();
}

double Median(std::vector<double> v) { return Percentile(&v, 50); }

// latest-10's figures of each store of the turns, one line each (HOTROW_SCALE_LATEST_ONLY).
void PrintLatest(const std::vector<Subject*>& subjects) {
  for (const Subject* s : subjects) {
    std::vector<double> us = s->latest_us;
    const double q = static_cast<double>(s->latest_queries);
    std::printf(
        "%s: latest-10 p50 %.1f us, p99 %.1f us; per query %.2f seeks, %.1f block-cache "
        "hits (%.1f index or filter), %.2f table-file reads (%.2f index or filter), %.1f "
        "KB from the disk; disk %.1f MB per million events (compressed from level %d, "
        "mmap reads %d, block cache %zu MiB)\n",
        s->name.c_str(), Percentile(&us, 50), Percentile(&us, 99), s->latest_seeks / q,
        s->latest_reads.cache_hits / q, s->latest_reads.index_filter_hits / q,
        s->latest_reads.file_reads / q, s->latest_reads.index_filter_reads / q,
        s->latest_disk_bytes / q / 1e3,
        s->disk_bytes / 1e6 / (static_cast<double>(s->events) / 1e6),
        s->options.compressed_from_level, s->options.mmap_reads ? 1 : 0,
        s->options.block_cache_bytes >> 20);
    const store::BlockReads& r = s->latest_reads;
    if (r.seek_nanos > 0) {
      std::printf(
          "%s: per query (us): table and memtable seeks %.1f, of which data blocks "
          "fetched %.1f, of which read calls %.1f, checksums %.1f, decompression %.1f\n",
          s->name.c_str(), r.seek_nanos / q / 1e3, r.data_block_nanos / q / 1e3,
          r.read_nanos / q / 1e3, r.checksum_nanos / q / 1e3, r.decompress_nanos / q / 1e3);
    }
  }
  for (size_t i = 1; i < subjects.size(); ++i) {
    std::printf("latest-10 p50 %s / %s: %.2f\n", subjects[i]->name.c_str(),
                subjects[0]->name.c_str(),
                Median(subjects[i]->latest_us) / Median(subjects[0]->latest_us));
  }
  if (subjects.size() > 2) {
    std::printf("latest-10 p50 %s / %s: %.2f\n", subjects[2]->name.c_str(),
                subjects[1]->name.c_str(),
                Median(subjects[2]->latest_us) / Median(subjects[1]->latest_us));
  }
  std::fflush(stdout);
}

std::string Markdown(const Subject& base, const Subject& big, double run_s) {
  std::string md;
  char line[1024];
  auto add = [&](const char* format, auto... args) {
    std::snprintf(line, sizeof(line), format, args...);
    md += line;
  };
  md += "### A 100M-event window against 1M (`bench/scale_bench`, `bench/run scale`)\n\n";
  add("Two stores built in one run, %zu and %zu events (16 salts, `salt_by: record`, default "
      "options, 9 minutes of event time, 16 partitions; background ids with 100 events each, 8 "
      "planted ids of ~10k events, 32 of 100), each reopened and its closed buckets compacted. "
      "latest-10 on the store path (last-N cache off), %d rounds of %zu random ids per store in "
      "turns; whole ranges of the planted ids (2 query threads), %d rounds in turns; restart to "
      "ready (open + the last-N cache rebuilt) against a bare walk of every row; a bucket drop "
      "with the cache on while a writer writes batches of 5000.\n\n",
      base.events, big.events, LatestRounds(), kLatestQueries, kRangeRounds);
  md += "| figure | " + base.name + " | " + big.name + " | " + big.name + " / " + base.name +
        " |\n|---|---|---|---|\n";
  auto row = [&](const char* what, double a, double b, int decimals) {
    add("| %s | %.*f | %.*f | **%.2f** |\n", what, decimals, a, decimals, b, b / a);
  };
  row("latest-10 p50, store path (us)", Median(base.latest_us), Median(big.latest_us), 1);
  std::vector<double> a = base.latest_us, b = big.latest_us;
  row("latest-10 p99, store path (us)", Percentile(&a, 99), Percentile(&b, 99), 1);
  row("range of a 10k-event id (k events/s)", Median(base.big_rate) / 1e3,
      Median(big.big_rate) / 1e3, 1);
  row("range of a 100-event id (k events/s)", Median(base.small_rate) / 1e3,
      Median(big.small_rate) / 1e3, 1);
  row("bucket drop, the call (ms)", base.drop_ms, big.drop_ms, 1);
  row("bucket drop, longest write during it (ms)", base.stall_during_ms, big.stall_during_ms, 1);
  row("longest write before the drop (ms)", base.stall_before_ms, big.stall_before_ms, 1);
  row("open (s)", base.open_s, big.open_s, 2);
  row("restart to ready: open + cache rebuilt (s)", base.ready_s, big.ready_s, 2);
  row("bare walk of every row (s)", base.walk_s, big.walk_s, 2);
  add("| read from the disk during the open / the walk (MB) | %.1f / %.1f | %.1f / %.1f | |\n",
      base.open_disk_bytes / 1e6, base.walk_disk_bytes / 1e6, big.open_disk_bytes / 1e6,
      big.walk_disk_bytes / 1e6);
  add("| restart to ready / bare walk | %.2f | %.2f | |\n", base.ready_s / base.walk_s,
      big.ready_s / big.walk_s);
  auto per_query = [](uint64_t n, size_t q) {
    return static_cast<double>(n) / static_cast<double>(q);
  };
  for (const Subject* s : {&base, &big}) {
    add("| latest-10 salt seeks per query, %s | %.2f | | |\n", s->name.c_str(),
        per_query(s->latest_seeks, s->latest_queries));
    add("| latest-10 block reads per query, %s: block-cache hits (index+filter) / table-file "
        "reads (index+filter) / disk KB | %.1f (%.1f) / %.2f (%.2f) / %.1f | | |\n",
        s->name.c_str(), per_query(s->latest_reads.cache_hits, s->latest_queries),
        per_query(s->latest_reads.index_filter_hits, s->latest_queries),
        per_query(s->latest_reads.file_reads, s->latest_queries),
        per_query(s->latest_reads.index_filter_reads, s->latest_queries),
        per_query(s->latest_disk_bytes, s->latest_queries) / 1e3);
    add("| 10k-event range block reads per range, %s: block-cache hits / table-file reads / disk "
        "KB | %.0f / %.0f / %.0f | | |\n",
        s->name.c_str(), per_query(s->big_reads.cache_hits, kBigIds),
        per_query(s->big_reads.file_reads, kBigIds), per_query(s->big_disk_bytes, kBigIds) / 1e3);
  }
  row("RSS with the store open, cache on (MB)", base.rss_bytes / 1e6, big.rss_bytes / 1e6, 0);
  row("disk per million events (MB)", base.disk_bytes / 1e6 / (base.events / 1e6),
      big.disk_bytes / 1e6 / (big.events / 1e6), 1);
  row("write rate while building (k events/s)", base.write_events_per_s / 1e3,
      big.write_events_per_s / 1e3, 1);
  add("\nRun time: %.0f s (building: %.0f s and %.0f s).\n", run_s, base.build_s, big.build_s);
  return md;
}

int Main() {
  InitLogging("warn");
  const auto run_start = Clock::now();
  size_t events = 100'000'000;
  if (const char* env = std::getenv("HOTROW_SCALE_EVENTS"); env != nullptr && *env != '\0') {
    events = std::strtoull(env, nullptr, 10);
  }
  // HOTROW_SCALE_AB_PARTITIONED=1: what partitioned index and filters cost where everything fits,
  // two stores of the same size (1M, or HOTROW_SCALE_EVENTS) taking the same turns, the first with
  // whole index and filter blocks, the second partitioned; the ratios are partitioned / whole.
  const char* ab_env = std::getenv("HOTROW_SCALE_AB_PARTITIONED");
  const bool ab = ab_env != nullptr && std::string(ab_env) == "1";
  if (ab && std::getenv("HOTROW_SCALE_EVENTS") == nullptr) events = kBaseEvents;
  const bool any_variant = std::getenv("HOTROW_SCALE_B_COMPRESSED_FROM") != nullptr ||
                           std::getenv("HOTROW_SCALE_B_MMAP") != nullptr;
  if (!ab && events < (any_variant ? 1 : 2) * kBaseEvents) {
    Die("HOTROW_SCALE_EVENTS must be at least 2000000 (1000000 with a B variant)");
  }
  ScratchDir dir;
  const DataSpec spec;  // now_ms and the 9-minute span
  Subject base, big;
  base.name = "1M";
  base.events = kBaseEvents;
  big.name =
      events % 1'000'000 == 0 ? std::to_string(events / 1'000'000) + "M" : std::to_string(events);
  big.events = events;
  if (big.name == base.name) big.name += "-a";  // its own directory
  if (ab) {
    base.events = events;
    base.name = big.name + "-whole";
    big.name += "-partitioned";
    base.options.partitioned_index = false;
    big.options.partitioned_index = true;
  }
  // The larger store's block cache and first compressed level, for a scale model (a 10M store
  // with the cache scaled down as the 100M one's data outgrows it, compressed where the 100M
  // store's compacted buckets are); the 1M store keeps the defaults.
  if (const char* env = std::getenv("HOTROW_SCALE_BLOCK_CACHE_MB"); env != nullptr) {
    big.options.block_cache_bytes = std::strtoull(env, nullptr, 10) << 20;
  }
  if (const char* env = std::getenv("HOTROW_SCALE_COMPRESSED_FROM"); env != nullptr) {
    big.options.compressed_from_level = std::atoi(env);
  }
  if (const char* env = std::getenv("HOTROW_SCALE_MMAP"); env != nullptr) {
    big.options.mmap_reads = std::string(env) == "1";
  }
  // A third store, the larger one's twin but for its first compressed level or its reads through
  // memory maps, timed in the same turns.
  Subject variant;
  const char* variant_env = std::getenv("HOTROW_SCALE_B_COMPRESSED_FROM");
  const char* variant_mmap_env = std::getenv("HOTROW_SCALE_B_MMAP");
  const bool with_variant = variant_env != nullptr || variant_mmap_env != nullptr;
  if (with_variant) {
    variant.name = big.name + "-b";
    variant.events = big.events;
    variant.options = big.options;
    if (variant_env != nullptr) variant.options.compressed_from_level = std::atoi(variant_env);
    if (variant_mmap_env != nullptr) {
      variant.options.mmap_reads = std::string(variant_mmap_env) == "1";
    }
  }
  const char* latest_only_env = std::getenv("HOTROW_SCALE_LATEST_ONLY");
  const bool latest_only = latest_only_env != nullptr && std::string(latest_only_env) == "1";
  std::printf("scale_bench: %zu events against %zu, stores under %s\n", events, kBaseEvents,
              dir.path().c_str());
  Build(&base, dir.path(), spec);
  Build(&big, dir.path(), spec);
  std::vector<Subject*> turns = {&base, &big};
  if (with_variant) {
    Build(&variant, dir.path(), spec);
    turns.push_back(&variant);
  }
  for (Subject* s : turns) s->disk_bytes = s->store->Stats().disk_bytes;
  std::printf("latest-10 turns\n");
  std::fflush(stdout);
  LatestTurns(turns);
  PrintLatest(turns);
  if (latest_only) return 0;
  variant.store.reset();
  RangeTurns({&base, &big});
  base.store.reset();
  big.store.reset();
  RestartAndDrop(&base);
  RestartAndDrop(&big);

  for (Subject* s : {&base, &big}) {
    const std::string n = s->name;
    Record("latest10_p50_us_" + n, Median(s->latest_us));
    Record("range10k_events_per_s_" + n, Median(s->big_rate));
    Record("range100_events_per_s_" + n, Median(s->small_rate));
    Record("drop_ms_" + n, s->drop_ms);
    Record("drop_stall_ms_" + n, s->stall_during_ms);
    Record("ready_s_" + n, s->ready_s);
    Record("walk_s_" + n, s->walk_s);
    std::printf(
        "%s: latest-10 p50 %.1f us; ranges %.0f events/s (10k-event ids, %llu events "
        "each), %.0f events/s (100-event ids); RSS %.0f MB, disk %.0f MB\n",
        n.c_str(), Median(s->latest_us), Median(s->big_rate),
        static_cast<unsigned long long>(s->big_events), Median(s->small_rate), s->rss_bytes / 1e6,
        s->disk_bytes / 1e6);
  }
  const std::string b = big.name, a = base.name;
  PrintRatio("scale: latest-10 p50, store path, " + b + " / " + a, "latest10_p50_us_" + b,
             "latest10_p50_us_" + a);
  PrintRatio("scale: range events/s, 10k-event ids, " + b + " / " + a, "range10k_events_per_s_" + b,
             "range10k_events_per_s_" + a);
  PrintRatio("scale: range events/s, 100-event ids, " + b + " / " + a, "range100_events_per_s_" + b,
             "range100_events_per_s_" + a);
  PrintRatio("scale: bucket drop call, " + b + " / " + a, "drop_ms_" + b, "drop_ms_" + a);
  PrintRatio("scale: longest write during the drop, " + b + " / " + a, "drop_stall_ms_" + b,
             "drop_stall_ms_" + a);
  PrintRatio("scale: restart to ready / bare walk, " + b, "ready_s_" + b, "walk_s_" + b);
  const double run_s = Since(run_start);
  std::printf("scale_bench: run time %.0f s\n", run_s);
  return WriteOut("scale_bench.md", Markdown(base, big, run_s)) ? 0 : 1;
}

}  // namespace
}  // namespace hotrow::bench::scale

int main() { return hotrow::bench::scale::Main(); }
