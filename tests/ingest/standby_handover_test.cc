// StandbyHandover (ingest/standby_handover.h) with a real PartitionFence and real
// PartitionOwnerships over a store on disk: a take closes the standby's fence and waits for its
// write under way, a partition is never open in the standby's fence while the group consumer
// owns it, and a partition's freshness passes between the two ownerships both ways
// (PartitionOwnership::Adopt), so it answers from this store throughout a hand-over.

#include "ingest/standby_handover.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "ingest/partition_fence.h"
#include "ingest/partition_ownership.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using store::TopicPartition;

constexpr int64_t kBeginning = -2;  // RD_KAFKA_OFFSET_BEGINNING
constexpr int64_t kT0 = 1'700'000'000'000;

// Waits (yielding) until `done` holds; false if it has not after 30 s, which only a broken
// implementation takes (the test then fails on it rather than hanging).
template <typename Done>
bool Await(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

class StandbyHandoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.salts = 1;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    auto store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    // The store holds t/0's whole window: it serves once caught up and fresh.
    store::WriteBatchInput batch;
    batch.run_starts[kTp] = {0, store::PartitionRun::kHoldsAll};
    store::WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
    OwnershipOptions o;
    o.max_staleness_ms = 5000;
    o.clock = &clock_;
    owned_ = std::make_unique<PartitionOwnership>(store_.get(), o);
    followed_ = std::make_unique<PartitionOwnership>(store_.get(), o);
    handover_.SetStandbyClose([this](const std::vector<TopicPartition>& partitions) {
      standby_fence_.Close(partitions);
    });
    handover_.SetStandbyOwnership(followed_.get());
    handover_.SetStandbyFollows([](const TopicPartition& tp) { return tp.partition == 0; });
  }

  // The standby follows t/0 from the beginning and has caught up with the broker: serving.
  void FollowCaughtUp() {
    followed_->Assigned("t", 0, kBeginning, /*high_watermark=*/1000);
    followed_->UpdatePosition("t", 0, 1000, 1000);
    ASSERT_TRUE(followed_->Snapshot().IsServing("t", 0));
  }

  const TopicPartition kTp{"t", 0};
  testing::TempDir dir_;
  ManualClock clock_{kT0};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<PartitionOwnership> owned_, followed_;
  PartitionFence standby_fence_;
  StandbyHandover handover_;
};

TEST_F(StandbyHandoverTest, ATakeClosesTheStandbysFenceAndWaitsForItsWriteUnderWay) {
  const uint64_t epoch = handover_.OpenUnlessOwned(kTp, [&] { return standby_fence_.Open(kTp); });
  ASSERT_NE(epoch, 0u);
  std::atomic<bool> taken{false};
  std::thread take;
  {
    // The standby's writer is inside a write of t/0.
    PartitionFence::Write write = standby_fence_.BeginWrite({{kTp, epoch}});
    take = std::thread([&] {
      handover_.Take({kTp});
      taken.store(true);
    });
    ASSERT_TRUE(Await([&] { return standby_fence_.ClosesWaiting() == 1 || taken.load(); }));
    EXPECT_FALSE(taken.load()) << "the take returned while the standby's write was under way";
    EXPECT_EQ(standby_fence_.ClosesWaiting(), 1u) << "the take did not close the standby's fence";
    EXPECT_FALSE(standby_fence_.IsOpen(kTp, epoch));  // closed: nothing more of it is written
  }                                                   // the write ends
  take.join();
  EXPECT_TRUE(taken.load());
  EXPECT_EQ(standby_fence_.WritesUnderWay(), 0u);
  EXPECT_TRUE(handover_.IsOwned(kTp));
}

TEST_F(StandbyHandoverTest, NeverTwoWritersOfOnePartition) {
  // Owned: the standby cannot open it, and its open is not even run.
  handover_.Take({kTp});
  bool ran = false;
  EXPECT_EQ(handover_.OpenUnlessOwned(kTp,
                                      [&] {
                                        ran = true;
                                        return standby_fence_.Open(kTp);
                                      }),
            0u);
  EXPECT_FALSE(ran);
  // Released: it may follow it again.
  handover_.Release({kTp});
  EXPECT_FALSE(handover_.IsOwned(kTp));
  EXPECT_NE(handover_.OpenUnlessOwned(kTp, [&] { return standby_fence_.Open(kTp); }), 0u);

  // Raced: whichever comes first, once the take has returned the standby's fence does not
  // have t/0 open at the epoch its open returned.
  for (int i = 0; i < 200; ++i) {
    handover_.Release({kTp});
    standby_fence_.Close({kTp});
    std::atomic<uint64_t> epoch{0};
    std::thread standby([&] {
      epoch.store(handover_.OpenUnlessOwned(kTp, [&] { return standby_fence_.Open(kTp); }));
    });
    handover_.Take({kTp});
    standby.join();
    ASSERT_FALSE(epoch.load() != 0 && standby_fence_.IsOpen(kTp, epoch.load()))
        << "round " << i << ": the standby writes a partition the group consumer owns";
  }
}

TEST_F(StandbyHandoverTest, ATakenPartitionServesAsOwnedAtOnceAndKeepsItsStandbyEntry) {
  ASSERT_NO_FATAL_FAILURE(FollowCaughtUp());
  handover_.Take({kTp}, owned_.get());
  // The owner adopted the standby's freshness: serving before any position of its own.
  EXPECT_TRUE(owned_->Snapshot().IsServing("t", 0));
  // Its assignment continues the store's run from the store's offset, while the broker holds 10
  // more records: still serving (they are new, not a window to rebuild).
  owned_->Assigned("t", 0, /*start_offset=*/1000, /*high_watermark=*/1010);
  EXPECT_TRUE(owned_->Snapshot().IsServing("t", 0));
  // The standby's entry stays (it answers should the owner not serve).
  EXPECT_TRUE(followed_->Snapshot().IsServing("t", 0));

  // Without the adoption, the same assignment rebuilds: not serving.
  PartitionOwnership fresh(store_.get(), owned_->options());
  fresh.Assigned("t", 0, 1000, 1010);
  EXPECT_FALSE(fresh.Snapshot().IsServing("t", 0));
}

TEST_F(StandbyHandoverTest, AReleasedPartitionKeepsServingAsAStandbyWhereItIsFollowed) {
  // The owner's state: caught up at 1500.
  owned_->Assigned("t", 0, kBeginning, 1500);
  owned_->UpdatePosition("t", 0, 1500, 1500);
  ASSERT_TRUE(owned_->Snapshot().IsServing("t", 0));
  handover_.Take({kTp}, owned_.get());
  handover_.Release({kTp}, owned_.get());
  owned_->Revoked("t", 0);
  // The standby's ownership adopted it: serving, before the standby consumer continues it.
  EXPECT_TRUE(followed_->Snapshot().IsServing("t", 0));
  // Its assignment from the store's offset continues it.
  followed_->Assigned("t", 0, 1500, 1510);
  EXPECT_TRUE(followed_->Snapshot().IsServing("t", 0));
}

TEST_F(StandbyHandoverTest, AReleasedPartitionTheStandbyDoesNotFollowLeavesNoStandbyEntry) {
  // t/1 is not followed here (SetStandbyFollows): an entry of it would serve until the standby's
  // next check dropped it, and a query that chose this instance for it would find it gone.
  const TopicPartition other{"t", 1};
  owned_->Assigned("t", 1, kBeginning, 10);
  owned_->UpdatePosition("t", 1, 10, 10);
  handover_.Take({other}, owned_.get());
  handover_.Release({other}, owned_.get());
  owned_->Revoked("t", 1);
  EXPECT_TRUE(followed_->Snapshot().partitions.empty());
}

}  // namespace
}  // namespace hotrow::ingest
