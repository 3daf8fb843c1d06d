// See ingest_stages.h.
#include "bench/ingest_stages.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <rocksdb/db.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/write_batch.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "common/clock.h"
#include "ingest/embedded_kafka.h"
#include "ingest/ingestor.h"
#include "ingest/record_parser.h"
#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::bench {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "ingest_bench: %s\n", what.c_str());
  std::exit(1);
}

// CPU seconds of the calling thread.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::string ForkBroker(int partitions) {
  int fds[2];
  if (pipe(fds) != 0) Die("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    // The child: this process had no thread at fork, so the broker may start its own.
    close(fds[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    auto kafka = ingest::EmbeddedKafka::Start("events", partitions);
    const std::string line = (kafka.ok() ? (*kafka)->bootstrap() : std::string()) + "\n";
    if (write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(1);
    close(fds[1]);
    while (kafka.ok()) pause();  // until this process's parent exits
    _exit(1);
  }
  close(fds[1]);
  std::string bootstrap;
  char c;
  while (read(fds[0], &c, 1) == 1 && c != '\n') bootstrap.push_back(c);
  close(fds[0]);
  if (bootstrap.empty()) Die("the broker process did not start");
  return bootstrap;
}

// The Ingestor's writer count by default (IngestOptions::writers = 0: the cores, at most 16).
int DefaultWriters() {
  return static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 16));
}

// Called on a writing thread before each write of `rows` rows, and with 0 after its last one:
// adds what the perf context saw since the previous call (the previous write) to `times`. The
// first call on a thread turns its perf context on.
void TakeWriteTimes(WriteTimes* times, uint64_t rows) {
  thread_local WriteTimes* owner = nullptr;
  thread_local uint64_t pending_rows = 0;
  rocksdb::PerfContext* pc = rocksdb::get_perf_context();
  if (owner == times) {
    times->wal_ns += pc->write_wal_time;
    times->memtable_ns += pc->write_memtable_time;
    times->delay_ns += pc->write_delay_time;
    times->wait_ns += pc->write_thread_wait_nanos;
    times->rows += pending_rows;
  } else {
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableTimeExceptForMutex);
    owner = times;
  }
  pc->Reset();
  pending_rows = rows;
}

namespace {
bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

// Sums `spent` (ThreadCpuSince) into stages. librdkafka threads that existed before the client
// under test was made (`born_before`) are the broker's; `poller_tid`'s thread counts as the
// poller (the bare consumer polls on the bench's own thread), 0 for none.
StageCpu Classify(const std::map<int, ThreadCpu>& spent,
                  const std::map<int, ThreadCpu>& born_before, int poller_tid, double process) {
  StageCpu cpu;
  cpu.process = process;
  for (const auto& [tid, t] : spent) {
    double* stage = &cpu.other;
    if (tid == poller_tid || t.name == "hotrow-poll") {
      stage = &cpu.poller;
    } else if (StartsWith(t.name, "hotrow-write") || StartsWith(t.name, "bench-write")) {
      stage = &cpu.writers;
    } else if (t.name == "rocksdb:high") {
      stage = &cpu.flush;
    } else if (StartsWith(t.name, "rocksdb:")) {
      stage = &cpu.compaction;
    } else if (t.name == "rdk:mock" || (StartsWith(t.name, "rdk:") && born_before.count(tid))) {
      stage = &cpu.broker;
    } else if (StartsWith(t.name, "rdk:")) {
      stage = &cpu.kafka;
    }
    *stage += t.seconds;
  }
  return cpu;
}

void AddWriteTimes(const WriteTimes& times, StageCpu* cpu, int64_t events) {
  if (times.rows == 0) return;
  // The perf context saw `rows` of the events: scale its sums to all of them.
  const double scale = static_cast<double>(events) / static_cast<double>(times.rows.load());
  cpu->wal = scale * static_cast<double>(times.wal_ns.load()) / 1e9;
  cpu->memtable = scale * static_cast<double>(times.memtable_ns.load()) / 1e9;
  cpu->stall = scale * static_cast<double>(times.delay_ns.load()) / 1e9;
  cpu->wait = scale * static_cast<double>(times.wait_ns.load()) / 1e9;
}

// Every record, read once with a plain assigned consumer (untimed).
std::vector<Consumed> ReadAll(const std::string& bootstrap, int partitions, int64_t records) {
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
  std::vector<Consumed> out;
  out.reserve(static_cast<size_t>(records));
  while (static_cast<int64_t>(out.size()) < records) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 1000);
    if (msg == nullptr) Die("the ceiling reader ran dry");
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      out.push_back({msg->partition, msg->offset,
                     std::string(static_cast<const char*>(msg->payload), msg->len)});
    }
    rd_kafka_message_destroy(msg);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

Prepared Prepare(const std::vector<Consumed>& records, store::EventStore* store,
                 const std::string& index_field) {
  auto topic = store->TopicNumber("events");
  if (!topic.ok()) Die(topic.status().ToString());
  ingest::ParserOptions parser_options;
  if (!index_field.empty()) parser_options.index_fields = {index_field};
  ingest::RecordParser parser(parser_options);
  const int64_t window_start = store->WindowStartMs();
  const int64_t max_time = WallClock::Default()->NowMs() + 60'000;

  // Timed as the poller runs them: one ParsedRecord and one key and value buffer, reused.
  Prepared out;
  ingest::ParsedRecord one;
  uint64_t check = 0;
  double t0 = ThreadCpuSeconds();
  for (const Consumed& r : records) {
    parser.Parse(ingest::RecordView{r.value, {}, -1}, window_start, max_time, &one);
    check += static_cast<uint64_t>(one.ts_ms);
  }
  out.parse_ns = 1e9 * (ThreadCpuSeconds() - t0) / static_cast<double>(records.size());
  std::vector<ingest::ParsedRecord> parsed(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    parser.Parse(ingest::RecordView{records[i].value, {}, -1}, window_start, max_time, &parsed[i]);
    if (!parsed[i].ok()) Die("a synthetic record was rejected: " + parsed[i].detail);
  }
  // The row key of record i, as the poller makes it.
  auto key_of = [&](size_t i) {
    const Consumed& r = records[i];
    keying::RowKey key;
    key.salt = store->salter().SaltOf("events", r.partition, r.offset, parsed[i].id);
    key.id_hash = keying::IdHash(parsed[i].id);
    key.ts_ms = parsed[i].ts_ms;
    key.topic = *topic;
    key.partition = r.partition;
    key.offset = r.offset;
    return key;
  };
  std::string key_buffer(keying::kRowKeySize, '\0'), value_buffer;
  t0 = ThreadCpuSeconds();
  for (size_t i = 0; i < records.size(); ++i) {
    const Consumed& r = records[i];
    const keying::RowKey key = key_of(i);
    keying::EncodeRowKeyTo(key, key_buffer.data());
    value_buffer.clear();
    keying::EncodeRowValueTo(parsed[i].id, r.value, &value_buffer);
    check += static_cast<unsigned char>(key_buffer[0]) + value_buffer.size();
  }
  out.key_ns = 1e9 * (ThreadCpuSeconds() - t0) / static_cast<double>(records.size());
  if (check == 0) Die("nothing parsed");

  const int writers = DefaultWriters();
  out.batches.resize(static_cast<size_t>(writers));
  for (auto& own : out.batches) own.emplace_back();
  const size_t batch_events = ingest::IngestOptions().batch_max_events;
  for (size_t i = 0; i < records.size(); ++i) {
    const Consumed& r = records[i];
    const keying::RowKey key = key_of(i);
    auto& own = out.batches[static_cast<size_t>(r.partition % writers)];
    store::WriteBatchInput& batch = own.back();
    std::string encoded(keying::kRowKeySize, '\0');
    keying::EncodeRowKeyTo(key, encoded.data());
    std::string value;
    keying::EncodeRowValueTo(parsed[i].id, r.value, &value);
    batch.rows.push_back({std::move(encoded), std::move(value), std::move(parsed[i].index)});
    batch.next_offsets[store::TopicPartition{"events", r.partition}] = r.offset + 1;
    if (batch.rows.size() == batch_events) own.emplace_back();
  }
  return out;
}

namespace {

// Each writer thread (named bench-write<N>) writes its own batches with `write`; CPU by stage over
// the pass, and its events/s.
Pass TimeWrites(const std::vector<std::vector<store::WriteBatchInput>>& batches, int64_t records,
                const std::function<void(const store::WriteBatchInput&)>& write) {
  WriteTimes times;
  const std::map<int, ThreadCpu> born_before = SampleThreadCpu();
  const double cpu0 = ProcessCpuSeconds();
  const std::map<int, ThreadCpu> threads0 = born_before;
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (size_t w = 0; w < batches.size(); ++w) {
    threads.emplace_back([&, own = &batches[w], w] {
      pthread_setname_np(pthread_self(), ("bench-write" + std::to_string(w)).c_str());
      for (const store::WriteBatchInput& batch : *own) {
        TakeWriteTimes(&times, batch.rows.size());
        write(batch);
      }
      TakeWriteTimes(&times, 0);
    });
  }
  for (auto& t : threads) t.join();
  // The writer threads have ended: their CPU is the process's less every thread still here.
  const double cpu = ProcessCpuSeconds() - cpu0;
  const std::map<int, ThreadCpu> threads1 = SampleThreadCpu();
  Pass pass;
  pass.events_per_s =
      static_cast<double>(records) / std::chrono::duration<double>(Clock::now() - start).count();
  pass.cpu = Classify(ThreadCpuSince(threads0, threads1), born_before, 0, cpu);
  double rest = 0;
  for (double stage : {pass.cpu.poller, pass.cpu.kafka, pass.cpu.flush, pass.cpu.compaction,
                       pass.cpu.broker, pass.cpu.other}) {
    rest += stage;
  }
  pass.cpu.writers = std::max(0.0, cpu - rest);
  AddWriteTimes(times, &pass.cpu, records);
  return pass;
}

}  // namespace

// EventStore::Write of the prepared batches into a fresh store (indexing `index_field`, if any).
Pass StorePass(const std::vector<std::vector<store::WriteBatchInput>>& batches, int64_t records,
               const std::string& index_field) {
  ScratchDir dir;
  store::StoreOptions options;
  options.path = dir.path() + "/store";
  if (!index_field.empty()) options.index_fields = {index_field};
  auto store = store::EventStore::Open(options);
  if (!store.ok()) Die(store.status().ToString());
  if (!(*store)->TopicNumber("events").ok()) Die("cannot number the topic");
  return TimeWrites(batches, records, [&store](const store::WriteBatchInput& batch) {
    store::WriteOutcome outcome;
    Status s = (*store)->Write(batch, &outcome);
    if (!s.ok()) Die(s.ToString());
    if (outcome.stored != batch.rows.size()) Die("the store pass stored fewer rows than given");
  });
}

// The same rows (keys and values only: no offsets, counters or index rows) by a raw RocksDB
// DB::Write of one WriteBatch per batch into one column family with the store's memtable size,
// background jobs and pipelined writes. `sorted`: each batch's rows in key order with the per-batch
// insert hint, as EventStore::Write puts them (sorting untimed); else in arrival order. `wal` off
// sets disableWAL.
Pass RawRocksPass(std::vector<std::vector<store::WriteBatchInput>> batches, int64_t records,
                  bool sorted, bool wal) {
  if (sorted) {
    for (auto& own : batches) {
      for (auto& batch : own) {
        std::sort(batch.rows.begin(), batch.rows.end(),
                  [](const store::Row& a, const store::Row& b) { return a.key < b.key; });
      }
    }
  }
  ScratchDir dir;
  rocksdb::Options options;
  options.create_if_missing = true;
  options.write_buffer_size = 32 << 20;
  options.max_background_jobs = 2;
  options.enable_pipelined_write = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir.path() + "/raw", &raw);
  if (!s.ok()) Die(s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions wo;
  wo.disableWAL = !wal;
  wo.memtable_insert_hint_per_batch = sorted;
  return TimeWrites(batches, records, [&](const store::WriteBatchInput& batch) {
    rocksdb::WriteBatch wb;
    for (const store::Row& row : batch.rows) {
      if (!wb.Put(row.key, row.value).ok()) Die("batching");
    }
    rocksdb::Status ws = db->Write(wo, &wb);
    if (!ws.ok()) Die(ws.ToString());
  });
}

}  // namespace hotrow::bench
