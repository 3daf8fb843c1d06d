// What the last-N cache and the device queries cost against the store path computing the same
// answers, in process, over one store: 2M events, 100000 ids (about 10 events each) and one chatty
// id holding 1M of them, 16 salts, every event in the window.
//
// - latest-10 of random ids: the cache against the store path (the same engine with the cache
//   off), in alternating rounds so that a slow spell of the machine falls on both;
// - the latest of every id (every page of GET /v1/latest): the cache's walk, the store path
//   (query/latest_all.h), and a scan of the window keeping each id's newest event;
// - a series of the chatty id's 1M events into 600 points, against a range read of the same
//   events (events/s);
// - the cache's rebuild at start against one read of every row of the newest bucket;
// - the cache's bytes per id.

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "bench/bench_support.h"
#include "keying/row_key.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Fail(int line, const std::string& why) {
  std::fprintf(stderr, "last_cache_bench: line %d: %s\n", line, why.c_str());
  std::abort();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

query::QueryOptions CachedOptions() {
  query::QueryOptions options;
  options.last_cache = 16;
  options.last_cache_bytes = size_t{1} << 30;  // every id held: the walk of every id needs it
  return options;
}

// Every page of the latest of every id; returns the events seen.
size_t LatestOfEveryId(query::QueryEngine* engine) {
  size_t events = 0;
  std::string after;
  for (;;) {
    Result<query::LatestAllPage> page = engine->LatestAll("", after, 100000);
    if (!page.ok()) Fail(__LINE__, page.status().ToString());
    events += page->events.size();
    if (!page->next) return events;
    after = *page->next;
  }
}

int Main() {
  DataSpec spec;
  spec.events = 2'000'000;
  spec.ids = 100'000;
  spec.hot_events = 1'000'000;
  ScratchDir dir;
  ManualClock clock(spec.now_ms);
  store::StoreOptions options;
  options.path = dir.path() + "/store";
  options.wall_clock = &clock;
  options.salts = 16;
  std::unique_ptr<store::EventStore> store = std::move(store::EventStore::Open(options).value());
  for (const auto& batch : MakeBatches(store.get(), GenerateEvents(spec), 5000)) {
    store::WriteOutcome outcome;
    if (!store->Write(batch, &outcome).ok()) Fail(__LINE__, "write");
  }
  store.reset();
  store = std::move(store::EventStore::Open(options).value());
  store->WaitForCompactions();

  // The rebuild at start, against one read of every row of the newest bucket.
  auto start = Clock::now();
  auto cached = std::make_unique<query::QueryEngine>(store.get(), CachedOptions());
  cached->WaitForCacheRebuild();
  const double rebuild_s = SecondsSince(start);
  const query::LastCacheStatus status = cached->Cache();
  start = Clock::now();
  uint64_t newest_rows = 0;
  const auto buckets = store->Buckets();
  for (int salt = 0; salt < store->salter().salts(); ++salt) {
    auto it = buckets.back()->NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++newest_rows;
  }
  const double newest_bucket_s = SecondsSince(start);
  query::QueryEngine reads_store(store.get(), StorePathOptions());

  // Latest-10 of random ids, in alternating rounds.
  std::mt19937_64 rng(11);
  std::vector<std::string> ids;
  for (int i = 0; i < 20000; ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "dev-%06zu", static_cast<size_t>(1 + rng() % spec.ids));
    ids.push_back(id);
  }
  std::vector<double> cache_us, store_us;
  constexpr int kRounds = 20;
  const size_t per_round = ids.size() / kRounds;
  for (int round = 0; round < kRounds; ++round) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool use_cache = (turn == 0) == (round % 2 == 0);
      query::QueryEngine* engine = use_cache ? cached.get() : &reads_store;
      for (size_t i = round * per_round; i < (round + 1) * per_round; ++i) {
        const auto t = Clock::now();
        Result<std::vector<query::Event>> got = engine->Latest(ids[i], 10);
        if (!got.ok()) Fail(__LINE__, got.status().ToString());
        (use_cache ? cache_us : store_us)
            .push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
      }
    }
  }
  const double cache_p50 = Percentile(&cache_us, 50), store_p50 = Percentile(&store_us, 50);

  // The latest of every id: the cache's walk, the store path, a scan of the window.
  start = Clock::now();
  const size_t from_cache = LatestOfEveryId(cached.get());
  const double every_cache_s = SecondsSince(start);
  start = Clock::now();
  const size_t from_store = LatestOfEveryId(&reads_store);
  const double every_store_s = SecondsSince(start);
  start = Clock::now();
  std::map<std::string, query::Event> newest;
  const int64_t window_start = store->WindowStartMs();
  Status scanned =
      reads_store.Scan(window_start, spec.now_ms + 1, INT64_MAX, [&](const query::Event& e) {
        auto [it, added] = newest.try_emplace(e.id, e);
        if (!added && e.ts_ms > it->second.ts_ms) it->second = e;
        return true;
      });
  if (!scanned.ok()) Fail(__LINE__, scanned.ToString());
  const double every_scan_s = SecondsSince(start);
  if (from_cache != newest.size() || from_store != newest.size()) {
    Fail(__LINE__, "the latest of every id: " + std::to_string(from_cache) +
                       " ids from the cache, " + std::to_string(from_store) +
                       " from the store path, " + std::to_string(newest.size()) + " from the scan");
  }

  // A series of the chatty id's events into 600 points, against a range read of them.
  const int64_t from = window_start, to = spec.now_ms + 1;
  start = Clock::now();
  Result<query::SeriesAnswer> series =
      cached->Series("dev-hot", "temp", from, to, query::StepForMaxPoints(from, to, 600));
  const double series_s = SecondsSince(start);
  if (!series.ok()) Fail(__LINE__, series.status().ToString());
  uint64_t series_events = 0;
  for (const query::SeriesPoint& p : series->points) series_events += p.count;
  // A range reads at most kMaxRangeLimit events: the window is read in 20 slices of time.
  uint64_t range_events = 0;
  start = Clock::now();
  Status ranged = Status::Ok();
  constexpr int kSlices = 20;
  for (int i = 0; i < kSlices && ranged.ok(); ++i) {
    const int64_t a = from + (to - from) * i / kSlices, b = from + (to - from) * (i + 1) / kSlices;
    ranged = reads_store.RangeTo("dev-hot", a, b, query::kMaxRangeLimit, query::Order::kAsc,
                                 [&](const query::Event&) {
                                   ++range_events;
                                   return true;
                                 });
  }
  const double range_s = SecondsSince(start);
  if (!ranged.ok()) Fail(__LINE__, ranged.ToString());
  if (range_events != series_events + series->absent + series->not_number) {
    Fail(__LINE__, "the series counted " + std::to_string(series_events) +
                       " events, the range read " + std::to_string(range_events));
  }

  const double bytes_per_id = static_cast<double>(status.cache.bytes) /
                              static_cast<double>(std::max<uint64_t>(1, status.cache.ids));
  Record("latest10_cache_p50_us", cache_p50);
  Record("latest10_store_p50_us", store_p50);
  Record("every_cache_s", every_cache_s);
  Record("every_store_s", every_store_s);
  Record("every_scan_s", every_scan_s);
  Record("series_events_per_s", static_cast<double>(series_events) / series_s);
  Record("range_events_per_s", static_cast<double>(range_events) / range_s);
  Record("rebuild_s", rebuild_s);
  Record("newest_bucket_s", newest_bucket_s);
  std::printf("latest-10: cache p50 %.1f us p99 %.1f us | store path p50 %.1f us p99 %.1f us\n",
              cache_p50, Percentile(&cache_us, 99), store_p50, Percentile(&store_us, 99));
  std::printf("latest of every id (%zu ids): cache %.3f s, store path %.3f s, scan %.3f s\n",
              newest.size(), every_cache_s, every_store_s, every_scan_s);
  std::printf("series of %llu events into %zu points: %.3f s; range read of %llu events: %.3f s\n",
              static_cast<unsigned long long>(series_events), series->points.size(), series_s,
              static_cast<unsigned long long>(range_events), range_s);
  std::printf(
      "rebuild of %llu ids (%llu bytes, %.0f per id): %.3f s; newest bucket (%llu rows): %.3f s\n",
      static_cast<unsigned long long>(status.cache.ids),
      static_cast<unsigned long long>(status.cache.bytes), bytes_per_id, rebuild_s,
      static_cast<unsigned long long>(newest_rows), newest_bucket_s);
  PrintRatio("latest-10 p50, cache / store path", "latest10_cache_p50_us", "latest10_store_p50_us");
  PrintRatio("latest of every id, cache / scan of the window", "every_cache_s", "every_scan_s");
  PrintRatio("latest of every id, store path / scan of the window", "every_store_s",
             "every_scan_s");
  PrintRatio("series events/s / range read events/s", "series_events_per_s", "range_events_per_s");
  PrintRatio("cache rebuild / one read of the newest bucket", "rebuild_s", "newest_bucket_s");

  Report report("last_cache_bench", "The last-N cache and the device queries",
                "2M events over 100000 ids (about 10 each) and one chatty id with 1M, 16 salts, "
                "`salt_by: record`, store reopened and compacted; one client thread, "
                "`query.threads` = 2. Each figure against the store path computing the same "
                "answer in the same run.");
  report.Columns({"figure", "value", "baseline", "ratio"});
  report.Row({"latest-10 p50, cache / store path", Fixed(cache_p50, 1) + " µs",
              Fixed(store_p50, 1) + " µs", Fixed(cache_p50 / store_p50, 3)});
  report.Row({"latest of every id (" + std::to_string(newest.size()) + " ids), cache / scan",
              Fixed(every_cache_s, 3) + " s", Fixed(every_scan_s, 3) + " s",
              Fixed(every_cache_s / every_scan_s, 3)});
  report.Row({"latest of every id, store path / scan", Fixed(every_store_s, 3) + " s",
              Fixed(every_scan_s, 3) + " s", Fixed(every_store_s / every_scan_s, 3)});
  report.Row({"series of " + std::to_string(series_events) + " events into " +
                  std::to_string(series->points.size()) + " points / range read, events/s",
              Rate(static_cast<double>(series_events) / series_s),
              Rate(static_cast<double>(range_events) / range_s),
              Fixed((static_cast<double>(series_events) / series_s) /
                        (static_cast<double>(range_events) / range_s),
                    2)});
  report.Row({"cache rebuild (" + std::to_string(status.cache.ids) +
                  " ids) / one read of the newest bucket",
              Fixed(rebuild_s, 3) + " s", Fixed(newest_bucket_s, 3) + " s",
              Fixed(rebuild_s / newest_bucket_s, 2)});
  report.Note("The cache held " + std::to_string(status.cache.ids) + " ids in " +
              std::to_string(status.cache.bytes >> 20) + " MiB: " + Fixed(bytes_per_id, 0) +
              " bytes per id at about 10 events of 100-byte payloads each.");
  report.Write();
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main() { return hotrow::bench::Main(); }
