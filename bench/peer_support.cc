#include "bench/peer_support.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "bench/bench_support.h"

namespace hotrow::bench {

uint64_t CurrentRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

uint64_t DirectoryBytes(const std::string& dir, const std::string& extension) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uint64_t total = 0;
  // Files come and go while RocksDB works: skip what vanished between listing and sizing.
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (!extension.empty() && it->path().extension() != extension) continue;
    if (it->is_regular_file(size_ec)) {
      const uint64_t size = it->file_size(size_ec);
      if (!size_ec) total += size;
    }
  }
  return total;
}

namespace {

// The number after `"field": ` in one EVENT_LOG_v1 JSON line; 0 when absent.
uint64_t JsonNumberField(const std::string& line, const std::string& field) {
  const std::string key = "\"" + field + "\": ";
  const size_t at = line.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(line.c_str() + at + key.size(), nullptr, 10);
}

}  // namespace

uint64_t TableBytesWrittenFromLog(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uint64_t total = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != "LOG" && name.rfind("LOG.old.", 0) != 0) continue;
    std::ifstream log(it->path());
    std::string line;
    while (std::getline(log, line)) {
      if (line.find("\"event\": \"table_file_creation\"") == std::string::npos) continue;
      total += JsonNumberField(line, "file_size");
    }
  }
  return total;
}

TableFileWatcher::TableFileWatcher(std::string dir) : dir_(std::move(dir)) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      Poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
}

TableFileWatcher::~TableFileWatcher() { Stop(); }

void TableFileWatcher::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  thread_.join();
  Poll();
}

uint64_t TableFileWatcher::TotalBytes() const {
  uint64_t total = 0;
  for (const auto& [name, size] : sizes_) total += size;
  return total;
}

void TableFileWatcher::Poll() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".sst") continue;
    std::error_code size_ec;
    const uint64_t size = it->file_size(size_ec);
    if (size_ec) continue;  // deleted between listing and sizing
    uint64_t& seen = sizes_[it->path().filename().string()];
    seen = std::max(seen, size);
  }
}

LatencyFigures MeasureLatency(int threads, int queries,
                              const std::function<uint64_t(int thread, int i)>& one_query) {
  std::vector<std::vector<double>> micros(static_cast<size_t>(threads));
  std::vector<uint64_t> results(static_cast<size_t>(threads), 0);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      auto& mine = micros[static_cast<size_t>(t)];
      // Thread t takes every threads-th query, so each thread sees the same mix of ids.
      for (int i = t; i < queries; i += threads) {
        const auto begin = std::chrono::steady_clock::now();
        results[static_cast<size_t>(t)] += one_query(t, i);
        mine.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count());
      }
    });
  }
  for (auto& c : clients) c.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  LatencyFigures out;
  std::vector<double> all;
  for (size_t t = 0; t < micros.size(); ++t) {
    all.insert(all.end(), micros[t].begin(), micros[t].end());
    out.results += results[t];
  }
  out.p50_us = Percentile(&all, 50);
  out.p99_us = Percentile(&all, 99);
  out.queries_per_s = seconds > 0 ? queries / seconds : 0;
  return out;
}

std::string Mib(uint64_t bytes) { return Format("%.1f MiB", static_cast<double>(bytes) / (1 << 20)); }

std::string Format(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return std::string(buf, n < 0 ? 0 : std::min(static_cast<size_t>(n), sizeof(buf) - 1));
}

}  // namespace hotrow::bench
