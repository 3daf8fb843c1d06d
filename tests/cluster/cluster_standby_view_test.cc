// A Cluster's view of its owned and followed partitions (cluster.standby_replicas), with its
// freshness thread running against stand-in ingestors and a real store: a partition taken over
// from the standby keeps its standby entry while owned, so the moment its owner stops serving
// this instance's head names it as a standby again (CONTRACT.md "cluster.standby_replicas").

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "access/credentials.h"
#include "cluster/cluster.h"
#include "ingest/ingestor.h"
#include "ingest/partition_ownership.h"
#include "store/event_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::cluster {
namespace {

// Positions and readiness as a test sets them (Cluster reads only Stats and Ready).
class FakeIngestor : public ingest::Ingestor {
 public:
  Status Stop() override { return Status::Ok(); }
  ingest::IngestStats Stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  Status Ready() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return ready_;
  }
  ingest::IngestLiveness Liveness() const override { return {}; }

  void SetPosition(const std::string& topic, int32_t partition, int64_t next, int64_t end) {
    std::lock_guard<std::mutex> lock(mu_);
    ingest::PartitionStats p;
    p.topic = topic;
    p.partition = partition;
    p.next_offset = next;
    p.high_watermark = end;
    stats_.partitions = {p};
    stats_.assigned = true;
  }
  void SetReady(Status ready) {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = std::move(ready);
  }

 private:
  mutable std::mutex mu_;
  ingest::IngestStats stats_;  // GUARDED_BY(mu_)
  Status ready_;               // GUARDED_BY(mu_)
};

template <typename Done>
bool Await(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polls a condition
  }
  return true;
}

TEST(ClusterStandbyViewTest, ATakenPartitionAnswersAsAStandbyTheMomentItsOwnerStopsServing) {
  ::hotrow::testing::TempDir dir;
  store::StoreOptions store_options;
  store_options.path = dir.Sub("store");
  store_options.salts = 1;
  store_options.block_cache_bytes = 8 << 20;
  store_options.write_buffer_bytes = 8 << 20;
  auto opened = store::EventStore::Open(store_options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<store::EventStore> store = std::move(opened).value();
  {
    store::WriteBatchInput batch;
    batch.run_starts[store::TopicPartition{"t", 0}] = {0, store::PartitionRun::kHoldsAll};
    store::WriteOutcome outcome;
    ASSERT_TRUE(store->Write(batch, &outcome).ok());
  }
  ingest::PartitionOwnership owned(store.get());
  ingest::PartitionOwnership followed(store.get());
  // The standby followed t/0 up to the broker's end; the group consumer took it over
  // (StandbyHandover::Take adopts the standby's state).
  followed.Assigned("t", 0, /*start_offset=*/-2, /*high_watermark=*/100);
  followed.UpdatePosition("t", 0, 100, 100);
  owned.Adopt(followed, "t", 0);
  owned.Assigned("t", 0, 100, 100);

  auto credentials = access::Credentials::Open(access::CredentialsOptions{});
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  ClusterOptions options;
  options.self = "127.0.0.1:1";
  options.peers = {options.self, "127.0.0.1:2"};  // never asked here
  options.credentials = credentials.value().get();
  options.freshness_refresh_ms = 10;
  FakeIngestor owner, standby;  // before the cluster: its freshness thread reads them until it ends
  Cluster cluster(options, &owned, store.get());
  owner.SetPosition("t", 0, 100, 100);
  cluster.set_ingestor(&owner);
  cluster.set_standby(&followed, &standby);

  // Owned and serving: answered as owned, not named as a standby, through several refreshes.
  owner.SetPosition("t", 0, 120, 120);
  ASSERT_TRUE(Await([&] { return owned.Snapshot().partitions.at(0).position == 120; }));
  owner.SetPosition("t", 0, 130, 130);
  ASSERT_TRUE(Await([&] { return owned.Snapshot().partitions.at(0).position == 130; }));
  LocalHead head = cluster.Head(*cluster.LocalShared());
  EXPECT_EQ(head.partitions, (Partitions{{"t", 0}}));
  EXPECT_TRUE(head.standby.empty());
  EXPECT_TRUE(cluster.LocalShared()->followed.empty()) << "/v1/cluster would list it as followed";

  // The group consumer stops serving it (it waits for the group's assignment): the same
  // store, fresh as the standby's entry judges it, answers for it as a standby at once.
  owner.SetReady(Status::Busy("waiting for the group's assignment"));
  ASSERT_TRUE(Await([&] { return !owned.Snapshot().IsServing("t", 0); }));
  head = cluster.Head(*cluster.LocalShared());
  EXPECT_EQ(head.stale, (Partitions{{"t", 0}}));
  EXPECT_EQ(head.standby, (Partitions{{"t", 0}}))
      << "the standby entry went when the owner served, so nothing here answers for t/0 now";
}

}  // namespace
}  // namespace hotrow::cluster
