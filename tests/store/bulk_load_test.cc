// StoreOptions::write_ahead_log = false (bulk loads): rows live in memtables only until flushed,
// so the store's close must flush them; a cleanly closed store opens with every row and offset.

#include <gtest/gtest.h>

#include <string>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store::bulk_load_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

uint64_t Rows(EventStore* store) {
  uint64_t rows = 0;
  for (const auto& bucket : store->Buckets()) {
    for (int salt = 0; salt < store->salter().salts(); ++salt) {
      auto it = bucket->NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++rows;
      EXPECT_TRUE(it->status().ok()) << it->status().ToString();
    }
  }
  return rows;
}

TEST(BulkLoadTest, WrittenWithoutTheWalACleanCloseKeepsEveryRow) {
  testing::TempDir dir;
  ManualClock clock(kNow);
  StoreOptions options;
  options.path = dir.Sub("store");
  options.wall_clock = &clock;
  options.salts = 4;
  options.write_ahead_log = false;
  constexpr int64_t kEvents = 30'000;
  {
    auto store = std::move(EventStore::Open(options).value());
    const uint16_t topic = *store->TopicNumber("events");
    WriteBatchInput batch;
    for (int64_t i = 0; i < kEvents; ++i) {
      const std::string id = "dev-" + std::to_string(i % 100);
      keying::RowKey key{store->salter().SaltOf("events", 0, i, id), keying::IdHash(id),
                         kNow - 200'000 + i * 5, topic, 0, i};
      batch.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, R"({"v":1})")});
    }
    batch.next_offsets[{"events", 0}] = kEvents;
    WriteOutcome outcome;
    ASSERT_TRUE(store->Write(batch, &outcome).ok());
    ASSERT_EQ(outcome.stored, static_cast<size_t>(kEvents));
  }
  options.write_ahead_log = true;
  auto store = std::move(EventStore::Open(options).value());
  EXPECT_EQ(Rows(store.get()), static_cast<uint64_t>(kEvents));
  EXPECT_EQ(store->StoredOffsets().at({"events", 0}), kEvents);
}

}  // namespace
}  // namespace hotrow::store::bulk_load_test
