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
  f->engine = std::make_unique<query::QueryEngine>(f->store.get(), query::QueryOptions());
  std::mt19937_64 rng(7);
  for (int i = 0; i < Queries(); ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "dev-%06zu", static_cast<size_t>(1 + rng() % spec.ids));
    f->ids.push_back(id);
  }
  return f;
}

template <typename Fn>
void MeasureLatency(benchmark::State& state, const std::string& name, Fn&& one_query) {
  const int queries = Queries();
  std::vector<double> micros;
  micros.reserve(queries);
  for (auto _ : state) {
    micros.clear();
#ifdef HOTROW_CALLGRIND
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
#endif
    for (int i = 0; i < queries; ++i) {
      const auto start = std::chrono::steady_clock::now();
      one_query(i);
      micros.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
    }
#ifdef HOTROW_CALLGRIND
    CALLGRIND_DUMP_STATS_AT(name.c_str());
    CALLGRIND_STOP_INSTRUMENTATION;
#endif
  }
  const double p50 = Percentile(&micros, 50), p99 = Percentile(&micros, 99);
  state.counters["p50_us"] = p50;
  state.counters["p99_us"] = p99;
  state.SetItemsProcessed(state.iterations() * queries);
  Record(name + "_p50_us", p50);
  Record(name + "_p99_us", p99);
}

void BM_Latest10(benchmark::State& state, keying::SaltBy by) {
  Fixture* f = Get(by);
  const query::QueryWorkStats before = f->engine->Work();
  size_t found = 0;
  MeasureLatency(state, std::string("latest10_") + std::string(keying::SaltByName(by)), [&](int i) {
    auto events = f->engine->Latest(f->ids[static_cast<size_t>(i)], 10);
    found += events.ok() ? events->size() : 0;
  });
  state.counters["events_per_query"] =
      static_cast<double>(found) / (Queries() * state.iterations());
  // Where the time goes: store work per query (the floor is 16 seeks and no cursor creation).
  const query::QueryWorkStats after = f->engine->Work();
  const double queries = static_cast<double>(Queries()) * static_cast<double>(state.iterations());
  const std::string by_name(keying::SaltByName(by));
  Record("latest10_" + by_name + "_seeks",
         static_cast<double>(after.seeks - before.seeks) / queries);
  Record("latest10_" + by_name + "_rows",
         static_cast<double>(after.rows_read - before.rows_read) / queries);
  Record("latest10_" + by_name + "_cursors",
         static_cast<double>(after.iterators_created - before.iterators_created) / queries);
}

// The floor: one seek per salt in the newest bucket, reading the first key, on this thread.
void BM_Bare16Seeks(benchmark::State& state, keying::SaltBy by) {
  Fixture* f = Get(by);
  auto newest = f->store->Buckets().back();
  size_t found = 0;
  MeasureLatency(state, std::string("bare16_") + std::string(keying::SaltByName(by)), [&](int i) {
    const uint64_t hash = keying::IdHash(f->ids[static_cast<size_t>(i)]);
    for (uint8_t salt = 0; salt < 16; ++salt) {
      auto it = newest->NewIterator(keying::IdKeyRange(salt, hash), true);
      it->SeekToFirst();
      if (it->Valid()) found += it->key().size() > 0;
    }
  });
  benchmark::DoNotOptimize(found);
}

// A second floor, for salt_by record: the bare seeks latest-10 itself has to make, each on a fresh
// iterator, reading one key: in every bucket it visits (newest first, until the buckets seen hold
// 10 events of the id), the salts the bucket's id filter does not rule out (Bucket::MayHoldId).
// Most ids have fewer than 10 events in the newest (partly filled) bucket, so latest-10 visits the
// next one too; this floor makes the same seeks with no merge, no decoding, no answer. Which
// buckets each query visits is counted beforehand, untimed, by reading the id's rows.
void BM_BareVisitedSeeks(benchmark::State& state) {
  Fixture* f = Get(keying::SaltBy::kRecord);
  auto buckets = f->store->Buckets();
  std::reverse(buckets.begin(), buckets.end());  // newest first
  std::vector<size_t> visited;
  for (int i = 0; i < Queries(); ++i) {
    const uint64_t hash = keying::IdHash(f->ids[static_cast<size_t>(i)]);
    size_t events = 0, b = 0;
    while (b < buckets.size() && events < 10) {
      for (uint8_t salt = 0; salt < 16; ++salt) {
        auto it = buckets[b]->NewIterator(keying::IdKeyRange(salt, hash), true);
        for (it->SeekToFirst(); it->Valid(); it->Next()) ++events;
      }
      ++b;
    }
    visited.push_back(b);
  }
  size_t found = 0, seeks = 0;
  MeasureLatency(state, "bare_visited_record", [&](int i) {
    const uint64_t hash = keying::IdHash(f->ids[static_cast<size_t>(i)]);
    for (size_t b = 0; b < visited[static_cast<size_t>(i)]; ++b) {
      for (uint8_t salt = 0; salt < 16; ++salt) {
        if (!buckets[b]->MayHoldId(salt, hash)) continue;
        auto it = buckets[b]->NewIterator(keying::IdKeyRange(salt, hash), true);
        it->SeekToFirst();
        ++seeks;
        if (it->Valid()) found += it->key().size() > 0;
      }
    }
  });
  benchmark::DoNotOptimize(found);
  Record("bare_visited_record_seeks", static_cast<double>(seeks) / Queries());
}

BENCHMARK_CAPTURE(BM_Bare16Seeks, record, keying::SaltBy::kRecord)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BareVisitedSeeks)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Latest10, record, keying::SaltBy::kRecord)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Bare16Seeks, id, keying::SaltBy::kId)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Latest10, id, keying::SaltBy::kId)
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
          "salt_by=record the seeks latest-10 makes, done bare: %.1f per query, p50 %8.1f "
          "us  p99 %8.1f us\n",
          Recorded("bare_visited_record_seeks"), Recorded("bare_visited_record_p50_us"),
          Recorded("bare_visited_record_p99_us"));
      PrintRatio("latest-10 p50 / the same seeks done bare p50, salt_by=record",
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
          "thread.");
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
        "next bucket too; in each bucket it seeks only the salts the bucket's id filter does "
        "not rule out (" +
        Fixed(Recorded("latest10_record_seeks"), 1) +
        " seeks per query). The same seeks done bare (" +
        Fixed(Recorded("bare_visited_record_seeks"), 1) +
        " per query, fresh iterators, one key each) take " +
        Fixed(Recorded("bare_visited_record_p50_us"), 1) + " µs p50: latest-10 is " +
        Fixed(Recorded("latest10_record_p50_us") / Recorded("bare_visited_record_p50_us"), 2) +
        "x that floor.");
  }
  report.Write();
  return 0;
}
