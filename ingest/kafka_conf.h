#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>
#include <string>

#include "common/status.h"

// Small helpers around librdkafka's C configuration, shared by the consumer, the dead-letter and
// synthetic producers. Internal to ingest/ (it includes librdkafka).
namespace hotrow::ingest {

struct KafkaConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using KafkaConfPtr = std::unique_ptr<rd_kafka_conf_t, KafkaConfDeleter>;

struct TopicPartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
using TopicPartitionListPtr =
    std::unique_ptr<rd_kafka_topic_partition_list_t, TopicPartitionListDeleter>;

// Sets each property on `conf`, in map order. `what` names the client in the error:
// InvalidArgument("kafka.properties: consumer: No such configuration property: \"x\"").
Status SetKafkaProperties(rd_kafka_conf_t* conf, const std::map<std::string, std::string>& props,
                          const char* what);

// Routes librdkafka's own log lines to spdlog, with the client's name.
void RouteKafkaLogs(rd_kafka_conf_t* conf);

}  // namespace hotrow::ingest
