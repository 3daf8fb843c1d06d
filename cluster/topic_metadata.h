#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster/coverage.h"

namespace hotrow::cluster {

struct TopicMetadataOptions {
  // Where and what to read (kafka.brokers, kafka.topics, kafka.properties). Defaults: none.
  std::string brokers;
  std::vector<std::string> topics;
  std::map<std::string, std::string> kafka_properties;
  // How often the list is read again once known, and while some topic is still unknown.
  // Defaults: 30 s, 1 s.
  int64_t refresh_ms = 30000;
  int64_t retry_ms = 1000;
  // How long one read may wait for the brokers. Default: 5 s.
  int64_t timeout_ms = 5000;
};

// The partitions of the consumed topics, read from the brokers in the background and cached, so
// that a query never waits for the brokers (CONTRACT.md, "Cluster mode in production settings").
// Until a topic's list has been read it is unknown, and answers that need it are incomplete; once
// read, a failing refresh (the brokers down) keeps the last list read.
//
// Threads: one (hotrow-metadata), started by the constructor, stopped and joined by the
// destructor; each read is bounded by timeout_ms.
// Thread-safety: every method may be called from any thread.
class TopicMetadata {
 public:
  explicit TopicMetadata(TopicMetadataOptions options);
  ~TopicMetadata();
  TopicMetadata(const TopicMetadata&) = delete;
  TopicMetadata& operator=(const TopicMetadata&) = delete;

  // What is known now; never waits.
  GroupPartitions Known() const;

 private:
  void Run();
  // Reads the list once; true when every topic is known.
  bool Refresh();

  const TopicMetadataOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::map<std::string, Partitions> known_;  // GUARDED_BY(mu_), by topic
  std::thread thread_;
};

}  // namespace hotrow::cluster
