#include "ingest/kafka_conf.h"

#include <spdlog/spdlog.h>

#include "ingest/ingestor.h"

namespace hotrow::ingest {

Status SetKafkaProperties(rd_kafka_conf_t* conf, const std::map<std::string, std::string>& props,
                          const char* what) {
  char errstr[512];
  for (const auto& [name, value] : props) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof(errstr)) !=
        RD_KAFKA_CONF_OK) {
      return Status::InvalidArgument(std::string("kafka.properties: ") + what + ": " + errstr);
    }
  }
  return Status::Ok();
}

Status CheckConsumerProperties(const IngestOptions& options) {
  KafkaConfPtr conf(rd_kafka_conf_new());
  std::map<std::string, std::string> fixed = {{"bootstrap.servers", options.brokers},
                                              {"group.id", options.group_id}};
  if (!options.instance_id.empty()) fixed["group.instance.id"] = options.instance_id;
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(), fixed, "consumer"));
  return SetKafkaProperties(conf.get(), options.properties, "consumer");
}

namespace {

void LogFromKafka(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
  // syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug.
  const char* name = rk != nullptr ? rd_kafka_name(rk) : "rdkafka";
  if (level <= 3) {
    spdlog::error("kafka {} {}: {}", name, facility, message);
  } else if (level == 4) {
    spdlog::warn("kafka {} {}: {}", name, facility, message);
  } else if (level <= 6) {
    spdlog::info("kafka {} {}: {}", name, facility, message);
  } else {
    spdlog::debug("kafka {} {}: {}", name, facility, message);
  }
}

}  // namespace

void RouteKafkaLogs(rd_kafka_conf_t* conf) { rd_kafka_conf_set_log_cb(conf, &LogFromKafka); }

}  // namespace hotrow::ingest
