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

// Stands for a consumer message: Release counts the messages freed.
int released_messages = 0;
void Release(void* message) {
  ++released_messages;
  delete static_cast<int*>(message);
}

TEST(BatcherTest, RawRecordsMoveTheirPartitionsOffsetsAndKeepTheirBytes) {
  Batcher batcher(100, 1000, &Release);
  batcher.AddRaw(kP0, 3, 10, 1234, "key", "{}", new int(0), 0);
  batcher.AddRaw(kP1, 3, 4, -1, "", "v", new int(1), 0);
  batcher.AddRaw(kP0, 3, 11, 1235, "k2", "v2", new int(2), 0);
  EXPECT_EQ(batcher.records(), 3u);
  std::unique_ptr<Batch> batch = batcher.Take(1);
  std::map<store::TopicPartition, int64_t> expected{{kP0, 12}, {kP1, 5}};
  EXPECT_EQ(batch->input.next_offsets, expected);
  ASSERT_EQ(batch->raw.size(), 3u);
  EXPECT_TRUE(batch->input.rows.empty());
  // Each raw record points at its partition's entry in next_offsets.
  EXPECT_EQ(*batch->raw[0].tp, kP0);
  EXPECT_EQ(*batch->raw[1].tp, kP1);
  EXPECT_EQ(batch->raw[2].tp, batch->raw[0].tp);
  EXPECT_EQ(batch->raw[2].key, "k2");
  EXPECT_EQ(batch->raw[2].value, "v2");
  EXPECT_EQ(batch->raw[0].kafka_ts_ms, 1234);
  EXPECT_EQ(batch->raw[1].topic_number, 3);
}

TEST(BatcherTest, ABatchReleasesItsMessagesOnceWhetherParsedOrDropped) {
  released_messages = 0;
  auto batcher_ptr = std::make_unique<Batcher>(100, 1000, &Release);
  Batcher& batcher = *batcher_ptr;
  batcher.AddRaw(kP0, 0, 0, -1, "", "a", new int(0), 0);
  batcher.AddRaw(kP0, 0, 1, -1, "", "b", new int(1), 0);
  std::unique_ptr<Batch> parsed = batcher.Take(1);
  parsed->ReleaseRaw();  // what the writer does once the rows hold copies
  EXPECT_EQ(released_messages, 2);
  EXPECT_TRUE(parsed->raw.empty());
  parsed.reset();
  EXPECT_EQ(released_messages, 2);

  batcher.AddRaw(kP0, 0, 2, -1, "", "c", new int(2), 0);
  batcher.Take(2).reset();  // a discarded batch
  EXPECT_EQ(released_messages, 3);

  batcher.AddRaw(kP0, 0, 3, -1, "", "d", new int(3), 0);
  batcher_ptr.reset();  // the open batch goes with the batcher
  EXPECT_EQ(released_messages, 4);
}

}  // namespace
}  // namespace hotrow::ingest
