// The Ingestor against the embedded broker (in-process), real consumer groups and real RocksDB
// stores in temporary directories.

#include "ingest/ingestor.h"

// clang-format off
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
// clang-format on

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/logging.h"
#include "common/thread_priority.h"
#include "common/time_format.h"
#include "ingest/dead_letter.h"
#include "ingest/embedded_kafka.h"
#include "ingest/synthetic_producer.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/threads.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using testing::CheckExactlyOnce;
using testing::ConsumeAll;
using testing::ControlledStore;
using testing::IngestTestBase;
using testing::KafkaRecord;
using testing::Key;
using testing::kTopic;
using testing::OffsetCounts;
using testing::ReadStore;
using testing::StoredEvent;
using testing::StoredOffsetSum;
using testing::TestProducer;
using testing::WallNow;
using namespace std::chrono_literals;

class IngestorTest : public IngestTestBase, public ::testing::WithParamInterface<int> {
 protected:
  IngestorTest() { writers_ = GetParam(); }
};
HOTROW_WITH_WRITERS(IngestorTest);

// ---------------------------------------------------------------------------------------------

TEST_P(IngestorTest, StoresRecordsExactlyAsTheOracleComputes) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  auto ingestor = StartIngestor(Options(), store.get());
  ASSERT_NE(ingestor, nullptr);

  // Every way an event can name its id and time, spread over the partitions.
  TestProducer producer(kafka_->bootstrap());
  const int64_t now = WallNow();
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    const int32_t partition = i % partitions_;
    const std::string device = "dev-" + std::to_string(i % 37);
    switch (i % 5) {
      case 0:  // id and integer ms in the payload
        producer.Produce(kTopic, partition, device,
                         R"({"event_id":")" + device + R"(","ts":)" + std::to_string(now - i) +
                             R"(,"temp":21.5,"i":)" + std::to_string(i) + "}");
        break;
      case 1:  // id from the key, RFC 3339 time
        producer.Produce(
            kTopic, partition, "key-" + device,
            R"({"ts":")" + FormatRfc3339Ms(now - 2 * i) + R"(","i":)" + std::to_string(i) + "}");
        break;
      case 2:  // integer id, time from the Kafka timestamp
        producer.Produce(kTopic, partition, std::nullopt,
                         R"({"event_id":)" + std::to_string(1000 + i % 11) + R"(,"i":)" +
                             std::to_string(i) + "}",
                         now - 3 * i);
        break;
      case 3:  // nested and odd payload content, stored byte for byte
        producer.Produce(kTopic, partition, device,
                         R"({ "event_id" : ")" + device + R"(" , "ts" : )" +
                             std::to_string(now - i) +
                             R"(, "nested": {"a": [1, 2, {"b": "é\u00e9\n"}]}, "i": )" +
                             std::to_string(i) + " }");
        break;
      default:  // a null key and an id in the payload
        producer.Produce(kTopic, partition, std::nullopt,
                         R"({"event_id":"x-)" + std::to_string(i % 3) + R"(","ts":)" +
                             std::to_string(now - i) + "}");
        break;
    }
  }
  std::vector<KafkaRecord> produced = producer.Flush();
  ASSERT_EQ(produced.size(), static_cast<size_t>(n));
  ASSERT_TRUE(WaitCaughtUp(*store, *ingestor))
      << "stored offsets: " << StoredOffsetSum(*store, kTopic);

  // The oracle: every record's row, computed from what was produced.
  auto topic_number = store->TopicNumber(kTopic);
  ASSERT_TRUE(topic_number.ok());
  std::map<std::string, std::string> expected;  // key -> value
  for (int i = 0; i < n; ++i) {
    const KafkaRecord& r = produced[static_cast<size_t>(i)];
    std::string id;
    int64_t ts = 0;
    switch (i % 5) {
      case 0:
        id = "dev-" + std::to_string(i % 37);
        ts = now - i;
        break;
      case 1:
        id = "key-dev-" + std::to_string(i % 37);
        ts = now - 2 * i;
        break;
      case 2:
        id = std::to_string(1000 + i % 11);
        ts = now - 3 * i;
        break;
      case 3:
        id = "dev-" + std::to_string(i % 37);
        ts = now - i;
        break;
      default:
        id = "x-" + std::to_string(i % 3);
        ts = now - i;
        break;
    }
    keying::RowKey key;
    key.salt = store->salter().SaltOf(kTopic, r.partition, r.offset, id);
    key.id_hash = keying::IdHash(id);
    key.ts_ms = ts;
    key.topic = *topic_number;
    key.partition = r.partition;
    key.offset = r.offset;
    expected[keying::EncodeRowKey(key)] = keying::EncodeRowValue(id, *r.value);
  }
  std::map<std::string, std::string> got;
  for (const StoredEvent& e : ReadStore(*store)) {
    got[e.key] = keying::EncodeRowValue(e.id, e.payload);
  }
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "the stored rows differ from the oracle's";

  IngestStats stats = ingestor->Stats();
  EXPECT_EQ(stats.records_consumed, static_cast<uint64_t>(n));
  EXPECT_EQ(stats.events_stored, static_cast<uint64_t>(n));
  EXPECT_EQ(stats.duplicates, 0u);
  EXPECT_EQ(stats.rejected.size(), std::size(kRejectReasons));
  for (const auto& [reason, count] : stats.rejected) EXPECT_EQ(count, 0u) << reason;
  EXPECT_GE(stats.batches_written, 1u);
  EXPECT_EQ(stats.batch_events_sum, static_cast<uint64_t>(n));
  EXPECT_TRUE(stats.assigned);
  EXPECT_EQ(stats.partitions.size(), static_cast<size_t>(partitions_));
  EXPECT_TRUE(ingestor->Ready().ok()) << ingestor->Ready().ToString();
  EXPECT_TRUE(ingestor->Stop().ok());
}

TEST_P(IngestorTest, BadRecordsAreCountedDeadLetteredNeverStoredAndThePartitionMovesOn) {
  ASSERT_TRUE(kafka_->CreateTopic("dead-letters", 1).ok());
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  IngestOptions options = Options();
  options.dead_letter_topic = "dead-letters";
  auto ingestor = StartIngestor(options, store.get());
  ASSERT_NE(ingestor, nullptr);

  const int64_t now = WallNow();
  const std::string ts = std::to_string(now);
  // One of each kind of bad record, each between good ones, all in partition 0.
  const std::vector<std::pair<std::string, std::optional<std::string>>> bad = {
      {kRejectNotJson, "this is not json"},
      {kRejectNotJson, R"(["an","array"])"},
      {kRejectNotJson, std::nullopt},
      {kRejectNoId, R"({"ts":)" + ts + "}"},
      {kRejectIdTooLong, R"({"event_id":")" + std::string(300, 'x') + R"(","ts":)" + ts + "}"},
      {kRejectBadTime, R"({"event_id":"a","ts":"tomorrow-ish"})"},
      {kRejectExpired, R"({"event_id":"a","ts":)" + std::to_string(now - 3'600'000) + "}"},
      {kRejectFuture, R"({"event_id":"a","ts":)" + std::to_string(now + 3'600'000) + "}"},
  };
  TestProducer producer(kafka_->bootstrap());
  auto good = [&](int i) {
    producer.Produce(kTopic, 0, std::nullopt,
                     R"({"event_id":"good-)" + std::to_string(i) + R"(","ts":)" + ts + "}");
  };
  int goods = 0;
  good(goods++);
  for (const auto& [reason, value] : bad) {
    producer.Produce(kTopic, 0, std::nullopt, value);
    good(goods++);
  }
  std::vector<KafkaRecord> produced = producer.Flush();
  ASSERT_TRUE(WaitCaughtUp(*store, *ingestor));

  // Never stored: exactly the good ones are.
  std::vector<StoredEvent> stored = ReadStore(*store);
  ASSERT_EQ(stored.size(), static_cast<size_t>(goods));
  for (const StoredEvent& e : stored) EXPECT_EQ(e.id.rfind("good-", 0), 0u) << e.id;
  // The partition moved past every record, bad ones included.
  EXPECT_EQ(store->StoredOffsets().at(store::TopicPartition{kTopic, 0}),
            static_cast<int64_t>(produced.size()));

  // Counted per reason.
  std::map<std::string, uint64_t> expected_counts;
  for (const char* reason : kRejectReasons) expected_counts[reason] = 0;
  for (const auto& [reason, value] : bad) ++expected_counts[reason];
  IngestStats stats = ingestor->Stats();
  EXPECT_EQ(stats.rejected, expected_counts);
  EXPECT_EQ(stats.events_stored, static_cast<uint64_t>(goods));
  EXPECT_EQ(stats.dead_lettered, bad.size());

  // Dead-lettered as received, with the reason in a header.
  std::vector<KafkaRecord> letters = ConsumeAll(kafka_->bootstrap(), "dead-letters", 1, bad.size());
  ASSERT_EQ(letters.size(), bad.size());
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(letters[i].headers[kReasonHeader], bad[i].first) << i;
    EXPECT_EQ(letters[i].value, bad[i].second) << i;
    EXPECT_EQ(letters[i].headers["hotrow-source"],
              std::string(kTopic) + "/0@" + std::to_string(2 * i + 1));
  }
  EXPECT_TRUE(ingestor->Stop().ok());
}

TEST_P(IngestorTest, StoreWritersRunAsBatchThreadsAndThePollerDoesNot) {
  // Answers never wait behind ingest (common/thread_priority.h): the writers run under
  // SCHED_BATCH; the poller, which only decodes and batches, keeps the default policy.
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  auto ingestor = StartIngestor(Options("batch-group"), store.get());
  ASSERT_NE(ingestor, nullptr);
  auto all_batch = [](const std::vector<int>& tids) {
    return std::all_of(tids.begin(), tids.end(), [](int tid) { return IsBatchThread(tid); });
  };
  EXPECT_TRUE(WaitFor([&] {
    const std::vector<int> writers = hotrow::testing::ThreadsNamed("hotrow-write");
    return writers.size() == static_cast<size_t>(writers_) && all_batch(writers);
  })) << "the store writers do not run as batch threads";
  // The poller names itself once it runs, which may come after the writers are batch threads.
  std::vector<int> pollers;
  ASSERT_TRUE(WaitFor([&] {
    pollers = hotrow::testing::ThreadsNamed("hotrow-poll");
    return pollers.size() == 1;
  })) << "no poller thread";
  EXPECT_FALSE(IsBatchThread(pollers[0]));
  ASSERT_TRUE(ingestor->Stop().ok());
}

TEST_P(IngestorTest, StopWritesTheOpenBatchAndCommitsItsOffsets) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  IngestOptions options = Options("stop-group");
  options.batch_max_events = 1'000'000;
  options.batch_max_ms = 3'600'000;  // nothing closes the batch but Stop
  auto ingestor = StartIngestor(options, store.get());
  ASSERT_NE(ingestor, nullptr);
  TestProducer producer(kafka_->bootstrap());
  for (int i = 0; i < 300; ++i) {
    producer.Produce(kTopic, i % partitions_, Key(i),
                     R"({"ts":)" + std::to_string(WallNow()) + "}");
  }
  producer.Flush();
  ASSERT_TRUE(WaitFor([&] { return ingestor->Stats().records_consumed == 300; }));
  EXPECT_EQ(StoredOffsetSum(*store, kTopic), 0);  // still in the open batch
  ASSERT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(ingestor->Stats().last_error, "") << "the consumer did not leave the group cleanly";
  EXPECT_EQ(StoredOffsetSum(*store, kTopic), 300);
  EXPECT_EQ(ReadStore(*store).size(), 300u);
  // The group's committed offsets mirror the store's.
  std::map<int32_t, int64_t> committed =
      testing::CommittedOffsets(kafka_->bootstrap(), "stop-group", kTopic, partitions_);
  for (const auto& [tp, next] : store->StoredOffsets()) EXPECT_EQ(committed[tp.partition], next);
  EXPECT_TRUE(ingestor->Stop().ok());  // idempotent
}

TEST_P(IngestorTest, RestartResumesFromTheStoreWithoutDuplicates) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  TestProducer producer(kafka_->bootstrap());
  auto produce = [&](int n) {
    for (int i = 0; i < n; ++i) {
      producer.Produce(kTopic, i % partitions_, Key(i),
                       R"({"ts":)" + std::to_string(WallNow()) + "}");
    }
    producer.Flush();
  };
  produce(400);
  {
    auto ingestor = StartIngestor(Options("restart-group"), store.get());
    ASSERT_TRUE(WaitCaughtUp(*store));
    ASSERT_TRUE(ingestor->Stop().ok());
  }
  produce(400);
  // A new group: no committed offsets, so only the store's offsets can prevent a replay.
  auto ingestor = StartIngestor(Options("another-group"), store.get());
  ASSERT_TRUE(WaitCaughtUp(*store));
  IngestStats stats = ingestor->Stats();
  EXPECT_EQ(stats.records_consumed, 400u);
  EXPECT_EQ(stats.duplicates, 0u);
  ASSERT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(*store), kTopic), High()), "");
}

TEST_P(IngestorTest, PausesWhenTheWriterFallsBehindAndResumesWhenItCatchesUp) {
  TempDir dir;
  ControlledStore store(OpenStore(dir.Sub("store")));
  IngestOptions options = Options();
  options.batch_max_events = 20;
  options.queue_max_batches = 2;
  TestProducer producer(kafka_->bootstrap());
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    producer.Produce(
        kTopic, i % partitions_, Key(i % 50),
        R"({"ts":)" + std::to_string(WallNow()) + R"(,"pad":")" + std::string(100, 'p') + R"("})");
  }
  producer.Flush();
  store.SetGate(false);  // the writer blocks on its first batch
  auto ingestor = StartIngestor(options, &store);
  ASSERT_NE(ingestor, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    IngestStats s = ingestor->Stats();
    return !s.partitions.empty() && s.partitions[0].paused;
  })) << "never paused";
  // Memory stays bounded: the poller holds at most the queue, the batches waiting for it and
  // one open batch, however much the broker has.
  const uint64_t consumed_while_paused = ingestor->Stats().records_consumed;
  EXPECT_LT(consumed_while_paused, 400u);
  store.SetGate(true);
  ASSERT_TRUE(WaitCaughtUp(store));
  ASSERT_TRUE(WaitFor([&] { return !ingestor->Stats().partitions[0].paused; }));
  EXPECT_EQ(ingestor->Stats().records_consumed, static_cast<uint64_t>(n));
  ASSERT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(store), kTopic), High()), "");
}

TEST_P(IngestorTest, FullDiskPausesKeepsTheBatchAndResumesWhenWritesSucceed) {
  TempDir dir;
  ControlledStore store(OpenStore(dir.Sub("store")));
  auto ingestor = StartIngestor(Options(), &store);
  ASSERT_NE(ingestor, nullptr);
  TestProducer producer(kafka_->bootstrap());
  auto produce = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      producer.Produce(kTopic, i % partitions_, Key(i),
                       R"({"ts":)" + std::to_string(WallNow()) + "}");
    }
    producer.Flush();
  };
  auto lag = [&] {
    int64_t sum = 0;
    for (const PartitionStats& p : ingestor->Stats().partitions) sum += p.lag;
    return sum;
  };
  produce(0, 200);
  ASSERT_TRUE(WaitCaughtUp(store, *ingestor));
  store.FailNext(1'000'000, Status::NoSpace("test: no space left on device"));
  produce(200, 700);
  ASSERT_TRUE(WaitFor([&] {
    const IngestStats s = ingestor->Stats();
    return s.out_of_disk && !s.partitions.empty() && s.partitions[0].paused;
  }));
  Status ready = ingestor->Ready();
  EXPECT_TRUE(ready.IsNoSpace()) << ready.ToString();
  // Paused, the partitions are not fetched; their lag still follows the broker's end, since an
  // operator watches it exactly then. The records come after any fetch in flight at the pause has
  // been answered (a fetch waits at most fetch.wait.max.ms, 500 ms, for records): that answer
  // would carry the new end with it.
  ASSERT_TRUE(WaitFor([&] { return lag() == 500; })) << lag();
  std::this_thread::sleep_for(1500ms);  // the fetch in flight ends; not a synchronisation
  produce(700, 1000);
  ASSERT_TRUE(WaitFor([&] { return lag() == 800; }, 20s)) << lag();
  EXPECT_EQ(ingestor->Stats().events_stored, 200u);
  // The failed batch is retried until the store takes it: nothing lost, nothing twice.
  store.FailNext(0, Status::Ok());
  ASSERT_TRUE(WaitCaughtUp(store));
  ASSERT_TRUE(WaitFor([&] { return !ingestor->Stats().out_of_disk; }));
  EXPECT_GE(store.writes_attempted(), 5);
  EXPECT_TRUE(WaitFor([&] { return ingestor->Ready().ok(); }));
  ASSERT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(store), kTopic), High()), "");
}

TEST_P(IngestorTest, OtherWriteErrorsAreRetriedNeverDropped) {
  TempDir dir;
  ControlledStore store(OpenStore(dir.Sub("store")));
  store.FailNext(3, Status::IOError("test: injected I/O error"));
  auto ingestor = StartIngestor(Options(), &store);
  ASSERT_NE(ingestor, nullptr);
  TestProducer producer(kafka_->bootstrap());
  for (int i = 0; i < 300; ++i) {
    producer.Produce(kTopic, i % partitions_, Key(i),
                     R"({"ts":)" + std::to_string(WallNow()) + "}");
  }
  producer.Flush();
  ASSERT_TRUE(WaitCaughtUp(store));
  IngestStats stats = ingestor->Stats();
  EXPECT_NE(stats.last_error.find("injected I/O error"), std::string::npos) << stats.last_error;
  EXPECT_FALSE(stats.out_of_disk);
  ASSERT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(store), kTopic), High()), "");
}

TEST_P(IngestorTest, ReportsAStallWhenLagGrowsAndNothingIsWritten) {
  TempDir dir;
  ControlledStore store(OpenStore(dir.Sub("store")));
  ManualClock clock(WallNow());
  IngestOptions options = Options();
  options.clock = &clock;
  options.stall_after_ms = 5000;
  options.batch_max_events = 10;  // batches close on size: the manual clock never ages them
  auto ingestor = StartIngestor(options, &store);
  ASSERT_NE(ingestor, nullptr);
  ASSERT_TRUE(WaitFor([&] { return ingestor->Ready().ok(); })) << ingestor->Ready().ToString();

  store.SetGate(false);
  TestProducer producer(kafka_->bootstrap());
  for (int i = 0; i < 200; ++i) {
    producer.Produce(kTopic, i % partitions_, Key(i),
                     R"({"ts":)" + std::to_string(WallNow()) + "}");
  }
  producer.Flush();
  // Lag is seen, but it is not a stall before stall_after.
  ASSERT_TRUE(WaitFor([&] {
    int64_t lag = 0;
    for (const auto& p : ingestor->Stats().partitions) lag += p.lag;
    return lag > 0 && store.writes_blocked() > 0;
  }));
  EXPECT_FALSE(ingestor->Stats().stalled);
  clock.Advance(6000);
  EXPECT_TRUE(ingestor->Stats().stalled);
  Status ready = ingestor->Ready();
  EXPECT_FALSE(ready.ok());
  EXPECT_NE(ready.message().find("stalled"), std::string::npos) << ready.ToString();

  store.SetGate(true);
  // A rebalance on a slow run (TSan) drops the open batches and re-reads from the stored offsets,
  // so the last batch of a lane can hold fewer than 10 records: it closes on age, and the clock
  // must move for that.
  ASSERT_TRUE(WaitCaughtUp(store, 60s, [&] { clock.Advance(options.batch_max_ms); }));
  ASSERT_TRUE(WaitFor([&] { return !ingestor->Stats().stalled && ingestor->Ready().ok(); }))
      << ingestor->Ready().ToString();
  ASSERT_TRUE(ingestor->Stop().ok());
}

}  // namespace
}  // namespace hotrow::ingest
