#pragma once

#include <librdkafka/rdkafka.h>

#include <memory>

#include "ingest/broker_offsets.h"

// BrokerOffsets through a librdkafka client. Internal to ingest/ (it includes librdkafka).
namespace hotrow::ingest {

// Asks through `client` (not owned; it must outlive the result). When
// `answers_offsets_for_times` is false (the embedded broker, whose ListOffsets says -1 for any
// time) OffsetsForTimes answers nothing without asking.
std::unique_ptr<BrokerOffsets> NewKafkaBrokerOffsets(rd_kafka_t* client,
                                                     bool answers_offsets_for_times);

}  // namespace hotrow::ingest
