#pragma once

#include <memory>
#include <string>

#include "common/status.h"

// librdkafka's mock cluster type, declared here so that users of EmbeddedKafka need not include
// librdkafka; tests that inject faults include <librdkafka/rdkafka_mock.h> themselves.
struct rd_kafka_mock_cluster_s;
struct rd_kafka_s;

namespace hotrow::ingest {

struct EmbeddedKafkaOptions {
  // Brokers in the cluster, ids 1..brokers. More than one lets tests take a broker down while
  // another still answers metadata (the mock never moves leadership). Default: 1.
  int brokers = 1;
};

// A Kafka-protocol broker on loopback: librdkafka's mock cluster (rdkafka_mock.h), for the demo,
// `hotrow embedded-kafka` and the tests. Any Kafka client can use bootstrap().
//
// Limitations (those of the mock): each partition keeps only about 100k message sets or 5 MiB,
// after which its log start moves on; offsets-for-times always answers -1; there is no Admin API
// (topics are made with CreateTopic); a broker set down keeps its partitions' leadership.
//
// Thread-safety: CreateTopic and the accessors may be called from any thread. The cluster lives
// until the object is destroyed.
class EmbeddedKafka {
 public:
  // Starts the cluster and creates `topic` with `partitions` partitions (replication 1).
  // Fails with InvalidArgument for partitions outside 1..10000 or an empty topic, IOError when
  // the cluster cannot start.
  static Result<std::unique_ptr<EmbeddedKafka>> Start(const std::string& topic, int partitions,
                                                      const EmbeddedKafkaOptions& options = {});
  ~EmbeddedKafka();
  EmbeddedKafka(const EmbeddedKafka&) = delete;
  EmbeddedKafka& operator=(const EmbeddedKafka&) = delete;

  // "127.0.0.1:PORT" (comma-separated when there are several brokers).
  const std::string& bootstrap() const { return bootstrap_; }

  // Creates another topic. Fails with InvalidArgument as Start does.
  Status CreateTopic(const std::string& topic, int partitions);

  // The mock cluster, for fault injection (rd_kafka_mock_broker_set_down, ...).
  rd_kafka_mock_cluster_s* cluster() const { return cluster_; }

 private:
  EmbeddedKafka() = default;

  // The handle the cluster is attached to; destroyed after the cluster.
  rd_kafka_s* handle_ = nullptr;
  rd_kafka_mock_cluster_s* cluster_ = nullptr;
  std::string bootstrap_;
};

}  // namespace hotrow::ingest
