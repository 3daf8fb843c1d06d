// Index postings (keying/index_key.h) as the store writes them: one row per (field, value) and
// second of a write, listing every event of the write with that value, and never merged across
// writes; and a store whose buckets hold the index rows of an older hotrow (one row per event,
// tag 00): it opens, names those buckets unindexed, skips their rows in scans, and indexes the
// buckets made after.

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "query/index_query.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "store/store_metadata.h"
#include "tests/support/event_gen.h"
#include "tests/support/raw_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store::index_postings_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kMinute = 60'000;
// The start of the bucket a minute before the clock's: every event below falls in it.
constexpr int64_t kBucketA = kNow - kNow % kMinute - kMinute;
constexpr int64_t kBucketB = kBucketA + kMinute;

class IndexPostingsTest : public ::testing::Test {
 protected:
  void Open() {
    store_.reset();
    StoreOptions options;
    options.path = dir_.Sub("store");
    options.wall_clock = &clock_;
    options.salts = 16;
    options.index_fields = {"site", "type"};
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  // Event i of a write at `base`: time base + (i % 4) * 400 (two aligned seconds when base is
  // aligned), site "s" + i % 3, type "alarm" on even i only.
  void WriteEvents(int64_t base, int64_t first_offset, int count) {
    WriteBatchInput batch;
    for (int i = 0; i < count; ++i) {
      testing::TestEvent e;
      e.id = "dev-" + std::to_string(i % 50);
      e.ts_ms = base + (i % 4) * 400;
      e.topic = "events";
      e.partition = 0;
      e.offset = first_offset + i;
      e.payload = "{}";
      Result<Row> row = testing::MakeRow(store_.get(), e);
      ASSERT_TRUE(row.ok()) << row.status().ToString();
      row->index.push_back({"site", "s" + std::to_string(i % 3)});
      if (i % 2 == 0) row->index.push_back({"type", "alarm"});
      batch.rows.push_back(std::move(row).value());
    }
    batch.next_offsets[{"events", 0}] = first_offset + count;
    WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
    ASSERT_EQ(outcome.stored, static_cast<size_t>(count));
  }

  std::shared_ptr<const Bucket> BucketAt(int64_t start) const {
    for (const auto& b : store_->Buckets()) {
      if (b->start_ms() == start) return b;
    }
    return nullptr;
  }

  testing::TempDir dir_;
  ManualClock clock_{kNow};
  std::unique_ptr<EventStore> store_;
};

TEST_F(IndexPostingsTest, OnePostingPerFieldValueAndSecondOfAWrite) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(WriteEvents(kBucketA, 0, 200));
  std::shared_ptr<const Bucket> bucket = BucketAt(kBucketA);
  ASSERT_NE(bucket, nullptr);
  Result<std::vector<testing::PostedEvent>> posted = testing::ReadPostings(*bucket);
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  // site: 3 values x 2 seconds; type: "alarm" on even events, all in the first second.
  std::set<std::string> postings;
  std::map<std::string, int> listed;  // by field
  std::set<std::tuple<std::string, int64_t>> seen;
  for (const testing::PostedEvent& e : *posted) {
    postings.insert(keying::EncodeIndexKey(e.posting));
    ++listed[e.field];
    EXPECT_TRUE(seen.insert({e.field, e.event.offset}).second)
        << e.field << " lists offset " << e.event.offset << " twice";
    const int i = static_cast<int>(e.event.offset);
    EXPECT_EQ(e.value, e.field == "site" ? "s" + std::to_string(i % 3) : "alarm");
  }
  EXPECT_EQ(postings.size(), 7u);
  EXPECT_EQ(listed["site"], 200);
  EXPECT_EQ(listed["type"], 100);

  // Another write adds its own postings; it does not rewrite the first write's.
  ASSERT_NO_FATAL_FAILURE(WriteEvents(kBucketA, 200, 1));
  posted = testing::ReadPostings(*bucket);
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  postings.clear();
  for (const testing::PostedEvent& e : *posted) postings.insert(keying::EncodeIndexKey(e.posting));
  EXPECT_EQ(postings.size(), 9u);  // + site "s0" and type "alarm" of the new event
}

// Rewrites bucket `start` of the closed store at `path` as an older hotrow wrote it: each event's
// index entries as rows of their own (tag 00, in the event's salt), and the bucket's record of its
// fields without the postings mark.
void MakeLegacy(const std::string& path, int64_t start) {
  std::unique_ptr<testing::RawStore> raw = testing::RawStore::Open(path);
  ASSERT_NE(raw, nullptr);
  rocksdb::DB* db = raw->db();
  rocksdb::ColumnFamilyHandle* meta = raw->metadata();
  rocksdb::ColumnFamilyHandle* bucket = raw->Bucket(start, start + kMinute);
  ASSERT_NE(bucket, nullptr);
  rocksdb::WriteBatch wb;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), bucket));
  int legacy_rows = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string key = it->key().ToString();
    if (!keying::IsIndexKey(key)) continue;
    ASSERT_TRUE(wb.Delete(bucket, key).ok());
    std::string_view field, value, events;
    const std::string posting = it->value().ToString();
    ASSERT_TRUE(keying::DecodePosting(posting, &field, &value, &events));
    for (size_t at = 0; at < events.size(); at += keying::kRowKeySize) {
      keying::RowKey event;
      ASSERT_TRUE(keying::DecodeRowKey(events.substr(at, keying::kRowKeySize), &event));
      std::string legacy(keying::kIndexKeySize, '\0');
      legacy[0] = static_cast<char>(event.salt);
      keying::StoreBigEndian64(keying::IndexHash(field, value), legacy.data() + 1);
      legacy[keying::kIndexTagAt] = static_cast<char>(keying::kLegacyIndexTag);
      keying::EncodeKeyTail({event.ts_ms, event.topic, event.partition, event.offset},
                            legacy.data() + keying::kIndexTagAt + 1);
      std::string legacy_value(8, '\0');
      keying::StoreBigEndian64(event.id_hash, legacy_value.data());
      legacy_value.push_back(static_cast<char>(field.size()));
      legacy_value.append(field);
      legacy_value.append(value);
      ASSERT_TRUE(wb.Put(bucket, legacy, legacy_value).ok());
      ++legacy_rows;
    }
  }
  ASSERT_TRUE(it->status().ok());
  it.reset();
  ASSERT_GT(legacy_rows, 0);
  ASSERT_TRUE(wb.Put(meta, IndexFieldsKey(start), "site\ntype").ok());
  ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &wb).ok());
}

TEST_F(IndexPostingsTest, LegacyIndexRowsAreNotReadAndTheirBucketIsNamedUnindexed) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(WriteEvents(kBucketA, 0, 200));
  store_.reset();
  ASSERT_NO_FATAL_FAILURE(MakeLegacy(dir_.Sub("store"), kBucketA));

  // Opens (its check of rows against counters takes no legacy row for an event) ...
  ASSERT_NO_FATAL_FAILURE(Open());
  std::shared_ptr<const Bucket> a = BucketAt(kBucketA);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->Indexes("site"));
  // ... scans see the events only ...
  Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(*store_);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(rows->size(), 200u);
  query::QueryEngine engine(store_.get(), query::QueryOptions{});
  size_t scanned = 0;
  ASSERT_TRUE(engine
                  .Scan(0, INT64_MAX, query::kNoLimit,
                        [&](const query::Event&) {
                          ++scanned;
                          return true;
                        })
                  .ok());
  EXPECT_EQ(scanned, 200u);
  // ... and the index names the bucket unindexed instead of answering from its legacy rows.
  const query::IndexQuery q(store_.get(), nullptr);
  Result<query::IndexAnswer> answer = q.Latest("site", "s0", 1000);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_TRUE(answer->events.empty());
  EXPECT_EQ(answer->unindexed, (std::vector<query::UnindexedSpan>{{kBucketA, kBucketA + kMinute}}));

  // A bucket made now is indexed with postings, and found.
  clock_.Set(kNow + kMinute);
  ASSERT_NO_FATAL_FAILURE(WriteEvents(kBucketB, 200, 30));
  answer = q.Latest("site", "s0", 1000);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->events.size(), 10u);  // i % 3 == 0 of 30
  EXPECT_EQ(answer->unindexed, (std::vector<query::UnindexedSpan>{{kBucketA, kBucketA + kMinute}}));
}

}  // namespace
}  // namespace hotrow::store::index_postings_test
