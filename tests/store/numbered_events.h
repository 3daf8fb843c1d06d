// What the store tests that need only a store on a manual clock share: the fixture, and a writer
// of numbered events of one partition.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store {

// Writes `count` events of partition 0 of topic "events" from offset `first`, one ms apart from
// `first_ts`, the event at offset i of id `id_of(i)`; every one must be stored.
template <typename IdOf>
void WriteNumberedEvents(EventStore* store, int64_t first, int64_t count, int64_t first_ts,
                         IdOf id_of) {
  const uint16_t topic = *store->TopicNumber("events");
  WriteBatchInput batch;
  for (int64_t i = first; i < first + count; ++i) {
    const std::string id = id_of(i);
    keying::RowKey key{store->salter().SaltOf("events", 0, i, id), keying::IdHash(id),
                       first_ts + (i - first), topic, 0, i};
    batch.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, R"({"v":1})")});
  }
  batch.next_offsets[{"events", 0}] = first + count;
  WriteOutcome outcome;
  ASSERT_TRUE(store->Write(batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, static_cast<size_t>(count));
}

// A store directory and a manual clock at `now`; Options() opens buckets of `bucket_ms` with
// `salts` salts there.
class ManualClockStoreTest : public ::testing::Test {
 protected:
  ManualClockStoreTest(int64_t now, int64_t bucket_ms, int salts)
      : clock_(now), bucket_ms_(bucket_ms), salts_(salts) {}

  StoreOptions Options() {
    StoreOptions options;
    options.path = dir_.Sub("store");
    options.wall_clock = &clock_;
    options.bucket_ms = bucket_ms_;
    options.salts = salts_;
    return options;
  }

  testing::TempDir dir_;
  ManualClock clock_;

 private:
  const int64_t bucket_ms_;
  const int salts_;
};

}  // namespace hotrow::store
