#include "ingest/topic_partitions.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <memory>

#include "ingest/kafka_conf.h"

namespace hotrow::ingest {

Result<TopicPartitionList> ListTopicPartitions(const std::string& brokers,
                                               const std::vector<std::string>& topics,
                                               const std::map<std::string, std::string>& properties,
                                               int timeout_ms) {
  KafkaConfPtr conf(rd_kafka_conf_new());
  char err[512];
  if (rd_kafka_conf_set(conf.get(), "bootstrap.servers", brokers.c_str(), err, sizeof(err)) !=
      RD_KAFKA_CONF_OK) {
    return Status::InvalidArgument(std::string("kafka.brokers: ") + err);
  }
  // Consumer-only properties would make a producer handle refuse them: keep only what any client
  // takes (security and connection settings).
  std::map<std::string, std::string> common;
  for (const auto& [name, value] : properties) {
    if (name.rfind("security.", 0) == 0 || name.rfind("sasl.", 0) == 0 ||
        name.rfind("ssl.", 0) == 0 || name == "client.id") {
      common.emplace(name, value);
    }
  }
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(), common, "metadata client"));
  RouteKafkaLogs(conf.get());
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), err, sizeof(err));
  if (rk == nullptr) return Status::InvalidArgument(std::string("metadata client: ") + err);
  conf.release();  // owned by rk now
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> handle(rk, rd_kafka_destroy);

  TopicPartitionList out;
  for (const std::string& topic : topics) {
    rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    if (t == nullptr) {
      out.unknown[topic] = "librdkafka refused the topic name";
      continue;
    }
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, timeout_ms);
    rd_kafka_topic_destroy(t);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status::IOError("cannot read the partitions of " + topic + ": " + rd_kafka_err2str(e));
    }
    bool seen = false;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (topic != md->topics[i].topic) continue;
      seen = true;
      if (md->topics[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        out.unknown[topic] = rd_kafka_err2str(md->topics[i].err);
        continue;
      }
      for (int p = 0; p < md->topics[i].partition_cnt; ++p) {
        out.partitions.push_back({md->topics[i].topic, md->topics[i].partitions[p].id});
      }
    }
    if (!seen) out.unknown[topic] = "not in the brokers' answer";
    rd_kafka_metadata_destroy(md);
  }
  std::sort(out.partitions.begin(), out.partitions.end());
  return out;
}

}  // namespace hotrow::ingest
