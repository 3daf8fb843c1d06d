// Who may write what, and where a partition starts (CONTRACT.md, "Guarantees"): the store's offsets
// are the truth even when the group's commits ran ahead of them; an instance that lost its
// partitions (frozen past its session, fenced) writes nothing more for them; /v1/stats figures are
// consistent. Two Ingestors run in one process against the embedded broker, so that ASan and TSan
// see both.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ingest/ingestor.h"
#include "ingest/synthetic_producer.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using testing::CheckExactlyOnce;
using testing::CommitOffsets;
using testing::IngestTestBase;
using testing::Key;
using testing::kTopic;
using testing::OffsetCounts;
using testing::ReadStore;
using testing::StoredEvent;
using testing::TestProducer;
using namespace std::chrono_literals;

class OwnershipTest : public IngestTestBase, public ::testing::WithParamInterface<int> {
 protected:
  OwnershipTest() { writers_ = GetParam(); }
  void Produce(TestProducer* producer, int from, int n) {
    for (int i = from; i < from + n; ++i) {
      producer->Produce(kTopic, i % partitions_, Key(i), R"({"event_id":")" + Key(i) + R"("})");
    }
    producer->Flush();
  }
};

// A gate the poller of one Ingestor passes before each poll: closed, the poller blocks in it.
class PollGate {
 public:
  std::function<void()> Hook() {
    return [this] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!closed_) return;
      blocked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return !closed_; });
      blocked_ = false;
    };
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = false;
    cv_.notify_all();
  }
  bool blocked() {
    std::lock_guard<std::mutex> lock(mu_);
    return blocked_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool blocked_ = false;
};

TEST_P(OwnershipTest, GroupCommitsAheadOfTheStoreAreIgnoredAndEveryRecordIsStoredOnce) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  const IngestOptions options = Options("ahead-group");
  TestProducer producer(kafka_->bootstrap());
  Produce(&producer, 0, 1000);
  {
    auto ingestor = StartIngestor(options, store.get());
    ASSERT_NE(ingestor, nullptr);
    ASSERT_TRUE(WaitCaughtUp(*store));
    ASSERT_TRUE(ingestor->Stop().ok());
  }
  // As after a power cut: the group's offsets are ahead of what the store holds (here by 1000
  // records the store never saw), committed by a client that is not this store.
  Produce(&producer, 1000, 1000);
  const std::map<int32_t, int64_t> high = High();
  ASSERT_EQ(CommitOffsets(kafka_->bootstrap(), options.group_id, kTopic, high),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_EQ(testing::CommittedOffsets(kafka_->bootstrap(), options.group_id, kTopic, partitions_),
            high);

  auto ingestor = StartIngestor(options, store.get());
  ASSERT_NE(ingestor, nullptr);
  ASSERT_TRUE(WaitFor([&] { return ingestor->Stats().assigned; }, 30s));
  Produce(&producer, 2000, 200);
  ASSERT_TRUE(WaitCaughtUp(*store));
  ASSERT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(*store), kTopic), High()), "");
}

TEST_P(OwnershipTest, AnInstanceFrozenPastItsSessionWritesNothingForThePartitionsItLost) {
  TempDir dir;
  auto store_a = OpenStore(dir.Sub("a"));
  auto store_b = OpenStore(dir.Sub("b"));
  ASSERT_NE(store_a, nullptr);
  ASSERT_NE(store_b, nullptr);
  TestProducer producer(kafka_->bootstrap());
  Produce(&producer, 0, 2000);

  // a reads everything into one open batch (it closes at neither size nor age in this test),
  // then its poller freezes past max.poll.interval.ms (= session.timeout.ms): the group moves on
  // without it, and librdkafka marks its assignment lost.
  PollGate gate;
  IngestOptions options_a = Options("zombie-group");
  options_a.batch_max_events = 1000000;
  options_a.batch_max_ms = 10 * 60 * 1000;
  options_a.properties["max.poll.interval.ms"] = options_a.properties["session.timeout.ms"];
  options_a.before_poll_for_test = gate.Hook();
  auto a = StartIngestor(options_a, store_a.get());
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitFor([&] { return a->Stats().records_consumed >= 2000; }, 60s));
  EXPECT_EQ(a->Stats().events_stored, 0u);
  gate.Close();
  ASSERT_TRUE(WaitFor([&] { return gate.blocked(); }));

  // b takes every partition over and stores every record.
  auto b = StartIngestor(Options("zombie-group"), store_b.get());
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitCaughtUp(*store_b, 90s));

  // a wakes up: its open batch belongs to partitions it no longer owns.
  // a serves the loss: it discards its open batch (or, as it used to, writes it).
  gate.Open();
  ASSERT_TRUE(WaitFor(
      [&] {
        const IngestStats s = a->Stats();
        return s.batches_discarded > 0 || s.events_stored > 0;
      },
      30s));
  EXPECT_GT(a->Stats().batches_discarded, 0u);
  EXPECT_EQ(a->Stats().events_stored, 0u);
  ASSERT_TRUE(WaitFor([&] { return a->Stats().assigned && b->Stats().assigned; }, 60s));
  // Counted before the records exist: a may read its share of them before the test looks again.
  const uint64_t consumed_before = a->Stats().records_consumed;
  Produce(&producer, 2000, 1000);
  const std::map<int32_t, int64_t> high = High();
  // a's batches close at neither size nor age: its clean stop writes and commits what it read
  // since, and b takes every partition over from there.
  // 90 s, as the other waits here: a keeps its 3 s max.poll.interval.ms, so on a loaded machine
  // (the ASan pass at -j2) it can be sent out of the group again before it settles.
  ASSERT_TRUE(WaitFor([&] { return a->Stats().records_consumed > consumed_before; }, 90s))
      << "a consumes nothing after it got partitions back";
  ASSERT_TRUE(a->Stop().ok());
  auto caught_up = [&] {
    std::map<store::TopicPartition, int64_t> offsets_a = store_a->StoredOffsets();
    std::map<store::TopicPartition, int64_t> offsets_b = store_b->StoredOffsets();
    for (const auto& [partition, hw] : high) {
      store::TopicPartition tp{kTopic, partition};
      int64_t next = std::max(offsets_a.count(tp) ? offsets_a[tp] : 0,
                              offsets_b.count(tp) ? offsets_b[tp] : 0);
      if (next < hw) return false;
    }
    return true;
  };
  auto describe = [](const IngestStats& s) {
    std::string out = "consumed " + std::to_string(s.records_consumed) + " stored " +
                      std::to_string(s.events_stored) + " partitions";
    for (const PartitionStats& p : s.partitions) {
      out += " " + std::to_string(p.partition) + "@" + std::to_string(p.next_offset) + "/" +
             std::to_string(p.high_watermark);
    }
    return out + " error: " + s.last_error;
  };
  ASSERT_TRUE(WaitFor(caught_up, 60s))
      << "a: " << describe(a->Stats()) << "\nb: " << describe(b->Stats());
  ASSERT_TRUE(b->Stop().ok());

  // Each store holds a record at most once, and every record is in one of them. (A record may be
  // in both: a store rebuilds the window of every partition it is given, so that each owner can
  // answer for its partitions alone.)
  std::map<std::pair<int32_t, int64_t>, int> either;
  for (const auto* store : {store_a.get(), store_b.get()}) {
    for (const auto& [at, count] : OffsetCounts(ReadStore(*store), kTopic)) {
      EXPECT_EQ(count, 1) << at.first << "/" << at.second << " twice in one store";
      either[at] = 1;
    }
  }
  EXPECT_EQ(CheckExactlyOnce(either, high), "");
}

TEST_P(OwnershipTest, StatsNeverShowAHighWatermarkBelowTheNextOffset) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  auto ingestor = StartIngestor(Options("stats-group"), store.get());
  ASSERT_NE(ingestor, nullptr);
  ASSERT_TRUE(WaitFor([&] { return ingestor->Stats().assigned; }, 30s));

  ProducerOptions popts;
  popts.brokers = kafka_->bootstrap();
  popts.topic = kTopic;
  popts.rate = 4000;
  popts.count = 12000;
  auto producer = SyntheticProducer::Create(popts);
  ASSERT_TRUE(producer.ok());
  (*producer)->Start();
  size_t readings = 0;
  std::string first_problem;
  // Read while records flow: the writer moves next_offset every batch (50 ms), the monitor the
  // watermark every second.
  while ((*producer)->delivered() < static_cast<uint64_t>(popts.count) && first_problem.empty()) {
    for (const PartitionStats& p : ingestor->Stats().partitions) {
      ++readings;
      if (p.high_watermark >= 0 && p.next_offset > p.high_watermark) {
        first_problem = p.topic + "/" + std::to_string(p.partition) + ": high_watermark " +
                        std::to_string(p.high_watermark) + " < next_offset " +
                        std::to_string(p.next_offset);
      }
      if (p.lag < 0) first_problem = "negative lag";
    }
    std::this_thread::sleep_for(2ms);  // a reading pace, not a synchronisation
  }
  ASSERT_TRUE((*producer)->Wait().ok());
  EXPECT_EQ(first_problem, "") << "after " << readings << " readings";
  EXPECT_GT(readings, 0u);
  ASSERT_TRUE(ingestor->Stop().ok());
}

HOTROW_WITH_WRITERS(OwnershipTest);

}  // namespace
}  // namespace hotrow::ingest
