// The fixture shared by the query engine's tests: a store on a manual clock, an engine over it,
// and events on consecutive offsets.

#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/temp_dir.h"

namespace hotrow::query_engine_test {

using keying::SaltBy;
using query::Event;
using query::Order;
using query::QueryEngine;
using query::QueryOptions;
using store::EventStore;
using store::StoreOptions;
using store::TopicPartition;
using testing::TestEvent;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kBucketMs = 10'000;
constexpr int64_t kTtlMs = 60'000;

class QueryEngineTest : public ::testing::Test {
 protected:
  void OpenStore(SaltBy salt_by = SaltBy::kRecord, int salts = 4) {
    StoreOptions options;
    options.path = dir_.Sub("store-" + std::to_string(++opened_));
    options.ttl_ms = kTtlMs;
    options.bucket_ms = kBucketMs;
    options.salts = salts;
    options.salt_by = salt_by;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  // The last-N cache is off unless asked for: these tests check how the store is read.
  std::unique_ptr<QueryEngine> NewEngine(int threads = 2, int max_concurrent = 64,
                                         size_t chunk_events = 3, int last_cache = 0) {
    QueryOptions q;
    q.threads = threads;
    q.max_concurrent_queries = max_concurrent;
    q.chunk_events = chunk_events;
    q.last_cache = last_cache;
    return std::make_unique<QueryEngine>(store_.get(), q);
  }

  // An event of `id` at `ts` on the next offset of (topic, partition).
  TestEvent Ev(const std::string& id, int64_t ts, const std::string& topic = "t",
               int32_t partition = 0) {
    TestEvent e;
    e.id = id;
    e.ts_ms = ts;
    e.topic = topic;
    e.partition = partition;
    e.offset = next_offset_[TopicPartition{topic, partition}]++;
    e.payload =
        "{\"id\":\"" + testing::EscapeBytes(id) + "\",\"o\":" + std::to_string(e.offset) + "}";
    return e;
  }

  static Event ToEvent(const TestEvent& e) {
    return Event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload};
  }

  void Write(const std::vector<TestEvent>& events) {
    store::WriteOutcome outcome;
    Status st = testing::WriteEvents(store_.get(), events, &outcome);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(outcome.stored, events.size());
  }

  // How many salts latest-`n` of `id` must and may seek, its answer lying in one bucket: it must
  // seek every salt holding a row of the answer, and may seek those whose newest row of the id is
  // at most one level of the bucket's id filter (a 255th of the bucket) older than the answer's
  // oldest row; the salts in between have bounds too old for the answer.
  struct SeekBounds {
    size_t must = 0;
    size_t may = 0;
  };
  SeekBounds LatestSeekBounds(const std::vector<TestEvent>& events, const std::string& id,
                              size_t n) {
    std::vector<const TestEvent*> rows;
    for (const TestEvent& e : events) {
      if (e.id == id) rows.push_back(&e);
    }
    std::sort(rows.begin(), rows.end(),
              [](const TestEvent* a, const TestEvent* b) { return a->ts_ms > b->ts_ms; });
    auto salt_of = [&](const TestEvent& e) {
      return store_->salter().SaltOf(e.topic, e.partition, e.offset, e.id);
    };
    SeekBounds bounds;
    std::set<uint8_t> answer_salts;
    for (size_t i = 0; i < std::min(n, rows.size()); ++i) answer_salts.insert(salt_of(*rows[i]));
    bounds.must = answer_salts.size();
    const int64_t oldest = rows[std::min(n, rows.size()) - 1]->ts_ms;
    const int64_t level = (kBucketMs + 254) / 255;
    std::map<uint8_t, int64_t> newest_of_salt;
    for (const TestEvent* e : rows) newest_of_salt.emplace(salt_of(*e), e->ts_ms);  // newest first
    for (const auto& [salt, ts] : newest_of_salt) bounds.may += ts >= oldest - level;
    return bounds;
  }

  // `count` events over a few ids, partitions and buckets, all in the window.
  std::vector<TestEvent> Spread(int count) {
    std::vector<TestEvent> events;
    for (int i = 0; i < count; ++i) {
      events.push_back(
          Ev("dev-" + std::to_string(i % 5), kT0 + 1000 + (i * 397) % 50'000, "t", i % 3));
    }
    return events;
  }

  testing::TempDir dir_;
  int opened_ = 0;
  ManualClock clock_{kT0 + kTtlMs};
  std::unique_ptr<EventStore> store_;
  std::map<TopicPartition, int64_t> next_offset_;
};

}  // namespace hotrow::query_engine_test
