#include "tests/reliability/fault_producer.h"

#include <map>
#include <stdexcept>

namespace hotrow::testing::fault {

LedgerProducer::LedgerProducer(const std::string& bootstrap, std::string topic, ProducedLog* log)
    : topic_(std::move(topic)), log_(log) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::map<std::string, std::string> properties = {
      {"bootstrap.servers", bootstrap},
      {"enable.idempotence", "true"},
      {"linger.ms", "5"},
      {"request.timeout.ms", "5000"},
      {"message.timeout.ms", "300000"},
      {"reconnect.backoff.max.ms", "1000"},
      {"topic.metadata.refresh.interval.ms", "1000"},
      {"log_level", "3"}};
  char errstr[512];
  for (const auto& [name, value] : properties) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof(errstr)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error("producer property " + name + ": " + errstr);
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, &LedgerProducer::OnDelivery);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));  // owns conf on success
  if (rk_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("rd_kafka_new: ") + errstr);
  }
}

LedgerProducer::~LedgerProducer() {
  // Delivery reports after this point would find no producer: serve what is left, then go.
  rd_kafka_flush(rk_, 10000);
  rd_kafka_destroy(rk_);
}

void LedgerProducer::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
  auto* self = static_cast<LedgerProducer*>(opaque);
  const auto seq = static_cast<int64_t>(reinterpret_cast<uintptr_t>(msg->_private));
  if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (self->failed_.fetch_add(1) == 0) {
      self->first_error_ = "seq " + std::to_string(seq) + ": " + rd_kafka_err2str(msg->err);
    }
    return;
  }
  self->log_->Acknowledge(seq, msg->offset);
  self->acknowledged_.fetch_add(1);
}

bool LedgerProducer::Produce(const ProducedRecord& record, const std::optional<std::string>& key,
                             std::string* error) {
  log_->Register(record);
  void* key_ptr = key ? const_cast<char*>(key->data()) : nullptr;
  const size_t key_len = key ? key->size() : 0;
  while (true) {
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC(topic_.c_str()), RD_KAFKA_V_PARTITION(record.partition),
        RD_KAFKA_V_KEY(key_ptr, key_len),
        RD_KAFKA_V_VALUE(const_cast<char*>(record.value.data()), record.value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<uintptr_t>(record.seq))),
        RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return true;
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      *error = "produce seq " + std::to_string(record.seq) + ": " + rd_kafka_err2str(err);
      return false;
    }
    rd_kafka_poll(rk_, 10);
  }
}

void LedgerProducer::Poll(std::chrono::milliseconds timeout) {
  rd_kafka_poll(rk_, static_cast<int>(timeout.count()));
}

bool LedgerProducer::Flush(std::chrono::milliseconds timeout) {
  return rd_kafka_flush(rk_, static_cast<int>(timeout.count())) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

std::string LedgerProducer::first_error() const { return first_error_; }

}  // namespace hotrow::testing::fault
