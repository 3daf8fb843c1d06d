#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/event_store.h"

namespace hotrow::ingest {

// The partitions of some topics, as the brokers' metadata says.
struct TopicPartitionList {
  std::vector<store::TopicPartition> partitions;  // sorted
  // Topics whose partitions could not be read (the brokers reported an error for the topic:
  // unknown, no leader...), with the brokers' reason. Their partitions are not in `partitions`.
  std::map<std::string, std::string> unknown;
};

// Every partition of `topics`, from the brokers' metadata: what a group of instances must cover
// between them (CONTRACT.md, `cluster.peers`). Uses a short-lived client of its own, configured
// with `properties` (kafka.properties: security settings apply), and waits at most `timeout_ms`.
// IOError when the brokers do not answer.
//
// Thread-safety: may be called from any thread.
Result<TopicPartitionList> ListTopicPartitions(const std::string& brokers,
                                               const std::vector<std::string>& topics,
                                               const std::map<std::string, std::string>& properties,
                                               int timeout_ms);

}  // namespace hotrow::ingest
