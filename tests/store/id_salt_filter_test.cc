// Each bucket keeps a filter of the salts that hold an id and a bound on how new their rows are
// (store/id_salt_filter.h), so that a per-id query seeks only the salts that can add to its
// answer: it must never rule out a salt that holds a row of the id nor bound a row too low, after
// a write or after a reopen (rebuilt from the rows), and it must rule out the others.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/clock.h"
#include "keying/row_key.h"
#include "store/event_store.h"
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

}  // namespace
}  // namespace hotrow::store::id_salt_filter_test
