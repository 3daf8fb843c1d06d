// scale_bench's stores: the events it generates, how it builds a store as a bulk load, and the
// figures it keeps of each (bench/scale_bench.cc measures them).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/block_reads.h"
#include "store/event_store.h"

namespace hotrow::bench::scale {

using Clock = std::chrono::steady_clock;
constexpr size_t kBaseEvents = 1'000'000;
constexpr size_t kEventsPerId = 100;
constexpr size_t kBatchEvents = 5000;
constexpr size_t kChunkEvents = 250'000;      // generated while the previous chunk is written
constexpr size_t kBuildWriters = 2;           // writer threads of the build, partitions split
constexpr size_t kBuildBatchEvents = 20'000;  // events per batch of the build
constexpr int kPartitions = 16;
constexpr int kBigIds = 8, kBigEvents = 10'000;
constexpr int kSmallIds = 32, kSmallEvents = 100;

// Seconds since `start`.
double Since(Clock::time_point start);
// Prints `what` and exits with 1.
[[noreturn]] void Die(const std::string& what);
std::string DeviceId(size_t n);  // background ids: dev-00000001..
std::string BigId(int n);        // planted ids of ~10k events: big-0..7
std::string SmallId(int n);      // planted ids of 100 events: hundred-00..31
// Bytes this process read from the block device so far (/proc/self/io read_bytes).
uint64_t DiskReadBytes();
// Reads every file under `dir` once, so that a restart and the bare walk it is compared with both
// find the store in the page cache.
void WarmPageCache(const std::string& dir);
// Resident memory of the process now (/proc/self/statm), bytes.
uint64_t RssBytes();

// The events of one store, made a chunk at a time, offsets continuing per partition so that the
// writer of the drop phase adds new rows, never replays.
class Generator {
 public:
  Generator(size_t events, int64_t now_ms, int64_t span_ms, uint16_t topic)
      : events_(events),
        now_ms_(now_ms),
        span_ms_(span_ms),
        topic_(topic),
        next_offset_(kPartitions, 0) {
    big_stride_ = std::max<size_t>(1, events / (kBigIds * kBigEvents));
    small_stride_ = std::max<size_t>(2, events / (kSmallIds * kSmallEvents));
  }

  // Events [begin, end) of the store as batches of up to `batch_events`, one list per writer:
  // writer w gets the partitions p with p % writers == w, in order (as the Ingestor splits them).
  std::vector<std::vector<store::WriteBatchInput>> Batches(const store::EventStore& store,
                                                           size_t begin, size_t end, size_t writers,
                                                           size_t batch_events) {
    std::vector<std::vector<store::WriteBatchInput>> lists(writers);
    for (auto& list : lists) list.emplace_back();
    for (size_t j = begin; j < end; ++j) {
      const int64_t ts =
          now_ms_ - span_ms_ + static_cast<int64_t>(j * static_cast<size_t>(span_ms_) / events_);
      std::string id;
      if (j % big_stride_ == 0 && j / big_stride_ < kBigIds * kBigEvents) {
        id = BigId(static_cast<int>((j / big_stride_) % kBigIds));
      } else if (j % small_stride_ == 1 && j / small_stride_ < kSmallIds * kSmallEvents) {
        id = SmallId(static_cast<int>((j / small_stride_) % kSmallIds));
      } else {
        id = DeviceId(1 + rng_() % ids());
      }
      const size_t writer = static_cast<size_t>(written_ % kPartitions) % writers;
      if (lists[writer].back().rows.size() >= batch_events) lists[writer].emplace_back();
      Add(store, id, ts, &lists[writer].back());
    }
    return lists;
  }

  // One batch of new events of background ids at `ts_ms`.
  store::WriteBatchInput NewBatch(const store::EventStore& store, int64_t ts_ms) {
    store::WriteBatchInput batch;
    for (size_t j = 0; j < kBatchEvents; ++j)
      Add(store, DeviceId(1 + rng_() % ids()), ts_ms, &batch);
    return batch;
  }

  size_t ids() const { return events_ / kEventsPerId; }

 private:
  void Add(const store::EventStore& store, const std::string& id, int64_t ts_ms,
           store::WriteBatchInput* batch) {
    const int32_t partition = static_cast<int32_t>(written_++ % kPartitions);
    const int64_t offset = next_offset_[static_cast<size_t>(partition)]++;
    char payload[160];
    const int n = std::snprintf(
        payload, sizeof(payload),
        "{\"event_id\":\"%s\",\"ts\":%lld,\"temp\":%.2f,\"humidity\":%.2f,\"battery\":%d}",
        id.c_str(), static_cast<long long>(ts_ms), 15.0 + static_cast<double>(rng_() % 2000) / 100,
        30.0 + static_cast<double>(rng_() % 4000) / 100, static_cast<int>(rng_() % 100));
    std::string value(payload, static_cast<size_t>(n));
    value.resize(100, ' ');  // 100-byte payloads, as in the other store benchmarks
    keying::RowKey key{store.salter().SaltOf("events", partition, offset, id),
                       keying::IdHash(id),
                       ts_ms,
                       topic_,
                       partition,
                       offset};
    batch->rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, value)});
    batch->next_offsets[store::TopicPartition{"events", partition}] = offset + 1;
  }

  const size_t events_;
  const int64_t now_ms_, span_ms_;
  const uint16_t topic_;
  size_t big_stride_ = 1, small_stride_ = 2;
  std::vector<int64_t> next_offset_;
  size_t written_ = 0;
  std::mt19937_64 rng_{42};
};

// One store of the run: where it is, its clock, its generator, and the figures measured on it.
struct Subject {
  std::string name;  // "1M", "100M"
  size_t events = 0;
  store::StoreOptions options;
  std::unique_ptr<ManualClock> clock;
  std::unique_ptr<Generator> gen;
  std::unique_ptr<store::EventStore> store;
  double build_s = 0, write_events_per_s = 0;
  std::vector<double> latest_us;
  store::BlockReads latest_reads;
  uint64_t latest_seeks = 0;
  uint64_t latest_disk_bytes = 0;
  size_t latest_queries = 0;
  std::vector<double> big_rate, small_rate;  // range events/s per round
  store::BlockReads big_reads;
  uint64_t big_disk_bytes = 0, big_events = 0;
  double open_s = 0, ready_s = 0, walk_s = 0;
  uint64_t open_disk_bytes = 0, walk_disk_bytes = 0;  // read from the device, not the page cache
  uint64_t walked_rows = 0;
  double drop_ms = 0, stall_during_ms = 0, stall_before_ms = 0;
  size_t dropped = 0;
  uint64_t rss_bytes = 0, disk_bytes = 0;
};

std::unique_ptr<store::EventStore> OpenStore(const Subject& s);
// Builds `s`'s store under `dir` as a bulk load, then reopens it and waits for the compaction of
// its closed buckets.
void Build(Subject* s, const std::string& dir, const DataSpec& spec);
// Every row of the store, read with a cursor over each salt of each bucket: the floor of any walk.
uint64_t BareWalk(store::EventStore* store);

}  // namespace hotrow::bench::scale
