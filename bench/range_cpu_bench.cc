// What does a per-id range cost per event against a scan, on the server's side alone? The store of
// range_http_bench (ids of ~10k events, 16 salts, 10 buckets), one query thread (everything on the
// calling thread, as a connection thread runs it), the events encoded as the HTTP handlers encode
// them and the text discarded: CPU per event of a whole per-id range (RangeEncoded, limit 100000)
// against a full scan (ScanEncoded), in alternated rounds, medians.
//
// Under callgrind (`--rounds 1`, `valgrind --tool=callgrind --collect-atstart=no
// --toggle-collect='*RangeEncoded*' ...`) it gives the instructions per event, and where they go.
//
//   range_cpu_bench [--events N] [--rounds R]

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "common/logging.h"
#include "query/query_engine.h"
#include "wire/event_json.h"

namespace hotrow::bench {
namespace {

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int Main(int argc, char** argv) {
  InitLogging("warn");
  size_t events = 400'000;
  int rounds = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--events") == 0) events = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
  }
  DataSpec spec;
  spec.events = events;
  spec.ids = events / 10'000;  // ~10k events per id, as range_http_bench
  spec.hot_events = 0;
  ScratchDir dir;
  ManualClock clock(spec.now_ms);
  store::StoreOptions options;
  options.path = dir.path() + "/store";
  options.wall_clock = &clock;
  options.salts = 16;
  auto store = std::move(store::EventStore::Open(options).value());
  for (const auto& batch : MakeBatches(store.get(), GenerateEvents(spec), 5000)) {
    store::WriteOutcome outcome;
    if (!store->Write(batch, &outcome).ok()) std::abort();
  }
  store.reset();
  store = std::move(store::EventStore::Open(options).value());
  store->WaitForCompactions();

  query::QueryOptions q;
  q.threads = 1;
  q.last_cache = 0;
  query::QueryEngine engine(store.get(), q);
  // As http/query_handlers.cc encodes them.
  const query::EventEncoder range_encode = [](const query::Event& e, std::string* out) {
    out->push_back(',');
    wire::AppendEventJson(e, out);
  };
  const query::EventEncoder scan_encode = [](const query::Event& e, std::string* out) {
    wire::AppendEventJson(e, out);
    out->push_back('\n');
  };
  const int ids = static_cast<int>(std::min<size_t>(8, spec.ids));
  std::vector<double> range_ns, scan_ns;
  for (int round = 0; round < rounds; ++round) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool range_turn = (turn + round) % 2 == 0;
      uint64_t n = 0, bytes = 0;
      const double start = ThreadCpuSeconds();
      if (range_turn) {
        for (int i = 1; i <= ids; ++i) {
          char id[32];
          std::snprintf(id, sizeof(id), "dev-%06d", i);
          Status st = engine.RangeEncoded(id, 0, spec.now_ms + 1, query::kMaxRangeLimit,
                                          query::Order::kDesc, range_encode,
                                          [&](std::string_view text, int64_t k) {
                                            bytes += text.size();
                                            n += static_cast<uint64_t>(k);
                                            return true;
                                          });
          if (!st.ok()) std::abort();
        }
      } else {
        Status st = engine.ScanEncoded(0, spec.now_ms + 1, query::kNoLimit, scan_encode,
                                       [&](std::string_view text, int64_t k) {
                                         bytes += text.size();
                                         n += static_cast<uint64_t>(k);
                                         return true;
                                       });
        if (!st.ok()) std::abort();
      }
      const double ns = 1e9 * (ThreadCpuSeconds() - start) / static_cast<double>(n);
      (range_turn ? range_ns : scan_ns).push_back(ns);
    }
  }
  const double range = Percentile(&range_ns, 50), scan = Percentile(&scan_ns, 50);
  Record("range_cpu_ns_per_event", range);
  Record("scan_cpu_ns_per_event", scan);
  std::printf("CPU per event on one query thread, encoded, median of %d alternated rounds: per-id "
              "range %.0f ns, full scan %.0f ns\n",
              rounds, range, scan);
  PrintRatio("per-id range / full scan, CPU per event (1 query thread)", "range_cpu_ns_per_event",
             "scan_cpu_ns_per_event");
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
