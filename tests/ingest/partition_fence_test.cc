// PartitionFence: a revocation or a loss (Close) and the store writes under way cannot interleave:
// Close returns only once every write begun before it has ended, a write begun after it leaves the
// closed partitions out, and a write under way commits only partitions still open.

#include "ingest/partition_fence.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include "tests/support/process.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::WaitFor;
using store::TopicPartition;

const TopicPartition kP0{"events", 0};
const TopicPartition kP1{"events", 1};

TEST(PartitionFenceTest, ACloseWaitsForTheWriteUnderWayWhichThenCommitsOnlyOpenPartitions) {
  PartitionFence fence;
  const std::map<TopicPartition, uint64_t> epochs{{kP0, fence.Open(kP0)}, {kP1, fence.Open(kP1)}};
  std::optional<PartitionFence::Write> write(fence.BeginWrite(epochs));
  EXPECT_TRUE(write->closed().empty());

  // p0 is lost while the write is under way.
  std::atomic<bool> closed{false};
  std::thread loss([&] {
    fence.Close({kP0});
    closed.store(true);
  });
  ASSERT_TRUE(WaitFor([&] { return fence.ClosesWaiting() == 1; }));
  EXPECT_FALSE(closed.load()) << "the loss was acted on while a write of p0 was under way";
  // The write finishes (it may have applied: it began before the loss), and commits p1 only.
  EXPECT_EQ(write->StillOpen(epochs), std::vector<TopicPartition>{kP1});
  EXPECT_FALSE(closed.load());
  write.reset();
  ASSERT_TRUE(WaitFor([&] { return closed.load(); }));
  loss.join();
  EXPECT_EQ(fence.WritesUnderWay(), 0u);
}

TEST(PartitionFenceTest, AWriteBegunAfterACloseLeavesTheClosedPartitionsOut) {
  PartitionFence fence;
  const uint64_t e0 = fence.Open(kP0);
  const uint64_t e1 = fence.Open(kP1);
  fence.Close({kP0});
  {
    PartitionFence::Write write = fence.BeginWrite({{kP0, e0}, {kP1, e1}});
    EXPECT_EQ(write.closed(), std::set<TopicPartition>{kP0});
    EXPECT_EQ(write.StillOpen({{kP0, e0}, {kP1, e1}}), std::vector<TopicPartition>{kP1});
  }
  // Assigned again: a new epoch. Records read at the old one stay fenced out.
  const uint64_t again = fence.Open(kP0);
  EXPECT_NE(again, e0);
  EXPECT_FALSE(fence.IsOpen(kP0, e0));
  EXPECT_TRUE(fence.IsOpen(kP0, again));
  PartitionFence::Write write = fence.BeginWrite({{kP0, e0}});
  EXPECT_EQ(write.closed(), std::set<TopicPartition>{kP0});
}

TEST(PartitionFenceTest, ACloseDoesNotWaitForWritesBegunAfterIt) {
  PartitionFence fence;
  const std::map<TopicPartition, uint64_t> epochs{{kP0, fence.Open(kP0)}, {kP1, fence.Open(kP1)}};
  std::optional<PartitionFence::Write> before(fence.BeginWrite(epochs));
  std::atomic<bool> closed{false};
  std::thread loss([&] {
    fence.Close({kP0});
    closed.store(true);
  });
  ASSERT_TRUE(WaitFor([&] { return fence.ClosesWaiting() == 1; }));
  // Another writer keeps writing p1 (its own partitions) throughout.
  std::optional<PartitionFence::Write> after(fence.BeginWrite({{kP1, epochs.at(kP1)}}));
  EXPECT_TRUE(after->closed().empty());
  before.reset();
  EXPECT_TRUE(WaitFor([&] { return closed.load(); }))
      << "a close waited for a write that began after it";
  after.reset();
  loss.join();
}

}  // namespace
}  // namespace hotrow::ingest
