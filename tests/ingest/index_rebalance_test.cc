// Index rows through real ingest and a rebalance: two Ingestors in one group, each with its own
// store indexing `battery` (an integer in every synthetic event) and `missing` (in none); one
// leaves mid-stream. In each store an index row must exist exactly when its event does, carry the
// event's battery as text, and the absent field must be counted, never indexed. Reuses the
// harness of rebalance_test.cc.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "ingest/ingestor.h"
#include "ingest/synthetic_producer.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/event_gen.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest::index_rebalance_test {
namespace {

using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using testing::Assigned;
using testing::IngestTestBase;
using testing::kTopic;
using namespace std::chrono_literals;

class IndexRebalanceTest : public IngestTestBase {
 protected:
  IndexRebalanceTest() { partitions_ = 6; }

  std::unique_ptr<store::EventStore> Open(const std::string& path) {
    store::StoreOptions options;
    options.path = path;
    options.salts = 4;
    options.salt_by = keying::SaltBy::kId;
    options.index_fields = {"battery", "missing"};
    auto s = store::EventStore::Open(options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // Checks one store: every event is listed by exactly one index posting (battery) with its
  // battery as text, every listed event exists. Returns the number of events.
  size_t CheckIndexMatchesEvents(const store::EventStore& store) {
    using Position = std::tuple<uint16_t, int32_t, int64_t>;
    std::map<Position, std::string> events;              // battery from the payload
    std::map<Position, std::vector<std::string>> index;  // values of its postings
    for (const auto& bucket : store.Buckets()) {
      EXPECT_TRUE(bucket->Indexes("battery"));
      Result<std::vector<hotrow::testing::PostedEvent>> posted =
          hotrow::testing::ReadPostings(*bucket);
      EXPECT_TRUE(posted.ok()) << posted.status().ToString();
      if (posted.ok()) {
        for (const hotrow::testing::PostedEvent& e : *posted) {
          EXPECT_EQ(e.field, "battery");
          index[{e.event.topic, e.event.partition, e.event.offset}].emplace_back(e.value);
        }
      }
      auto it = bucket->NewIterator(keying::KeyRange{"", ""}, false);
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        if (keying::IsIndexKey(it->key())) continue;
        keying::RowKey key;
        std::string_view id, payload;
        EXPECT_TRUE(keying::DecodeRowKey(it->key(), &key));
        EXPECT_TRUE(keying::DecodeRowValue(it->value(), &id, &payload));
        const auto json = nlohmann::json::parse(payload);
        events[{key.topic, key.partition, key.offset}] =
            std::to_string(json.at("battery").get<int64_t>());
      }
      EXPECT_TRUE(it->status().ok());
    }
    for (const auto& [p, battery] : events) {
      EXPECT_EQ(index[p], std::vector<std::string>{battery})
          << "partition " << std::get<1>(p) << " offset " << std::get<2>(p);
    }
    for (const auto& [p, values] : index) {
      EXPECT_EQ(events.count(p), 1u) << "a posted event that is not stored: partition "
                                     << std::get<1>(p) << " offset " << std::get<2>(p);
    }
    return events.size();
  }
};

TEST_F(IndexRebalanceTest, AnIndexRowExistsExactlyWhenItsEventDoes) {
  TempDir dir;
  auto store_a = Open(dir.Sub("a"));
  auto store_b = Open(dir.Sub("b"));
  ASSERT_NE(store_a, nullptr);
  ASSERT_NE(store_b, nullptr);
  IngestOptions options = Options("index-rebalance");
  options.index_fields = {"battery", "missing"};
  auto a = StartIngestor(options, store_a.get());
  auto b = StartIngestor(options, store_b.get());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    return Assigned(*a) + Assigned(*b) == static_cast<size_t>(partitions_) && Assigned(*b) > 0;
  }));

  ProducerOptions popts;
  popts.brokers = kafka_->bootstrap();
  popts.topic = kTopic;
  popts.rate = 4000;
  popts.count = 8000;
  auto producer = SyntheticProducer::Create(popts);
  ASSERT_TRUE(producer.ok());
  (*producer)->Start();
  ASSERT_TRUE(WaitFor([&] { return b->Stats().events_stored > 0; }));
  ASSERT_TRUE(b->Stop().ok());  // b leaves mid-stream; a takes its partitions over
  ASSERT_TRUE(WaitFor([&] { return Assigned(*a) == static_cast<size_t>(partitions_); }));
  ASSERT_TRUE((*producer)->Wait().ok());
  const std::map<int32_t, int64_t> high = High();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto offsets_a = store_a->StoredOffsets(), offsets_b = store_b->StoredOffsets();
        for (const auto& [partition, hw] : high) {
          store::TopicPartition tp{kTopic, partition};
          if (std::max(offsets_a[tp], offsets_b[tp]) < hw) return false;
        }
        return true;
      },
      60s));
  const IngestStats stats_a = a->Stats(), stats_b = b->Stats();
  ASSERT_TRUE(a->Stop().ok());

  const size_t events_a = CheckIndexMatchesEvents(*store_a);
  const size_t events_b = CheckIndexMatchesEvents(*store_b);
  EXPECT_GT(events_b, 0u);
  // Every record is in one store or both (a replay after the rebalance may repeat one).
  EXPECT_GE(events_a + events_b, 8000u);
  // `missing` is in no event: counted once per stored event, never a reject, never a row.
  // (at least: a record replayed after the rebalance is parsed, and counted, again)
  EXPECT_GE(stats_a.index_absent + stats_b.index_absent,
            stats_a.events_stored + stats_b.events_stored);
  EXPECT_GT(stats_a.index_absent, 0u);
  EXPECT_EQ(stats_a.index_not_scalar + stats_a.index_too_long, 0u);
}

}  // namespace
}  // namespace hotrow::ingest::index_rebalance_test
