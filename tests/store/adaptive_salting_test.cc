// The store under salt_by: adaptive (CONTRACT.md, "Adaptive salting"): it chooses each row's salt
// when it writes, a cold id's home salt or, while the id is hot in the row's bucket, the record's
// salt; it keeps per bucket the ids it spread, exactly (no id with a row outside its home salt is
// missing, no other id is in), after writes and after a reopen; and it refuses the writes that
// could store a record twice under two salts.

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/salter.h"
#include "store/event_store.h"
#include "tests/store/numbered_events.h"
#include "tests/support/event_gen.h"

namespace hotrow::store {
namespace {

using keying::SaltBy;

constexpr int64_t kNow = 1'700'000'040'000;
constexpr int64_t kBucketMs = 60'000;
constexpr int kSalts = 16;
constexpr int64_t kBucketStart = (kNow / kBucketMs - 1) * kBucketMs;  // the last closed bucket

// Every second event is "dev-hot"; the others go round 200 quiet ids.
std::string SkewedId(int64_t offset) {
  return offset % 2 == 0 ? "dev-hot" : "dev-" + std::to_string(offset / 2 % 200);
}

class AdaptiveSaltingTest : public ManualClockStoreTest {
 protected:
  AdaptiveSaltingTest() : ManualClockStoreTest(kNow, kBucketMs, kSalts) {}

  StoreOptions Adaptive() {
    StoreOptions options = Options();
    options.salt_by = SaltBy::kAdaptive;
    options.hot = keying::HotRule{0.05, 8};
    return options;
  }

  std::unique_ptr<EventStore> OpenStore(const StoreOptions& options) {
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::vector<testing::StoredRow> Rows(const EventStore& store) {
    Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(store);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? std::move(rows).value() : std::vector<testing::StoredRow>{};
  }

  // For every bucket and every id with rows there: SpreadsId is true exactly when a row of the id
  // lies outside its home salt (`exact`), or at least then (the writer's set may also hold an id
  // whose spread rows all landed at home). Returns the ids with a row outside their home salt.
  std::set<std::string> ExpectSpreadIdsCoverTheRows(const EventStore& store, bool exact) {
    std::map<int64_t, std::map<std::string, bool>> off_home;  // bucket -> id -> any row off home
    for (const testing::StoredRow& row : Rows(store)) {
      bool& off = off_home[row.bucket_start_ms][row.event.id];
      off = off || row.salt != store.salter().HomeSalt(row.id_hash);
    }
    std::set<std::string> spread;
    for (const auto& bucket : store.Buckets()) {
      size_t in_set = 0;
      for (const auto& [id, off] : off_home[bucket->start_ms()]) {
        const bool says = bucket->SpreadsId(keying::IdHash(id));
        const std::string where = "bucket " + std::to_string(bucket->start_ms()) + ", id " + id;
        if (off) {
          EXPECT_TRUE(says) << where << " has a row outside its home salt";
          spread.insert(id);
        } else if (exact) {
          EXPECT_FALSE(says) << where << " has every row in its home salt";
        }
        in_set += says;
      }
      if (exact) {
        EXPECT_EQ(bucket->spread_ids(), in_set) << bucket->start_ms();
      }
    }
    return spread;
  }
};

TEST_F(AdaptiveSaltingTest, SaltByAdaptiveIsFixedWhenTheStoreIsMadeButHotShareIsNot) {
  {
    auto store = OpenStore(Adaptive());
    ASSERT_NE(store, nullptr);
    WriteNumberedEvents(store.get(), 0, 10, kBucketStart, SkewedId);
  }
  for (SaltBy other : {SaltBy::kRecord, SaltBy::kId}) {
    StoreOptions options = Adaptive();
    options.salt_by = other;
    Result<std::unique_ptr<EventStore>> refused = EventStore::Open(options);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Status::Code::kIncompatible);
    EXPECT_NE(refused.status().message().find("salt_by=adaptive"), std::string::npos)
        << refused.status().message();
  }
  StoreOptions other_share = Adaptive();
  other_share.hot.hot_share = 0.5;
  EXPECT_NE(OpenStore(other_share), nullptr) << "hot_share is not part of the store's format";

  StoreOptions bad = Adaptive();
  for (double share : {0.0, -0.1, 1.5}) {
    bad.hot.hot_share = share;
    Result<std::unique_ptr<EventStore>> refused = EventStore::Open(bad);
    ASSERT_FALSE(refused.ok()) << share;
    EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument) << share;
    EXPECT_NE(refused.status().message().find("hot_share"), std::string::npos);
  }
}

TEST_F(AdaptiveSaltingTest, ColdIdsStayInTheirHomeSaltAndAHotIdSpreadsOnceItIsHot) {
  auto store = OpenStore(Adaptive());
  ASSERT_NE(store, nullptr);
  // One bucket, 2000 events in batches of 100: dev-hot holds half of them.
  for (int64_t first = 0; first < 2000; first += 100) {
    WriteNumberedEvents(store.get(), first, 100, kBucketStart + first, SkewedId);
  }
  ASSERT_EQ(store->Buckets().size(), 1u);
  const keying::Salter& salter = store->salter();
  std::vector<int64_t> hot_per_salt(kSalts, 0);
  for (const testing::StoredRow& row : Rows(*store)) {
    const std::string& id = row.event.id;
    const uint8_t home = salter.HomeSalt(keying::IdHash(id));
    if (id != "dev-hot") {
      ASSERT_EQ(row.salt, home) << testing::Describe(row.event);
      continue;
    }
    // dev-hot's 8th row (offset 14) is where it reaches the floor of 8 events at a share of 1/2:
    // from there on every row of it takes the record's salt.
    if (row.event.offset < 14) {
      EXPECT_EQ(row.salt, home) << testing::Describe(row.event);
    } else {
      EXPECT_EQ(row.salt, salter.RecordSalt("events", 0, row.event.offset))
          << testing::Describe(row.event);
    }
    ++hot_per_salt[row.salt];
  }
  // Its 1000 rows over the 16 salts: every offset of the partition is even, so 8 of them.
  for (int salt = 0; salt < kSalts; ++salt) EXPECT_LE(hot_per_salt[salt], 1000 / 8 + 8) << salt;
  const auto bucket = store->Buckets().front();
  EXPECT_TRUE(bucket->SpreadsId(keying::IdHash("dev-hot")));
  EXPECT_EQ(bucket->SpreadIdHashes(), std::vector<uint64_t>{keying::IdHash("dev-hot")});
  EXPECT_EQ(ExpectSpreadIdsCoverTheRows(*store, /*exact=*/true), std::set<std::string>{"dev-hot"});
  const StoreStats stats = store->Stats();
  ASSERT_EQ(stats.buckets.size(), 1u);
  EXPECT_EQ(stats.buckets[0].spread_ids, 1u);
  uint64_t sum = 0;
  for (uint64_t n : stats.buckets[0].salt_events) sum += n;
  EXPECT_EQ(sum, 2000u);
  EXPECT_EQ(stats.buckets[0].salt_events, stats.salt_events);
}

TEST_F(AdaptiveSaltingTest, SpreadIdsAreRebuiltExactlyFromTheRowsAtReopen) {
  {
    auto store = OpenStore(Adaptive());
    ASSERT_NE(store, nullptr);
    for (int64_t first = 0; first < 1000; first += 100) {
      WriteNumberedEvents(store.get(), first, 100, kBucketStart + first, SkewedId);
    }
    EXPECT_EQ(ExpectSpreadIdsCoverTheRows(*store, true), std::set<std::string>{"dev-hot"});
  }
  auto store = OpenStore(Adaptive());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ExpectSpreadIdsCoverTheRows(*store, true), std::set<std::string>{"dev-hot"});
  {
    // A read-only open beside the writer (hotrow keys analyze) rebuilds the same set.
    StoreOptions read_only = Adaptive();
    read_only.read_only = true;
    read_only.create_if_missing = false;
    auto reader = OpenStore(read_only);
    ASSERT_NE(reader, nullptr);
    ASSERT_EQ(reader->Buckets().size(), 1u);
    EXPECT_EQ(reader->Buckets().front()->SpreadIdHashes(),
              std::vector<uint64_t>{keying::IdHash("dev-hot")});
    EXPECT_EQ(reader->Stats().buckets.front().spread_ids, 1u);
  }
  // The decision goes on where it was: dev-hot is spread at once, the quiet ids stay home.
  WriteNumberedEvents(store.get(), 1000, 100, kBucketStart + 1000, SkewedId);
  for (const testing::StoredRow& row : Rows(*store)) {
    if (row.event.offset < 1000) continue;
    const uint8_t want = row.event.id == "dev-hot"
                             ? store->salter().RecordSalt("events", 0, row.event.offset)
                             : store->salter().HomeSalt(row.id_hash);
    ASSERT_EQ(row.salt, want) << testing::Describe(row.event);
  }
  // Counts were rebuilt too: a quiet id that becomes the busiest after the reopen turns hot
  // against the bucket's 1100 events, not against the 100 written since.
  const auto quiet = [](int64_t offset) { return "dev-" + std::to_string(offset % 5); };
  WriteNumberedEvents(store.get(), 1100, 40, kBucketStart + 1100, quiet);
  EXPECT_FALSE(store->Buckets().front()->SpreadsId(keying::IdHash("dev-0")))
      << "8+ rows of 1140 is not 5 %";
  WriteNumberedEvents(store.get(), 1140, 400, kBucketStart + 1140, quiet);
  EXPECT_TRUE(store->Buckets().front()->SpreadsId(keying::IdHash("dev-0")))
      << "90 rows of 1540 is over 5 %";
  ExpectSpreadIdsCoverTheRows(*store, true);
}

TEST_F(AdaptiveSaltingTest, AnIdIsHotInABucketNotForever) {
  auto store = OpenStore(Adaptive());
  ASSERT_NE(store, nullptr);
  WriteNumberedEvents(store.get(), 0, 400, kBucketStart - kBucketMs, SkewedId);
  // The next bucket: dev-hot has 4 events among 400.
  const auto calm = [](int64_t offset) {
    return offset % 100 == 0 ? "dev-hot" : "dev-" + std::to_string(offset % 97);
  };
  WriteNumberedEvents(store.get(), 400, 400, kBucketStart, calm);
  const auto buckets = store->Buckets();
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_TRUE(buckets[0]->SpreadsId(keying::IdHash("dev-hot")));
  EXPECT_FALSE(buckets[1]->SpreadsId(keying::IdHash("dev-hot")));
  EXPECT_EQ(buckets[1]->spread_ids(), 0u);
  ExpectSpreadIdsCoverTheRows(*store, true);
}

TEST_F(AdaptiveSaltingTest, RowsAboveTheirBatchsNextOffsetAreRefusedAndNothingIsWritten) {
  auto store = OpenStore(Adaptive());
  ASSERT_NE(store, nullptr);
  std::vector<testing::TestEvent> events;
  for (int64_t o = 0; o < 5; ++o) {
    events.push_back({SkewedId(o), kBucketStart + o, "events", 0, o, "{}"});
  }
  WriteOutcome outcome;
  Status st = testing::WriteEvents(store.get(), events, &outcome, /*with_offsets=*/false);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("next offset"), std::string::npos) << st.message();
  // A next offset that does not cover the last row is refused the same way.
  WriteBatchInput batch;
  for (const auto& e : events) batch.rows.push_back(*testing::MakeRow(store.get(), e));
  batch.next_offsets[{"events", 0}] = 4;
  st = store->Write(batch, &outcome);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_EQ(store->Stats().events, 0u);
  EXPECT_TRUE(store->StoredOffsets().empty());
  batch.next_offsets[{"events", 0}] = 5;
  ASSERT_TRUE(store->Write(batch, &outcome).ok());
  EXPECT_EQ(outcome.stored, 5u);
}

TEST_F(AdaptiveSaltingTest, OverlappingWritesOfOnePartitionAreRefused) {
  StoreOptions options = Adaptive();
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> hold{true};
  options.write_hook = [&](const WriteBatchInput&) {
    if (hold.exchange(false)) {
      entered.set_value();
      released.wait();
    }
  };
  auto store = OpenStore(options);
  ASSERT_NE(store, nullptr);
  auto batch_of = [&](int32_t partition, int64_t first) {
    std::vector<testing::TestEvent> events;
    for (int64_t o = first; o < first + 10; ++o) {
      events.push_back({SkewedId(o), kBucketStart + o, "events", partition, o, "{}"});
    }
    return events;
  };
  WriteOutcome first_outcome;
  Status first_status;
  std::thread first(
      [&] { first_status = testing::WriteEvents(store.get(), batch_of(0, 0), &first_outcome); });
  entered.get_future().wait();  // the first Write holds partition 0
  WriteOutcome outcome;
  Status st = testing::WriteEvents(store.get(), batch_of(0, 0), &outcome);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("events/0"), std::string::npos) << st.message();
  // Another partition is not held back.
  ASSERT_TRUE(testing::WriteEvents(store.get(), batch_of(1, 0), &outcome).ok());
  EXPECT_EQ(outcome.stored, 10u);
  release.set_value();
  first.join();
  ASSERT_TRUE(first_status.ok()) << first_status.ToString();
  EXPECT_EQ(first_outcome.stored, 10u);
  // Once it returned, partition 0 is free again; the refused batch is a replay now.
  ASSERT_TRUE(testing::WriteEvents(store.get(), batch_of(0, 0), &outcome).ok());
  EXPECT_EQ(outcome.duplicate, 10u);
  EXPECT_EQ(Rows(*store).size(), 20u);
}

TEST_F(AdaptiveSaltingTest, AReplayWithOtherBatchBoundariesStoresNothingTwice) {
  auto store = OpenStore(Adaptive());
  ASSERT_NE(store, nullptr);
  std::vector<testing::TestEvent> events;
  for (int64_t o = 0; o < 1200; ++o) {
    events.push_back({SkewedId(o), kBucketStart + o * 10, "events", static_cast<int32_t>(o % 2),
                      o / 2, "{\"o\":" + std::to_string(o) + "}"});
  }
  auto write_in_batches = [&](size_t from, size_t to, size_t batch) {
    for (size_t at = from; at < to; at += batch) {
      std::vector<testing::TestEvent> part(events.begin() + at,
                                           events.begin() + std::min(to, at + batch));
      WriteOutcome outcome;
      ASSERT_TRUE(testing::WriteEvents(store.get(), part, &outcome).ok());
    }
  };
  ASSERT_NO_FATAL_FAILURE(write_in_batches(0, 800, 7));
  const auto before = Rows(*store);
  ASSERT_EQ(before.size(), 800u);
  // Kafka delivers it all again from the start, in other batches, with 400 new records after.
  ASSERT_NO_FATAL_FAILURE(write_in_batches(0, 1200, 13));
  store.reset();
  store = OpenStore(Adaptive());  // and once more after a restart
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(write_in_batches(300, 1200, 50));
  const auto after = Rows(*store);
  ASSERT_EQ(after.size(), 1200u);
  std::set<std::pair<int32_t, int64_t>> records;
  for (const auto& row : after) {
    EXPECT_TRUE(records.emplace(row.event.partition, row.event.offset).second)
        << "stored twice: " << testing::Describe(row.event);
  }
  // The first 800 kept the salts they were written with.
  std::map<std::pair<int32_t, int64_t>, uint8_t> salt_of;
  for (const auto& row : after) salt_of[{row.event.partition, row.event.offset}] = row.salt;
  for (const auto& row : before) {
    const std::pair<int32_t, int64_t> record(row.event.partition, row.event.offset);
    EXPECT_EQ(salt_of[record], row.salt);
  }
  ExpectSpreadIdsCoverTheRows(*store, true);
}

// In every salt_by: a partition that went back while a batch was open puts the same record in
// the batch twice; it is stored once, counted once, and the store opens again.
TEST_F(AdaptiveSaltingTest, ARecordTwiceInOneBatchIsStoredOnceInEverySaltBy) {
  for (SaltBy by : {SaltBy::kRecord, SaltBy::kId, SaltBy::kAdaptive}) {
    SCOPED_TRACE(std::string(keying::SaltByName(by)));
    StoreOptions options = Adaptive();
    options.path = dir_.Sub(std::string("store-") + std::string(keying::SaltByName(by)));
    options.salt_by = by;
    auto store = OpenStore(options);
    ASSERT_NE(store, nullptr);
    std::vector<testing::TestEvent> events;
    for (int64_t o : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 10, 11, 12}) {
      events.push_back({SkewedId(o), kBucketStart + o, "events", 0, o, "{}"});
    }
    WriteOutcome outcome;
    ASSERT_TRUE(testing::WriteEvents(store.get(), events, &outcome).ok());
    EXPECT_EQ(outcome.stored, 13u);
    EXPECT_EQ(outcome.duplicate, 5u);
    EXPECT_EQ(store->Stats().events, 13u);
    store.reset();
    store = OpenStore(options);  // rows and counters agree
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(Rows(*store).size(), 13u);
  }
}

}  // namespace
}  // namespace hotrow::store
