// StoreOptions::partitioned_index decides how the table files written from then on keep their index
// and filter (partitions under a pinned top level, or one block each), and a store whose files are
// of both kinds reads all of them: a store written before the default changed opens and answers
// whole. The kind of each file is read from its table properties (RocksDB's SstFileReader).

#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/table_properties.h>

#include <map>
#include <string>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/store/table_files.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store::partitioned_index_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int kIds = 500;

// Writes events [first, first + count) of partition 0, ids dev-0..dev-(kIds-1) in turn, 1 ms apart.
void WriteEvents(EventStore* store, int64_t first, int64_t count) {
  const uint16_t topic = *store->TopicNumber("events");
  WriteBatchInput batch;
  for (int64_t i = first; i < first + count; ++i) {
    const std::string id = "dev-" + std::to_string(i % kIds);
    keying::RowKey key{store->salter().SaltOf("events", 0, i, id), keying::IdHash(id),
                       kNow - 100'000 + i, topic, 0, i};
    batch.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, R"({"v":1})")});
  }
  batch.next_offsets[{"events", 0}] = first + count;
  WriteOutcome outcome;
  ASSERT_TRUE(store->Write(batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, static_cast<size_t>(count));
}

// The table files under `path` by kind: "partitioned" (a two-level index) or "whole".
std::map<std::string, int> FilesByIndexKind(const std::string& path) {
  return table_files::TableFilesBy(path, [](const rocksdb::TableProperties& p) {
    return std::string(p.index_partitions > 0 ? "partitioned" : "whole");
  });
}

TEST(PartitionedIndexTest, AStoreWithFilesOfBothKindsReadsThemAll) {
  testing::TempDir dir;
  ManualClock clock(kNow);
  StoreOptions options;
  options.path = dir.Sub("store");
  options.wall_clock = &clock;
  options.salts = 4;
  EXPECT_TRUE(options.partitioned_index) << "partitioned index and filters are the default";

  // Written before the default changed: whole index and filter blocks. Each close leaves the rows
  // in the WAL; the next open flushes them into table files with that open's options.
  options.partitioned_index = false;
  {
    auto store = std::move(EventStore::Open(options).value());
    WriteEvents(store.get(), 0, 20'000);
  }
  {
    auto store = std::move(EventStore::Open(options).value());
    WriteEvents(store.get(), 20'000, 20'000);
  }
  options.partitioned_index = true;
  auto store = std::move(EventStore::Open(options).value());
  const std::map<std::string, int> kinds = FilesByIndexKind(options.path);
  EXPECT_GT(kinds.count("whole") ? kinds.at("whole") : 0, 0) << "no file of the old kind";
  EXPECT_GT(kinds.count("partitioned") ? kinds.at("partitioned") : 0, 0)
      << "the option did not change the files written under it";

  // Every id has rows in both kinds of file; each is read whole.
  for (int id : {0, 1, 250, kIds - 1}) {
    EXPECT_EQ(table_files::RowsOf(store.get(), "dev-" + std::to_string(id)), 40'000u / kIds) << id;
  }
  EXPECT_EQ(table_files::RowsOf(store.get(), "absent"), 0u);

  // And back: a store opened with the option off reads the partitioned files too.
  store.reset();
  options.partitioned_index = false;
  store = std::move(EventStore::Open(options).value());
  for (int id : {0, 7, kIds - 1}) {
    EXPECT_EQ(table_files::RowsOf(store.get(), "dev-" + std::to_string(id)), 40'000u / kIds) << id;
  }
}

}  // namespace
}  // namespace hotrow::store::partitioned_index_test
