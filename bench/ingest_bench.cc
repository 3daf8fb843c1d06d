// How close does hotrow's ingestion (consume, parse, key, batch and durably write events with
// their offsets) come to a bare librdkafka consumer that only counts the same records from the
// same broker, and where does its CPU go?
//
// Records are produced once to the embedded broker (librdkafka's mock cluster, in this process),
// then read several times, alternating: by a bare consumer, and by an Ingestor into a fresh store
// in a fresh consumer group. Last, the same rounds against the same broker in a process of its own
// (forked at start), as a user runs `hotrow embedded-kafka` or a real cluster. A run is timed from its first record to its last one counted (bare)
// or durably written with its offsets (hotrow), so the ~3 s group join of the mock is left out of
// both. Medians of the rounds are reported, with the ratio, the batch size and the peak RSS.
//
// CPU per stored event, by stage: the process CPU (getrusage) over the measured interval, and
// each thread's own CPU clock over the same interval, summed by the thread's name (the code names
// its threads: hotrow-poll, hotrow-write<N>, rdk:* for librdkafka, rocksdb:high for flushes,
// rocksdb:low for compactions, rdk:mock for the in-process broker). Inside the writer threads
// RocksDB's perf context splits a write into its WAL write, its memtable insert and its stalls;
// inside the poller, parse and key are timed apart by the poller's own code run alone on the same
// records (the store passes below). The store passes then write the same records, already parsed
// and keyed, by EventStore::Write (with and without an indexed field) and by a raw RocksDB
// DB::Write of the same rows (WAL on and off): the baselines of the write stage.
//
//   ingest_bench [--records N] [--partitions P] [--rounds R] [--index FIELD]
//   BENCH_DEBUG=cgrp,fetch ingest_bench ...   (librdkafka debug contexts for the hotrow consumer)
//
// --index FIELD (default battery, a field of every synthetic record; "none" for none) is the
// indexed field of the indexed store pass; the end-to-end runs index nothing.
//
// The mock keeps ~5 MiB (or 100k message sets) per partition: records are lz4-compressed by the
// producer and spread over enough partitions that none is dropped (checked).

#include <librdkafka/rdkafka.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/ingest_stages.h"
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
  std::string index = "battery";
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--records") == 0) flags.records = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--partitions") == 0) flags.partitions = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--rounds") == 0) flags.rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--index") == 0) flags.index = argv[i + 1];
  }
  if (flags.index == "none") flags.index.clear();
  return flags;
}

// Resets the kernel's peak-RSS mark (VmHWM) so that each phase reports its own peak.
void ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

int OwnTid() { return static_cast<int>(syscall(SYS_gettid)); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// "median (min-max)" of a figure over the rounds.
std::string Spread(const std::vector<double>& v, int decimals) {
  if (v.empty()) return "-";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return Fixed(Median(v), decimals) + " (" + Fixed(*lo, decimals) + "-" + Fixed(*hi, decimals) +
         ")";
}

struct Run {
  double events_per_s = 0;
  double seconds = 0;
  uint64_t peak_rss = 0;
  double batch_events = 0;        // hotrow only: mean events per written batch
  double write_ms_per_batch = 0;  // hotrow only
  double writer_busy = 0;         // hotrow only: time in store writes / run time, per writer
  double cpu_us_per_event = 0;    // process CPU (every thread, the in-process broker's too)
  StageCpu cpu;                   // CPU seconds over the run, by stage
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
  const std::map<int, ThreadCpu> born_before = SampleThreadCpu();
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
  std::map<int, ThreadCpu> threads0;
  const Clock::time_point deadline = Clock::now() + std::chrono::minutes(5);
  while (count < records && Clock::now() < deadline) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 100);
    if (msg == nullptr) continue;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (count == 0) {
        first = Clock::now();
        cpu0 = ProcessCpuSeconds();
        threads0 = SampleThreadCpu();
      }
      ++count;
      bytes += msg->len;
    }
    rd_kafka_message_destroy(msg);
  }
  const Clock::time_point last = Clock::now();
  const double cpu = ProcessCpuSeconds() - cpu0;
  const std::map<int, ThreadCpu> threads1 = SampleThreadCpu();
  if (count < records) Die("the bare consumer read only " + std::to_string(count) + " records");
  Run run;
  run.seconds = std::chrono::duration<double>(last - first).count();
  run.events_per_s = static_cast<double>(records) / run.seconds;
  run.cpu_us_per_event = 1e6 * cpu / static_cast<double>(records);
  run.cpu = Classify(ThreadCpuSince(threads0, threads1), born_before, OwnTid(), cpu);
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
  // Runs on the writer thread at the start of each Write: the perf context of its previous one.
  WriteTimes times;
  store_options.write_hook = [&times](const store::WriteBatchInput& batch) {
    TakeWriteTimes(&times, batch.rows.size());
  };
  auto store = store::EventStore::Open(store_options);
  if (!store.ok()) Die(store.status().ToString());
  const std::map<int, ThreadCpu> born_before = SampleThreadCpu();
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
  const double cpu0 = ProcessCpuSeconds();
  const std::map<int, ThreadCpu> threads0 = SampleThreadCpu();
  while (StoredSum(**store) < records && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const Clock::time_point last = Clock::now();
  const double cpu = ProcessCpuSeconds() - cpu0;
  const std::map<int, ThreadCpu> threads1 = SampleThreadCpu();
  if (StoredSum(**store) < records) Die("hotrow did not store every record in time");
  Run run;
  run.seconds = std::chrono::duration<double>(last - first).count();
  run.events_per_s = static_cast<double>(records) / run.seconds;
  run.cpu_us_per_event = 1e6 * cpu / static_cast<double>(records);
  run.cpu = Classify(ThreadCpuSince(threads0, threads1), born_before, 0, cpu);
  AddWriteTimes(times, &run.cpu, records);
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

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  // Before any thread: the broker a new user runs, in a process of its own (the last rounds).
  const std::string own_broker = ForkBroker(flags.partitions);
  InitLogging(getenv("BENCH_DEBUG") != nullptr ? "debug" : "warn");
  auto kafka = ingest::EmbeddedKafka::Start("events", flags.partitions);
  if (!kafka.ok()) Die(kafka.status().ToString());
  const std::string bootstrap = (*kafka)->bootstrap();

  // Produces the records once to a broker; returns the seconds it took.
  auto produce = [&flags](const std::string& brokers) {
    ingest::ProducerOptions popts;
    popts.brokers = brokers;
    popts.topic = "events";
    popts.rate = 0;
    popts.count = flags.records;
    auto producer = ingest::SyntheticProducer::Create(popts);
    if (!producer.ok()) Die(producer.status().ToString());
    const Clock::time_point start = Clock::now();
    Status produced = (*producer)->Run();
    if (!produced.ok()) Die(produced.ToString());
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const double produce_s = produce(bootstrap);
  std::printf(
      "ingest_bench: %lld records (synthetic IoT JSON, ~100 bytes, lz4) over %d "
      "partitions produced in %.2f s\n",
      static_cast<long long>(flags.records), flags.partitions, produce_s);

  // Figures per round, in µs of CPU per event unless named otherwise.
  std::map<std::string, std::vector<double>> fig;
  auto us = [&flags](double seconds) { return 1e6 * seconds / static_cast<double>(flags.records); };
  // A store pass's CPU per event by stage, as fig[name], fig[name + "_writers"], ...
  auto note_pass = [&fig, &us](const std::string& name, const Pass& pass) {
    fig[name].push_back(us(pass.cpu.process));
    fig[name + "_writers"].push_back(us(pass.cpu.writers));
    fig[name + "_wal"].push_back(us(pass.cpu.wal));
    fig[name + "_memtable"].push_back(us(pass.cpu.memtable));
    fig[name + "_stall"].push_back(us(pass.cpu.stall));
    fig[name + "_background"].push_back(us(pass.cpu.flush + pass.cpu.compaction));
  };
  std::vector<double> bare_rates, hotrow_rates, batch_sizes, write_ms, busy;
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
    const StageCpu& c = hot.cpu;
    std::printf(
        "  hotrow CPU µs/event: process %.2f = poller %.2f + librdkafka %.2f + writers %.2f (WAL "
        "%.2f, memtable %.2f, stalled %.2f, group wait %.2f) + flush %.2f + compaction %.2f + "
        "broker %.2f + other %.2f; bare consumer %.2f (poll %.2f, librdkafka %.2f, broker %.2f)\n",
        us(c.process), us(c.poller), us(c.kafka), us(c.writers), us(c.wal), us(c.memtable),
        us(c.stall), us(c.wait), us(c.flush), us(c.compaction), us(c.broker), us(c.other),
        us(bare.cpu.process), us(bare.cpu.poller), us(bare.cpu.kafka), us(bare.cpu.broker));
    std::fflush(stdout);
    fig["process"].push_back(us(c.process));
    fig["threads"].push_back(
        us(c.poller + c.kafka + c.writers + c.flush + c.compaction + c.broker + c.other));
    fig["poller"].push_back(us(c.poller));
    fig["kafka"].push_back(us(c.kafka));
    fig["writers"].push_back(us(c.writers));
    fig["wal"].push_back(us(c.wal));
    fig["memtable"].push_back(us(c.memtable));
    fig["stall"].push_back(us(c.stall));
    fig["wait"].push_back(us(c.wait));
    fig["flush"].push_back(us(c.flush));
    fig["compaction"].push_back(us(c.compaction));
    fig["broker"].push_back(us(c.broker));
    fig["other"].push_back(us(c.other));
    fig["own"].push_back(us(c.process - c.broker));
    fig["bare"].push_back(us(bare.cpu.process));
    fig["bare_consumer"].push_back(us(bare.cpu.poller + bare.cpu.kafka));
    fig["bare_broker"].push_back(us(bare.cpu.broker));
    bare_rates.push_back(bare.events_per_s);
    hotrow_rates.push_back(hot.events_per_s);
    batch_sizes.push_back(hot.batch_events);
    write_ms.push_back(hot.write_ms_per_batch);
    busy.push_back(hot.writer_busy);
    bare_rss = std::max(bare_rss, bare.peak_rss);
    hotrow_rss = std::max(hotrow_rss, hot.peak_rss);
  }

  // The store passes: the same records, parsed and keyed by the poller's code alone, then written
  // by EventStore::Write (no index, one indexed field) and by raw RocksDB (WAL on, off).
  const std::vector<Consumed> consumed = ReadAll(bootstrap, flags.partitions, flags.records);
  std::vector<double> ceilings, indexed_rates, raw_rates;
  for (int round = 0; round < flags.rounds; ++round) {
    ScratchDir dir;
    store::StoreOptions options;
    options.path = dir.path() + "/keying";
    auto keying_store = store::EventStore::Open(options);
    if (!keying_store.ok()) Die(keying_store.status().ToString());
    const Prepared plain = Prepare(consumed, keying_store->get(), "");
    fig["parse"].push_back(plain.parse_ns / 1000);
    fig["key"].push_back(plain.key_ns / 1000);
    const Pass store = StorePass(plain.batches, flags.records, "");
    ceilings.push_back(store.events_per_s);
    note_pass("store", store);
    std::printf(
        "store round %d: parse %.2f, key %.2f | store alone %.0f events/s, CPU µs/event %.2f "
        "(writers %.2f: WAL %.2f, memtable %.2f, stalled %.2f; flush + compaction %.2f)",
        round, plain.parse_ns / 1000, plain.key_ns / 1000, store.events_per_s,
        us(store.cpu.process), us(store.cpu.writers), us(store.cpu.wal), us(store.cpu.memtable),
        us(store.cpu.stall), us(store.cpu.flush + store.cpu.compaction));
    if (!flags.index.empty()) {
      const Prepared indexed_rows = Prepare(consumed, keying_store->get(), flags.index);
      fig["parse_indexed"].push_back(indexed_rows.parse_ns / 1000);
      const Pass indexed = StorePass(indexed_rows.batches, flags.records, flags.index);
      indexed_rates.push_back(indexed.events_per_s);
      note_pass("indexed", indexed);
      std::printf(
          " | 1 indexed field %.0f events/s, %.2f (writers %.2f: WAL %.2f, memtable %.2f, stalled "
          "%.2f; flush + compaction %.2f)",
          indexed.events_per_s, us(indexed.cpu.process), us(indexed.cpu.writers),
          us(indexed.cpu.wal), us(indexed.cpu.memtable), us(indexed.cpu.stall),
          us(indexed.cpu.flush + indexed.cpu.compaction));
    }
    const Pass raw = RawRocksPass(plain.batches, flags.records, true, true);
    const Pass raw_no_wal = RawRocksPass(plain.batches, flags.records, true, false);
    const Pass raw_unsorted = RawRocksPass(plain.batches, flags.records, false, true);
    raw_rates.push_back(raw.events_per_s);
    fig["raw"].push_back(us(raw.cpu.process));
    fig["raw_wal"].push_back(us(raw.cpu.wal));
    fig["raw_memtable"].push_back(us(raw.cpu.memtable));
    fig["raw_no_wal"].push_back(us(raw_no_wal.cpu.process));
    fig["raw_unsorted"].push_back(us(raw_unsorted.cpu.process));
    fig["raw_unsorted_memtable"].push_back(us(raw_unsorted.cpu.memtable));
    std::printf(
        " | raw RocksDB, sorted: %.2f (WAL %.2f, memtable %.2f), WAL off %.2f; unsorted %.2f "
        "(memtable %.2f)\n",
        us(raw.cpu.process), us(raw.cpu.wal), us(raw.cpu.memtable), us(raw_no_wal.cpu.process),
        us(raw_unsorted.cpu.process), us(raw_unsorted.cpu.memtable));
    std::fflush(stdout);
  }
  fig["poll_rest"].clear();
  for (size_t r = 0; r < fig["poller"].size() && r < fig["parse"].size(); ++r) {
    fig["poll_rest"].push_back(fig["poller"][r] - fig["parse"][r] - fig["key"][r]);
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

  auto med = [&fig](const char* name) { return Median(fig[name]); };
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
              med("bare"), med("process"), med("store"), DefaultWriters());
  std::printf("  the poller's parse + key per record: %.0f ns (%.0f records/s on one thread)\n",
              1000 * (med("parse") + med("key")), 1e6 / (med("parse") + med("key")));

  // One row per stage: label, figure name, and the name it is recorded under for a RATIO line
  // against the whole path (empty: no line).
  struct StageRow {
    const char* label;
    const char* figure;
    const char* ratio;
  };
  const StageRow stages[] = {
      {"whole path: process CPU (getrusage)", "process", ""},
      {"the threads' own clocks, summed", "threads", ""},
      {"poller thread (`hotrow-poll`): poll, decode, parse, key, batch", "poller", "poller"},
      {"- of which parse (the poller's parser alone, same records)", "parse", "parse"},
      {"- of which key and value encoding (alone)", "key", "key"},
      {"- of which poll, decode, batching, hand-over (the rest)", "poll_rest", "poll and decode"},
      {"consumer's librdkafka threads (`rdk:*`): fetch, lz4 decompress", "kafka", "librdkafka"},
      {"writer threads (`hotrow-write<N>`): `EventStore::Write`", "writers", "writers"},
      {"- WAL append, wall time on the writers (perf context)", "wal", ""},
      {"- memtable insert, wall time on the writers (perf context)", "memtable", ""},
      {"- stalled, wall time (perf context write_delay_time)", "stall", ""},
      {"- waiting for the write group, wall time (perf context)", "wait", ""},
      {"RocksDB flush (`rocksdb:high`)", "flush", "flush"},
      {"RocksDB compaction (`rocksdb:low`)", "compaction", "compaction"},
      {"in-process broker (`rdk:mock` and its host's threads)", "broker", "broker"},
      {"other threads (the bench waiting, `hotrow-monitor`)", "other", ""},
      {"hotrow's own: whole path less the broker", "own", "hotrow's own"},
  };
  std::printf("\nCPU µs per stored event, by stage (median, min-max of %d rounds):\n",
              flags.rounds);
  Record("ingest_cpu_us_whole", med("process"));
  for (const StageRow& row : stages) {
    std::printf("  %-78s %s\n", row.label, Spread(fig[row.figure], 2).c_str());
    if (*row.ratio == '\0') continue;
    const std::string name = std::string("ingest_cpu_us_") + row.figure;
    Record(name, med(row.figure));
    PrintRatio(std::string("ingest CPU/event: ") + row.ratio + " / whole path", name,
               "ingest_cpu_us_whole");
  }
  std::printf("baselines, same run (CPU µs per event, median, min-max):\n");
  std::printf("  bare consumer: process %s, its poll loop + librdkafka %s, broker %s\n",
              Spread(fig["bare"], 2).c_str(), Spread(fig["bare_consumer"], 2).c_str(),
              Spread(fig["bare_broker"], 2).c_str());
  std::printf(
      "  store alone (no index): %s (writers %s: WAL %s, memtable %s; stalled %s; flush + "
      "compaction %s)\n",
      Spread(fig["store"], 2).c_str(), Spread(fig["store_writers"], 2).c_str(),
      Spread(fig["store_wal"], 2).c_str(), Spread(fig["store_memtable"], 2).c_str(),
      Spread(fig["store_stall"], 2).c_str(), Spread(fig["store_background"], 2).c_str());
  if (!flags.index.empty()) {
    std::printf(
        "  store alone, 1 indexed field (%s): %s (writers %s: WAL %s, memtable %s; stalled %s; "
        "flush + compaction %s); parse with the field %s\n",
        flags.index.c_str(), Spread(fig["indexed"], 2).c_str(),
        Spread(fig["indexed_writers"], 2).c_str(), Spread(fig["indexed_wal"], 2).c_str(),
        Spread(fig["indexed_memtable"], 2).c_str(), Spread(fig["indexed_stall"], 2).c_str(),
        Spread(fig["indexed_background"], 2).c_str(), Spread(fig["parse_indexed"], 2).c_str());
  }
  std::printf(
      "  raw RocksDB DB::Write of the same rows in key order: WAL on %s (WAL %s, memtable %s "
      "wall), "
      "WAL off %s; in arrival order: %s (memtable %s wall)\n",
      Spread(fig["raw"], 2).c_str(), Spread(fig["raw_wal"], 2).c_str(),
      Spread(fig["raw_memtable"], 2).c_str(), Spread(fig["raw_no_wal"], 2).c_str(),
      Spread(fig["raw_unsorted"], 2).c_str(), Spread(fig["raw_unsorted_memtable"], 2).c_str());

  Record("ingest_hotrow_events_per_s", hotrow);
  Record("ingest_store_write_ceiling_events_per_s", ceiling);
  Record("ingest_bare_consumer_records_per_s", bare);
  PrintRatio("ingest: hotrow / bare consumer", "ingest_hotrow_events_per_s",
             "ingest_bare_consumer_records_per_s");
  PrintRatio("ingest: hotrow / store write ceiling", "ingest_hotrow_events_per_s",
             "ingest_store_write_ceiling_events_per_s");
  Record("ingest_cpu_us_bare_plus_store", med("bare") + med("store"));
  PrintRatio("ingest CPU/event: hotrow / (bare consumer + store alone)", "ingest_cpu_us_whole",
             "ingest_cpu_us_bare_plus_store");
  Record("store_cpu_us", med("store"));
  Record("raw_rocksdb_cpu_us", med("raw"));
  Record("raw_rocksdb_no_wal_cpu_us", med("raw_no_wal"));
  PrintRatio("store write CPU/event: store alone / raw RocksDB", "store_cpu_us",
             "raw_rocksdb_cpu_us");
  PrintRatio("raw RocksDB write CPU/event: WAL off / WAL on", "raw_rocksdb_no_wal_cpu_us",
             "raw_rocksdb_cpu_us");
  Record("raw_rocksdb_unsorted_cpu_us", med("raw_unsorted"));
  PrintRatio("raw RocksDB write CPU/event: arrival order / key order",
             "raw_rocksdb_unsorted_cpu_us", "raw_rocksdb_cpu_us");
  if (!flags.index.empty()) {
    Record("store_indexed_cpu_us", med("indexed"));
    Record("store_indexed_s_per_event", 1 / Median(indexed_rates));
    Record("store_s_per_event", 1 / ceiling);
    PrintRatio("store write CPU/event: 1 indexed field / none", "store_indexed_cpu_us",
               "store_cpu_us");
    PrintRatio("store write time: 1 indexed field / none", "store_indexed_s_per_event",
               "store_s_per_event");
  }

  // The same rounds with the broker in its own process: its CPU is no longer this process's, and
  // its records cross a process boundary as they do from a real cluster.
  produce(own_broker);
  std::vector<double> own_bare, own_hotrow, own_cpu;
  for (int round = 0; round < flags.rounds; ++round) {
    const Run bare_run = BareConsumer(own_broker, "own-bare-" + std::to_string(round), flags.records);
    const Run hot = Hotrow(own_broker, "own-hotrow-" + std::to_string(round), flags.records);
    own_bare.push_back(bare_run.events_per_s);
    own_hotrow.push_back(hot.events_per_s);
    own_cpu.push_back(us(hot.cpu.process));
    std::printf("broker in its own process, round %d: bare consumer %.0f records/s, hotrow %.0f "
                "events/s (%.2f µs CPU/event in this process)\n",
                round, bare_run.events_per_s, hot.events_per_s, us(hot.cpu.process));
  }
  Record("ingest_own_broker_hotrow_events_per_s", Median(own_hotrow));
  Record("ingest_own_broker_bare_records_per_s", Median(own_bare));
  PrintRatio("ingest, broker in its own process: hotrow / bare consumer",
             "ingest_own_broker_hotrow_events_per_s", "ingest_own_broker_bare_records_per_s");

  Report report(
      "ingest_bench", "End-to-end ingest",
      std::to_string(flags.records) + " synthetic IoT records (~100-byte JSON, lz4) over " +
          std::to_string(flags.partitions) +
          " partitions of the in-process mock broker (and last, of the same broker in a process "
          "of its own), consumed from the start; median of " +
          std::to_string(flags.rounds) +
          " rounds. hotrow polls, parses, keys, batches and writes events plus offsets in "
          "one durable store write per batch; the baseline is a bare librdkafka consumer "
          "that polls and counts the same records.");
  const std::string writers = std::to_string(DefaultWriters()) + " writer(s)";
  report.Columns({"consumer", "events/s", "CPU µs/event", "ratio"});
  report.Row({"hotrow ingest (parse, key, batch, write + offsets), " + writers, Rate(hotrow),
              Fixed(med("process"), 2), ""});
  report.Row({"bare librdkafka consumer (baseline)", Rate(bare), Fixed(med("bare"), 2),
              Fixed(hotrow / bare, 2)});
  report.Row({"store alone, same records pre-keyed (`EventStore::Write`), " + writers,
              Rate(ceiling), Fixed(med("store"), 2), Fixed(hotrow / ceiling, 2)});
  if (!flags.index.empty()) {
    report.Row({"store alone, 1 indexed field (`" + flags.index + "`), " + writers,
                Rate(Median(indexed_rates)), Fixed(med("indexed"), 2),
                Fixed(med("indexed") / med("store"), 2) + "x the CPU"});
  }
  report.Row({"broker in its own process: hotrow ingest / bare consumer",
              Rate(Median(own_hotrow)) + " / " + Rate(Median(own_bare)),
              Fixed(Median(own_cpu), 2) + " (hotrow's process)",
              Fixed(Median(own_hotrow) / Median(own_bare), 2)});
  report.Row({"raw RocksDB `DB::Write` of the same rows in key order, WAL on / off, " + writers,
              Rate(Median(raw_rates)), Fixed(med("raw"), 2) + " / " + Fixed(med("raw_no_wal"), 2),
              ""});
  std::string by_stage = "CPU µs per stored event, by stage (median and min-max of the rounds): ";
  for (const StageRow& row : stages) {
    by_stage += std::string(row.label) + " " + Spread(fig[row.figure], 2) + "; ";
  }
  report.Note(by_stage);
  report.Note("Per batch: " + Fixed(Median(batch_sizes), 0) + " events, " +
              Fixed(Median(write_ms), 1) + " ms per store write; each writer thread was busy " +
              Fixed(100 * Median(busy), 0) + " % of the run.");
  report.Write();
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
