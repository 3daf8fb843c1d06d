// What one row key costs: encoding, decoding, hashing the id and choosing the salt, per key,
// beside a 31-byte memcpy (the least any key write can cost).
//
// Each benchmark walks a ring of precomputed inputs so that neither the compiler nor the branch
// predictor sees the same key twice in a row. Run:
//   build/bench/key_codec_bench --benchmark_min_time=0.2

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_support.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "keying/salter.h"

namespace hotrow::keying {
namespace {

constexpr size_t kRing = 4096;  // a power of two; the inputs stay in L1/L2

const std::vector<RowKey>& Keys() {
  static const std::vector<RowKey> keys = [] {
    std::mt19937_64 rng(42);
    std::vector<RowKey> out(kRing);
    for (RowKey& k : out) {
      k.salt = static_cast<uint8_t>(rng() % 16);
      k.id_hash = rng();
      k.ts_ms = 1'700'000'000'000 + static_cast<int64_t>(rng() % 3'600'000);
      k.topic = static_cast<uint16_t>(rng() % 4);
      k.partition = static_cast<int32_t>(rng() % 12);
      k.offset = static_cast<int64_t>(rng() % 100'000'000);
    }
    return out;
  }();
  return keys;
}

const std::vector<std::string>& EncodedKeys() {
  static const std::vector<std::string> encoded = [] {
    std::vector<std::string> out;
    for (const RowKey& k : Keys()) out.push_back(EncodeRowKey(k));
    return out;
  }();
  return encoded;
}

// Typical ids: "dev-" and seven digits, 11 bytes.
const std::vector<std::string>& Ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    char buf[32];
    for (size_t i = 0; i < kRing; ++i) {
      std::snprintf(buf, sizeof(buf), "dev-%07zu", i * 7919 % 10'000'000);
      out.emplace_back(buf);
    }
    return out;
  }();
  return ids;
}

// ---- Baseline ----

void BM_Baseline_Memcpy31(benchmark::State& state) {
  const std::vector<std::string>& src = EncodedKeys();
  char out[kRowKeySize];
  size_t i = 0;
  for (auto _ : state) {
    std::memcpy(out, src[i++ & (kRing - 1)].data(), kRowKeySize);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Baseline_Memcpy31);

// ---- Key codec ----

void BM_EncodeRowKeyTo(benchmark::State& state) {
  const std::vector<RowKey>& keys = Keys();
  char out[kRowKeySize];
  size_t i = 0;
  for (auto _ : state) {
    EncodeRowKeyTo(keys[i++ & (kRing - 1)], out);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeRowKeyTo);

// The allocating form: 31 bytes do not fit the small-string buffer, so this adds a heap allocation.
void BM_EncodeRowKey_String(benchmark::State& state) {
  const std::vector<RowKey>& keys = Keys();
  size_t i = 0;
  for (auto _ : state) {
    std::string out = EncodeRowKey(keys[i++ & (kRing - 1)]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeRowKey_String);

void BM_DecodeRowKey(benchmark::State& state) {
  const std::vector<std::string>& encoded = EncodedKeys();
  RowKey key;
  size_t i = 0;
  for (auto _ : state) {
    const bool ok = DecodeRowKey(encoded[i++ & (kRing - 1)], &key);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(key);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeRowKey);

// ---- Hash and salt ----

void BM_IdHash(benchmark::State& state) {
  const std::vector<std::string>& ids = Ids();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(IdHash(ids[i++ & (kRing - 1)]));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IdHash);

void BM_SaltOf(benchmark::State& state, SaltBy by) {
  const Salter salter(16, by);
  const std::vector<RowKey>& keys = Keys();
  const std::vector<std::string>& ids = Ids();
  size_t i = 0;
  for (auto _ : state) {
    const size_t at = i++ & (kRing - 1);
    benchmark::DoNotOptimize(salter.SaltOf("events", keys[at].partition, keys[at].offset, ids[at]));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_SaltOf, record, SaltBy::kRecord);
BENCHMARK_CAPTURE(BM_SaltOf, id, SaltBy::kId);

// ---- Everything a write does for one key ----

// IdHash + SaltOf + EncodeRowKeyTo + EncodeRowValueTo of a ~100-byte payload: the per-event
// keying cost on the ingest path.
void BM_KeyAndValueOfOneEvent(benchmark::State& state) {
  const Salter salter(16, SaltBy::kRecord);
  const std::vector<RowKey>& keys = Keys();
  const std::vector<std::string>& ids = Ids();
  const std::string payload(100, 'p');
  std::string value;
  char key_bytes[kRowKeySize];
  size_t i = 0;
  for (auto _ : state) {
    const size_t at = i++ & (kRing - 1);
    RowKey k = keys[at];
    k.id_hash = IdHash(ids[at]);
    k.salt = salter.SaltOf("events", k.partition, k.offset, ids[at]);
    EncodeRowKeyTo(k, key_bytes);
    EncodeRowValueTo(ids[at], payload, &value);
    benchmark::DoNotOptimize(key_bytes);
    benchmark::DoNotOptimize(value.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KeyAndValueOfOneEvent);

// Prints as usual and keeps each benchmark's time per key for the report.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) ns_.emplace_back(run.benchmark_name(), run.GetAdjustedRealTime());
  }
  const std::vector<std::pair<std::string, double>>& ns() const { return ns_; }

 private:
  std::vector<std::pair<std::string, double>> ns_;
};

}  // namespace
}  // namespace hotrow::keying

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  hotrow::keying::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();
  using namespace hotrow::bench;
  Report report("key_codec_bench", "Key codec",
                "Encoding and decoding the 31-byte row key and what one event's write costs in keying, "
                "next to a bare 31-byte memcpy.");
  report.Columns({"operation", "ns per key"});
  for (const auto& [name, ns] : collector.ns()) report.Row({"`" + name + "`", Fixed(ns, 2)});
  report.Write();
  return 0;
}
