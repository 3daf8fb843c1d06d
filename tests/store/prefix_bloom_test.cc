// The prefix bloom filter on (salt, id): a query for an id the store does not hold must read no
// data block. Checked through RocksDB's own per-thread perf counters, on table files (not only
// memtables): the store is reopened so that its write-ahead log is flushed into SST files.
// Also, with the same counters: a cursor kept between queries follows the bucket's table files
// when a flush changes them, even when no row was written since.

#include <gtest/gtest.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>

#include <chrono>
#include <thread>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

struct BlockReads {
  uint64_t data_blocks = 0;  // data blocks touched, from the cache or from a file
  uint64_t bloom_said_maybe = 0;
  uint64_t bloom_said_no = 0;
};

BlockReads Measure(EventStore* store, const std::vector<std::string>& ids) {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  for (const auto& id : ids) {
    for (const auto& bucket : store->Buckets()) {
      for (int salt = 0; salt < store->salter().salts(); ++salt) {
        auto it =
            bucket->NewIterator(keying::IdKeyRange(static_cast<uint8_t>(salt), keying::IdHash(id)),
                                /*within_id_prefix=*/true);
        for (it->SeekToFirst(); it->Valid(); it->Next()) {
        }
        EXPECT_TRUE(it->status().ok()) << it->status().ToString();
      }
    }
  }
  const rocksdb::PerfContext* pc = rocksdb::get_perf_context();
  BlockReads r;
  r.data_blocks = (pc->block_cache_hit_count - pc->block_cache_index_hit_count -
                   pc->block_cache_filter_hit_count) +
                  (pc->block_read_count - pc->index_block_read_count - pc->filter_block_read_count -
                   pc->compression_dict_block_read_count);
  r.bloom_said_maybe = pc->bloom_sst_hit_count;
  r.bloom_said_no = pc->bloom_sst_miss_count;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  return r;
}

// Writes `count` events of partition 0 (offsets 0..count-1, one ms apart from `first_ts`), their
// ids dev-0..dev-(ids-1) in turn, in one batch.
void WriteEvents(EventStore* store, int64_t count, int ids, int64_t first_ts) {
  const uint16_t topic = *store->TopicNumber("events");
  WriteBatchInput batch;
  for (int64_t i = 0; i < count; ++i) {
    const std::string id = "dev-" + std::to_string(i % ids);
    keying::RowKey key{
        store->salter().SaltOf("events", 0, i, id), keying::IdHash(id), first_ts + i, topic, 0, i};
    batch.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, R"({"v":1})")});
  }
  batch.next_offsets[{"events", 0}] = count;
  WriteOutcome outcome;
  ASSERT_TRUE(store->Write(batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, static_cast<size_t>(count));
}

class PrefixBloomTest : public ::testing::Test {
 protected:
  StoreOptions Options(int salts) {
    StoreOptions options;
    options.path = dir_.Sub("store");
    options.wall_clock = &clock_;
    options.salts = salts;
    return options;
  }

  testing::TempDir dir_;
  ManualClock clock_{kNow};
};

TEST_F(PrefixBloomTest, AbsentIdReadsNoDataBlock) {
  const StoreOptions options = Options(4);
  {
    auto store = std::move(EventStore::Open(options).value());
    WriteEvents(store.get(), 50'000, 2000, kNow - 120'000);
  }
  auto store = std::move(EventStore::Open(options).value());  // the WAL is now in table files

  std::vector<std::string> absent, present;
  for (int i = 0; i < 200; ++i) absent.push_back("absent-" + std::to_string(i));
  for (int i = 0; i < 20; ++i) present.push_back("dev-" + std::to_string(i));

  const BlockReads miss = Measure(store.get(), absent);
  EXPECT_GT(miss.bloom_said_no, 0u) << "the bloom filter was never consulted";
  // Every data block touched must be explained by a false positive of the filter (~1% at 10 bits
  // per key); none by the filter being skipped.
  EXPECT_LE(miss.data_blocks, miss.bloom_said_maybe);
  EXPECT_LT(miss.bloom_said_maybe * 20, miss.bloom_said_no) << "false-positive rate above 5%";

  const BlockReads hit = Measure(store.get(), present);
  EXPECT_GT(hit.data_blocks, 0u)
      << "present ids must read data blocks: the check above would be void";
}

// How many table files a seek of `id`'s salt 0 range on `cursor` consulted (the prefix filter
// said "maybe" for each: the id is in every file of the bucket).
uint64_t TablesProbed(RowIterator* cursor) {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  cursor->SeekToFirst();
  const uint64_t probed = rocksdb::get_perf_context()->bloom_sst_hit_count;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  return probed;
}

TEST_F(PrefixBloomTest, AKeptCursorFollowsAFlushWithoutNewWrites) {
  auto store = std::move(EventStore::Open(Options(1)).value());
  WriteEvents(store.get(), 100, 1, kNow - 1000);
  ASSERT_EQ(store->Buckets().size(), 1u);

  // Made while every row is in the memtable: the seek consults no table file.
  auto cursor =
      store->Buckets().front()->NewIterator(keying::IdKeyRange(0, keying::IdHash("dev-0")),
                                            /*within_id_prefix=*/true);
  ASSERT_EQ(TablesProbed(cursor.get()), 0u);
  ASSERT_TRUE(cursor->Valid());

  // The bucket goes idle and is flushed (in the background): its rows move to a table file.
  clock_.Advance(60'000);
  ASSERT_TRUE(store->DropExpiredBuckets().ok());
  // A refreshed cursor finds its rows in the new table file once the flush is installed. A cursor
  // that refreshed only on new writes would keep reading the old memtable and never probe it.
  uint64_t probed = 0;
  for (int tries = 0; tries < 3000 && probed == 0; ++tries) {
    ASSERT_TRUE(cursor->RefreshIfStale().ok());
    probed = TablesProbed(cursor.get());
    if (probed == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(probed, 1u) << "the kept cursor still reads the bucket as it was before the flush";
  int rows = 0;
  for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) ++rows;
  EXPECT_EQ(rows, 100);
}

}  // namespace
}  // namespace hotrow::store
