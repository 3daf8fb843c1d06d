#include "ingest/kafka_broker_offsets.h"

#include <string>

#include "ingest/kafka_conf.h"

namespace hotrow::ingest {
namespace {

class KafkaBrokerOffsets final : public BrokerOffsets {
 public:
  KafkaBrokerOffsets(rd_kafka_t* client, bool answers_offsets_for_times)
      : client_(client), answers_offsets_for_times_(answers_offsets_for_times) {}

  Status EndOffsets(const std::vector<store::TopicPartition>& partitions, int timeout_ms,
                    std::map<store::TopicPartition, int64_t>* ends) override {
    // ListOffsets with the logical time "latest" (-1) answers every partition's end in one
    // request per leader, where rd_kafka_query_watermark_offsets asks one partition at a time.
    TopicPartitionListPtr list = Ask(partitions, RD_KAFKA_OFFSET_END);
    if (list == nullptr) return Status::Ok();
    rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(client_, list.get(), timeout_ms);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status::IOError(std::string("cannot ask the partitions' ends: ") +
                             rd_kafka_err2str(err));
    }
    for (int i = 0; i < list->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = list->elems[i];
      if (p.err == RD_KAFKA_RESP_ERR_NO_ERROR && p.offset >= 0) {
        (*ends)[store::TopicPartition{p.topic, p.partition}] = p.offset;
      }
    }
    return Status::Ok();
  }

  Status OffsetsForTimes(const std::vector<store::TopicPartition>& partitions, int64_t ts_ms,
                         int timeout_ms,
                         std::map<store::TopicPartition, TimeOffset>* answers) override {
    if (!answers_offsets_for_times_) return Status::Ok();
    TopicPartitionListPtr list = Ask(partitions, ts_ms);
    if (list == nullptr) return Status::Ok();
    rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(client_, list.get(), timeout_ms);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status::IOError(std::string("offsets-for-times failed: ") + rd_kafka_err2str(err));
    }
    for (int i = 0; i < list->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = list->elems[i];
      if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      // A broker answers -1 (RD_KAFKA_OFFSET_END) when no record has a timestamp that new.
      (*answers)[store::TopicPartition{p.topic, p.partition}] =
          p.offset >= 0
              ? TimeOffset::At(p.offset)
              : (p.offset == RD_KAFKA_OFFSET_END ? TimeOffset::NoneNewer() : TimeOffset::Unknown());
    }
    return Status::Ok();
  }

 private:
  // A partition list asking `value` of each partition; nullptr for none (librdkafka refuses an
  // empty list).
  static TopicPartitionListPtr Ask(const std::vector<store::TopicPartition>& partitions,
                                   int64_t value) {
    if (partitions.empty()) return nullptr;
    TopicPartitionListPtr list(
        rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
    for (const store::TopicPartition& tp : partitions) {
      rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset = value;
    }
    return list;
  }

  rd_kafka_t* const client_;
  const bool answers_offsets_for_times_;
};

}  // namespace

std::unique_ptr<BrokerOffsets> NewKafkaBrokerOffsets(rd_kafka_t* client,
                                                     bool answers_offsets_for_times) {
  return std::make_unique<KafkaBrokerOffsets>(client, answers_offsets_for_times);
}

}  // namespace hotrow::ingest
