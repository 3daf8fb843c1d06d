#include "tests/ingest/kafka_test_util.h"

#include <gtest/gtest.h>

#include <chrono>

#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::ingest::testing {
namespace {

rd_kafka_t* NewClient(rd_kafka_type_t type, const std::map<std::string, std::string>& props,
                      rd_kafka_conf_t* conf = nullptr) {
  if (conf == nullptr) conf = rd_kafka_conf_new();
  char errstr[512];
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
      ADD_FAILURE() << "conf " << k << ": " << errstr;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
  if (rk == nullptr) ADD_FAILURE() << "rd_kafka_new: " << errstr;
  return rk;
}

}  // namespace

TestProducer::TestProducer(const std::string& bootstrap) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set_dr_msg_cb(conf, &TestProducer::OnDelivery);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = NewClient(RD_KAFKA_PRODUCER,
                  {{"bootstrap.servers", bootstrap},
                   {"linger.ms", "5"},
                   {"enable.idempotence", "true"},
                   {"log_level", "3"}},
                  conf);
}

TestProducer::~TestProducer() {
  if (rk_ != nullptr) {
    rd_kafka_flush(rk_, 5000);
    rd_kafka_destroy(rk_);
  }
}

void TestProducer::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
  auto* self = static_cast<TestProducer*>(opaque);
  auto index = reinterpret_cast<uintptr_t>(msg->_private);
  if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++self->failed_;
    ADD_FAILURE() << "delivery failed: " << rd_kafka_err2str(msg->err);
    return;
  }
  // A report that arrives after Flush gave up belongs to a chunk already handed back.
  if (index >= self->pending_.size()) {
    ++self->failed_;
    ADD_FAILURE() << "a delivery report arrived after its flush timed out";
    return;
  }
  ++self->delivered_;
  KafkaRecord& r = self->pending_[index];
  r.offset = msg->offset;
  r.partition = msg->partition;
  // Not the delivery report's timestamp: the embedded broker answers a made-up LogAppendTime.
}

void TestProducer::Produce(const std::string& topic, int32_t partition,
                           const std::optional<std::string>& key,
                           const std::optional<std::string>& value, int64_t timestamp_ms) {
  if (timestamp_ms == 0) {
    timestamp_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  }
  KafkaRecord r;
  r.partition = partition;
  r.key = key;
  r.value = value;
  r.timestamp_ms = timestamp_ms;
  const uintptr_t index = pending_.size();
  pending_.push_back(r);
  void* key_ptr = key ? const_cast<char*>(key->data()) : nullptr;
  const size_t key_len = key ? key->size() : 0;
  void* value_ptr = value ? const_cast<char*>(value->data()) : nullptr;
  const size_t value_len = value ? value->size() : 0;
  while (true) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_KEY(key_ptr, key_len), RD_KAFKA_V_VALUE(value_ptr, value_len),
        RD_KAFKA_V_TIMESTAMP(timestamp_ms), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(index)), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      ADD_FAILURE() << "produce: " << rd_kafka_err2str(err);
      return;
    }
    rd_kafka_poll(rk_, 10);
  }
}

std::vector<KafkaRecord> TestProducer::Flush() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (delivered_ + failed_ < pending_.size() && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_flush(rk_, 100);
  }
  EXPECT_EQ(delivered_, pending_.size()) << "not every record was delivered";
  std::vector<KafkaRecord> out = std::move(pending_);
  pending_.clear();
  delivered_ = 0;
  failed_ = 0;
  return out;
}

std::vector<KafkaRecord> ConsumeAll(const std::string& bootstrap, const std::string& topic,
                                    int partitions, size_t count, int timeout_ms) {
  rd_kafka_t* rk = NewClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                                 {"group.id", "test-reader"},
                                                 {"enable.auto.commit", "false"},
                                                 {"log_level", "3"}});
  std::vector<KafkaRecord> out;
  if (rk == nullptr) return out;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 100);
    if (msg == nullptr) continue;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      KafkaRecord r;
      r.partition = msg->partition;
      r.offset = msg->offset;
      if (msg->key != nullptr) r.key = std::string(static_cast<char*>(msg->key), msg->key_len);
      if (msg->payload != nullptr) {
        r.value = std::string(static_cast<char*>(msg->payload), msg->len);
      }
      rd_kafka_timestamp_type_t type;
      r.timestamp_ms = rd_kafka_message_timestamp(msg, &type);
      rd_kafka_headers_t* headers = nullptr;
      if (rd_kafka_message_headers(msg, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name;
        const void* value;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
          r.headers[name] = std::string(static_cast<const char*>(value), size);
        }
      }
      out.push_back(std::move(r));
    }
    rd_kafka_message_destroy(msg);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

std::map<int32_t, int64_t> HighWatermarks(const std::string& bootstrap, const std::string& topic,
                                          int partitions) {
  rd_kafka_t* rk =
      NewClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap}, {"log_level", "3"}});
  std::map<int32_t, int64_t> out;
  for (int p = 0; p < partitions; ++p) {
    int64_t low = -1, high = -1;
    rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high, 10000);
    EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(err);
    out[p] = high;
  }
  rd_kafka_destroy(rk);
  return out;
}

int64_t LowWatermark(const std::string& bootstrap, const std::string& topic, int32_t partition) {
  rd_kafka_t* rk =
      NewClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap}, {"log_level", "3"}});
  int64_t low = -1, high = -1;
  rd_kafka_resp_err_t err =
      rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &low, &high, 10000);
  EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(err);
  rd_kafka_destroy(rk);
  return low;
}

std::map<int32_t, int64_t> CommittedOffsets(const std::string& bootstrap, const std::string& group,
                                            const std::string& topic, int partitions) {
  rd_kafka_t* rk =
      NewClient(RD_KAFKA_CONSUMER,
                {{"bootstrap.servers", bootstrap}, {"group.id", group}, {"log_level", "3"}});
  std::map<int32_t, int64_t> out;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
  rd_kafka_resp_err_t err = rd_kafka_committed(rk, list, 10000);
  EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(err);
  for (int i = 0; i < list->cnt; ++i) {
    out[list->elems[i].partition] = list->elems[i].offset >= 0 ? list->elems[i].offset : -1;
  }
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_destroy(rk);
  return out;
}

rd_kafka_resp_err_t CommitOffsets(const std::string& bootstrap, const std::string& group,
                                  const std::string& topic,
                                  const std::map<int32_t, int64_t>& offsets) {
  // The embedded broker takes commits for an existing group only from a member: join first.
  rd_kafka_t* rk = NewClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                                 {"group.id", group},
                                                 {"session.timeout.ms", "3000"},
                                                 {"heartbeat.interval.ms", "200"},
                                                 {"enable.auto.commit", "false"},
                                                 {"log_level", "3"}});
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 100);
    if (msg != nullptr) rd_kafka_message_destroy(msg);
    rd_kafka_topic_partition_list_t* assignment = nullptr;
    if (rd_kafka_assignment(rk, &assignment) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const bool all = assignment->cnt >= static_cast<int>(offsets.size());
      rd_kafka_topic_partition_list_destroy(assignment);
      if (all) break;
    }
  }
  rd_kafka_topic_partition_list_t* list =
      rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size()));
  for (const auto& [p, offset] : offsets) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = offset;
  }
  rd_kafka_resp_err_t err = rd_kafka_commit(rk, list, 0);
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return err;
}

std::vector<StoredEvent> ReadStore(const store::EventStore& store) {
  std::vector<StoredEvent> out;
  for (const auto& bucket : store.Buckets()) {
    auto it = bucket->NewIterator(keying::KeyRange{"", ""}, false);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      keying::RowKey key;
      std::string_view id, payload;
      if (!keying::DecodeRowKey(it->key(), &key) ||
          !keying::DecodeRowValue(it->value(), &id, &payload)) {
        ADD_FAILURE() << "a stored row does not decode";
        continue;
      }
      StoredEvent e;
      e.topic = store.TopicName(key.topic).value_or("?");
      e.partition = key.partition;
      e.offset = key.offset;
      e.id = std::string(id);
      e.ts_ms = key.ts_ms;
      e.salt = key.salt;
      e.payload = std::string(payload);
      e.key = std::string(it->key());
      out.push_back(std::move(e));
    }
    EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  }
  return out;
}

int64_t StoredOffsetSum(const store::EventStore& store, const std::string& topic) {
  int64_t sum = 0;
  for (const auto& [tp, next] : store.StoredOffsets()) {
    if (tp.topic == topic) sum += next;
  }
  return sum;
}

std::map<std::string, std::string> FastGroupProperties() {
  return {{"session.timeout.ms", "3000"},
          {"heartbeat.interval.ms", "200"},
          {"max.poll.interval.ms", "10000"},
          {"topic.metadata.refresh.interval.ms", "1000"},
          {"log_level", "4"}};
}

// (partition, offset) of every stored event of `topic`, with how often each occurs.
std::map<std::pair<int32_t, int64_t>, int> OffsetCounts(const std::vector<StoredEvent>& events,
                                                        const std::string& topic) {
  std::map<std::pair<int32_t, int64_t>, int> counts;
  for (const StoredEvent& e : events) {
    if (e.topic == topic) ++counts[{e.partition, e.offset}];
  }
  return counts;
}

// Checks that `counts` holds every offset [0, high) of every partition exactly once, except those
// in `absent`; returns a description of the first few problems, empty when none.
std::string CheckExactlyOnce(const std::map<std::pair<int32_t, int64_t>, int>& counts,
                             const std::map<int32_t, int64_t>& high,
                             const std::set<std::pair<int32_t, int64_t>>& absent) {
  std::string problems;
  int shown = 0;
  auto note = [&](const std::string& s) {
    if (shown++ < 10) problems += s + "\n";
  };
  for (const auto& [partition, hw] : high) {
    for (int64_t o = 0; o < hw; ++o) {
      auto it = counts.find({partition, o});
      const bool should = absent.count({partition, o}) == 0;
      const int n = it == counts.end() ? 0 : it->second;
      if (should && n != 1) {
        note("partition " + std::to_string(partition) + " offset " + std::to_string(o) +
             " stored " + std::to_string(n) + " times");
      }
      if (!should && n != 0) {
        note("partition " + std::to_string(partition) + " offset " + std::to_string(o) +
             " stored but should not be");
      }
    }
  }
  for (const auto& [po, n] : counts) {
    auto hw = high.find(po.first);
    if (hw == high.end() || po.second >= hw->second) {
      note("stored offset beyond the high watermark: " + std::to_string(po.first) + "@" +
           std::to_string(po.second));
    }
  }
  if (shown > 10) problems += "... " + std::to_string(shown - 10) + " more\n";
  return problems;
}

std::string CheckWholeFromZero(const store::EventStore& store, const std::string& topic) {
  std::map<int32_t, int64_t> next;
  for (const auto& [tp, offset] : store.StoredOffsets()) {
    if (tp.topic == topic) next[tp.partition] = offset;
  }
  std::map<std::pair<int32_t, int64_t>, int> counts = OffsetCounts(ReadStore(store), topic);
  // Rows of a partition with no stored offset were written without their offsets: none may be.
  for (const auto& [at, n] : counts) {
    if (next.count(at.first) == 0) {
      return "partition " + std::to_string(at.first) + " has rows but no stored offset\n";
    }
  }
  return CheckExactlyOnce(counts, next);
}

}  // namespace hotrow::ingest::testing
