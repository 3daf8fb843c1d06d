#include "ingest/batcher.h"

#include <gtest/gtest.h>

namespace hotrow::ingest {
namespace {

const store::TopicPartition kP0{"events", 0};
const store::TopicPartition kP1{"events", 1};

TEST(BatcherTest, ClosesAtMaxRecordsCountingRejectedOnes) {
  Batcher batcher(3, 1000);
  batcher.AddRow(kP0, 10, "k1", "v1", 0);
  batcher.AddSkipped(kP0, 11, 0);
  EXPECT_FALSE(batcher.Full());
  batcher.AddRow(kP1, 5, "k2", "v2", 0);
  EXPECT_TRUE(batcher.Full());
  std::unique_ptr<Batch> batch = batcher.Take(7);
  EXPECT_EQ(batch->seq, 7u);
  EXPECT_EQ(batch->records, 3u);
  EXPECT_EQ(batch->input.rows.size(), 2u);
  EXPECT_TRUE(batcher.empty());
  EXPECT_FALSE(batcher.Full());
}

TEST(BatcherTest, NextOffsetsAreOnePastTheLastHandledRecordPerPartition) {
  Batcher batcher(100, 1000);
  batcher.AddRow(kP0, 10, "k", "v", 0);
  batcher.AddRow(kP1, 3, "k", "v", 0);
  batcher.AddSkipped(kP0, 11, 0);  // a rejected record still moves its partition
  batcher.AddRow(kP0, 12, "k", "v", 0);
  batcher.AddSkipped(kP1, 4, 0);
  std::unique_ptr<Batch> batch = batcher.Take(1);
  std::map<store::TopicPartition, int64_t> expected{{kP0, 13}, {kP1, 5}};
  EXPECT_EQ(batch->input.next_offsets, expected);
}

TEST(BatcherTest, OnlyRejectedRecordsStillMakeABatchWithOffsets) {
  Batcher batcher(100, 1000);
  batcher.AddSkipped(kP0, 0, 0);
  batcher.AddSkipped(kP0, 1, 0);
  EXPECT_FALSE(batcher.empty());
  std::unique_ptr<Batch> batch = batcher.Take(1);
  EXPECT_TRUE(batch->input.rows.empty());
  EXPECT_EQ(batch->input.next_offsets.at(kP0), 2);
}

TEST(BatcherTest, IsDueAtMaxAgeFromTheFirstRecord) {
  Batcher batcher(100, 200);
  EXPECT_FALSE(batcher.Due(1'000'000));  // empty is never due
  EXPECT_EQ(batcher.MsUntilDue(1000), 200);
  batcher.AddRow(kP0, 0, "k", "v", 1000);
  batcher.AddRow(kP0, 1, "k", "v", 1150);  // later records do not restart the age
  EXPECT_FALSE(batcher.Due(1199));
  EXPECT_EQ(batcher.MsUntilDue(1150), 50);
  EXPECT_TRUE(batcher.Due(1200));
  EXPECT_EQ(batcher.MsUntilDue(1300), 0);
  std::unique_ptr<Batch> batch = batcher.Take(1);
  EXPECT_EQ(batch->opened_ms, 1000);
  batcher.AddRow(kP0, 2, "k", "v", 5000);
  EXPECT_FALSE(batcher.Due(5199));
  EXPECT_TRUE(batcher.Due(5200));
}

TEST(BatcherTest, CountsDeadLetters) {
  Batcher batcher(100, 200);
  batcher.AddSkipped(kP0, 0, 0);
  batcher.AddDeadLetter();
  EXPECT_EQ(batcher.Take(1)->dead_letters, 1u);
  EXPECT_EQ(batcher.Take(2)->dead_letters, 0u);
}

}  // namespace
}  // namespace hotrow::ingest
