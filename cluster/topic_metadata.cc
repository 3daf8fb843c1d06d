#include "cluster/topic_metadata.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "common/logging.h"
#include "ingest/topic_partitions.h"

namespace hotrow::cluster {

TopicMetadata::TopicMetadata(TopicMetadataOptions options) : options_(std::move(options)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-metadata");
    Run();
  });
}

TopicMetadata::~TopicMetadata() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

GroupPartitions TopicMetadata::Known() const {
  GroupPartitions out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& topic : options_.topics) {
    auto it = known_.find(topic);
    if (it == known_.end()) {
      out.unknown_topics.push_back(topic);
    } else {
      out.partitions.insert(out.partitions.end(), it->second.begin(), it->second.end());
    }
  }
  std::sort(out.partitions.begin(), out.partitions.end());
  std::sort(out.unknown_topics.begin(), out.unknown_topics.end());
  return out;
}

bool TopicMetadata::Refresh() {
  Result<ingest::TopicPartitionList> read =
      ingest::ListTopicPartitions(options_.brokers, options_.topics, options_.kafka_properties,
                                  static_cast<int>(options_.timeout_ms));
  static RateLimiter warnings(1, 60000);
  uint64_t suppressed = 0;
  if (!read.ok()) {
    if (warnings.Allow(&suppressed)) {
      spdlog::warn("cluster: {}; keeping the partitions last read", read.status().ToString());
    }
    std::lock_guard<std::mutex> lock(mu_);
    return known_.size() == options_.topics.size();
  }
  std::map<std::string, Partitions> by_topic;
  for (const store::TopicPartition& tp : read->partitions) by_topic[tp.topic].push_back(tp);
  for (const auto& [topic, why] : read->unknown) {
    if (warnings.Allow(&suppressed)) {
      spdlog::warn("cluster: the partitions of {} are not known: {}", topic, why);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& topic : options_.topics) {
    if (read->unknown.count(topic) != 0) continue;  // an earlier list, if any, stays
    known_[topic] = by_topic[topic];
  }
  return known_.size() == options_.topics.size();
}

void TopicMetadata::Run() {
  while (true) {
    const bool all_known = Refresh();
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock,
                   std::chrono::milliseconds(all_known ? options_.refresh_ms : options_.retry_ms),
                   [this] { return stopping_; });
    if (stopping_) return;
  }
}

}  // namespace hotrow::cluster
