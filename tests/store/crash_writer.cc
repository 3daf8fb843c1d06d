// crash_writer: the child process of crash_test. Writes numbered batches to a store until killed.
//
//   crash_writer PATH EVENTS_PER_PARTITION BASE_MS            (salt_by record)
//   crash_writer PATH EVENTS_PER_PARTITION BASE_MS adaptive SEED
//
// An event's time comes from its offset, not from the clock (TimeOf): BASE_MS, the same for every
// writer of one test, plus half a bucket per K offsets. The store then holds about one column
// family per two batches however slowly the machine runs the test; from the wall clock it held one
// per 100 ms of the test's run, and on a loaded CI machine each reopen, kill after kill, opened
// more of them until a writer took longer to open the store than the test waits for.
//
// Batch i holds, for each of the partitions ("crash", 0) and ("crash", 1), the events with offsets
// [i*K, (i+1)*K), and sets both next offsets to (i+1)*K, in one Write. Each batch spreads over two
// time buckets, so one write touches several column families. It resumes after the stored offsets,
// says "open" once the store is open and "batch I next N" after each Write returned, on the pipe
// to its parent (tests/support/child_protocol.h), and exits only on error (exit 1, the reason on
// stderr) or when killed. Its stdout is a log like any library's: it prints a warning there first,
// as RocksDB's write stalls ("Stopping writes because we have 2 immutable memtables") did in the
// middle of the protocol when stdout carried it. Every event carries one indexed
// field, site = "s-" (offset % 5), so that each batch also writes index rows.
//
// With "adaptive" the store salts adaptively and two writer threads write at once, as the
// Ingestor's writers do: thread p writes partition p only, in batches of 1 to 2K events (sizes
// drawn from SEED), and says "partition P next N" after each Write returned. A third of the
// events are of one hot id, the others of 37 quiet ones. Each thread starts by writing again up
// to 2K events it had stored already, in other batches, as Kafka delivers them again after a
// restart: the store must count them as duplicates and store nothing twice.
//
// The store settings must match crash_test.cc's (kSalts, kBucketMs, kTtlMs, the hot rule).

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/support/child_protocol.h"

namespace {

constexpr int kSalts = 8;
constexpr int64_t kBucketMs = 100;  // small: a new column family every two batches
constexpr int64_t kTtlMs = 10 * 60 * 1000;
constexpr int kPartitions = 2;

int Fail(const std::string& what) {
  std::fprintf(stderr, "crash_writer: %s\n", what.c_str());
  return 1;
}

// The time of the event at `offset`: half a bucket later every `per_partition` offsets, every other
// offset a bucket earlier (each batch spreads over two buckets). Within max_future_ms of the wall
// clock as long as a test writes fewer than 1200 batches.
int64_t TimeOf(int64_t base_ms, int64_t offset, int64_t per_partition) {
  return base_ms + (offset / per_partition) * (kBucketMs / 2) - (offset % 2) * kBucketMs;
}

// The payload names its record, so a torn or misplaced value shows.
std::string PayloadOf(int32_t partition, int64_t offset) {
  return "{\"p\":" + std::to_string(partition) + ",\"o\":" + std::to_string(offset) +
         ",\"pad\":\"" + std::string(200, 'x') + "\"}";
}

// Adaptive mode: the id of (partition, offset).
std::string AdaptiveIdOf(int64_t offset) {
  return offset % 3 == 0 ? "dev-hot" : "dev-" + std::to_string(offset % 37);
}

// Adaptive mode: two writer threads, one partition each. Returns the exit code on error.
int RunAdaptive(hotrow::store::EventStore& store, uint16_t topic, int64_t per_partition,
                int64_t base_ms, uint64_t seed) {
  using namespace hotrow;
  const auto offsets = store.StoredOffsets();
  std::mutex out_mu;
  std::string error;
  testing::SayToParent("open");
  std::vector<std::thread> writers;
  for (int32_t p = 0; p < kPartitions; ++p) {
    writers.emplace_back([&, p] {
      std::mt19937_64 rng(seed * 2 + static_cast<uint64_t>(p));
      auto it = offsets.find(store::TopicPartition{"crash", p});
      const int64_t stored = it != offsets.end() ? it->second : 0;
      int64_t next =
          std::max<int64_t>(0, stored - static_cast<int64_t>(rng() % (2 * per_partition)));
      while (true) {
        const int64_t n = 1 + static_cast<int64_t>(rng() % (2 * per_partition));
        store::WriteBatchInput batch;
        for (int64_t offset = next; offset < next + n; ++offset) {
          const std::string id = AdaptiveIdOf(offset);
          keying::RowKey key;
          key.salt = store.salter().SaltOf("crash", p, offset, id);
          key.id_hash = keying::IdHash(id);
          key.ts_ms = TimeOf(base_ms, offset, per_partition);
          key.topic = topic;
          key.partition = p;
          key.offset = offset;
          batch.rows.push_back(
              {keying::EncodeRowKey(key), keying::EncodeRowValue(id, PayloadOf(p, offset))});
        }
        batch.next_offsets[store::TopicPartition{"crash", p}] = next + n;
        store::WriteOutcome outcome;
        Status st = store.Write(batch, &outcome);
        std::lock_guard lock(out_mu);
        if (st.ok() && outcome.stored + outcome.duplicate != batch.rows.size()) {
          st = Status::Corruption("stored " + std::to_string(outcome.stored) + " and " +
                                  std::to_string(outcome.duplicate) + " duplicates of " +
                                  std::to_string(batch.rows.size()));
        }
        if (st.ok() && next + n <= stored && outcome.stored != 0) {
          st = Status::Corruption("a replayed batch below the stored offset was stored again");
        }
        if (!st.ok()) {
          if (error.empty()) error = "partition " + std::to_string(p) + ": " + st.ToString();
          return;
        }
        testing::SayToParent("partition " + std::to_string(p) + " next " +
                             std::to_string(next + n));
        next += n;
      }
    });
  }
  for (auto& w : writers) w.join();
  return Fail("write: " + error);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hotrow;
  const bool adaptive = argc == 6 && std::string(argv[4]) == "adaptive";
  if (argc != 4 && !adaptive) {
    return Fail("usage: crash_writer PATH EVENTS_PER_PARTITION BASE_MS [adaptive SEED]");
  }
  const int64_t per_partition = std::strtoll(argv[2], nullptr, 10);
  if (per_partition <= 0) return Fail("EVENTS_PER_PARTITION must be positive");
  const int64_t base_ms = std::strtoll(argv[3], nullptr, 10);
  if (base_ms <= 0) return Fail("BASE_MS must be positive");
  // spdlog's default logger writes to stdout, like a library that logs where it likes.
  spdlog::warn("crash_writer: a log line on stdout, which is not the protocol");

  store::StoreOptions options;
  options.path = argv[1];
  options.salts = kSalts;
  options.bucket_ms = kBucketMs;
  options.ttl_ms = kTtlMs;
  options.block_cache_bytes = 4 << 20;
  options.write_buffer_bytes = 4 << 20;
  options.index_fields = {"site"};
  if (adaptive) {
    options.salt_by = keying::SaltBy::kAdaptive;
    options.hot = keying::HotRule{0.05, 8};
    options.index_fields.clear();
  }
  Result<std::unique_ptr<store::EventStore>> opened = store::EventStore::Open(options);
  if (!opened.ok()) return Fail("open: " + opened.status().ToString());
  store::EventStore& store = **opened;
  Result<uint16_t> topic = store.TopicNumber("crash");
  if (!topic.ok()) return Fail("topic: " + topic.status().ToString());
  if (adaptive) {
    return RunAdaptive(store, *topic, per_partition, base_ms, std::strtoull(argv[5], nullptr, 10));
  }

  const auto offsets = store.StoredOffsets();
  int64_t next[kPartitions] = {0, 0};
  for (int p = 0; p < kPartitions; ++p) {
    auto it = offsets.find(store::TopicPartition{"crash", p});
    if (it != offsets.end()) next[p] = it->second;
  }
  if (next[0] != next[1] || next[0] % per_partition != 0) {
    return Fail("stored offsets are not at a batch boundary: " + std::to_string(next[0]) + ", " +
                std::to_string(next[1]));
  }
  testing::SayToParent("open");

  for (int64_t batch_no = next[0] / per_partition;; ++batch_no) {
    store::WriteBatchInput batch;
    for (int p = 0; p < kPartitions; ++p) {
      for (int64_t offset = batch_no * per_partition; offset < (batch_no + 1) * per_partition;
           ++offset) {
        const std::string id = "dev-" + std::to_string(offset % 37);
        keying::RowKey key;
        key.salt = store.salter().SaltOf("crash", p, offset, id);
        key.id_hash = keying::IdHash(id);
        key.ts_ms = TimeOf(base_ms, offset, per_partition);
        key.topic = *topic;
        key.partition = p;
        key.offset = offset;
        batch.rows.push_back({keying::EncodeRowKey(key),
                              keying::EncodeRowValue(id, PayloadOf(p, offset)),
                              {{"site", "s-" + std::to_string(offset % 5)}}});
      }
      batch.next_offsets[store::TopicPartition{"crash", p}] = (batch_no + 1) * per_partition;
    }
    store::WriteOutcome outcome;
    Status st = store.Write(batch, &outcome);
    if (!st.ok()) return Fail("write: " + st.ToString());
    if (outcome.stored != batch.rows.size()) {
      return Fail("batch " + std::to_string(batch_no) + ": stored " +
                  std::to_string(outcome.stored) + " of " + std::to_string(batch.rows.size()) +
                  " (expired " + std::to_string(outcome.expired) + ", future " +
                  std::to_string(outcome.future) + ", duplicate " +
                  std::to_string(outcome.duplicate) + ")");
    }
    testing::SayToParent("batch " + std::to_string(batch_no) + " next " +
                         std::to_string((batch_no + 1) * per_partition));
  }
}
