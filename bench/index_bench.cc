// What the secondary index costs and buys (CONTRACT.md, `index.fields`).
//
// Write cost: the same events written with 0, 1 and 3 indexed fields, as a ratio to no index (aim:
// one field at most 1.3x). Queries: index latest-10 and a 1-minute index range
// (query/index_query.h) against the same answers computed by a scan of the window with a filter on
// the field, which is what answering "events of site X" costs without the index. Each answer is
// checked equal to the scan's before it is timed.
//
// HOTROW_INDEX_BENCH_EVENTS sets the event count (default: bench_support's 1M). The write runs
// interleave the three configurations (0, 1, 3, 0, 1, 3, ...) so that load from elsewhere on the
// machine falls on all of them alike; each keeps its best run.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bench/bench_support.h"
#include "keying/index_key.h"
#include "query/index_query.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

constexpr size_t kBatchEvents = 5000;
constexpr int kSites = 200;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The indexed fields of an event, derived from its id and offset so that a scan can filter on them.
std::string SiteOf(std::string_view id) {
  std::string site = "site-";  // appended, not "site-" + ...: GCC 12 warns (-Wrestrict) on that
  site.append(std::to_string(keying::IdHash(id) % kSites));
  return site;
}
std::vector<keying::IndexEntry> EntriesOf(const GeneratedEvent& e, int fields) {
  std::vector<keying::IndexEntry> out;
  if (fields >= 1) out.push_back({"site", SiteOf(e.id)});
  if (fields >= 2) out.push_back({"type", e.offset % 7 == 0 ? "alarm" : "info"});
  if (fields >= 3) out.push_back({"region", std::to_string(e.partition % 5)});
  return out;
}
const std::vector<std::string> kFields = {"site", "type", "region"};

std::unique_ptr<store::EventStore> OpenStore(const std::string& path, const Clock* clock,
                                             int fields) {
  store::StoreOptions options;
  options.path = path;
  options.wall_clock = clock;
  options.salts = 16;
  options.index_fields.assign(kFields.begin(), kFields.begin() + fields);
  return std::move(store::EventStore::Open(options).value());
}

std::vector<store::WriteBatchInput> Batches(store::EventStore* store,
                                            const std::vector<GeneratedEvent>& events, int fields) {
  auto batches = MakeBatches(store, events, kBatchEvents);
  size_t i = 0;
  for (auto& batch : batches) {
    for (auto& row : batch.rows) row.index = EntriesOf(events[i++], fields);
  }
  return batches;
}

// Events/s of one fresh store written whole.
double WriteRate(const std::vector<GeneratedEvent>& events, const Clock* clock, int fields) {
  double best = 0;
  {
    ScratchDir dir;
    auto store = OpenStore(dir.path() + "/store", clock, fields);
    auto batches = Batches(store.get(), events, fields);
    const auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) {
      store::WriteOutcome outcome;
      if (!store->Write(batch, &outcome).ok()) std::abort();
    }
    best = std::max(best, static_cast<double>(events.size()) / Seconds(start));
  }
  return best;
}

auto Newer(const query::Event& a, const query::Event& b) {
  return std::tie(a.ts_ms, a.topic, a.partition, a.offset) >
         std::tie(b.ts_ms, b.topic, b.partition, b.offset);
}

}  // namespace
}  // namespace hotrow::bench

int main() {
  using namespace hotrow;
  using namespace hotrow::bench;
  DataSpec spec;
  if (const char* n = std::getenv("HOTROW_INDEX_BENCH_EVENTS"))
    spec.events = std::strtoull(n, nullptr, 10);
  spec.hot_events = std::min<size_t>(spec.hot_events, spec.events / 10);
  const auto events = GenerateEvents(spec);
  ManualClock clock(spec.now_ms);

  // ---- write cost ----
  const int runs = 3;
  double w0 = 0, w1 = 0, w3 = 0;
  for (int r = 0; r < runs; ++r) {
    w0 = std::max(w0, WriteRate(events, &clock, 0));
    w1 = std::max(w1, WriteRate(events, &clock, 1));
    w3 = std::max(w3, WriteRate(events, &clock, 3));
  }
  Record("write_0_fields_s_per_event", 1 / w0);
  Record("write_1_field_s_per_event", 1 / w1);
  Record("write_3_fields_s_per_event", 1 / w3);

  // ---- queries, on a store with one indexed field ----
  ScratchDir dir;
  auto store = OpenStore(dir.path() + "/store", &clock, 1);
  for (const auto& batch : Batches(store.get(), events, 1)) {
    store::WriteOutcome outcome;
    if (!store->Write(batch, &outcome).ok()) std::abort();
  }
  query::QueryEngine engine(store.get(), query::QueryOptions{});
  const query::IndexQuery index(store.get(), nullptr);
  const int64_t range_to = spec.now_ms - 4 * 60 * 1000, range_from = range_to - 60 * 1000;
  std::vector<double> latest_index, latest_scan, range_index, range_scan;
  size_t range_events = 0;
  const int queries = 20;
  for (int q = 0; q < queries; ++q) {
    std::string site = "site-";
    site.append(std::to_string((q * 37) % kSites));
    // The scan with a filter: the whole window for latest-10, one minute for the range.
    auto start = std::chrono::steady_clock::now();
    std::vector<query::Event> all;
    if (!engine
             .Scan(0, INT64_MAX, query::kNoLimit,
                   [&](const query::Event& e) {
                     if (SiteOf(e.id) == site) all.push_back(e);
                     return true;
                   })
             .ok())
      std::abort();
    std::sort(all.begin(), all.end(), Newer);
    if (all.size() > 10) all.resize(10);
    latest_scan.push_back(Seconds(start));

    start = std::chrono::steady_clock::now();
    auto latest = index.Latest("site", site, 10);
    latest_index.push_back(Seconds(start));
    if (!latest.ok() || latest->events != all) {
      std::fprintf(stderr, "index latest-10 differs from the scan for %s\n", site.c_str());
      return 1;
    }

    start = std::chrono::steady_clock::now();
    std::vector<query::Event> minute;
    if (!engine
             .Scan(range_from, range_to, query::kNoLimit,
                   [&](const query::Event& e) {
                     if (SiteOf(e.id) == site) minute.push_back(e);
                     return true;
                   })
             .ok())
      std::abort();
    std::sort(minute.begin(), minute.end(), Newer);
    range_scan.push_back(Seconds(start));

    start = std::chrono::steady_clock::now();
    auto range =
        index.Range("site", site, range_from, range_to, query::kMaxRangeLimit, query::Order::kDesc);
    range_index.push_back(Seconds(start));
    if (!range.ok() || range->events != minute) {
      std::fprintf(stderr, "index range differs from the scan for %s\n", site.c_str());
      return 1;
    }
    range_events += minute.size();
  }
  const double li = Percentile(&latest_index, 50), ls = Percentile(&latest_scan, 50);
  const double ri = Percentile(&range_index, 50), rs = Percentile(&range_scan, 50);
  Record("index_latest10_p50_s", li);
  Record("scan_filter_latest10_p50_s", ls);
  Record("index_range_1min_p50_s", ri);
  Record("scan_filter_range_1min_p50_s", rs);

  std::printf(
      "\n%zu events, 100-byte payloads, 16 salts, %d sites; write: best of %d; queries: "
      "p50 of %d\n",
      events.size(), kSites, runs, queries);
  PrintRatio("write time, 1 indexed field / none", "write_1_field_s_per_event",
             "write_0_fields_s_per_event");
  PrintRatio("write time, 3 indexed fields / none", "write_3_fields_s_per_event",
             "write_0_fields_s_per_event");
  PrintRatio("scan+filter latest-10 / index latest-10 (s)", "scan_filter_latest10_p50_s",
             "index_latest10_p50_s");
  PrintRatio("scan+filter 1-min range / index 1-min range (s)", "scan_filter_range_1min_p50_s",
             "index_range_1min_p50_s");

  Report report(
      "index_bench", "Secondary index",
      std::to_string(events.size()) +
          " events (bench_support's data: 100-byte JSON payloads, "
          "9 minutes, 16 partitions, 16 salts), each with a `site` among " +
          std::to_string(kSites) +
          " values, plus `type` and `region` for 3 fields. Write: "
          "`EventStore::Write` in batches of 5000 with 0, 1 and 3 indexed fields, best of " +
          std::to_string(runs) + ". Queries: p50 of " + std::to_string(queries) +
          " sites, the index (`query/index_query.h`) against a scan of the same span "
          "with a filter on the field; every answer checked equal first.");
  report.Columns({"measure", "value", "ratio"});
  report.Row({"write, no index", Rate(w0), "1"});
  report.Row({"write, 1 indexed field", Rate(w1), Fixed(w0 / w1, 2) + "x the time"});
  report.Row({"write, 3 indexed fields", Rate(w3), Fixed(w0 / w3, 2) + "x the time"});
  report.Row({"latest-10 by index", Fixed(li * 1e3, 3) + " ms", "1"});
  report.Row({"latest-10 by scan + filter", Fixed(ls * 1e3, 3) + " ms", Fixed(ls / li, 0) + "x"});
  report.Row({"1-minute range by index (" + std::to_string(range_events / queries) + " events)",
              Fixed(ri * 1e3, 3) + " ms", "1"});
  report.Row(
      {"1-minute range by scan + filter", Fixed(rs * 1e3, 3) + " ms", Fixed(rs / ri, 1) + "x"});
  report.Note(
      "A write puts one index posting per (field, value) and second of its batch, listing "
      "the events by their 31-byte data keys (keying/index_key.h): it points at the events "
      "rather than copying their payloads, so a query reads the value's postings, orders "
      "their events and then reads only the events it returns, through the same RocksDB "
      "iterator (one snapshot).");
  report.Write();
  return 0;
}
