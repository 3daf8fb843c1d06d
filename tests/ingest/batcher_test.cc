#include "ingest/batcher.h"

#include <gtest/gtest.h>

#include "keying/row_key.h"

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

// A row key of `tp` (topic number 7) at `offset`, as the poller encodes it.
std::string KeyOf(const store::TopicPartition& tp, int64_t offset) {
  keying::RowKey key;
  key.salt = static_cast<uint8_t>(offset % 4);
  key.id_hash = 42;
  key.ts_ms = 1000 + offset;
  key.topic = 7;
  key.partition = tp.partition;
  key.offset = offset;
  return keying::EncodeRowKey(key);
}

std::optional<std::string> TopicSeven(uint16_t number) {
  if (number == 7) return std::string("events");
  return std::nullopt;
}

TEST(BatcherTest, DroppingAPartitionKeepsTheOthersRowsOffsetsAndCounts) {
  Batcher batcher(100, 1000);
  const store::TopicPartition other_topic{"other", 0};
  batcher.AddRow(kP0, 10, KeyOf(kP0, 10), "a", 0);
  batcher.AddRow(kP1, 3, KeyOf(kP1, 3), "b", 0);
  batcher.AddSkipped(kP0, 11, 0);
  batcher.AddRow(kP0, 12, KeyOf(kP0, 12), "c", 0);
  batcher.AddRow(kP1, 4, KeyOf(kP1, 4), "d", 0);
  batcher.AddSkipped(other_topic, 0, 0);
  std::unique_ptr<Batch> batch = batcher.Take(1);
  ASSERT_EQ(batch->records, 6u);

  EXPECT_EQ(DropPartitions(batch.get(), {kP0}, TopicSeven), 3u);
  EXPECT_EQ(batch->records, 3u);
  ASSERT_EQ(batch->input.rows.size(), 2u);
  EXPECT_EQ(batch->input.rows[0].value, "b");
  EXPECT_EQ(batch->input.rows[1].value, "d");
  std::map<store::TopicPartition, int64_t> expected{{kP1, 5}, {other_topic, 1}};
  EXPECT_EQ(batch->input.next_offsets, expected);
  EXPECT_EQ(batch->parts.count(kP0), 0u);
  // Dropping what is not there changes nothing.
  EXPECT_EQ(DropPartitions(batch.get(), {kP0}, TopicSeven), 0u);
  EXPECT_EQ(batch->input.rows.size(), 2u);
}

TEST(BatcherTest, DroppingFromTheOpenBatchKeepsCountingTheOthers) {
  Batcher batcher(3, 1000);
  batcher.AddRow(kP0, 0, KeyOf(kP0, 0), "a", 0);
  batcher.AddRow(kP1, 0, KeyOf(kP1, 0), "b", 0);
  EXPECT_EQ(batcher.DropOpen({kP1}, TopicSeven), 1u);
  EXPECT_EQ(batcher.records(), 1u);
  EXPECT_FALSE(batcher.Full());
  batcher.AddRow(kP1, 1, KeyOf(kP1, 1), "c", 0);  // the part was dropped: counted afresh
  batcher.AddRow(kP0, 1, KeyOf(kP0, 1), "d", 0);
  EXPECT_TRUE(batcher.Full());
  std::unique_ptr<Batch> batch = batcher.Take(1);
  std::map<store::TopicPartition, int64_t> expected{{kP0, 2}, {kP1, 2}};
  EXPECT_EQ(batch->input.next_offsets, expected);
  EXPECT_EQ(batch->parts.at(kP1).records, 1u);
  EXPECT_EQ(batch->input.rows.size(), 3u);
}

}  // namespace
}  // namespace hotrow::ingest
