#pragma once

// What the peer benchmarks (redis_bench, ttl_bench) share: latency measurement over N client
// threads, this process's memory, what a RocksDB database wrote, and small formatting helpers.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>

namespace hotrow::bench {

// Resident set size of this process now (VmRSS), in bytes; 0 when /proc cannot tell.
uint64_t CurrentRssBytes();

// Bytes of every regular file under `dir`, recursively, or only of those whose name ends in
// `extension` (".log": RocksDB's write-ahead log) when one is given; 0 when `dir` does not exist.
uint64_t DirectoryBytes(const std::string& dir, const std::string& extension = "");

// Sum of the sizes of every table file RocksDB logged creating (flushes and compactions alike) in
// the info logs (LOG, LOG.old.*) of the database at `dir`; 0 when it keeps no LOG there.
uint64_t TableBytesWrittenFromLog(const std::string& dir);

// Watches a RocksDB directory from a thread of its own and adds up the final size of every table
// file (*.sst) that appears in it: the bytes flushes and compactions wrote. For hotrow's store,
// which sends RocksDB's log to spdlog and does not expose rocksdb::Statistics. Table files are
// written once and never change after, and live for at least the seconds between a flush and the
// compaction or bucket drop that removes them, so polling every 50 ms sees all of them (checked
// against DBWithTTL's own statistics in ttl_bench).
//
// Thread-safety: Stop and TotalBytes from the owning thread only.
class TableFileWatcher {
 public:
  explicit TableFileWatcher(std::string dir);
  ~TableFileWatcher();
  TableFileWatcher(const TableFileWatcher&) = delete;
  TableFileWatcher& operator=(const TableFileWatcher&) = delete;

  // Takes a last look and stops the thread. Idempotent.
  void Stop();
  // REQUIRES: Stop() was called.
  uint64_t TotalBytes() const;

 private:
  void Poll();

  const std::string dir_;
  std::map<std::string, uint64_t> sizes_;  // file name -> largest size seen
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct LatencyFigures {
  double p50_us = 0;
  double p99_us = 0;
  double queries_per_s = 0;
  uint64_t results = 0;  // what the queries returned in total, to check two systems agree
};

// Runs one_query(i) for i in [0, queries), split evenly over `threads` client threads started
// together, timing each call. one_query returns how many events it got; it must be safe to call
// from `threads` threads at once (give each thread its own connection when it needs one:
// `thread` is 0..threads-1).
LatencyFigures MeasureLatency(int threads, int queries,
                              const std::function<uint64_t(int thread, int i)>& one_query);

// "12.3 MiB"
std::string Mib(uint64_t bytes);
// printf into a std::string.
std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace hotrow::bench
