// How close does hotrow's ingestion (consume, parse, key, batch and durably write events with
// their offsets) come to a bare librdkafka consumer that only counts the same records from the
// same broker?
//
// Records are produced once to the embedded broker (librdkafka's mock cluster, in this process),
// then read several times, alternating: by a bare consumer, and by an Ingestor into a fresh store
// in a fresh consumer group. A run is timed from its first record to its last one counted (bare)
// or durably written with its offsets (hotrow), so the ~3 s group join of the mock is left out of
// both. Medians of the rounds are reported, with the ratio, the batch size and the peak RSS.
//
//   ingest_bench [--records N] [--partitions P] [--rounds R]
//   BENCH_DEBUG=cgrp,fetch ingest_bench ...   (librdkafka debug contexts for the hotrow consumer)
//
// The mock keeps ~5 MiB (or 100k message sets) per partition: records are lz4-compressed by the
// producer and spread over enough partitions that none is dropped (checked).

#include <librdkafka/rdkafka.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "common/logging.h"
#include "ingest/embedded_kafka.h"
#include "ingest/ingestor.h"
#include "ingest/record_parser.h"
#include "ingest/synthetic_producer.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"

namespace hotrow::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  int64_t records = 1'000'000;
  int partitions = 16;
  int rounds = 3;
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--records") == 0) flags.records = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--partitions") == 0) flags.partitions = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--rounds") == 0) flags.rounds = std::atoi(argv[i + 1]);
  }
  return flags;
}

// Resets the kernel's peak-RSS mark (VmHWM) so that each phase reports its own peak.
void ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

// CPU seconds (user + system) of the whole process so far.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The Ingestor's writer count by default (IngestOptions::writers = 0: the cores, at most 16).
int DefaultWriters() {
  return static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 16));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void Die(const std::string& what) {
  std::fprintf(stderr, "ingest_bench: %s\n", what.c_str());
  std::exit(1);
}

struct Run {
  double events_per_s = 0;
  double seconds = 0;
  uint64_t peak_rss = 0;
  double batch_events = 0;        // hotrow only: mean events per written batch
  double write_ms_per_batch = 0;  // hotrow only
  double writer_busy = 0;         // hotrow only: time in store writes / run time, per writer
  double cpu_us_per_event = 0;    // process CPU (every thread, the in-process broker's too)
};

// A bare high-level consumer in its own group: polls and counts, nothing else.
Run BareConsumer(const std::string& bootstrap, const std::string& group, int64_t records) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::pair<const char*, std::string> props[] = {
      {"bootstrap.servers", bootstrap},
      {"group.id", group},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"auto.offset.reset", "earliest"},
      {"log_level", "3"},
      // The same fetch queue as hotrow's consumer (ingest/ingestor.cc), so that both read at the
      // same pace from the broker.
      {"queued.min.messages", "1000000"}};
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
      Die(errstr);
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) Die(errstr);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, "events", RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);

  int64_t count = 0;
  uint64_t bytes = 0;
  Clock::time_point first;
  double cpu0 = 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::minutes(5);
  while (count < records && Clock::now() < deadline) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 100);
    if (msg == nullptr) continue;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (count == 0) {
        first = Clock::now();
        cpu0 = CpuSeconds();
      }
      ++count;
      bytes += msg->len;
    }
    rd_kafka_message_destroy(msg);
  }
  const Clock::time_point last = Clock::now();
  if (count < records) Die("the bare consumer read only " + std::to_string(count) + " records");
  Run run;
  run.seconds = std::chrono::duration<double>(last - first).count();
  run.events_per_s = static_cast<double>(records) / run.seconds;
  run.cpu_us_per_event = 1e6 * (CpuSeconds() - cpu0) / static_cast<double>(records);
  run.peak_rss = PeakRssBytes();
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (bytes == 0) Die("no payload bytes");
  return run;
}

int64_t StoredSum(const store::EventStore& store) {
  int64_t sum = 0;
  for (const auto& [tp, next] : store.StoredOffsets()) sum += next;
  return sum;
}

// hotrow: an Ingestor writing into a fresh store.
Run Hotrow(const std::string& bootstrap, const std::string& group, int64_t records) {
  ScratchDir dir;
  store::StoreOptions store_options;
  store_options.path = dir.path() + "/store";
  auto store = store::EventStore::Open(store_options);
  if (!store.ok()) Die(store.status().ToString());
  ingest::IngestOptions options;
  options.brokers = bootstrap;
  options.topics = {"events"};
  options.group_id = group;
  options.writers = DefaultWriters();
  if (getenv("BENCH_DEBUG")) options.properties["debug"] = getenv("BENCH_DEBUG");
  auto ingestor = ingest::Ingestor::Start(options, store->get());
  if (!ingestor.ok()) Die(ingestor.status().ToString());

  const Clock::time_point deadline = Clock::now() + std::chrono::minutes(5);
  while ((*ingestor)->Stats().records_consumed == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const Clock::time_point first = Clock::now();
  const double cpu0 = CpuSeconds();
  while (StoredSum(**store) < records && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const Clock::time_point last = Clock::now();
  if (StoredSum(**store) < records) Die("hotrow did not store every record in time");
  Run run;
  run.seconds = std::chrono::duration<double>(last - first).count();
  run.events_per_s = static_cast<double>(records) / run.seconds;
  run.cpu_us_per_event = 1e6 * (CpuSeconds() - cpu0) / static_cast<double>(records);
  run.peak_rss = PeakRssBytes();
  ingest::IngestStats stats = (*ingestor)->Stats();
  if (stats.events_stored != static_cast<uint64_t>(records)) {
    Die("hotrow stored " + std::to_string(stats.events_stored) + " events, expected " +
        std::to_string(records));
  }
  run.batch_events = static_cast<double>(stats.batch_events_sum) /
                     static_cast<double>(std::max<uint64_t>(1, stats.batches_written));
  run.write_ms_per_batch = 1000 * stats.batch_write_seconds_sum /
                           static_cast<double>(std::max<uint64_t>(1, stats.batches_written));
  run.writer_busy = stats.batch_write_seconds_sum / run.seconds / DefaultWriters();
  if (!(*ingestor)->Stop().ok()) Die("stop failed");
  return run;
}

// The ceiling the store sets: the same records, already consumed, parsed and keyed (untimed),
// written by store->Write alone in batches of the Ingestor's default size. Returns events/s.
// Written by as many writers as the Ingestor has, each the batches of its own partitions
// (partition mod writers). Also returns, in *parse_key_ns, the poller's own work per record: parse
// and key (ns), and in *cpu_us the process CPU per event of the writes.
double StoreWriteCeiling(const std::string& bootstrap, int partitions, int64_t records,
                         double* parse_key_ns, double* cpu_us) {
  // Read every record once with a plain assigned consumer.
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "group.id", "ceiling", errstr, sizeof(errstr));
  rd_kafka_conf_set(conf, "queued.min.messages", "1000000", errstr, sizeof(errstr));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) Die(errstr);
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list, "events", p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);

  ScratchDir dir;
  store::StoreOptions store_options;
  store_options.path = dir.path() + "/store";
  auto store = store::EventStore::Open(store_options);
  if (!store.ok()) Die(store.status().ToString());
  auto topic = (*store)->TopicNumber("events");
  if (!topic.ok()) Die(topic.status().ToString());
  ingest::RecordParser parser(ingest::ParserOptions{});
  ingest::ParsedRecord parsed;
  const int writers = DefaultWriters();
  std::vector<std::vector<store::WriteBatchInput>> batches(static_cast<size_t>(writers));
  for (auto& own : batches) own.emplace_back();
  const size_t batch_events = ingest::IngestOptions().batch_max_events;
  int64_t count = 0;
  const int64_t window_start = (*store)->WindowStartMs();
  const int64_t max_time = WallClock::Default()->NowMs() + 60'000;
  Clock::duration parse_key{};
  while (count < records) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 1000);
    if (msg == nullptr) Die("the ceiling reader ran dry");
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++count;
      const Clock::time_point t0 = Clock::now();
      std::string_view value(static_cast<const char*>(msg->payload), msg->len);
      parser.Parse(ingest::RecordView{value, {}, -1}, window_start, max_time, &parsed);
      if (!parsed.ok()) Die("a synthetic record was rejected: " + parsed.detail);
      keying::RowKey key;
      key.salt = (*store)->salter().SaltOf("events", msg->partition, msg->offset, parsed.id);
      key.id_hash = keying::IdHash(parsed.id);
      key.ts_ms = parsed.ts_ms;
      key.topic = *topic;
      key.partition = msg->partition;
      key.offset = msg->offset;
      auto& own = batches[static_cast<size_t>(msg->partition % writers)];
      store::WriteBatchInput& batch = own.back();
      batch.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(parsed.id, value)});
      parse_key += Clock::now() - t0;
      batch.next_offsets[store::TopicPartition{"events", msg->partition}] = msg->offset + 1;
      if (batch.rows.size() == batch_events) own.emplace_back();
    }
    rd_kafka_message_destroy(msg);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);

  *parse_key_ns = std::chrono::duration<double, std::nano>(parse_key).count() /
                  static_cast<double>(records);
  const Clock::time_point start = Clock::now();
  const double cpu0 = CpuSeconds();
  std::vector<std::thread> threads;
  for (const auto& own : batches) {
    threads.emplace_back([&store, own = &own] {
      for (const store::WriteBatchInput& batch : *own) {
        store::WriteOutcome outcome;
        Status s = (*store)->Write(batch, &outcome);
        if (!s.ok()) Die(s.ToString());
      }
    });
  }
  for (auto& t : threads) t.join();
  *cpu_us = 1e6 * (CpuSeconds() - cpu0) / static_cast<double>(records);
  return static_cast<double>(records) / std::chrono::duration<double>(Clock::now() - start).count();
}

int Main(int argc, char** argv) {
  InitLogging(getenv("BENCH_DEBUG") != nullptr ? "debug" : "warn");
  const Flags flags = ParseFlags(argc, argv);
  auto kafka = ingest::EmbeddedKafka::Start("events", flags.partitions);
  if (!kafka.ok()) Die(kafka.status().ToString());
  const std::string bootstrap = (*kafka)->bootstrap();

  // Produce once.
  ingest::ProducerOptions popts;
  popts.brokers = bootstrap;
  popts.topic = "events";
  popts.rate = 0;
  popts.count = flags.records;
  auto producer = ingest::SyntheticProducer::Create(popts);
  if (!producer.ok()) Die(producer.status().ToString());
  const Clock::time_point produce_start = Clock::now();
  Status produced = (*producer)->Run();
  if (!produced.ok()) Die(produced.ToString());
  const double produce_s = std::chrono::duration<double>(Clock::now() - produce_start).count();
  producer->reset();
  std::printf(
      "ingest_bench: %lld records (synthetic IoT JSON, ~100 bytes, lz4) over %d "
      "partitions produced in %.2f s\n",
      static_cast<long long>(flags.records), flags.partitions, produce_s);

  std::vector<double> bare_rates, hotrow_rates, batch_sizes, write_ms, busy, bare_cpu, hotrow_cpu;
  uint64_t bare_rss = 0, hotrow_rss = 0;
  for (int round = 0; round < flags.rounds; ++round) {
    ResetPeakRss();
    Run bare = BareConsumer(bootstrap, "bare-" + std::to_string(round), flags.records);
    ResetPeakRss();
    Run hot = Hotrow(bootstrap, "hotrow-" + std::to_string(round), flags.records);
    std::printf(
        "round %d: bare consumer %10.0f records/s (%.2f s, peak RSS %.0f MiB) | hotrow "
        "%10.0f events/s (%.2f s, peak RSS %.0f MiB, %.0f events/batch, %.1f ms/write, writer "
        "busy %.0f%%)\n",
        round, bare.events_per_s, bare.seconds, bare.peak_rss / 1048576.0, hot.events_per_s,
        hot.seconds, hot.peak_rss / 1048576.0, hot.batch_events, hot.write_ms_per_batch,
        100 * hot.writer_busy);
    std::fflush(stdout);
    bare_rates.push_back(bare.events_per_s);
    bare_cpu.push_back(bare.cpu_us_per_event);
    hotrow_cpu.push_back(hot.cpu_us_per_event);
    hotrow_rates.push_back(hot.events_per_s);
    batch_sizes.push_back(hot.batch_events);
    write_ms.push_back(hot.write_ms_per_batch);
    busy.push_back(hot.writer_busy);
    bare_rss = std::max(bare_rss, bare.peak_rss);
    hotrow_rss = std::max(hotrow_rss, hot.peak_rss);
  }

  std::vector<double> ceilings, parse_key_ns, ceiling_cpu;
  for (int round = 0; round < flags.rounds; ++round) {
    double ns = 0, cpu = 0;
    ceilings.push_back(StoreWriteCeiling(bootstrap, flags.partitions, flags.records, &ns, &cpu));
    parse_key_ns.push_back(ns);
    ceiling_cpu.push_back(cpu);
  }

  // Every record must still be on the broker, or the runs read different data.
  for (int p = 0; p < flags.partitions; ++p) {
    int64_t low = -1, high = -1;
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char errstr[512];
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof(errstr));
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    rd_kafka_query_watermark_offsets(rk, "events", p, &low, &high, 5000);
    rd_kafka_destroy(rk);
    if (low != 0) Die("partition " + std::to_string(p) + " lost records to the mock's cap");
  }

  const double bare = Median(bare_rates), hotrow = Median(hotrow_rates);
  std::printf("\nmedian of %d rounds:\n", flags.rounds);
  std::printf("  bare librdkafka consumer (poll + count):       %10.0f records/s\n", bare);
  std::printf("  hotrow ingest (parse, key, batch, write+offsets): %10.0f events/s\n", hotrow);
  std::printf(
      "  batch size %.0f events, %.1f ms per store write, writer busy %.0f%% of the run; peak RSS "
      "bare %.0f MiB, hotrow %.0f MiB (both include the in-process broker holding the topic)\n",
      Median(batch_sizes), Median(write_ms), 100 * Median(busy), bare_rss / 1048576.0,
      hotrow_rss / 1048576.0);
  const double ceiling = Median(ceilings);
  std::printf(
      "  the store's own write rate for these records (store->Write of pre-keyed batches "
      "of %zu): %.0f events/s\n",
      ingest::IngestOptions().batch_max_events, ceiling);
  std::printf("  CPU µs per event: bare %.2f, hotrow %.2f, store alone %.2f; %d writer(s)\n",
              Median(bare_cpu), Median(hotrow_cpu), Median(ceiling_cpu), DefaultWriters());
  std::printf("  the poller's parse + key per record: %.0f ns (%.0f records/s on one thread)\n",
              Median(parse_key_ns), 1e9 / Median(parse_key_ns));
  Record("ingest_hotrow_events_per_s", hotrow);
  Record("ingest_store_write_ceiling_events_per_s", ceiling);
  Record("ingest_bare_consumer_records_per_s", bare);
  PrintRatio("ingest: hotrow / bare consumer", "ingest_hotrow_events_per_s",
             "ingest_bare_consumer_records_per_s");
  PrintRatio("ingest: hotrow / store write ceiling", "ingest_hotrow_events_per_s",
             "ingest_store_write_ceiling_events_per_s");

  Report report("ingest_bench", "End-to-end ingest",
                std::to_string(flags.records) + " synthetic IoT records (~100-byte JSON, lz4) over " +
                    std::to_string(flags.partitions) +
                    " partitions of the in-process mock broker, consumed from the start; median of " +
                    std::to_string(flags.rounds) +
                    " rounds. hotrow polls, parses, keys, batches and writes events plus offsets in "
                    "one durable store write per batch; the baseline is a bare librdkafka consumer "
                    "that polls and counts the same records.");
  const std::string writers = std::to_string(DefaultWriters()) + " writer(s)";
  report.Columns({"consumer", "events/s", "CPU µs/event", "ratio"});
  report.Row({"hotrow ingest (parse, key, batch, write + offsets), " + writers, Rate(hotrow),
              Fixed(Median(hotrow_cpu), 2), ""});
  report.Row({"bare librdkafka consumer (baseline)", Rate(bare), Fixed(Median(bare_cpu), 2),
              Fixed(hotrow / bare, 2)});
  report.Row({"store alone, same records pre-keyed (`EventStore::Write`), " + writers, Rate(ceiling),
              Fixed(Median(ceiling_cpu), 2), Fixed(hotrow / ceiling, 2)});
  report.Note("Per batch: " + Fixed(Median(batch_sizes), 0) + " events, " + Fixed(Median(write_ms), 1) +
              " ms per store write; each writer thread was busy " + Fixed(100 * Median(busy), 0) +
              " % of the run; the poller's parse + key took " + Fixed(Median(parse_key_ns), 0) +
              " ns per record.");
  report.Write();
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
