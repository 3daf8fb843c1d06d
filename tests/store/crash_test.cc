// Kill -9 in the middle of writes, many times, at random moments: after every kill each batch is
// either there whole with its offsets or absent. The writer is tests/store/crash_writer.cc.
//
// Each reopen also checks that an index row exists exactly when its event does.
// A failure prints the seed; rerun with HOTROW_TEST_SEED=<seed>.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/salter.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

// As in crash_writer.cc.
constexpr int kSalts = 8;
constexpr int64_t kBucketMs = 100;  // small: a new column family every two batches
constexpr int64_t kTtlMs = 10 * 60 * 1000;
constexpr int64_t kPerPartition = 50;
constexpr int kKills = 30;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Parses "batch I next N"; -1 for any other line.
int64_t AckedNext(const std::string& line) {
  int64_t batch = 0;
  int64_t next = 0;
  if (std::sscanf(line.c_str(), "batch %" SCNd64 " next %" SCNd64, &batch, &next) == 2) return next;
  return -1;
}

// The store as crash_writer opens it.
store::StoreOptions WriterStoreOptions(const std::string& path, bool adaptive) {
  store::StoreOptions options;
  options.path = path;
  options.salts = kSalts;
  options.bucket_ms = kBucketMs;
  options.ttl_ms = kTtlMs;
  options.block_cache_bytes = 4 << 20;
  options.write_buffer_bytes = 4 << 20;
  if (adaptive) {
    options.salt_by = keying::SaltBy::kAdaptive;
    options.hot = keying::HotRule{0.05, 8};
  } else {
    options.index_fields = {"site"};
  }
  return options;
}

// Waits for the writer's "open", passes each of up to `max_lines` - 1 progress lines (a random
// count) to `note_line`, then kills it with SIGKILL at a random moment up to 3 ms later: before its
// first batch, between batches or inside one. The lines it said before the kill are noted too:
// those batches had returned from Write.
void KillAfterSomeBatches(testing::ChildProcess& writer, const std::string& log,
                          std::mt19937_64& rng, int max_lines,
                          const std::function<void(const std::string&)>& note_line) {
  std::string line;
  ASSERT_TRUE(writer.ReadLine(&line)) << "the writer did not open the store:\n" << ReadFile(log);
  ASSERT_EQ(line, "open");
  const int lines = static_cast<int>(rng() % static_cast<uint64_t>(max_lines));
  for (int i = 0; i < lines; ++i) {
    ASSERT_TRUE(writer.ReadLine(&line)) << "the writer stopped:\n" << ReadFile(log);
    note_line(line);
  }
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
  writer.Signal(SIGKILL);
  ASSERT_EQ(writer.Wait(), 128 + SIGKILL) << "the writer ended by itself:\n" << ReadFile(log);
  while (writer.ReadLine(&line, std::chrono::milliseconds(200))) note_line(line);
}

TEST(CrashTest, EveryBatchIsWholeWithItsOffsetsOrAbsentAfterKill9) {
  const uint64_t seed = testing::TestSeed(4242);
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::TempDir dir;
  const std::string path = dir.Sub("store");
  const std::string log = dir.Sub("writer.log");
  // The writers' events take their times from their offsets after this (crash_writer.cc).
  const int64_t base_ms = WallClock::Default()->NowMs();
  int64_t acked = 0;  // the highest next offset a writer reported as written
  int64_t before = 0;
  int grew = 0;

  for (int kill = 0; kill < kKills; ++kill) {
    SCOPED_TRACE("kill " + std::to_string(kill));
    {
      testing::ChildProcess writer({testing::SiblingExecutable("crash_writer"), path,
                                    std::to_string(kPerPartition), std::to_string(base_ms)},
                                   log, testing::ChildLines::kProtocolFd);
      std::string line;
      // Each line "batch I next N" is printed after Write returned.
      auto note_line = [&](const std::string& l) {
        const int64_t next = AckedNext(l);
        EXPECT_TRUE(next >= 0 || l == "open") << "unexpected line from the writer: " << l;
        acked = std::max(acked, next);
      };
      if (rng() % 6 == 0) {
        // Now and then a kill while the writer may still be opening (recovering) the store: at a
        // random moment within its first 30 ms, whatever it is doing then.
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30'000));
        writer.Signal(SIGKILL);
        ASSERT_EQ(writer.Wait(), 128 + SIGKILL) << "the writer ended by itself:\n" << ReadFile(log);
        while (writer.ReadLine(&line, std::chrono::milliseconds(200))) note_line(line);
      } else {
        // 0 to 12 progress lines.
        ASSERT_NO_FATAL_FAILURE(KillAfterSomeBatches(writer, log, rng, 13, note_line));
      }
    }

    Result<std::unique_ptr<store::EventStore>> store =
        store::EventStore::Open(WriterStoreOptions(path, /*adaptive=*/false));
    ASSERT_TRUE(store.ok()) << "reopen after kill -9: " << store.status().ToString();

    const auto offsets = (*store)->StoredOffsets();
    int64_t next[2] = {0, 0};
    for (int p = 0; p < 2; ++p) {
      auto it = offsets.find(store::TopicPartition{"crash", p});
      if (it != offsets.end()) next[p] = it->second;
    }
    ASSERT_EQ(next[0], next[1]) << "the two partitions of one batch disagree";
    ASSERT_EQ(next[0] % kPerPartition, 0) << "offsets inside a batch: " << next[0];
    ASSERT_GE(next[0], acked) << "a batch whose Write had returned is gone";
    ASSERT_GE(next[0], before) << "offsets went backwards";
    if (next[0] > before) ++grew;
    before = next[0];

    Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(**store);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<std::vector<int>> seen(2, std::vector<int>(static_cast<size_t>(next[0]), 0));
    for (const testing::StoredRow& row : *rows) {
      const testing::TestEvent& e = row.event;
      ASSERT_EQ(e.topic, "crash") << testing::Describe(e);
      ASSERT_TRUE(e.partition == 0 || e.partition == 1) << testing::Describe(e);
      ASSERT_LT(e.offset, next[0]) << "an event beyond the stored offset: " << testing::Describe(e);
      ASSERT_EQ(e.id, "dev-" + std::to_string(e.offset % 37)) << testing::Describe(e);
      const std::string payload = "{\"p\":" + std::to_string(e.partition) +
                                  ",\"o\":" + std::to_string(e.offset) + ",\"pad\":\"" +
                                  std::string(200, 'x') + "\"}";
      ASSERT_EQ(e.payload, payload) << testing::Describe(e);
      ++seen[static_cast<size_t>(e.partition)][static_cast<size_t>(e.offset)];
    }
    for (int p = 0; p < 2; ++p) {
      for (int64_t o = 0; o < next[0]; ++o) {
        ASSERT_EQ(seen[static_cast<size_t>(p)][static_cast<size_t>(o)], 1)
            << "partition " << p << " offset " << o << " below the stored offset " << next[0];
      }
    }
    // An event is listed by an index posting exactly when it is stored: once per stored event,
    // none beyond, each posting in its events' bucket (ReadPostings checks the postings' rules).
    std::vector<std::vector<int>> indexed(2, std::vector<int>(static_cast<size_t>(next[0]), 0));
    for (const auto& bucket : (*store)->Buckets()) {
      ASSERT_TRUE(bucket->Indexes("site")) << "bucket " << bucket->start_ms();
      Result<std::vector<testing::PostedEvent>> posted = testing::ReadPostings(*bucket);
      ASSERT_TRUE(posted.ok()) << posted.status().ToString();
      for (const testing::PostedEvent& e : *posted) {
        const keying::RowKey& key = e.event;
        ASSERT_TRUE(key.partition == 0 || key.partition == 1);
        ASSERT_LT(key.offset, next[0])
            << "an index posting lists an event beyond the stored offset";
        ASSERT_EQ(e.field, "site");
        ASSERT_EQ(e.value, "s-" + std::to_string(key.offset % 5));
        ASSERT_EQ(key.id_hash, keying::IdHash("dev-" + std::to_string(key.offset % 37)));
        ++indexed[static_cast<size_t>(key.partition)][static_cast<size_t>(key.offset)];
      }
    }
    for (int p = 0; p < 2; ++p) {
      for (int64_t o = 0; o < next[0]; ++o) {
        ASSERT_EQ(indexed[static_cast<size_t>(p)][static_cast<size_t>(o)], 1)
            << "postings listing partition " << p << " offset " << o;
      }
    }
    std::printf("[crash] kill %d: %" PRId64 " offsets per partition stored, %zu rows\n", kill,
                next[0], rows->size());
  }
  // Kills landed after some progress most of the time; otherwise the test proves little.
  EXPECT_GE(grew, kKills / 2) << "the store rarely grew between kills";
}

// Parses "partition P next N"; false for any other line.
bool AckedPartitionNext(const std::string& line, int* partition, int64_t* next) {
  return std::sscanf(line.c_str(), "partition %d next %" SCNd64, partition, next) == 2 &&
         *partition >= 0 && *partition < 2;
}

// The same under salt_by adaptive (crash_writer's "adaptive" mode): two writer threads at once,
// batch boundaries that change from one run to the next, a replay of what was stored at every
// start, and salts decided from counts the store rebuilds at open. After every kill each record
// below its partition's stored offset is there exactly once and none above, every row is in its
// id's home salt or in its record's salt, and every bucket names as spread each id with a row
// outside its home salt, so that a query seeks it there (docs/ARCHITECTURE.md, "Adaptive
// salting").
TEST(CrashTest, UnderAdaptiveSaltingEveryRecordIsStoredOnceAndFoundAfterKill9) {
  const uint64_t seed = testing::TestSeed(4343);
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::TempDir dir;
  const std::string path = dir.Sub("store");
  const std::string log = dir.Sub("writer.log");
  // The writers' events take their times from their offsets after this (crash_writer.cc).
  const int64_t base_ms = WallClock::Default()->NowMs();
  int64_t acked[2] = {0, 0};   // the highest next offsets a writer reported as written
  int64_t before[2] = {0, 0};  // the stored ones after the last kill
  int grew = 0;
  size_t spread_rows = 0;
  constexpr int kAdaptiveKills = kKills / 2;

  for (int kill = 0; kill < kAdaptiveKills; ++kill) {
    SCOPED_TRACE("kill " + std::to_string(kill));
    {
      testing::ChildProcess writer(
          {testing::SiblingExecutable("crash_writer"), path, std::to_string(kPerPartition),
           std::to_string(base_ms), "adaptive", std::to_string(rng())},
          log, testing::ChildLines::kProtocolFd);
      std::string line;
      auto note_line = [&](const std::string& l) {
        int p = 0;
        int64_t next = 0;
        const bool acked_line = AckedPartitionNext(l, &p, &next);
        EXPECT_TRUE(acked_line || l == "open") << "unexpected line from the writer: " << l;
        if (acked_line) acked[p] = std::max(acked[p], next);
      };
      ASSERT_NO_FATAL_FAILURE(KillAfterSomeBatches(writer, log, rng, 25, note_line));
    }

    Result<std::unique_ptr<store::EventStore>> store =
        store::EventStore::Open(WriterStoreOptions(path, /*adaptive=*/true));
    ASSERT_TRUE(store.ok()) << "reopen after kill -9: " << store.status().ToString();
    const keying::Salter& salter = (*store)->salter();

    const auto offsets = (*store)->StoredOffsets();
    int64_t next[2] = {0, 0};
    for (int p = 0; p < 2; ++p) {
      auto it = offsets.find(store::TopicPartition{"crash", p});
      if (it != offsets.end()) next[p] = it->second;
      ASSERT_GE(next[p], acked[p])
          << "partition " << p << ": a batch whose Write had returned is gone";
      ASSERT_GE(next[p], before[p]) << "partition " << p << ": offsets went backwards";
    }
    if (next[0] + next[1] > before[0] + before[1]) ++grew;
    before[0] = next[0];
    before[1] = next[1];

    Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(**store);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<std::vector<int>> seen(2);
    for (int p = 0; p < 2; ++p)
      seen[static_cast<size_t>(p)].assign(static_cast<size_t>(next[p]), 0);
    std::map<int64_t, std::shared_ptr<const store::Bucket>> buckets;
    for (const auto& bucket : (*store)->Buckets()) buckets[bucket->start_ms()] = bucket;
    for (const testing::StoredRow& row : *rows) {
      const testing::TestEvent& e = row.event;
      ASSERT_TRUE(e.partition == 0 || e.partition == 1) << testing::Describe(e);
      ASSERT_LT(e.offset, next[e.partition])
          << "an event beyond the stored offset: " << testing::Describe(e);
      const std::string id = e.offset % 3 == 0 ? "dev-hot" : "dev-" + std::to_string(e.offset % 37);
      ASSERT_EQ(e.id, id) << testing::Describe(e);
      const std::string payload = "{\"p\":" + std::to_string(e.partition) +
                                  ",\"o\":" + std::to_string(e.offset) + ",\"pad\":\"" +
                                  std::string(200, 'x') + "\"}";
      ASSERT_EQ(e.payload, payload) << testing::Describe(e);
      ++seen[static_cast<size_t>(e.partition)][static_cast<size_t>(e.offset)];
      const uint8_t home = salter.HomeSalt(row.id_hash);
      if (row.salt == home) continue;
      ASSERT_EQ(row.salt, salter.RecordSalt("crash", e.partition, e.offset))
          << "neither the home salt nor the record's: " << testing::Describe(e);
      ASSERT_TRUE(buckets.at(row.bucket_start_ms)->SpreadsId(row.id_hash))
          << "bucket " << row.bucket_start_ms << " does not name as spread the id of a row "
          << "outside its home salt, so queries would miss it: " << testing::Describe(e);
      ++spread_rows;
    }
    for (int p = 0; p < 2; ++p) {
      for (int64_t o = 0; o < next[p]; ++o) {
        ASSERT_EQ(seen[static_cast<size_t>(p)][static_cast<size_t>(o)], 1)
            << "partition " << p << " offset " << o << " below the stored offset " << next[p];
      }
    }
    std::printf("[crash adaptive] kill %d: next offsets %" PRId64 " and %" PRId64
                ", %zu rows, %zu spread rows so far\n",
                kill, next[0], next[1], rows->size(), spread_rows);
  }
  EXPECT_GE(grew, kAdaptiveKills / 2) << "the store rarely grew between kills";
  EXPECT_GT(spread_rows, 0u) << "the hot id was never spread: the test proves little";
}

}  // namespace
}  // namespace hotrow
