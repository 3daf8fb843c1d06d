// The store's write observers (store/write_observer.h): told of exactly the rows a Write stored,
// once they are committed and readable and before the Write returns; of nothing of a Write that
// failed; of bucket drops; and no longer once removed.

#include "store/write_observer.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kBucketMs = 1000;

using Record = std::tuple<std::string, int64_t, std::string, int32_t, int64_t>;

// Records what it is told, and checks at each call that the store already holds every row it is
// told of: a row told before its WriteBatch is committed would not be there yet.
class CheckingObserver : public WriteObserver {
 public:
  explicit CheckingObserver(const EventStore* store) : store_(store) {}
  void RowsWritten(std::span<const WrittenRow> rows) override {
    ++calls;
    Result<std::vector<testing::StoredRow>> stored = testing::ReadAllRows(*store_);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    std::set<Record> readable;
    for (const testing::StoredRow& r : *stored) {
      readable.insert(
          {r.event.id, r.event.ts_ms, r.event.topic, r.event.partition, r.event.offset});
    }
    for (const WrittenRow& row : rows) {
      std::string_view id, payload;
      ASSERT_TRUE(keying::DecodeRowValue(row.value, &id, &payload));
      const Record record{std::string(id), row.key.ts_ms,
                          store_->TopicName(row.key.topic).value_or("?"), row.key.partition,
                          row.key.offset};
      EXPECT_EQ(readable.count(record), 1u) << "told before the store shows it: " << id;
      told.insert(record);
    }
  }
  void BucketsDropped(int64_t until_ms) override { dropped_until.push_back(until_ms); }

  int calls = 0;
  std::set<Record> told;
  std::vector<int64_t> dropped_until;

 private:
  const EventStore* const store_;
};

class WriteObserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = 10 * kBucketMs;
    options.bucket_ms = kBucketMs;
    options.salts = 4;
    options.wall_clock = &clock_;
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  testing::TestEvent Ev(const std::string& id, int64_t ts, int32_t partition = 0) {
    return {id, ts, "t", partition, next_[partition]++, "{}"};
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0 + 10 * kBucketMs};
  std::unique_ptr<EventStore> store_;
  std::map<int32_t, int64_t> next_;
};

TEST_F(WriteObserverTest, ToldOfExactlyTheStoredRowsOnceTheyAreReadable) {
  CheckingObserver observer(store_.get());
  store_->AddWriteObserver(&observer);
  const std::vector<testing::TestEvent> batch = {
      Ev("a", kT0 + 9'000), Ev("b", kT0 + 9'500, 1), Ev("a", kT0 + 5'000),
      Ev("old", kT0 - 1),                           // expired
      Ev("ahead", kT0 + 10 * kBucketMs + 61'000)};  // future
  WriteOutcome outcome;
  ASSERT_TRUE(testing::WriteEvents(store_.get(), batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, 3u);
  EXPECT_EQ(observer.calls, 1);
  EXPECT_EQ(observer.told, (std::set<Record>{{"a", kT0 + 9'000, "t", 0, 0},
                                             {"b", kT0 + 9'500, "t", 1, 0},
                                             {"a", kT0 + 5'000, "t", 0, 1}}));
  // A replay stores nothing: nothing is told.
  ASSERT_TRUE(testing::WriteEvents(store_.get(), {batch[0]}, &outcome).ok());
  ASSERT_EQ(outcome.duplicate, 1u);
  EXPECT_EQ(observer.calls, 1);
  store_->RemoveWriteObserver(&observer);
}

TEST_F(WriteObserverTest, AWriteThatFailsIsNeverTold) {
  CheckingObserver observer(store_.get());
  store_->AddWriteObserver(&observer);
  WriteBatchInput input;
  Result<Row> row = testing::MakeRow(store_.get(), Ev("a", kT0 + 9'000));
  ASSERT_TRUE(row.ok());
  input.rows = {*row, Row{"not a key", "x"}};
  input.next_offsets[{"t", 0}] = 1;
  WriteOutcome outcome;
  ASSERT_FALSE(store_->Write(input, &outcome).ok());
  EXPECT_EQ(observer.calls, 0);
  store_->RemoveWriteObserver(&observer);
}

TEST_F(WriteObserverTest, DropsAreToldAndARemovedObserverHearsNothingMore) {
  CheckingObserver observer(store_.get());
  store_->AddWriteObserver(&observer);
  WriteOutcome outcome;
  ASSERT_TRUE(
      testing::WriteEvents(store_.get(), {Ev("a", kT0 + 1'500), Ev("b", kT0 + 8'500)}, &outcome)
          .ok());
  clock_.Advance(3 * kBucketMs);
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok());
  ASSERT_EQ(*dropped, 1u);
  EXPECT_EQ(observer.dropped_until, (std::vector<int64_t>{kT0 + 2 * kBucketMs}));
  store_->RemoveWriteObserver(&observer);
  ASSERT_TRUE(testing::WriteEvents(store_.get(), {Ev("c", kT0 + 9'000)}, &outcome).ok());
  EXPECT_EQ(observer.calls, 1);
}

}  // namespace
}  // namespace hotrow::store
