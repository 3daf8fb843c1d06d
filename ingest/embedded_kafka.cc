#include "ingest/embedded_kafka.h"

// clang-format off
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
// clang-format on

namespace hotrow::ingest {

Result<std::unique_ptr<EmbeddedKafka>> EmbeddedKafka::Start(const std::string& topic,
                                                            int partitions,
                                                            const EmbeddedKafkaOptions& options) {
  if (options.brokers < 1 || options.brokers > 16) {
    return Status::InvalidArgument("embedded kafka: brokers must be 1..16, got " +
                                   std::to_string(options.brokers));
  }
  std::unique_ptr<EmbeddedKafka> kafka(new EmbeddedKafka());
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The handle only hosts the cluster; keep it quiet.
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
  kafka->handle_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (kafka->handle_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::IOError(std::string("embedded kafka: cannot create a client handle: ") + errstr);
  }
  kafka->cluster_ = rd_kafka_mock_cluster_new(kafka->handle_, options.brokers);
  if (kafka->cluster_ == nullptr) {
    return Status::IOError("embedded kafka: cannot start the mock cluster (no loopback port?)");
  }
  kafka->bootstrap_ = rd_kafka_mock_cluster_bootstraps(kafka->cluster_);
  HOTROW_RETURN_IF_ERROR(kafka->CreateTopic(topic, partitions));
  return kafka;
}

EmbeddedKafka::~EmbeddedKafka() {
  if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
  if (handle_ != nullptr) rd_kafka_destroy(handle_);
}

Status EmbeddedKafka::CreateTopic(const std::string& topic, int partitions) {
  if (topic.empty()) return Status::InvalidArgument("embedded kafka: the topic name is empty");
  if (partitions < 1 || partitions > 10000) {
    return Status::InvalidArgument("embedded kafka: partitions must be 1..10000, got " +
                                   std::to_string(partitions));
  }
  rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::InvalidArgument("embedded kafka: cannot create topic " + topic + ": " +
                                   rd_kafka_err2str(err));
  }
  return Status::Ok();
}

}  // namespace hotrow::ingest
