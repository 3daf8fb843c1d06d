// How do the store's write rate and latest-10 latency change as the store grows from 100k to 10M
// events inside one hot window?
//
// One store (EventStore + QueryEngine in this process, 16 salts, salt_by record, the default
// options) grows in steps to 100k, 300k, 1M, 3M and 10M events. Each step's new events are spread
// over the same 9 minutes of event time (so every bucket of the 10-minute window grows) and over
// 16 partitions with offsets continuing from the step before. Ids grow with the store: after a
// step of E events they are drawn uniformly from dev-0000001..dev-(E/100), so there are 100
// events per id on average at every size and a latest-10 answer has the same shape throughout;
// what changes is only how much data sits around it.
//
// Per step: the write rate of that step's events (time spent in EventStore::Write, batches of
// 5000; generating and encoding them is not timed), then the store is reopened so every step is
// queried from table files (as latest_bench does), and the disk bytes. Then latest-10 on one
// client thread, twice:
//  - first touch: one query per id of the step, in random order, right after the reopen. Every
//    block it reads is read for the first time (from the page cache, not the block cache): what
//    a device's first query after a restart costs.
//  - steady state: random ids of the step again, now that each has been asked once. This is the
//    service's usual state (dashboards poll the same devices) and the figure the ratios use.
// The baselines are the first step (100k events) and the 1M step (docs/BENCHMARKS.md: latest-10 at
// 10M within 2x of 1M); the first-touch ratio is printed beside them.
//
// The 1M step and the last are also timed in turns, which is the figure the 10M / 1M ratio uses:
// the store is copied as it is at the 1M step, and once the last step is measured both are open
// side by side and take turns over 20 rounds of latest-10 (alternating which goes first). Measured
// a minute apart, the same code gave 10M / 1M 2.37, 1.79 and 1.25 in three runs back to back: the
// 1M p50 alone moved between 29 and 47 us with the spells of this shared VM.
//
//   scaling_bench [--max-events N] [--queries Q]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/logging.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kSteps[] = {100'000, 300'000, 1'000'000, 3'000'000, 10'000'000};
// The second baseline: latest-10 at 10M events should stay within 2x of this size.
constexpr size_t kMidStep = 1'000'000;
constexpr size_t kEventsPerId = 100;
constexpr size_t kBatchEvents = 5000;  // ingest.batch_max_events' default
// Events generated and encoded (untimed) before they are written (timed): bounds memory to about
// 60 MB whatever the step size.
constexpr size_t kChunkEvents = 250'000;
constexpr int kPartitions = 16;

struct Flags {
  size_t max_events = 10'000'000;
  int queries = 5000;
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--max-events") == 0)
      flags.max_events = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--queries") == 0) flags.queries = std::atoi(argv[i + 1]);
  }
  return flags;
}

void Die(const std::string& what) {
  std::fprintf(stderr, "scaling_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string DeviceId(size_t index) {
  char id[32];
  std::snprintf(id, sizeof(id), "dev-%07zu", index);
  return id;
}

// Produces the events of each step as store batches. Offsets continue across steps, so the store
// never takes a later step's rows for replayed duplicates. Holds no store: the benchmark reopens
// it between steps.
class StepEvents {
 public:
  StepEvents() : next_offset_(kPartitions, 0) {}

  // Events [begin, end) of a step of `step_events` events over ids 1..ids, encoded for `store`
  // into batches.
  std::vector<store::WriteBatchInput> Batches(store::EventStore* store, size_t begin, size_t end,
                                              size_t step_events, size_t ids, int64_t now_ms,
                                              int64_t span_ms) {
    const uint16_t topic = *store->TopicNumber("events");
    std::vector<store::WriteBatchInput> batches;
    for (size_t i = begin; i < end; i += kBatchEvents) {
      store::WriteBatchInput batch;
      batch.rows.reserve(kBatchEvents);
      for (size_t j = i; j < std::min(end, i + kBatchEvents); ++j) {
        const int64_t ts_ms =
            now_ms - span_ms + static_cast<int64_t>(j * static_cast<size_t>(span_ms) / step_events);
        AddEvent(*store, topic, DeviceId(1 + rng_() % ids), ts_ms, &batch);
      }
      batches.push_back(std::move(batch));
    }
    return batches;
  }

 private:
  void AddEvent(const store::EventStore& store, uint16_t topic, const std::string& id,
                int64_t ts_ms, store::WriteBatchInput* batch) {
    const int32_t partition = static_cast<int32_t>(written_++ % kPartitions);
    const int64_t offset = next_offset_[static_cast<size_t>(partition)]++;
    char payload[160];
    const int n = std::snprintf(
        payload, sizeof(payload),
        "{\"event_id\":\"%s\",\"ts\":%lld,\"temp\":%.2f,\"humidity\":%.2f,\"battery\":%d}",
        id.c_str(), static_cast<long long>(ts_ms), 15.0 + (rng_() % 2000) / 100.0,
        30.0 + (rng_() % 4000) / 100.0, static_cast<int>(rng_() % 100));
    std::string value(payload, static_cast<size_t>(n));
    value.resize(100, ' ');  // 100-byte payloads, as in the other store benchmarks
    keying::RowKey key{store.salter().SaltOf("events", partition, offset, id),
                       keying::IdHash(id),
                       ts_ms,
                       topic,
                       partition,
                       offset};
    batch->rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, value)});
    batch->next_offsets[store::TopicPartition{"events", partition}] = offset + 1;
  }

  std::vector<int64_t> next_offset_;
  size_t written_ = 0;
  std::mt19937_64 rng_{42};
};

struct StepResult {
  size_t events = 0;  // in the store after the step
  size_t ids = 0;
  double write_events_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double events_per_query = 0;
  double first_touch_p50_us = 0;  // one query per id, right after the reopen
  double first_touch_p99_us = 0;
  uint64_t disk_bytes = 0;
  double step_seconds = 0;  // generation, writes, reopen and queries
};

// Writes events [from, to) of the store in chunks; returns the seconds spent in Write.
double WriteStep(StepEvents* gen, store::EventStore* store, size_t from, size_t to,
                 const DataSpec& spec) {
  const size_t step_events = to - from;
  const size_t ids = to / kEventsPerId;
  double write_seconds = 0;
  for (size_t begin = 0; begin < step_events; begin += kChunkEvents) {
    const size_t end = std::min(step_events, begin + kChunkEvents);
    const auto batches =
        gen->Batches(store, begin, end, step_events, ids, spec.now_ms, spec.span_ms);
    const Clock::time_point start = Clock::now();
    for (const store::WriteBatchInput& batch : batches) {
      store::WriteOutcome outcome;
      const Status s = store->Write(batch, &outcome);
      if (!s.ok()) Die(s.ToString());
      if (outcome.stored != batch.rows.size()) Die("a batch was not stored whole");
    }
    write_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  return write_seconds;
}

// latest-10 of `id_numbers` on `engine`, one query each; returns the latencies in microseconds
// and adds the events found to `found`.
std::vector<double> TimeLatest(query::QueryEngine* engine, const std::vector<size_t>& id_numbers,
                               size_t* found) {
  std::vector<double> micros;
  micros.reserve(id_numbers.size());
  for (size_t n : id_numbers) {
    const std::string id = DeviceId(n);
    const Clock::time_point start = Clock::now();
    auto events = engine->Latest(id, 10);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (!events.ok()) Die(events.status().ToString());
    *found += events->size();
  }
  return micros;
}

// First touch (every id of the step once, shuffled), then `queries` random ids of the step, on
// this thread; fills the latency fields.
void MeasureLatest(store::EventStore* store, size_t ids, int queries, StepResult* result) {
  query::QueryEngine engine(store, StorePathOptions());
  std::mt19937_64 rng(7);
  std::vector<size_t> every_id(ids);
  for (size_t i = 0; i < ids; ++i) every_id[i] = 1 + i;
  std::shuffle(every_id.begin(), every_id.end(), rng);
  size_t found = 0;
  std::vector<double> first = TimeLatest(&engine, every_id, &found);
  result->first_touch_p50_us = Percentile(&first, 50);
  result->first_touch_p99_us = Percentile(&first, 99);
  if (static_cast<double>(found) < 9.9 * static_cast<double>(ids)) {
    Die("first-touch latest-10 answers hold fewer than 10 events: the data is not as planned");
  }

  std::vector<size_t> random_ids(static_cast<size_t>(queries));
  for (size_t& n : random_ids) n = 1 + rng() % ids;
  found = 0;
  std::vector<double> steady = TimeLatest(&engine, random_ids, &found);
  result->p50_us = Percentile(&steady, 50);
  result->p99_us = Percentile(&steady, 99);
  result->events_per_query = static_cast<double>(found) / queries;
}

// Rounds of the in-turns comparison, and queries per store per round. Rounds of 250 queries made
// the 10M store 15-20 us slower than in its own step (CPU caches refilled after each of the 1M
// store's turns); 1000 per round keep a turn long enough (about 50 ms) for that to fade.
constexpr int kTurnRounds = 20;
constexpr size_t kTurnQueries = 1000;

struct TurnsResult {
  double mid_p50_us = 0, mid_p99_us = 0;    // the store copied at the 1M step
  double last_p50_us = 0, last_p99_us = 0;  // the store after the last step
};

// latest-10 on `mid` (ids 1..mid_ids) and `last` (ids 1..last_ids), in turns: kTurnRounds rounds
// of kTurnQueries random ids on each, the one going first alternating. `mid` gets a first
// touch of each of its ids beforehand, as every step does, since it was just reopened.
TurnsResult TimeInTurns(store::EventStore* mid, size_t mid_ids, store::EventStore* last,
                        size_t last_ids) {
  query::QueryEngine mid_engine(mid, StorePathOptions());
  query::QueryEngine last_engine(last, StorePathOptions());
  std::mt19937_64 rng(11);
  std::vector<size_t> every_id(mid_ids);
  for (size_t i = 0; i < mid_ids; ++i) every_id[i] = 1 + i;
  std::shuffle(every_id.begin(), every_id.end(), rng);
  size_t found = 0;
  TimeLatest(&mid_engine, every_id, &found);
  const size_t per_round = kTurnQueries;
  std::vector<double> mid_us, last_us;
  for (int round = 0; round < kTurnRounds; ++round) {
    std::vector<size_t> mid_round(per_round), last_round(per_round);
    for (size_t& n : mid_round) n = 1 + rng() % mid_ids;
    for (size_t& n : last_round) n = 1 + rng() % last_ids;
    for (int turn = 0; turn < 2; ++turn) {
      const bool mid_turn = (turn + round) % 2 == 0;
      found = 0;
      std::vector<double> us = TimeLatest(mid_turn ? &mid_engine : &last_engine,
                                          mid_turn ? mid_round : last_round, &found);
      if (found < 10 * per_round) Die("latest-10 answers in turns hold fewer than 10 events");
      std::vector<double>& into = mid_turn ? mid_us : last_us;
      into.insert(into.end(), us.begin(), us.end());
    }
  }
  TurnsResult r;
  r.mid_p50_us = Percentile(&mid_us, 50);
  r.mid_p99_us = Percentile(&mid_us, 99);
  r.last_p50_us = Percentile(&last_us, 50);
  r.last_p99_us = Percentile(&last_us, 99);
  return r;
}

std::string Csv(const std::vector<StepResult>& steps) {
  std::ostringstream csv;
  csv << "events,ids,write_events_per_s,latest10_p50_us,latest10_p99_us,disk_bytes,"
         "first_touch_p50_us,first_touch_p99_us\n";
  for (const StepResult& s : steps) {
    csv << s.events << ',' << s.ids << ',' << s.write_events_per_s << ',' << s.p50_us << ','
        << s.p99_us << ',' << s.disk_bytes << ',' << s.first_touch_p50_us << ','
        << s.first_touch_p99_us << '\n';
  }
  return csv.str();
}

std::string Markdown(const std::vector<StepResult>& steps, const TurnsResult* turns, int queries,
                     double run_seconds) {
  std::ostringstream md;
  char line[256];
  md << "### Scaling with the store's size (`bench/scaling_bench`)\n\n"
     << "One store (16 salts, `salt_by: record`, default options) grown in steps to 10M events, "
        "each "
        "step's events spread over the same 9 minutes and 16 partitions, ids growing with the "
        "store "
        "(100 events per id on average); per step the write rate of that step's events "
        "(`EventStore::Write`, "
        "batches of 5000), then, after a reopen, latest-10 on one client thread: first touch "
        "(every id of the step once, right after the reopen: each block is read for the first "
        "time) and steady state ("
     << queries
     << " random ids once each id has been asked: the figures the ratios use).\n\n"
        "| events in store | ids | write rate of the step (k events/s) | latest-10 p50 (us) | "
        "latest-10 p99 (us) | first touch p50 / p99 (us) "
        "| disk (MB) |\n|---|---|---|---|---|---|---|\n";
  for (const StepResult& s : steps) {
    std::snprintf(line, sizeof(line), "| %zu | %zu | %.1f | %.1f | %.1f | %.1f / %.1f | %.1f |\n",
                  s.events, s.ids, s.write_events_per_s / 1000, s.p50_us, s.p99_us,
                  s.first_touch_p50_us, s.first_touch_p99_us, s.disk_bytes / 1e6);
    md << line;
  }
  if (steps.size() > 1) {
    std::snprintf(line, sizeof(line),
                  "\nFrom %zu to %zu events: latest-10 p99 x%.2f, p50 x%.2f, write rate x%.2f.\n",
                  steps.front().events, steps.back().events,
                  steps.back().p99_us / steps.front().p99_us,
                  steps.back().p50_us / steps.front().p50_us,
                  steps.back().write_events_per_s / steps.front().write_events_per_s);
    md << line;
  }
  for (const StepResult& s : steps) {
    if (s.events != kMidStep || s.events == steps.back().events) continue;
    std::snprintf(line, sizeof(line), "From %zu to %zu events: latest-10 p99 x%.2f, p50 x%.2f.\n",
                  s.events, steps.back().events, steps.back().p99_us / s.p99_us,
                  steps.back().p50_us / s.p50_us);
    md << line;
  }
  if (turns != nullptr) {
    std::snprintf(
        line, sizeof(line),
        "\nTimed in turns (the store as it was at %zu events, copied, beside the store at "
        "%zu; %d rounds of %zu latest-10 on each, alternating which goes first): p50 %.1f / "
        "%.1f us = **x%.2f**, p99 %.1f / %.1f us = x%.2f.\n",
        kMidStep, steps.back().events, kTurnRounds, kTurnQueries, turns->last_p50_us,
        turns->mid_p50_us, turns->last_p50_us / turns->mid_p50_us, turns->last_p99_us,
        turns->mid_p99_us, turns->last_p99_us / turns->mid_p99_us);
    md << line;
  }
  std::snprintf(line, sizeof(line), "\n![scaling](img/scaling.png)\n\nRun time: %.0f s.\n",
                run_seconds);
  md << line;
  return md.str();
}

int Main(int argc, char** argv) {
  InitLogging("warn");
  const Flags flags = ParseFlags(argc, argv);
  const Clock::time_point run_start = Clock::now();
  ScratchDir dir;
  const DataSpec spec;  // now_ms and the 9-minute span
  ManualClock clock(spec.now_ms);
  store::StoreOptions options;
  options.path = dir.path() + "/store";
  options.wall_clock = &clock;
  auto opened = store::EventStore::Open(options);
  if (!opened.ok()) Die(opened.status().ToString());
  std::unique_ptr<store::EventStore> store = std::move(*opened);
  StepEvents gen;
  const std::string mid_path = dir.path() + "/store-mid";

  std::printf(
      "scaling_bench: store grown to %zu events in steps, 100 events per id, %d latest-10 queries "
      "per step\n",
      flags.max_events, flags.queries);
  std::vector<StepResult> steps;
  size_t stored = 0;
  for (size_t target : kSteps) {
    if (target > flags.max_events) break;
    const Clock::time_point step_start = Clock::now();
    StepResult r;
    r.events = target;
    r.ids = target / kEventsPerId;
    r.write_events_per_s =
        static_cast<double>(target - stored) / WriteStep(&gen, store.get(), stored, target, spec);
    stored = target;
    // Reopen: what the step left in the write-ahead log goes to table files, as at every step.
    store.reset();
    if (target == kMidStep && flags.max_events > kMidStep) {
      // Copied closed, as the reopen below finds it, for the comparison in turns at the end.
      std::error_code ec;
      std::filesystem::copy(options.path, mid_path, std::filesystem::copy_options::recursive, ec);
      if (ec) Die("copying the store at " + std::to_string(target) + " events: " + ec.message());
    }
    opened = store::EventStore::Open(options);
    if (!opened.ok()) Die(opened.status().ToString());
    store = std::move(*opened);
    // The steady state: closed buckets in one sorted run each, as a running service has them.
    store->WaitForCompactions();
    MeasureLatest(store.get(), r.ids, flags.queries, &r);
    r.disk_bytes = store->Stats().disk_bytes;
    r.step_seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    std::printf(
        "%9zu events (%7zu ids): step written at %8.0f events/s | latest-10 p50 %7.1f us  p99 "
        "%7.1f us (%.1f events/answer; first touch p50 %7.1f us p99 %7.1f us) | disk %7.1f MB "
        "| step %.1f s\n",
        r.events, r.ids, r.write_events_per_s, r.p50_us, r.p99_us, r.events_per_query,
        r.first_touch_p50_us, r.first_touch_p99_us, r.disk_bytes / 1e6, r.step_seconds);
    std::fflush(stdout);
    if (r.events_per_query < 9.9)
      Die("latest-10 answers hold fewer than 10 events: the data is not as planned");
    steps.push_back(r);
  }
  if (steps.empty()) Die("--max-events is below the first step");
  std::unique_ptr<TurnsResult> turns;
  if (steps.back().events > kMidStep && std::filesystem::exists(mid_path)) {
    store::StoreOptions mid_options = options;
    mid_options.path = mid_path;
    auto mid = store::EventStore::Open(mid_options);
    if (!mid.ok()) Die(mid.status().ToString());
    (*mid)->WaitForCompactions();
    turns = std::make_unique<TurnsResult>(
        TimeInTurns(mid->get(), kMidStep / kEventsPerId, store.get(), steps.back().ids));
    std::printf("in turns: latest-10 p50 %.1f us at %zu events, %.1f us at %zu (p99 %.1f, %.1f)\n",
                turns->mid_p50_us, kMidStep, turns->last_p50_us, steps.back().events,
                turns->mid_p99_us, turns->last_p99_us);
  }
  store.reset();

  const std::string first = std::to_string(steps.front().events),
                    last = std::to_string(steps.back().events);
  Record("latest10_p99_us_at_" + first, steps.front().p99_us);
  Record("latest10_p99_us_at_" + last, steps.back().p99_us);
  Record("latest10_p50_us_at_" + first, steps.front().p50_us);
  Record("latest10_p50_us_at_" + last, steps.back().p50_us);
  Record("write_events_per_s_at_" + first, steps.front().write_events_per_s);
  Record("write_events_per_s_at_" + last, steps.back().write_events_per_s);
  std::printf("\n");
  PrintRatio("scaling: latest-10 p99 at " + last + " / at " + first, "latest10_p99_us_at_" + last,
             "latest10_p99_us_at_" + first);
  PrintRatio("scaling: latest-10 p50 at " + last + " / at " + first, "latest10_p50_us_at_" + last,
             "latest10_p50_us_at_" + first);
  PrintRatio("scaling: write rate at " + last + " / at " + first, "write_events_per_s_at_" + last,
             "write_events_per_s_at_" + first);
  // The 10M / 1M figure: latest-10 at the largest size against 1M events, 10x fewer, timed in
  // turns. The steps' own ratio (measured a minute apart) is printed after it.
  for (const StepResult& s : steps) {
    if (s.events != kMidStep || s.events == steps.back().events) continue;
    const std::string mid = std::to_string(s.events);
    if (turns != nullptr) {
      Record("turns_latest10_p50_us_at_" + mid, turns->mid_p50_us);
      Record("turns_latest10_p50_us_at_" + last, turns->last_p50_us);
      Record("turns_latest10_p99_us_at_" + mid, turns->mid_p99_us);
      Record("turns_latest10_p99_us_at_" + last, turns->last_p99_us);
      PrintRatio("scaling: latest-10 p50 at " + last + " / at " + mid + ", in turns",
                 "turns_latest10_p50_us_at_" + last, "turns_latest10_p50_us_at_" + mid);
      PrintRatio("scaling: latest-10 p99 at " + last + " / at " + mid + ", in turns",
                 "turns_latest10_p99_us_at_" + last, "turns_latest10_p99_us_at_" + mid);
    }
    Record("latest10_p50_us_at_" + mid, s.p50_us);
    Record("latest10_p99_us_at_" + mid, s.p99_us);
    PrintRatio("scaling: latest-10 p50 at " + last + " / at " + mid + ", a minute apart",
               "latest10_p50_us_at_" + last, "latest10_p50_us_at_" + mid);
    PrintRatio("scaling: latest-10 p99 at " + last + " / at " + mid + ", a minute apart",
               "latest10_p99_us_at_" + last, "latest10_p99_us_at_" + mid);
    Record("first_touch_p50_us_at_" + mid, s.first_touch_p50_us);
    Record("first_touch_p50_us_at_" + last, steps.back().first_touch_p50_us);
    PrintRatio("scaling: first-touch latest-10 p50 at " + last + " / at " + mid,
               "first_touch_p50_us_at_" + last, "first_touch_p50_us_at_" + mid);
  }

  const double run_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  std::printf("scaling_bench: run time %.0f s\n", run_seconds);
  if (!WriteOut("scaling.csv", Csv(steps))) return 1;
  if (!WriteOut("scaling_bench.md", Markdown(steps, turns.get(), flags.queries, run_seconds)))
    return 1;
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
