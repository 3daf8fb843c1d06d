#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/event_store.h"

// Which partitions an instance follows as a standby (CONTRACT.md "cluster.standby_replicas").
// Pure; tested in tests/ingest/standby_set_test.cc.
//
// Rendezvous (highest random weight) hashing of each partition over `cluster.peers`: every
// instance ranks the peers by a hash of (peer, topic, partition), the same ranking on every
// instance with the same peer list, and follows the partition when it is among the first
// `replicas + 1` and does not own it. The owner is Kafka's assignor's choice, not hotrow's, so it
// is left out by each instance knowing only what it owns itself: a partition whose owner is among
// its first replicas + 1 has `replicas` standbys, one whose owner is not has replicas + 1 (a
// third more write work on average with 3 instances and 1 replica, never fewer standbys). No
// knowledge of which members are alive is needed, so nothing changes while membership is unknown
// or moving; a member that is down still holds its ranks, so its partitions have one standby
// fewer until it returns. Adding or removing a peer moves only the partitions whose first ranks
// it enters or leaves.
namespace hotrow::ingest {

// The rank weight of `peer` for (topic, partition): FNV-1a 64 of the three, mixed (splitmix64).
uint64_t StandbyWeight(const std::string& peer, const std::string& topic, int32_t partition);

// The peers in rank order for (topic, partition): highest weight first, ties by name.
std::vector<std::string> StandbyRanking(const std::vector<std::string>& peers,
                                        const std::string& topic, int32_t partition);

// Whether `self` (an entry of `peers`) follows (topic, partition): among the first
// `replicas + 1` of its ranking and not `owned` by it. False when replicas is 0 or `self` is not
// in `peers`.
bool Follows(const std::vector<std::string>& peers, const std::string& self, int replicas,
             const std::string& topic, int32_t partition, bool owned);

// The partitions `self` follows of every partition `counts` names (topic -> partition count),
// leaving out `owned` (sorted). Sorted.
std::vector<store::TopicPartition> StandbySet(
    const std::vector<std::string>& peers, const std::string& self, int replicas,
    const std::vector<std::pair<std::string, int32_t>>& counts,
    const std::vector<store::TopicPartition>& owned);

}  // namespace hotrow::ingest
