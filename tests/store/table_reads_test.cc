// How table files are written and read: StoreOptions::compressed_from_level decides which levels'
// files are LZ4-compressed (read back from each file's table properties with RocksDB's
// SstFileReader), and StoreOptions::mmap_reads reads them through memory maps; either way every row
// comes back.

#include <gtest/gtest.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table_properties.h>

#include <algorithm>
#include <map>
#include <string>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/block_reads.h"
#include "store/event_store.h"
#include "tests/store/table_files.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store::table_reads_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int kIds = 200;
constexpr int64_t kEvents = 20'000;

// Writes kEvents events of partition 0, ids dev-0..dev-(kIds-1) in turn, 1 ms apart.
void WriteEvents(EventStore* store) {
  const uint16_t topic = *store->TopicNumber("events");
  WriteBatchInput batch;
  for (int64_t i = 0; i < kEvents; ++i) {
    const std::string id = "dev-" + std::to_string(i % kIds);
    keying::RowKey key{store->salter().SaltOf("events", 0, i, id), keying::IdHash(id),
                       kNow - 100'000 + i, topic, 0, i};
    batch.rows.push_back(
        {keying::EncodeRowKey(key),
         keying::EncodeRowValue(id, R"({"v":1,"pad":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})")});
  }
  batch.next_offsets[{"events", 0}] = kEvents;
  WriteOutcome outcome;
  ASSERT_TRUE(store->Write(batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, static_cast<size_t>(kEvents));
}

// The buckets' table files under `path` by their compression's name ("NoCompression", "LZ4"). The
// metadata's column family keeps RocksDB's defaults; buckets are what the option is for.
std::map<std::string, int> FilesByCompression(const std::string& path) {
  return table_files::TableFilesBy(path, [](const rocksdb::TableProperties& p) {
    return p.column_family_name == rocksdb::kDefaultColumnFamilyName ? std::string()
                                                                     : p.compression_name;
  });
}

// A store written and closed, then opened again with `options`: the close leaves the rows in the
// WAL, the open flushes them into L0 table files.
std::unique_ptr<EventStore> WrittenAndReopened(const StoreOptions& options) {
  {
    auto store = std::move(EventStore::Open(options).value());
    WriteEvents(store.get());
  }
  return std::move(EventStore::Open(options).value());
}

class TableReadsTest : public ::testing::Test {
 protected:
  StoreOptions Options(const std::string& name) {
    StoreOptions options;
    options.path = dir_.Sub(name);
    options.wall_clock = &clock_;
    options.salts = 4;
    return options;
  }
  testing::TempDir dir_;
  ManualClock clock_{kNow};
};

TEST_F(TableReadsTest, CompressedFromLevelDecidesWhichFilesAreCompressed) {
  StoreOptions options = Options("default");
  EXPECT_EQ(options.compressed_from_level, 2) << "L0 and L1 uncompressed is the default";
  auto store = WrittenAndReopened(options);
  std::map<std::string, int> kinds = FilesByCompression(options.path);
  EXPECT_EQ(kinds.size(), 1u);
  EXPECT_GT(kinds["NoCompression"], 0) << "an L0 file was compressed under the default";

  const auto supported = rocksdb::GetSupportedCompressions();
  if (std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) == supported.end()) {
    GTEST_SKIP() << "this RocksDB has no LZ4";
  }
  options = Options("from-l0");
  options.compressed_from_level = 0;
  store = WrittenAndReopened(options);
  kinds = FilesByCompression(options.path);
  EXPECT_EQ(kinds.size(), 1u);
  EXPECT_GT(kinds["LZ4"], 0) << "compressed_from_level 0 left an L0 file uncompressed";
  for (int id : {0, 7, kIds - 1}) {
    EXPECT_EQ(table_files::RowsOf(store.get(), "dev-" + std::to_string(id)), kEvents / kIds) << id;
  }
}

TEST_F(TableReadsTest, MmapReadsReadEveryRowOfCompressedAndPlainFiles) {
  for (int from_level : {0, 7}) {
    StoreOptions options = Options("mmap-" + std::to_string(from_level));
    options.compressed_from_level = from_level;
    options.mmap_reads = true;
    auto store = WrittenAndReopened(options);
    ASSERT_FALSE(FilesByCompression(options.path).empty()) << "no table file to read";
    for (int id : {0, 1, 100, kIds - 1}) {
      EXPECT_EQ(table_files::RowsOf(store.get(), "dev-" + std::to_string(id)), kEvents / kIds)
          << "dev-" << id << ", compressed from level " << from_level;
    }
    EXPECT_EQ(table_files::RowsOf(store.get(), "absent"), 0u);
  }
}

// Through memory maps an uncompressed block is parsed where the page cache holds it: read twice,
// it is read from the file both times and never found in the block cache. Read calls put every
// block in the cache on the first read.
TEST_F(TableReadsTest, MmapReadsLeaveUncompressedBlocksOutOfTheBlockCache) {
  CountBlockReadsOnThisThread();
  for (bool mmap : {false, true}) {
    StoreOptions options = Options(mmap ? "mmap" : "read-calls");
    options.compressed_from_level = 7;
    options.mmap_reads = mmap;
    auto store = WrittenAndReopened(options);
    EXPECT_EQ(table_files::RowsOf(store.get(), "dev-3"), kEvents / kIds);
    const BlockReads before = BlockReadsOnThisThread();
    EXPECT_EQ(table_files::RowsOf(store.get(), "dev-3"), kEvents / kIds);
    const BlockReads second = BlockReadsOnThisThread() - before;
    if (mmap) {
      EXPECT_EQ(second.cache_hits, 0u) << "a block read through the map went to the block cache";
      EXPECT_GT(second.file_reads, 0u);
    } else {
      EXPECT_GT(second.cache_hits, 0u);
      EXPECT_EQ(second.file_reads - second.index_filter_reads, 0u)
          << "a data block read a second time was not in the block cache";
    }
  }
}

}  // namespace
}  // namespace hotrow::store::table_reads_test
