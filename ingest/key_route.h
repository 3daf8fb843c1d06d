#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

// Routing by key (CONTRACT.md "Group answers", `cluster.route_by_key`): when a topic is keyed by
// the event id and written with a known partitioner, every event of an id lies in the one
// partition the partitioner gives its id, and a per-id query needs only that partition's owner.
// This file names the partitioners and computes where they put a key; the ingestor checks every
// record against it (ingest/partition_ownership.h, OwnedPartition::routable) and the cluster
// routes with it (cluster/route.h).
namespace hotrow::ingest {

enum class KeyPartitioner {
  kOff,
  // The Java client's default (and kafka-python's, kafkajs'): murmur2 of the key, made positive,
  // modulo the partition count; librdkafka's `murmur2` / `murmur2_random`.
  kMurmur2,
  // librdkafka's default `consistent_random` for a keyed record: CRC-32 of the key modulo the
  // partition count (`consistent`).
  kCrc32,
};

// "off", "murmur2" or "crc32"; InvalidArgument naming the accepted values otherwise. (Inline: the
// configuration reads it without linking librdkafka.)
inline Result<KeyPartitioner> ParseKeyPartitioner(std::string_view text) {
  if (text == "off") return KeyPartitioner::kOff;
  if (text == "murmur2") return KeyPartitioner::kMurmur2;
  if (text == "crc32") return KeyPartitioner::kCrc32;
  return Status::InvalidArgument("must be off, murmur2 or crc32, got \"" + std::string(text) +
                                 "\"");
}
inline const char* KeyPartitionerName(KeyPartitioner partitioner) {
  switch (partitioner) {
    case KeyPartitioner::kMurmur2:
      return "murmur2";
    case KeyPartitioner::kCrc32:
      return "crc32";
    case KeyPartitioner::kOff:
      break;
  }
  return "off";
}

// The partition `partitioner` puts a record keyed `key` in, of `partition_count`, computed by
// librdkafka's own partitioner functions. REQUIRES: partitioner != kOff, partition_count >= 1.
int32_t PartitionForKey(KeyPartitioner partitioner, std::string_view key, int32_t partition_count);

}  // namespace hotrow::ingest
