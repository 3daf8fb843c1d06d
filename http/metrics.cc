#include "http/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

namespace hotrow::http {
namespace {

constexpr std::array<QueryKind, 6> kKinds = {QueryKind::kLatest,    QueryKind::kRange,
                                             QueryKind::kScan,      QueryKind::kLatestAll,
                                             QueryKind::kLatestIds, QueryKind::kSeries};
constexpr std::array<QueryOutcome, 5> kOutcomes = {QueryOutcome::kOk, QueryOutcome::kBadRequest,
                                                   QueryOutcome::kBusy, QueryOutcome::kError,
                                                   QueryOutcome::kCancelled};
// The `outcome` labels of hotrow_http_auth_total (http/auth.h, AuthOutcomeName).
constexpr std::array<std::string_view, 4> kAuthOutcomes = {"ok", "missing", "malformed", "wrong"};

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily NewFamily(const char* name, const char* help, MetricType type) {
  MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  return family;
}

ClientMetric Sample(double value, MetricType type, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return metric;
}

// A family with one unlabelled sample.
MetricFamily Single(const char* name, const char* help, MetricType type, double value) {
  MetricFamily family = NewFamily(name, help, type);
  family.metric.push_back(Sample(value, type));
  return family;
}

}  // namespace

std::string_view QueryKindName(QueryKind kind) {
  switch (kind) {
    case QueryKind::kLatest:
      return "latest";
    case QueryKind::kRange:
      return "range";
    case QueryKind::kScan:
      return "scan";
    case QueryKind::kLatestAll:
      return "latest_all";
    case QueryKind::kLatestIds:
      return "latest_ids";
    case QueryKind::kSeries:
      return "series";
  }
  return "unknown";
}

std::string_view QueryOutcomeName(QueryOutcome outcome) {
  switch (outcome) {
    case QueryOutcome::kOk:
      return "ok";
    case QueryOutcome::kBadRequest:
      return "bad_request";
    case QueryOutcome::kBusy:
      return "busy";
    case QueryOutcome::kError:
      return "error";
    case QueryOutcome::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

struct Metrics::Families {
  prometheus::Registry registry;
  // Indexed by kind, then outcome: resolved once so that recording takes no label lookup.
  prometheus::Counter* queries[kKinds.size()][kOutcomes.size()] = {};
  prometheus::Histogram* latency[kKinds.size()] = {};
  prometheus::Family<prometheus::Counter>* responses = nullptr;
  prometheus::Counter* auth[kAuthOutcomes.size()] = {};
  prometheus::Counter* reloads_ok = nullptr;
  prometheus::Counter* reloads_failed = nullptr;
  prometheus::Gauge* connections = nullptr;
  prometheus::Counter* connections_refused = nullptr;
  std::mutex connections_mu;
  uint64_t refused_counted = 0;  // guarded by connections_mu
  // Indexed by lane (client, peer), then SlotOutcome.
  prometheus::Counter* slots[2][3] = {};
  std::mutex responses_mu;
  std::map<int, prometheus::Counter*> responses_by_code;  // guarded by responses_mu
};

Metrics::Metrics() : families_(std::make_unique<Families>()) {
  families_->connections = &prometheus::BuildGauge()
                                .Name("hotrow_http_connections")
                                .Help("HTTP connections open now, live streams included")
                                .Register(families_->registry)
                                .Add({});
  families_->connections_refused =
      &prometheus::BuildCounter()
           .Name("hotrow_http_connections_refused_total")
           .Help("HTTP connections closed as accepted, past http.max_connections")
           .Register(families_->registry)
           .Add({});
  auto& queries = prometheus::BuildCounter()
                      .Name("hotrow_queries_total")
                      .Help("HTTP queries answered, by kind and outcome")
                      .Register(families_->registry);
  auto& latency = prometheus::BuildHistogram()
                      .Name("hotrow_query_seconds")
                      .Help("Time to answer an HTTP query, by kind (a scan: until its last event)")
                      .Register(families_->registry);
  const prometheus::Histogram::BucketBoundaries bounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  for (size_t k = 0; k < kKinds.size(); ++k) {
    const std::string kind(QueryKindName(kKinds[k]));
    for (size_t o = 0; o < kOutcomes.size(); ++o) {
      families_->queries[k][o] =
          &queries.Add({{"kind", kind}, {"outcome", std::string(QueryOutcomeName(kOutcomes[o]))}});
    }
    families_->latency[k] = &latency.Add({{"kind", kind}}, bounds);
  }
  families_->responses = &prometheus::BuildCounter()
                              .Name("hotrow_http_responses_total")
                              .Help("HTTP responses, by status code")
                              .Register(families_->registry);
  auto& auth = prometheus::BuildCounter()
                   .Name("hotrow_http_auth_total")
                   .Help("Bearer-token checks of HTTP requests, by outcome")
                   .Register(families_->registry);
  for (size_t i = 0; i < kAuthOutcomes.size(); ++i) {
    families_->auth[i] = &auth.Add({{"outcome", std::string(kAuthOutcomes[i])}});
  }
  auto& reloads = prometheus::BuildCounter()
                      .Name("hotrow_access_reloads_total")
                      .Help(
                          "Re-reads of the token, TLS and CA files (SIGHUP), by outcome; a "
                          "failed one keeps every old value")
                      .Register(families_->registry);
  families_->reloads_ok = &reloads.Add({{"outcome", "ok"}});
  families_->reloads_failed = &reloads.Add({{"outcome", "failed"}});
  auto& slots = prometheus::BuildCounter()
                    .Name("hotrow_query_slots_total")
                    .Help("Query slots asked for, by lane (client, or peer: ?local=true) and "
                          "outcome (immediate, queued: got one after waiting, shed: answered 503)")
                    .Register(families_->registry);
  for (int lane = 0; lane < 2; ++lane) {
    const char* outcomes[3] = {"immediate", "queued", "shed"};
    for (int o = 0; o < 3; ++o) {
      families_->slots[lane][o] =
          &slots.Add({{"lane", lane == 0 ? "client" : "peer"}, {"outcome", outcomes[o]}});
    }
  }
}

Metrics::~Metrics() = default;

void Metrics::RecordQuerySlot(bool peer, SlotOutcome outcome) {
  families_->slots[peer ? 1 : 0][static_cast<size_t>(outcome)]->Increment();
}

void Metrics::RecordQuery(QueryKind kind, QueryOutcome outcome, double seconds) {
  const auto k = static_cast<size_t>(kind);
  families_->queries[k][static_cast<size_t>(outcome)]->Increment();
  if (outcome == QueryOutcome::kOk) families_->latency[k]->Observe(seconds);
}

void Metrics::SetConnections(size_t open, uint64_t refused_total) {
  families_->connections->Set(static_cast<double>(open));
  std::lock_guard lock(families_->connections_mu);
  if (refused_total > families_->refused_counted) {
    families_->connections_refused->Increment(
        static_cast<double>(refused_total - families_->refused_counted));
    families_->refused_counted = refused_total;
  }
}

void Metrics::RecordAccessReload(bool ok) {
  (ok ? families_->reloads_ok : families_->reloads_failed)->Increment();
}

void Metrics::RecordAuth(std::string_view outcome) {
  for (size_t i = 0; i < kAuthOutcomes.size(); ++i) {
    if (kAuthOutcomes[i] == outcome) families_->auth[i]->Increment();
  }
}

void Metrics::RecordHttpResponse(int status) {
  prometheus::Counter* counter = nullptr;
  {
    std::lock_guard<std::mutex> lock(families_->responses_mu);
    auto it = families_->responses_by_code.find(status);
    if (it == families_->responses_by_code.end()) {
      counter = &families_->responses->Add({{"code", std::to_string(status)}});
      families_->responses_by_code.emplace(status, counter);
    } else {
      counter = it->second;
    }
  }
  counter->Increment();
}

std::string Metrics::Render(const ingest::IngestStats* ingest, const store::StoreStats& store,
                            const store::StoreOptions& store_options,
                            const query::QueryWorkStats* work,
                            const ingest::OwnershipSnapshot* ownership,
                            const uint64_t* peer_answers_refused,
                            const query::LastCacheStatus* cache,
                            const cluster::RouteCounts* routed,
                            const live::StreamHubStats* streams,
                            const cluster::StandbyCounts* standby) const {
  std::vector<MetricFamily> out = families_->registry.Collect();
  constexpr auto kCounter = MetricType::Counter;
  constexpr auto kGauge = MetricType::Gauge;

  if (ownership != nullptr) {
    MetricFamily serving = NewFamily(
        "hotrow_partition_serving",
        "1 when this instance answers for the owned partition (ready, fresh, complete window)",
        kGauge);
    MetricFamily staleness = NewFamily(
        "hotrow_partition_staleness_seconds",
        "Age of the oldest record the broker holds and the store lacks (-1 unknown: rebuilding)",
        kGauge);
    MetricFamily progress = NewFamily(
        "hotrow_partition_rebuild_progress",
        "Share of the owned partition's rebuild done, 0 to 1 (1 once caught up)", kGauge);
    double rebuilding = 0, stale = 0;
    for (const auto& p : ownership->partitions) {
      std::vector<ClientMetric::Label> labels = {{"partition", std::to_string(p.partition)},
                                                 {"topic", p.topic}};
      serving.metric.push_back(Sample(p.serving() ? 1 : 0, kGauge, labels));
      progress.metric.push_back(Sample(ingest::RebuildProgress(p), kGauge, labels));
      staleness.metric.push_back(
          Sample(p.staleness_ms < 0 ? -1.0 : static_cast<double>(p.staleness_ms) / 1000.0, kGauge,
                 labels));
      if (p.rebuilding()) rebuilding += 1;
      if (!p.serving()) stale += 1;
    }
    out.push_back(std::move(serving));
    out.push_back(std::move(staleness));
    out.push_back(
        Single("hotrow_stale_partitions",
               "Owned partitions this instance does not answer for (not ready, not fresh, "
               "or its window not whole)",
               kGauge, stale));
    out.push_back(std::move(progress));
    out.push_back(Single("hotrow_rebuilding_partitions",
                         "Owned partitions still replaying their window from Kafka", kGauge,
                         rebuilding));
  }

  if (ownership != nullptr && !ownership->followed.empty()) {
    MetricFamily serving = NewFamily(
        "hotrow_standby_partition_serving",
        "1 when this instance can answer as a standby for the followed partition (ready, fresh, "
        "complete window)",
        kGauge);
    MetricFamily lag = NewFamily("hotrow_standby_partition_lag",
                                 "Records of the followed partition the store lacks", kGauge);
    for (const auto& p : ownership->followed) {
      std::vector<ClientMetric::Label> labels = {{"partition", std::to_string(p.partition)},
                                                 {"topic", p.topic}};
      serving.metric.push_back(Sample(p.serving() ? 1 : 0, kGauge, labels));
      lag.metric.push_back(Sample(static_cast<double>(p.lag()), kGauge, labels));
    }
    out.push_back(std::move(serving));
    out.push_back(std::move(lag));
  }
  if (standby != nullptr) {
    out.push_back(Single("hotrow_cluster_standby_answers_total",
                         "Answers that took partitions no owner served from standbys",
                         kCounter, static_cast<double>(standby->answers)));
    out.push_back(Single("hotrow_cluster_standby_partitions_total",
                         "Partitions taken from standbys, over every answer", kCounter,
                         static_cast<double>(standby->partitions)));
  }
  if (peer_answers_refused != nullptr) {
    out.push_back(Single("hotrow_cluster_peer_answers_refused_total",
                         "Peer answers refused: from an instance of another group or other topics",
                         kCounter, static_cast<double>(*peer_answers_refused)));
  }
  if (routed != nullptr) {
    MetricFamily asked = NewFamily(
        "hotrow_cluster_id_queries_total",
        "Per-id queries fanned out over the group (cluster.route_by_key), by whom they asked: the "
        "owners of the ids' partitions, or every instance",
        kCounter);
    asked.metric.push_back(
        Sample(static_cast<double>(routed->routed), kCounter, {{"asked", "owners"}}));
    asked.metric.push_back(
        Sample(static_cast<double>(routed->everyone), kCounter, {{"asked", "every_instance"}}));
    out.push_back(std::move(asked));
    out.push_back(Single("hotrow_cluster_route_retries_total",
                         "Routed per-id queries whose answer was incomplete and were asked of "
                         "every instance again",
                         kCounter, static_cast<double>(routed->retried)));
  }
  if (work != nullptr) {
    out.push_back(Single("hotrow_query_iterators_created_total",
                         "Store cursors created by queries (latest-N reuses one per bucket)",
                         kCounter, static_cast<double>(work->iterators_created)));
    out.push_back(Single("hotrow_query_seeks_total", "Cursor seeks made by queries", kCounter,
                         static_cast<double>(work->seeks)));
    out.push_back(Single("hotrow_query_rows_read_total",
                         "Rows queries stepped onto in the store, kept or not", kCounter,
                         static_cast<double>(work->rows_read)));
  }

  if (cache != nullptr && cache->enabled) {
    out.push_back(Single("hotrow_last_cache_ids", "Ids held by the last-N cache", kGauge,
                         static_cast<double>(cache->cache.ids)));
    out.push_back(Single("hotrow_last_cache_bytes",
                         "Memory held by the last-N cache (query.last_cache_bytes caps it)", kGauge,
                         static_cast<double>(cache->cache.bytes)));
    out.push_back(Single("hotrow_last_cache_evicted_total",
                         "Ids the last-N cache evicted for its memory cap", kCounter,
                         static_cast<double>(cache->cache.evicted)));
    out.push_back(Single("hotrow_last_cache_hits_total", "Latest-N answered from the last-N cache",
                         kCounter, static_cast<double>(cache->cache.hits)));
    out.push_back(Single("hotrow_last_cache_misses_total",
                         "Latest-N the last-N cache could not answer exactly (read the store)",
                         kCounter, static_cast<double>(cache->cache.misses)));
    out.push_back(Single("hotrow_last_cache_rebuilding",
                         "1 while the last-N cache is being rebuilt from the store", kGauge,
                         cache->rebuild.running ? 1 : 0));
  }

  if (ingest != nullptr) {
    out.push_back(Single("hotrow_records_consumed_total", "Kafka records polled, good or bad",
                         kCounter, static_cast<double>(ingest->records_consumed)));
    out.push_back(Single("hotrow_events_stored_total", "Events this process wrote to the store",
                         kCounter, static_cast<double>(ingest->events_stored)));
    out.push_back(Single("hotrow_duplicates_total",
                         "Records the store already held (replays after a restart or rebalance)",
                         kCounter, static_cast<double>(ingest->duplicates)));
    MetricFamily rejected =
        NewFamily("hotrow_rejected_total", "Records refused, by reason; never stored", kCounter);
    for (const char* reason : ingest::kRejectReasons) {
      auto it = ingest->rejected.find(reason);
      const double count = it == ingest->rejected.end() ? 0 : static_cast<double>(it->second);
      rejected.metric.push_back(Sample(count, kCounter, {{"reason", reason}}));
    }
    for (const auto& [reason, count] : ingest->rejected) {  // any reason not in the list
      bool known = false;
      for (const char* r : ingest::kRejectReasons) known = known || reason == r;
      if (!known)
        rejected.metric.push_back(
            Sample(static_cast<double>(count), kCounter, {{"reason", reason}}));
    }
    out.push_back(std::move(rejected));
    out.push_back(Single("hotrow_dead_lettered_total",
                         "Rejected records produced to the dead-letter topic", kCounter,
                         static_cast<double>(ingest->dead_lettered)));
    out.push_back(Single("hotrow_lost_to_retention_total",
                         "Records the broker deleted before hotrow could consume them", kCounter,
                         static_cast<double>(ingest->lost_to_retention)));
    out.push_back(Single("hotrow_ingest_route_broken_total",
                         "Records stored whose key is not their event id or belongs in another "
                         "partition (cluster.route_by_key): their partition is not routed",
                         kCounter, static_cast<double>(ingest->route_broken)));
    out.push_back(Single("hotrow_skipped_cold_total",
                         "Records skipped as cold: the run of records older than the hot window "
                         "that opens a partition",
                         kCounter, static_cast<double>(ingest->skipped_cold)));
    out.push_back(Single("hotrow_batches_discarded_total",
                         "Batches some or all of whose records were not written: their partitions "
                         "were lost, or given up by a revocation",
                         kCounter, static_cast<double>(ingest->batches_discarded)));
    out.push_back(Single("hotrow_rebalances_total",
                         "Consumer group rebalance callbacks served (assignments and revocations)",
                         kCounter, static_cast<double>(ingest->rebalances)));
    out.push_back(Single("hotrow_group_rejoins_total",
                         "Times the group consumer was made again with a longer session (the "
                         "embedded broker only)",
                         kCounter, static_cast<double>(ingest->group_rejoins)));
    out.push_back(Single("hotrow_kafka_clients_left_total",
                         "Kafka consumers left to the process exit instead of destroyed (librdkafka "
                         "2.0.2 aborts destroying a cooperative consumer never assigned)",
                         kCounter, static_cast<double>(ingest->consumers_left)));
    out.push_back(Single("hotrow_batches_written_total", "Batches written to the store", kCounter,
                         static_cast<double>(ingest->batches_written)));
    out.push_back(Single("hotrow_batch_events_total",
                         "Events over every written batch (divide by hotrow_batches_written_total "
                         "for the mean batch size)",
                         kCounter, static_cast<double>(ingest->batch_events_sum)));
    out.push_back(Single("hotrow_batch_write_seconds_total", "Time spent in store writes", kCounter,
                         ingest->batch_write_seconds_sum));
    const double mean_batch = ingest->batches_written == 0
                                  ? 0
                                  : static_cast<double>(ingest->batch_events_sum) /
                                        static_cast<double>(ingest->batches_written);
    out.push_back(Single("hotrow_batch_size_mean", "Mean events per written batch since start",
                         kGauge, mean_batch));

    MetricFamily lag =
        NewFamily("hotrow_consumer_lag", "Records behind the partition's end", kGauge);
    MetricFamily next =
        NewFamily("hotrow_next_offset", "Next offset to consume, as stored", kGauge);
    MetricFamily paused = NewFamily("hotrow_partition_paused",
                                    "1 when the partition is paused (backpressure)", kGauge);
    double paused_count = 0;
    for (const auto& p : ingest->partitions) {
      std::vector<ClientMetric::Label> labels = {{"partition", std::to_string(p.partition)},
                                                 {"topic", p.topic}};
      lag.metric.push_back(Sample(static_cast<double>(p.lag), kGauge, labels));
      next.metric.push_back(Sample(static_cast<double>(p.next_offset), kGauge, labels));
      paused.metric.push_back(Sample(p.paused ? 1 : 0, kGauge, labels));
      if (p.paused) paused_count += 1;
    }
    out.push_back(std::move(lag));
    out.push_back(std::move(next));
    out.push_back(std::move(paused));
    out.push_back(Single("hotrow_paused_partitions", "Partitions paused for backpressure", kGauge,
                         paused_count));
    out.push_back(Single("hotrow_assigned_partitions", "Partitions assigned to this process",
                         kGauge, static_cast<double>(ingest->partitions.size())));
    out.push_back(Single("hotrow_ingest_stalled", "1 when lag > 0 and nothing was written lately",
                         kGauge, ingest->stalled ? 1 : 0));
    out.push_back(Single("hotrow_out_of_disk", "1 when the last write failed for lack of space",
                         kGauge, ingest->out_of_disk ? 1 : 0));
    out.push_back(Single("hotrow_registry_held_partitions",
                         "Partitions waiting for the schema registry (their records kept)", kGauge,
                         static_cast<double>(ingest->held_partitions)));
    out.push_back(Single("hotrow_schema_fetches_waiting",
                         "Schema fetches queued or under way (off the poller)", kGauge,
                         static_cast<double>(ingest->schema_fetches_waiting)));
    out.push_back(Single("hotrow_schema_fetch_failures_total",
                         "Schema fetches that failed: registry unreachable, timed out or 5xx",
                         kCounter, static_cast<double>(ingest->schema_fetch_failures)));
  }

  out.push_back(Single("hotrow_buckets", "Live time buckets in the store", kGauge,
                       static_cast<double>(store.buckets.size())));
  double bytes = 0;
  for (const auto& b : store.buckets) bytes += static_cast<double>(b.bytes);
  out.push_back(Single("hotrow_store_events", "Events in the live buckets", kGauge,
                       static_cast<double>(store.events)));
  out.push_back(Single("hotrow_store_bytes", "Key and value bytes written to the live buckets",
                       kGauge, bytes));
  MetricFamily salts =
      NewFamily("hotrow_salt_events", "Events per salt over the live buckets", kGauge);
  for (size_t s = 0; s < store.salt_events.size(); ++s) {
    salts.metric.push_back(
        Sample(static_cast<double>(store.salt_events[s]), kGauge, {{"salt", std::to_string(s)}}));
  }
  out.push_back(std::move(salts));
  out.push_back(Single("hotrow_store_clock_ms", "Now by the store's clock, ms since the epoch",
                       kGauge, static_cast<double>(store.now_ms)));
  out.push_back(Single("hotrow_window_start_ms",
                       "Start of the hot window; older events are never returned", kGauge,
                       static_cast<double>(store.window_start_ms)));
  out.push_back(Single("hotrow_ttl_seconds", "The hot window's length (store.ttl)", kGauge,
                       static_cast<double>(store_options.ttl_ms) / 1000.0));
  if (streams != nullptr) {
    out.push_back(Single("hotrow_streams_open", "Live streams open (http.max_streams bounds them)",
                         kGauge, static_cast<double>(streams->open)));
    out.push_back(Single("hotrow_streams_opened_total", "Live streams opened", kCounter,
                         static_cast<double>(streams->opened)));
    out.push_back(Single("hotrow_stream_events_sent_total", "Events sent on live streams",
                         kCounter, static_cast<double>(streams->events_sent)));
    out.push_back(Single("hotrow_streams_too_slow_total",
                         "Live streams closed as too slow (the delivery fell behind, or a "
                         "catch-up could not be made)",
                         kCounter, static_cast<double>(streams->too_slow)));
    out.push_back(Single("hotrow_stream_catch_ups_total",
                         "Reads from the store of live streams whose buffer overflowed (a burst "
                         "faster than their client read), which then went on live",
                         kCounter, static_cast<double>(streams->catch_ups)));
    out.push_back(Single("hotrow_stream_catch_ups_delayed_total",
                         "Times a live stream's catch-up found every query slot taken "
                         "(query.max_concurrent) and waited for one",
                         kCounter, static_cast<double>(streams->catch_ups_delayed)));
    out.push_back(Single("hotrow_streams_refused_total",
                         "Live streams refused at http.max_streams (503)", kCounter,
                         static_cast<double>(streams->refused)));
  }
  out.push_back(Single("hotrow_resident_bytes", "Resident set size of the process", kGauge,
                       static_cast<double>(ResidentBytes())));

  return prometheus::TextSerializer().Serialize(out);
}

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace hotrow::http
