#pragma once

// What the event store's tests share: a store in a temporary directory with a controlled clock,
// events with known offsets and payload sizes, and reading every row back.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "keying/salter.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::store_test {

using keying::SaltBy;
using store::ClockKind;
using store::EventStore;
using store::StoreOptions;
using store::TopicPartition;
using store::WriteOutcome;
using testing::TestEvent;

constexpr int64_t kT0 = 1'700'000'000'000;  // a multiple of every bucket width used here
constexpr int64_t kBucketMs = 10'000;
constexpr int64_t kTtlMs = 60'000;
constexpr int64_t kMaxFutureMs = 5'000;

inline std::vector<TestEvent> EventsOf(const std::vector<testing::StoredRow>& rows) {
  std::vector<TestEvent> events;
  for (const auto& row : rows) events.push_back(row.event);
  std::sort(events.begin(), events.end());
  return events;
}

inline std::vector<TestEvent> Sorted(std::vector<TestEvent> events) {
  std::sort(events.begin(), events.end());
  return events;
}

inline std::string DiffSets(const std::vector<TestEvent>& want, const std::vector<TestEvent>& got) {
  std::vector<TestEvent> missing;
  std::vector<TestEvent> extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  if (missing.empty() && extra.empty()) return "";
  std::string out = std::to_string(missing.size()) + " missing, " + std::to_string(extra.size()) +
                    " unexpected\n";
  for (size_t i = 0; i < missing.size() && i < 3; ++i)
    out += "  missing " + testing::Describe(missing[i]) + "\n";
  for (size_t i = 0; i < extra.size() && i < 3; ++i)
    out += "  unexpected " + testing::Describe(extra[i]) + "\n";
  return out;
}

class EventStoreTest : public ::testing::Test {
 protected:
  StoreOptions Options() const {
    StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.max_future_ms = kMaxFutureMs;
    options.salts = 4;
    options.salt_by = SaltBy::kRecord;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    return options;
  }

  void Open(const StoreOptions& options) {
    store_.reset();
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void Open() { Open(Options()); }

  TestEvent Ev(const std::string& id, int64_t ts, const std::string& topic = "t",
               int32_t partition = 0, size_t payload_bytes = 0) {
    TestEvent e;
    e.id = id;
    e.ts_ms = ts;
    e.topic = topic;
    e.partition = partition;
    e.offset = next_offset_[TopicPartition{topic, partition}]++;
    e.payload = "{\"o\":" + std::to_string(e.offset) + "}";
    // Padding that does not compress, so that the bytes on disk are about the bytes written.
    uint64_t x = static_cast<uint64_t>(e.offset) * 0x9E3779B97F4A7C15ULL + 1;
    while (e.payload.size() < payload_bytes) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      e.payload.push_back(static_cast<char>('a' + x % 26));
    }
    return e;
  }

  WriteOutcome Write(const std::vector<TestEvent>& events, bool with_offsets = true) {
    WriteOutcome outcome;
    Status st = testing::WriteEvents(store_.get(), events, &outcome, with_offsets);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return outcome;
  }

  std::vector<testing::StoredRow> Rows() {
    Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(*store_);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? std::move(rows).value() : std::vector<testing::StoredRow>{};
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0 + kTtlMs};
  std::unique_ptr<EventStore> store_;
  std::map<TopicPartition, int64_t> next_offset_;
};

}  // namespace hotrow::store_test
