#pragma once

// The fixture of the broker-backed ingest tests: an in-process embedded broker with one topic,
// stores in temporary directories, Ingestors with fast group settings, and a store wrapper whose
// writes a test can hold back or fail.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/logging.h"
#include "ingest/embedded_kafka.h"
#include "ingest/ingestor.h"
#include "store/event_store.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest::testing {

using namespace std::chrono_literals;

inline constexpr char kTopic[] = "events";

inline void InitLoggingOnce() {
  static bool done = false;
  if (!done) {
    const char* level = getenv("HOTROW_TEST_LOG");  // e.g. info, debug
    InitLogging(level != nullptr ? level : "warn");
    done = true;
  }
}

inline int64_t WallNow() { return WallClock::Default()->NowMs(); }

// How many partitions the Ingestor has assigned now.
inline size_t Assigned(const Ingestor& ingestor) { return ingestor.Stats().partitions.size(); }

// "k<i>", a record key. (Spelled out: gcc 12 warns falsely on "k" + std::to_string(i).)
inline std::string Key(int i) {
  std::string key = "k";
  key += std::to_string(i);
  return key;
}

// A store that forwards to a real one, but whose writes a test can hold back (the writer then
// blocks, as on a slow disk) or fail (as on a full disk).
class ControlledStore final : public store::EventStore {
 public:
  explicit ControlledStore(std::unique_ptr<store::EventStore> inner)
      : store::EventStore(inner->options()), inner_(std::move(inner)) {}

  // While closed, Write blocks.
  void SetGate(bool open) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = open;
    cv_.notify_all();
  }
  // The next `n` writes fail with `status` without writing anything.
  void FailNext(int n, Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_left_ = n;
    fail_status_ = std::move(status);
  }
  int writes_attempted() const { return attempts_.load(); }
  int writes_blocked() const { return blocked_.load(); }
  // Writes past the gate and not returned yet. With the gate closed, 0 means none runs and none
  // can start.
  int writes_under_way() const { return attempts_.load() - blocked_.load() - finished_.load(); }

  Result<uint16_t> TopicNumber(std::string_view topic) override {
    return inner_->TopicNumber(topic);
  }
  std::optional<std::string> TopicName(uint16_t number) const override {
    return inner_->TopicName(number);
  }
  Status Write(const store::WriteBatchInput& batch, store::WriteOutcome* outcome) override {
    attempts_.fetch_add(1);
    struct Finished {
      std::atomic<int>* n;
      ~Finished() { n->fetch_add(1); }
    } finished{&finished_};
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!open_) {
        blocked_.fetch_add(1);
        cv_.wait(lock, [this] { return open_; });
        blocked_.fetch_sub(1);
      }
      if (fail_left_ > 0) {
        --fail_left_;
        *outcome = store::WriteOutcome();
        return fail_status_;
      }
    }
    return inner_->Write(batch, outcome);
  }
  std::map<store::TopicPartition, int64_t> StoredOffsets() const override {
    return inner_->StoredOffsets();
  }
  Result<size_t> DropExpiredBuckets() override { return inner_->DropExpiredBuckets(); }
  int64_t NowMs() const override { return inner_->NowMs(); }
  std::vector<std::shared_ptr<const store::Bucket>> Buckets() const override {
    return inner_->Buckets();
  }
  store::StoreStats Stats() const override { return inner_->Stats(); }

 private:
  std::unique_ptr<store::EventStore> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int fail_left_ = 0;
  Status fail_status_;
  std::atomic<int> attempts_{0};
  std::atomic<int> blocked_{0};
  std::atomic<int> finished_{0};
};

// The exactly-once, rebalance, ownership and fault tests run with one store writer and with
// several (IngestOptions::writers): their fixtures take the writer count as the test parameter.
inline std::string WritersName(const ::testing::TestParamInfo<int>& info) {
  return "Writers" + std::to_string(info.param);
}
#define HOTROW_WITH_WRITERS(Fixture)                                                     \
  INSTANTIATE_TEST_SUITE_P(, Fixture, ::testing::Values(1, 3),                           \
                           ::hotrow::ingest::testing::WritersName)

class IngestTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    InitLoggingOnce();
    auto kafka = EmbeddedKafka::Start(kTopic, partitions_);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
  }

  std::unique_ptr<store::EventStore> OpenStore(const std::string& path,
                                               int64_t ttl_ms = 10 * 60 * 1000,
                                               int64_t bucket_ms = 60 * 1000) {
    store::StoreOptions options;
    options.path = path;
    options.ttl_ms = ttl_ms;
    options.bucket_ms = bucket_ms;
    options.salts = 4;
    auto s = store::EventStore::Open(options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  IngestOptions Options(const std::string& group = "hotrow-test") {
    IngestOptions options;
    options.brokers = kafka_->bootstrap();
    options.topics = {kTopic};
    options.group_id = group;
    options.properties = FastGroupProperties();
    options.batch_max_events = 500;
    options.batch_max_ms = 50;
    options.writers = writers_;
    return options;
  }

  std::unique_ptr<Ingestor> StartIngestor(const IngestOptions& options, store::EventStore* store) {
    auto ingestor = Ingestor::Start(options, store);
    EXPECT_TRUE(ingestor.ok()) << ingestor.status().ToString();
    return ingestor.ok() ? std::move(ingestor).value() : nullptr;
  }

  // Waits until the store's offsets for kTopic add up to the broker's high watermarks.
  // `each_check` runs before every look at the store; a test on a ManualClock advances it there,
  // so batches opened after its last Advance still come of age.
  bool WaitCaughtUp(const store::EventStore& store, std::chrono::milliseconds timeout = 60s,
                    const std::function<void()>& each_check = {}) {
    int64_t target = 0;
    for (const auto& [p, hw] : HighWatermarks(kafka_->bootstrap(), kTopic, partitions_)) {
      target += hw;
    }
    return hotrow::testing::WaitFor(
        [&] {
          if (each_check) each_check();
          return StoredOffsetSum(store, kTopic) >= target;
        },
        timeout);
  }

  // WaitCaughtUp, and then until `ingestor` reports every partition written up to the broker's
  // end. The writer adds to its counters (events stored, duplicates, rejects) after the store's
  // write returns and before it reports the offsets: a test that reads them as soon as the store
  // is caught up can see them a batch short (seen under TSan: 0 of 200 stored).
  bool WaitCaughtUp(const store::EventStore& store, const Ingestor& ingestor,
                    std::chrono::milliseconds timeout = 60s) {
    if (!WaitCaughtUp(store, timeout)) return false;
    const std::map<int32_t, int64_t> high = High();
    return hotrow::testing::WaitFor(
        [&] {
          const IngestStats stats = ingestor.Stats();
          size_t written = 0;
          for (const PartitionStats& p : stats.partitions) {
            auto it = high.find(p.partition);
            if (p.topic == kTopic && it != high.end() && p.next_offset >= it->second) ++written;
          }
          return written == high.size();
        },
        timeout);
  }

  std::map<int32_t, int64_t> High() {
    return HighWatermarks(kafka_->bootstrap(), kTopic, partitions_);
  }

  int partitions_ = 4;
  int writers_ = 1;  // IngestOptions::writers of Options()
  std::unique_ptr<EmbeddedKafka> kafka_;
};

}  // namespace hotrow::ingest::testing
