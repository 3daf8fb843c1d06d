#include "ingest/dead_letter.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "ingest/kafka_conf.h"

namespace hotrow::ingest {

Result<std::unique_ptr<DeadLetterProducer>> DeadLetterProducer::Create(
    const std::string& brokers, const std::string& topic,
    const std::map<std::string, std::string>& properties) {
  if (topic.empty()) return Status::InvalidArgument("ingest.dead_letter_topic is empty");
  std::unique_ptr<DeadLetterProducer> p(new DeadLetterProducer());
  p->topic_ = topic;
  KafkaConfPtr conf(rd_kafka_conf_new());
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(),
                                            {{"bootstrap.servers", brokers},
                                             {"client.id", "hotrow-dead-letter"},
                                             {"enable.idempotence", "true"},
                                             {"linger.ms", "20"}},
                                            "dead-letter producer"));
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(), properties, "dead-letter producer"));
  RouteKafkaLogs(conf.get());
  rd_kafka_conf_set_opaque(conf.get(), p.get());
  rd_kafka_conf_set_dr_msg_cb(conf.get(), &DeadLetterProducer::OnDelivery);
  char errstr[512];
  p->producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof(errstr));
  if (p->producer_ == nullptr) {
    return Status::InvalidArgument(std::string("dead-letter producer: ") + errstr);
  }
  conf.release();
  return p;
}

DeadLetterProducer::~DeadLetterProducer() {
  if (producer_ == nullptr) return;
  rd_kafka_flush(producer_, 5000);
  if (rd_kafka_outq_len(producer_) > 0) {
    spdlog::error("dead letters: {} letters to {} still undelivered at shutdown",
                  rd_kafka_outq_len(producer_), topic_);
  }
  rd_kafka_destroy(producer_);
}

void DeadLetterProducer::OnDelivery(rd_kafka_s* /*rk*/, const rd_kafka_message_s* msg,
                                    void* opaque) {
  auto* self = static_cast<DeadLetterProducer*>(opaque);
  if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    self->delivered_.fetch_add(1, std::memory_order_relaxed);
  } else {
    self->failed_.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("dead letters: delivery to {} failed: {}", self->topic_,
                  rd_kafka_err2str(msg->err));
  }
}

Status DeadLetterProducer::Produce(std::string_view key, std::string_view value, const char* reason,
                                   std::string_view detail, std::string_view source_topic,
                                   int32_t partition, int64_t offset) {
  std::string source =
      std::string(source_topic) + "/" + std::to_string(partition) + "@" + std::to_string(offset);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        producer_, RD_KAFKA_V_TOPIC(topic_.c_str()),
        RD_KAFKA_V_KEY(key.empty() ? nullptr : const_cast<char*>(key.data()), key.size()),
        RD_KAFKA_V_VALUE(value.empty() ? nullptr : const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_HEADER(kReasonHeader, reason, -1),
        RD_KAFKA_V_HEADER("hotrow-source", source.data(), static_cast<ssize_t>(source.size())),
        RD_KAFKA_V_HEADER("hotrow-detail", detail.data(), static_cast<ssize_t>(detail.size())),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_poll(producer_, 0);
      return Status::Ok();
    }
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || std::chrono::steady_clock::now() >= deadline) {
      return Status::IOError("dead letter to " + topic_ + " for " + source + ": " +
                             rd_kafka_err2str(err));
    }
    rd_kafka_poll(producer_, 10);
  }
}

Status DeadLetterProducer::Flush(int timeout_ms) {
  rd_kafka_flush(producer_, timeout_ms);
  const int left = rd_kafka_outq_len(producer_);
  const uint64_t failed_now = failed_.load();
  const uint64_t new_failures = failed_now - failed_at_last_flush_;
  failed_at_last_flush_ = failed_now;
  if (new_failures > 0 || left > 0) {
    return Status::IOError("dead letters to " + topic_ + ": " + std::to_string(new_failures) +
                           " failed, " + std::to_string(left) + " undelivered");
  }
  return Status::Ok();
}

}  // namespace hotrow::ingest
