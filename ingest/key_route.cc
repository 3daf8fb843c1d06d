#include "ingest/key_route.h"

#include <librdkafka/rdkafka.h>

namespace hotrow::ingest {

int32_t PartitionForKey(KeyPartitioner partitioner, std::string_view key,
                        int32_t partition_count) {
  // Neither function reads its topic or opaques: a keyed record's partition depends on the key
  // and the count alone, which is what lets a reader of the topic recompute it.
  if (partitioner == KeyPartitioner::kMurmur2) {
    return rd_kafka_msg_partitioner_murmur2(nullptr, key.data(), key.size(), partition_count,
                                            nullptr, nullptr);
  }
  return rd_kafka_msg_partitioner_consistent(nullptr, key.data(), key.size(), partition_count,
                                             nullptr, nullptr);
}

}  // namespace hotrow::ingest
