// What does "latest 10 events of id X" cost over 1M events and 5000 ids with 16 salts, next to 16
// bare iterator seeks (one per salt, no merge, no pool), for salt_by record and salt_by id?
//
// Under callgrind (valgrind --tool=callgrind --instr-atstart=no build/bench/latest_bench) only the
// measured query loops are instrumented, each dumped as its own profile ("latest10_record", ...),
// and 2000 queries are run instead of 20000: instruction counts per query, free of the noise of a
// shared machine, in minutes rather than an hour of loading the fixture under valgrind.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HOTROW_CALLGRIND 1
#endif

#include "bench/bench_support.h"
#include "keying/row_key.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

int Queries() {
#ifdef HOTROW_CALLGRIND
  if (RUNNING_ON_VALGRIND) return 2000;
#endif
  return 20000;
}

struct Fixture {
  ScratchDir dir;
  ManualClock clock{DataSpec().now_ms};
  std::unique_ptr<store::EventStore> store;
  std::unique_ptr<query::QueryEngine> engine;
  std::vector<std::string> ids;
};

Fixture* Get(keying::SaltBy by) {
  static Fixture* fixtures[2] = {nullptr, nullptr};
  Fixture*& f = fixtures[by == keying::SaltBy::kId ? 1 : 0];
  if (f != nullptr) return f;
  f = new Fixture();
  store::StoreOptions options;
  options.path = f->dir.path() + "/store";
  options.wall_clock = &f->clock;
  options.salts = 16;
  options.salt_by = by;
  f->store = std::move(store::EventStore::Open(options).value());
  DataSpec spec;
  for (const auto& batch : MakeBatches(f->store.get(), GenerateEvents(spec), 5000)) {
    store::WriteOutcome outcome;
    if (!f->store->Write(batch, &outcome).ok()) std::abort();
  }
  // Reopen: the write-ahead log is replayed into table files and no flush runs during the measure.
  f->store.reset();
  f->store = std::move(store::EventStore::Open(options).value());
  // The steady state: closed buckets compacted to one sorted run, as a running service has them.
  f->store->WaitForCompactions();
  f->engine = std::make_unique<query::QueryEngine>(f->store.get(), StorePathOptions());
  std::mt19937_64 rng(7);
  for (int i = 0; i < Queries(); ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "dev-%06zu", static_cast<size_t>(1 + rng() % spec.ids));
    f->ids.push_back(id);
  }
  return f;
}

// One kind of query timed over the queries [first, last), appended to `micros`. Under callgrind
// each call is its own profile, named `name`.
template <typename Fn>
void TimeQueries(const std::string& name, int first, int last, Fn&& one_query,
                 std::vector<double>* micros) {
#ifdef HOTROW_CALLGRIND
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
#else
  (void)name;
#endif
  for (int i = first; i < last; ++i) {
    const auto start = std::chrono::steady_clock::now();
    one_query(i);
    micros->push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
#ifdef HOTROW_CALLGRIND
  CALLGRIND_DUMP_STATS_AT(name.c_str());
  CALLGRIND_STOP_INSTRUMENTATION;
#endif
}

// Rounds the queries are split into, the kinds taking turns (and turns at going first) from one
// round to the next: a ratio of two kinds timed minutes apart on this shared machine moved by 1.6x
// between runs (16 bare seeks p50 26 µs in one run, 38-46 µs in the next), because a slow spell
// fell on one of them. One round under callgrind, so that each kind is one profile.
int Rounds() {
#ifdef HOTROW_CALLGRIND
  if (RUNNING_ON_VALGRIND) return 1;
#endif
  return 20;
}

// How many buckets latest-10 visits for each query (newest first, until the buckets seen hold 10
// events of the id), counted untimed by reading the id's rows. The floor timed over them: a bare
// seek in every salt that holds the id (Bucket::MayHoldId), with no merge, no decoding, no answer;
// latest-10 itself seeks fewer, since in a bucket it visits only to complete its answer it skips
// the salts whose newest row is too old for it (Bucket::NewestIdTsBound).
std::vector<size_t> VisitedBuckets(
    Fixture* f, const std::vector<std::shared_ptr<const store::Bucket>>& newest_first) {
  std::vector<size_t> visited;
  for (int i = 0; i < Queries(); ++i) {
    const uint64_t hash = keying::IdHash(f->ids[static_cast<size_t>(i)]);
    size_t events = 0, b = 0;
    while (b < newest_first.size() && events < 10) {
      for (uint8_t salt = 0; salt < 16; ++salt) {
        auto it = newest_first[b]->NewIterator(keying::IdKeyRange(salt, hash), true);
        for (it->SeekToFirst(); it->Valid(); it->Next()) ++events;
      }
      ++b;
    }
    visited.push_back(b);
  }
  return visited;
}

// latest-10 and its floors, timed in turns: 16 bare seeks (one per salt in the newest bucket, each
// on a fresh iterator, reading one key, on this thread), and for salt_by record a bare seek in each
// salt holding the id in the buckets latest-10 visits (most ids have fewer than 10 events in the
// newest, partly filled bucket, so latest-10 visits the next one too).
void BM_LatestAndFloors(benchmark::State& state, keying::SaltBy by) {
  Fixture* f = Get(by);
  const std::string by_name(keying::SaltByName(by));
  const bool visited_floor = by == keying::SaltBy::kRecord;
  auto buckets = f->store->Buckets();
  std::reverse(buckets.begin(), buckets.end());  // newest first
  const std::vector<size_t> visited =
      visited_floor ? VisitedBuckets(f, buckets) : std::vector<size_t>();
  size_t found = 0, bare_found = 0, visited_seeks = 0;
  auto latest = [&](int i) {
    auto events = f->engine->Latest(f->ids[static_cast<size_t>(i)], 10);
    found += events.ok() ? events->size() : 0;
  };
  auto bare16 = [&](int i) {
    const uint64_t hash = keying::IdHash(f->ids[static_cast<size_t>(i)]);
    for (uint8_t salt = 0; salt < 16; ++salt) {
      auto it = buckets.front()->NewIterator(keying::IdKeyRange(salt, hash), true);
      it->SeekToFirst();
      if (it->Valid()) bare_found += it->key().size() > 0;
    }
  };
  auto bare_visited = [&](int i) {
    const uint64_t hash = keying::IdHash(f->ids[static_cast<size_t>(i)]);
    for (size_t b = 0; b < visited[static_cast<size_t>(i)]; ++b) {
      for (uint8_t salt = 0; salt < 16; ++salt) {
        if (!buckets[b]->MayHoldId(salt, hash)) continue;
        auto it = buckets[b]->NewIterator(keying::IdKeyRange(salt, hash), true);
        it->SeekToFirst();
        ++visited_seeks;
        if (it->Valid()) bare_found += it->key().size() > 0;
      }
    }
  };
  std::vector<double> latest_us, bare_us, visited_us;
  const query::QueryWorkStats before = f->engine->Work();
  for (auto _ : state) {
    const int rounds = Rounds(), per_round = Queries() / rounds;
    for (int r = 0; r < rounds; ++r) {
      const int first = r * per_round, last = first + per_round;
      auto time_latest = [&] {
        TimeQueries("latest10_" + by_name, first, last, latest, &latest_us);
      };
      auto time_floors = [&] {
        TimeQueries("bare16_" + by_name, first, last, bare16, &bare_us);
        if (visited_floor) {
          TimeQueries("bare_visited_record", first, last, bare_visited, &visited_us);
        }
      };
      if (r % 2 == 0) {
        time_latest();
        time_floors();
      } else {
        time_floors();
        time_latest();
      }
    }
  }
  benchmark::DoNotOptimize(bare_found);
  const double queries = static_cast<double>(latest_us.size());
  auto record = [&](const std::string& name, std::vector<double>* micros) {
    Record(name + "_p50_us", Percentile(micros, 50));
    Record(name + "_p99_us", Percentile(micros, 99));
  };
  record("latest10_" + by_name, &latest_us);
  record("bare16_" + by_name, &bare_us);
  if (visited_floor) {
    record("bare_visited_record", &visited_us);
    Record("bare_visited_record_seeks", static_cast<double>(visited_seeks) / queries);
  }
  state.counters["latest10_p50_us"] = Recorded("latest10_" + by_name + "_p50_us");
  state.counters["bare16_p50_us"] = Recorded("bare16_" + by_name + "_p50_us");
  state.counters["events_per_query"] = static_cast<double>(found) / queries;
  // Where the time goes: store work per query (the floor is 16 seeks and no cursor creation).
  const query::QueryWorkStats after = f->engine->Work();
  Record("latest10_" + by_name + "_seeks",
         static_cast<double>(after.seeks - before.seeks) / queries);
  Record("latest10_" + by_name + "_rows",
         static_cast<double>(after.rows_read - before.rows_read) / queries);
  Record("latest10_" + by_name + "_cursors",
         static_cast<double>(after.iterators_created - before.iterators_created) / queries);
}

BENCHMARK_CAPTURE(BM_LatestAndFloors, record, keying::SaltBy::kRecord)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LatestAndFloors, id, keying::SaltBy::kId)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  using hotrow::bench::PrintRatio;
  using hotrow::bench::Recorded;
  std::printf(
      "\nlatest-10 over 1M events, 5000 ids (+1 chatty), 16 salts, %d queries on one client "
      "thread\n",
      hotrow::bench::Queries());
  for (const char* by : {"record", "id"}) {
    std::printf(
        "salt_by=%-6s latest-10 p50 %8.1f us  p99 %8.1f us | 16 bare seeks p50 %8.1f us  p99 %8.1f "
        "us\n",
        by, Recorded(std::string("latest10_") + by + "_p50_us"),
        Recorded(std::string("latest10_") + by + "_p99_us"),
        Recorded(std::string("bare16_") + by + "_p50_us"),
        Recorded(std::string("bare16_") + by + "_p99_us"));
    std::printf(
        "salt_by=%-6s latest-10 store work per query: %.1f seeks, %.1f rows read, %.4f cursors "
        "created\n",
        by, Recorded(std::string("latest10_") + by + "_seeks"),
        Recorded(std::string("latest10_") + by + "_rows"),
        Recorded(std::string("latest10_") + by + "_cursors"));
    PrintRatio(std::string("latest-10 p50 / 16 bare seeks p50, salt_by=") + by,
               std::string("latest10_") + by + "_p50_us", std::string("bare16_") + by + "_p50_us");
    if (std::string(by) == "record" && Recorded("bare_visited_record_p50_us") > 0) {
      std::printf(
          "salt_by=record bare seeks of the salts holding the id in the buckets latest-10 visits: "
          "%.1f per query, p50 %8.1f "
          "us  p99 %8.1f us\n",
          Recorded("bare_visited_record_seeks"), Recorded("bare_visited_record_p50_us"),
          Recorded("bare_visited_record_p99_us"));
      PrintRatio("latest-10 p50 / bare seeks of the salts holding the id p50, salt_by=record",
                 "latest10_record_p50_us", "bare_visited_record_p50_us");
    }
  }

  using namespace hotrow::bench;
  Report report(
      "latest_bench", "Latest-10",
      std::to_string(Queries()) +
          " `Latest(id, 10)` calls on random ids over the 1M events of "
          "the write benchmark, one client thread, `query.threads` = 2, store reopened so that "
          "everything is in table files. The baseline is the floor of a salted per-id lookup: "
          "one iterator seek per salt in the newest bucket, reading one key, on the calling "
          "thread. Latest-10 and the baselines take turns, in 20 rounds, so that a slow spell of "
          "the machine falls on both.");
  report.Columns({"salt_by", "latest-10 p50", "latest-10 p99", "16 bare seeks p50",
                  "16 bare seeks p99", "p50 ratio"});
  for (const std::string by : {"record", "id"}) {
    const double p50 = Recorded("latest10_" + by + "_p50_us"),
                 bare = Recorded("bare16_" + by + "_p50_us");
    report.Row({"`" + by + "`", Fixed(p50, 1) + " µs",
                Fixed(Recorded("latest10_" + by + "_p99_us"), 1) + " µs", Fixed(bare, 1) + " µs",
                Fixed(Recorded("bare16_" + by + "_p99_us"), 1) + " µs", Fixed(p50 / bare, 2)});
  }
  if (Recorded("bare_visited_record_p50_us") > 0) {
    report.Note(
        "With `salt_by: record` an id's events spread over every salt, and most ids have "
        "fewer than 10 events in the newest (partly filled) bucket, so latest-10 visits the "
        "next bucket too. Each bucket's id filter tells which salts hold the id and how new "
        "their rows can be: latest-10 skips the others, and in the next bucket the salts "
        "whose rows are too old for the answer (" +
        Fixed(Recorded("latest10_record_seeks"), 1) +
        " seeks per query). A bare seek in every salt holding the id in the buckets it visits (" +
        Fixed(Recorded("bare_visited_record_seeks"), 1) +
        " per query, fresh iterators, one key each) takes " +
        Fixed(Recorded("bare_visited_record_p50_us"), 1) + " µs p50: latest-10 is " +
        Fixed(Recorded("latest10_record_p50_us") / Recorded("bare_visited_record_p50_us"), 2) +
        "x that floor.");
  }
  report.Write();
  return 0;
}
