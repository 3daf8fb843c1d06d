#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/event_store.h"

namespace hotrow::ingest {

// Every partition of `topics`, from the brokers' metadata, sorted: what a group of instances must
// cover between them (CONTRACT.md, cluster.peers: "complete"). Uses a short-lived client of its
// own, configured with `properties` (kafka.properties: security settings apply), and waits at most
// `timeout_ms`.
// A topic the brokers do not know has no partitions. IOError when the brokers do not answer.
//
// Thread-safety: may be called from any thread.
Result<std::vector<store::TopicPartition>> ListTopicPartitions(
    const std::string& brokers, const std::vector<std::string>& topics,
    const std::map<std::string, std::string>& properties, int timeout_ms);

}  // namespace hotrow::ingest
