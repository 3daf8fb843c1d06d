// The standby set (ingest/standby_set.h): rendezvous hashing of each partition over the peers.

#include "ingest/standby_set.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace hotrow::ingest {
namespace {

using store::TopicPartition;

const std::vector<std::string> kPeers = {"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"};

TEST(StandbySetTest, EachPartitionIsFollowedByItsFirstRanksExceptItsOwner) {
  for (int32_t p = 0; p < 64; ++p) {
    const std::vector<std::string> ranking = StandbyRanking(kPeers, "events", p);
    ASSERT_EQ(ranking.size(), kPeers.size());
    EXPECT_EQ(std::set<std::string>(ranking.begin(), ranking.end()),
              std::set<std::string>(kPeers.begin(), kPeers.end()));
    // With one replica the first two follow unless they own it, the third never.
    EXPECT_TRUE(Follows(kPeers, ranking[0], 1, "events", p, false));
    EXPECT_TRUE(Follows(kPeers, ranking[1], 1, "events", p, false));
    EXPECT_FALSE(Follows(kPeers, ranking[2], 1, "events", p, false));
    EXPECT_FALSE(Follows(kPeers, ranking[0], 1, "events", p, /*owned=*/true));
    // Whoever owns it, at least one other instance follows it.
    for (const std::string& owner : kPeers) {
      int standbys = 0;
      for (const std::string& peer : kPeers) {
        standbys += peer != owner && Follows(kPeers, peer, 1, "events", p, false);
      }
      EXPECT_GE(standbys, 1) << "partition " << p << " owned by " << owner;
      EXPECT_LE(standbys, 2);
    }
  }
}

TEST(StandbySetTest, NoReplicasOrAStrangerFollowsNothing) {
  EXPECT_FALSE(Follows(kPeers, kPeers[0], 0, "events", 0, false));
  EXPECT_FALSE(Follows(kPeers, "10.9.9.9:8080", 2, "events", 0, false));
  // With every other instance a replica, every instance follows everything it does not own.
  for (int32_t p = 0; p < 16; ++p) {
    for (const std::string& peer : kPeers)
      EXPECT_TRUE(Follows(kPeers, peer, 2, "events", p, false));
  }
}

TEST(StandbySetTest, TheSetIsTheSameWhateverThePeersOrderAndSpreadsTheWork) {
  std::vector<std::string> reversed(kPeers.rbegin(), kPeers.rend());
  std::map<std::string, size_t> followed;
  for (const std::string& self : kPeers) {
    const std::vector<TopicPartition> a = StandbySet(kPeers, self, 1, {{"events", 48}}, {});
    const std::vector<TopicPartition> b = StandbySet(reversed, self, 1, {{"events", 48}}, {});
    EXPECT_EQ(a, b);
    followed[self] = a.size();
  }
  // Each instance is among the first two ranks of about two thirds of the partitions.
  for (const auto& [peer, count] : followed) {
    EXPECT_GT(count, 20u) << peer;
    EXPECT_LT(count, 44u) << peer;
  }
}

TEST(StandbySetTest, OwnedPartitionsAreLeftOutAndAPeerLeavingMovesOnlyItsRanks) {
  const std::vector<TopicPartition> all = StandbySet(kPeers, kPeers[0], 1, {{"events", 32}}, {});
  ASSERT_FALSE(all.empty());
  const std::vector<TopicPartition> owned = {all.front()};
  const std::vector<TopicPartition> less =
      StandbySet(kPeers, kPeers[0], 1, {{"events", 32}}, owned);
  EXPECT_EQ(less.size() + 1, all.size());
  EXPECT_EQ(std::count(less.begin(), less.end(), all.front()), 0);
  // A fourth peer joining: what peer 0 followed and still ranks first or second stays followed.
  std::vector<std::string> four = kPeers;
  four.push_back("10.0.0.4:8080");
  const std::vector<TopicPartition> after = StandbySet(four, kPeers[0], 1, {{"events", 32}}, {});
  for (const TopicPartition& tp : after) {
    EXPECT_TRUE(std::binary_search(all.begin(), all.end(), tp))
        << "partition " << tp.partition << " gained by a peer that joined elsewhere";
  }
}

}  // namespace
}  // namespace hotrow::ingest
