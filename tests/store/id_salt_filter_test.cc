// Each bucket keeps a filter of the salts that hold an id and a bound on how new their rows are
// (store/id_salt_filter.h), so that a per-id query seeks only the salts that can add to its
// answer: it must never rule out a salt that holds a row of the id nor bound a row too low, after
// a write or after a reopen (rebuilt from the rows), and it must rule out the others.

#include "store/id_salt_filter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "keying/row_key.h"
#include "store/event_store.h"
#include "store/rocks_bucket.h"
#include "tests/store/numbered_events.h"

namespace hotrow::store::id_salt_filter_test {
namespace {

constexpr int64_t kNow = 1'700'000'040'000;
constexpr int64_t kBucketMs = 60'000;
constexpr int kSalts = 16;
constexpr int kIds = 40;

std::string IdOf(int64_t offset) { return "dev-" + std::to_string(offset % kIds); }

// With salts by record, the 40 ids have 1 to a few events each per call, in a few of the 16 salts.
void WriteEvents(EventStore* store, int64_t first, int64_t count, int64_t first_ts) {
  WriteNumberedEvents(store, first, count, first_ts, IdOf);
}

// For every bucket, id and salt: the filter says "may hold" exactly where a row of the id is, and
// its bound on their times is above the newest of them by less than a 255th of the bucket.
// (Exactly, not only "at least": 40 ids in the filter's 2^16 slots do not share one, and 16 salts
// have a level each.) Returns how many (bucket, id, salt) were ruled out.
int ExpectFilterMatchesRows(const EventStore& store) {
  int ruled_out = 0;
  for (const auto& bucket : store.Buckets()) {
    const int64_t step = (bucket->end_ms() - bucket->start_ms() + 254) / 255;
    for (int n = 0; n < kIds; ++n) {
      const uint64_t hash = keying::IdHash(IdOf(n));
      for (int salt = 0; salt < kSalts; ++salt) {
        auto it = bucket->NewIterator(keying::IdKeyRange(static_cast<uint8_t>(salt), hash), true);
        it->SeekToFirst();  // the newest row of the id in the salt
        const bool holds = it->Valid();
        EXPECT_TRUE(it->status().ok()) << it->status().ToString();
        const std::string where = "bucket " + std::to_string(bucket->start_ms()) + ", id " +
                                  IdOf(n) + ", salt " + std::to_string(salt);
        EXPECT_EQ(bucket->MayHoldId(static_cast<uint8_t>(salt), hash), holds) << where;
        const int64_t bound = bucket->NewestIdTsBound(static_cast<uint8_t>(salt), hash);
        if (holds) {
          keying::RowKey newest;
          EXPECT_TRUE(keying::DecodeRowKey(it->key(), &newest)) << where;
          EXPECT_GT(bound, newest.ts_ms) << where;
          EXPECT_LE(bound, newest.ts_ms + step + 1) << where;
        } else {
          EXPECT_EQ(bound, bucket->start_ms()) << where;
        }
        ruled_out += !holds;
      }
    }
  }
  return ruled_out;
}

class IdSaltFilterTest : public ManualClockStoreTest {
 protected:
  IdSaltFilterTest() : ManualClockStoreTest(kNow, kBucketMs, kSalts) {}
};

TEST_F(IdSaltFilterTest, RulesOutExactlyTheSaltsWithoutARowOfTheIdAfterWritesAndAfterReopen) {
  const int64_t bucket_start = (kNow / kBucketMs - 1) * kBucketMs;
  {
    auto store = std::move(EventStore::Open(Options()).value());
    ASSERT_NO_FATAL_FAILURE(WriteEvents(store.get(), 0, 120, bucket_start + 100));
    ASSERT_NO_FATAL_FAILURE(WriteEvents(store.get(), 120, 40, bucket_start + 31'000));
    ASSERT_EQ(store->Buckets().size(), 1u);
    // 4 events per id: at most 4 of its 16 salts hold it.
    EXPECT_GE(ExpectFilterMatchesRows(*store), kIds * (kSalts - 4));
  }
  // Reopened, the filter is rebuilt from the rows; a write after the reopen adds to it.
  auto store = std::move(EventStore::Open(Options()).value());
  EXPECT_GE(ExpectFilterMatchesRows(*store), kIds * (kSalts - 4));
  ASSERT_NO_FATAL_FAILURE(WriteEvents(store.get(), 160, 80, bucket_start + 50'000));
  EXPECT_GE(ExpectFilterMatchesRows(*store), kIds * (kSalts - 6));
}

// The open rebuilds every bucket's filter, the buckets walked on parallel threads: with many
// buckets, each one's filter still matches its rows after the reopen.
TEST_F(IdSaltFilterTest, EveryBucketsFilterIsRebuiltAtReopenWhenBucketsAreWalkedInParallel) {
  const int64_t bucket_start = (kNow / kBucketMs - 1) * kBucketMs;
  constexpr int kBuckets = 7;
  {
    auto store = std::move(EventStore::Open(Options()).value());
    for (int b = 0; b < kBuckets; ++b) {
      ASSERT_NO_FATAL_FAILURE(
          WriteEvents(store.get(), 40 * b, 40, bucket_start - b * kBucketMs + 100));
    }
    ASSERT_EQ(store->Buckets().size(), static_cast<size_t>(kBuckets));
  }
  auto store = std::move(EventStore::Open(Options()).value());
  ASSERT_EQ(store->Buckets().size(), static_cast<size_t>(kBuckets));
  // One event per id and bucket: 15 of each id's 16 salts ruled out in every bucket.
  EXPECT_EQ(ExpectFilterMatchesRows(*store), kBuckets * kIds * (kSalts - 1));
}

size_t FilterSlotsOf(const Bucket& bucket) {
  return dynamic_cast<const RocksBucket&>(bucket).id_filter_slots();
}

// A new bucket's filter is sized for the ids of the bucket with the most (here 3000 ids in 6000
// events: 16384 slots, where one slot per two events gave 4096), and the open sizes each bucket's
// for the ids its rows hold.
TEST_F(IdSaltFilterTest, ABucketsFilterIsSizedForItsIds) {
  const int64_t bucket_start = (kNow / kBucketMs - 1) * kBucketMs;
  const auto many_ids = [](int64_t offset) { return "many-" + std::to_string(offset % 3000); };
  {
    auto store = std::move(EventStore::Open(Options()).value());
    ASSERT_NO_FATAL_FAILURE(
        WriteNumberedEvents(store.get(), 0, 6000, bucket_start - kBucketMs + 100, many_ids));
    ASSERT_NO_FATAL_FAILURE(WriteEvents(store.get(), 6000, 40, bucket_start + 100));
    ASSERT_EQ(store->Buckets().size(), 2u);
    EXPECT_EQ(FilterSlotsOf(*store->Buckets()[1]), IdSaltFilter::SlotsForIds(3000));
    EXPECT_EQ(IdSaltFilter::SlotsForIds(3000), size_t{1} << 14);
  }
  auto store = std::move(EventStore::Open(Options()).value());
  ASSERT_EQ(store->Buckets().size(), 2u);
  EXPECT_EQ(FilterSlotsOf(*store->Buckets()[0]), IdSaltFilter::SlotsForIds(3000));
  EXPECT_EQ(FilterSlotsOf(*store->Buckets()[1]), IdSaltFilter::kMinSlots);
}

// The filter alone, as a bucket of `ids` ids uses it: sized for them, each id with rows in 8
// random salts of 16 at random times. Returns how many salts a query of one of them would seek
// on average: those the filter does not rule out.
double SaltsSoughtPerId(uint64_t ids) {
  constexpr int64_t kStart = 0;
  constexpr int64_t kEnd = 60'000;
  IdSaltFilter filter(kStart, kEnd, IdSaltFilter::SlotsForIds(ids));
  std::mt19937_64 rng(7);
  for (uint64_t n = 0; n < ids; ++n) {
    const uint64_t hash = rng();
    for (int row = 0; row < 8; ++row) {
      filter.Note(static_cast<uint8_t>(rng() % kSalts), hash, static_cast<int64_t>(rng() % kEnd));
    }
  }
  // Ids the filter never saw, as many salts sought as a shared slot makes it seek.
  constexpr int kProbes = 20000;
  uint64_t sought = 0;
  for (int p = 0; p < kProbes; ++p) {
    const uint64_t hash = rng();
    for (int salt = 0; salt < kSalts; ++salt) {
      sought += filter.NewestTsBound(static_cast<uint8_t>(salt), hash) != kStart;
    }
  }
  return static_cast<double>(sought) / kProbes;
}

// A bucket of 1M ids (a 100M-event window's) must not share slots more than one of 10000 ids (a
// 1M-event window's): its salts sought per query would rise, each a data block read.
TEST(IdSaltFilterSizingTest, AMillionIdsShareSlotsNoMoreThanTenThousand) {
  const double small = SaltsSoughtPerId(10'000);
  const double large = SaltsSoughtPerId(1'000'000);
  // An id with 8 rows in 16 salts holds 6.4 of them; the false salts are what sharing adds.
  // About 16 * (1 - exp(-0.4 * ids / slots)): 1.0 at 10000 ids in 2^16 slots, 1.5 at 1M in 2^22,
  // 8.6 at 1M in 2^19.
  EXPECT_LT(large, 2.0) << "false salts per id, 1M ids";
  EXPECT_LE(6.4 + large, 1.2 * (6.4 + small)) << large << " false salts against " << small;
}

// The id count that sizes the next bucket's filter, and the open's: within 5% from a few ids to
// more than the largest filter holds, however many rows each id has.
TEST(IdSaltFilterSizingTest, CountsTheDistinctIdsNoted) {
  std::mt19937_64 rng(3);
  for (uint64_t ids : {100u, 5'000u, 200'000u, 3'000'000u}) {
    IdSaltFilter filter(0, 60'000, IdSaltFilter::kMinSlots);
    std::vector<uint64_t> hashes(ids);
    for (uint64_t& h : hashes) h = rng();
    for (int pass = 0; pass < 3; ++pass) {
      for (uint64_t h : hashes) filter.Note(static_cast<uint8_t>(rng() % kSalts), h, 1000);
    }
    const double estimate = static_cast<double>(filter.EstimatedIds());
    EXPECT_NEAR(estimate, static_cast<double>(ids), 0.05 * static_cast<double>(ids)) << ids;
  }
  EXPECT_EQ(IdSaltFilter::SlotsForIds(1'000'000), size_t{1} << 22);
  EXPECT_EQ(IdSaltFilter::SlotsForIds(10'000), size_t{1} << 16);
}

// The open notes every row in a filter sized for as many ids as events, then folds it to the ids
// found: the folded filter answers exactly as one noted at its size from the start.
TEST(IdSaltFilterSizingTest, AFoldedFilterAnswersAsOneBuiltAtItsSize) {
  constexpr size_t kBig = size_t{1} << 16;
  constexpr size_t kSmall = IdSaltFilter::kMinSlots;
  IdSaltFilter big(0, 60'000, kBig);
  IdSaltFilter small(0, 60'000, kSmall);
  std::mt19937_64 rng(5);
  std::vector<uint64_t> hashes(20'000);
  for (uint64_t& h : hashes) {
    h = rng();
    for (int row = 0; row < 3; ++row) {
      const auto salt = static_cast<uint8_t>(rng() % kSalts);
      const auto ts = static_cast<int64_t>(rng() % 60'000);
      big.Note(salt, h, ts);
      small.Note(salt, h, ts);
    }
  }
  const auto folded = big.FoldedTo(kSmall);
  ASSERT_EQ(folded->slots(), kSmall);
  EXPECT_EQ(folded->EstimatedIds(), big.EstimatedIds());
  for (uint64_t slot = 0; slot < kSmall; ++slot) {
    for (int salt = 0; salt < kSalts; ++salt) {
      ASSERT_EQ(folded->NewestTsBound(static_cast<uint8_t>(salt), slot),
                small.NewestTsBound(static_cast<uint8_t>(salt), slot))
          << "slot " << slot << ", salt " << salt;
    }
  }
}

}  // namespace
}  // namespace hotrow::store::id_salt_filter_test
