#pragma once

// The CPU accounting and the store passes of bench/ingest_bench.cc: where a run's CPU goes by the
// names of the threads that spent it, RocksDB's perf context of the writing threads, and the same
// records written by EventStore::Write and by raw RocksDB as the baselines of the write stage.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "store/event_store.h"

namespace hotrow::bench {

// Prints "ingest_bench: <what>" and exits 1.
[[noreturn]] void Die(const std::string& what);

// CPU seconds of the calling thread.
double ThreadCpuSeconds();

// The embedded broker (topic "events") in a process of its own, as `hotrow embedded-kafka` runs
// it: a child forked from this process, serving until this process exits (PR_SET_PDEATHSIG).
// REQUIRES: no thread started yet (the child runs librdkafka after fork). Dies when the child
// cannot start the broker.
std::string ForkBroker(int partitions);

// The Ingestor's writer count by default (IngestOptions::writers = 0: the cores, at most 16).
int DefaultWriters();

// Where the time of the threads that call DB::Write went, from RocksDB's perf context (wall time
// on those threads, at PerfLevel kEnableTimeExceptForMutex), summed over the writes it saw.
struct WriteTimes {
  std::atomic<uint64_t> wal_ns{0};       // write_wal_time: the WAL append (no fsync)
  std::atomic<uint64_t> memtable_ns{0};  // write_memtable_time: the memtable inserts
  std::atomic<uint64_t> delay_ns{0};     // write_delay_time: slowdowns and stops (stalls)
  std::atomic<uint64_t> wait_ns{0};      // write_thread_wait_nanos: waiting for the write group
  std::atomic<uint64_t> rows{0};         // the rows of the writes counted
};

// Called on a writing thread before each write of `rows` rows, and with 0 after its last one:
// adds what the perf context saw since the previous call (the previous write) to `times`. The
// first call on a thread turns its perf context on.
void TakeWriteTimes(WriteTimes* times, uint64_t rows);

// A run's CPU in seconds, by stage: the threads' own CPU clocks summed by the threads' names.
struct StageCpu {
  double poller = 0;      // hotrow-poll: poll, parse, key, batch; the bare consumer's poll loop
  double writers = 0;     // hotrow-write<N> or bench-write<N>: EventStore::Write or DB::Write
  double kafka = 0;       // the consumer's librdkafka threads (rdk:*): fetch, lz4 decompress
  double flush = 0;       // rocksdb:high
  double compaction = 0;  // rocksdb:low
  double broker = 0;      // the in-process broker: rdk:mock and its host handle's rdk:* threads
  double other = 0;       // any other thread: the bench's own waiting, hotrow-monitor
  double process = 0;     // getrusage over the same interval (every thread, ended ones too)
  // Wall time on the writing threads by the perf context (not CPU: preemption counts).
  double wal = 0, memtable = 0, stall = 0, wait = 0;
};

// Sums `spent` (ThreadCpuSince) into stages. librdkafka threads that existed before the client
// under test was made (`born_before`) are the broker's; `poller_tid`'s thread counts as the
// poller (the bare consumer polls on the bench's own thread), 0 for none.
StageCpu Classify(const std::map<int, ThreadCpu>& spent,
                  const std::map<int, ThreadCpu>& born_before, int poller_tid, double process);

// Adds the perf context's sums, scaled from the rows it saw to `events`, to `cpu`.
void AddWriteTimes(const WriteTimes& times, StageCpu* cpu, int64_t events);

// One record as the broker holds it.
struct Consumed {
  int32_t partition = 0;
  int64_t offset = 0;
  std::string value;
};

// Every record of topic "events", read once with a plain assigned consumer (untimed).
std::vector<Consumed> ReadAll(const std::string& bootstrap, int partitions, int64_t records);

// The records parsed and keyed as the poller does it, in batches of the Ingestor's default size,
// one list per writer (partition mod writers).
struct Prepared {
  std::vector<std::vector<store::WriteBatchInput>> batches;  // per writer
  // By the calling thread's CPU clock, run alone as the poller runs them (one reused record and
  // buffers), per record:
  double parse_ns = 0;  // RecordParser::Parse (with the indexed field, if any)
  double key_ns = 0;    // salt, id hash, row key and row value encoding
};
Prepared Prepare(const std::vector<Consumed>& records, store::EventStore* store,
                 const std::string& index_field);

// A write pass: its events/s and its CPU by stage.
struct Pass {
  double events_per_s = 0;
  StageCpu cpu;
};

// EventStore::Write of the prepared batches into a fresh store (indexing `index_field`, if any),
// each writer's batches by a thread of its own.
Pass StorePass(const std::vector<std::vector<store::WriteBatchInput>>& batches, int64_t records,
               const std::string& index_field);

// The same rows (keys and values only: no offsets, counters or index rows) by a raw RocksDB
// DB::Write of one WriteBatch per batch into one column family with the store's memtable size,
// background jobs and pipelined writes. `sorted`: each batch's rows in key order with the per-batch
// insert hint, as EventStore::Write puts them (sorting untimed); else in arrival order. `wal` off
// sets disableWAL.
Pass RawRocksPass(std::vector<std::vector<store::WriteBatchInput>> batches, int64_t records,
                  bool sorted, bool wal);

}  // namespace hotrow::bench
