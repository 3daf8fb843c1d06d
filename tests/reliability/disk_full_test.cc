// A full disk under `hotrow serve`: the store lives on a small tmpfs the test mounts, the test
// fills it, and ingestion must stop (partitions paused) while queries keep answering, report the
// full disk in /readyz (its reason), /v1/stats and /metrics (out_of_disk, paused partitions), and
// resume by itself once space is back, with every produced record stored exactly once and the
// store intact across a restart.
// The store-level test checks the same recovery without the service, and that expiry (the way a
// full hot store frees space by itself) still drops buckets while RocksDB refuses writes.
//
// Needs root (mount). Without it the tests skip, except where the guarantee must stay proven:
// in CI (CI=true), as root, or with HOTROW_REQUIRE_TMPFS=1 a tmpfs that cannot be mounted fails
// the test instead.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "ingest/embedded_kafka.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/reliability/disk_support.h"
#include "tests/support/process.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using nlohmann::json;
using testing::ServeProcess;
using testing::TempDir;
using testing::TmpfsMount;
using testing::WaitFor;
using namespace std::chrono_literals;

constexpr char kTopic[] = "events";
constexpr int kPartitions = 2;

// True when a failed mount must fail the test rather than skip it: in CI (which runs as root, so
// a skip there would silently stop proving the full-disk guarantee), as root (who can mount), or
// when asked to.
bool TmpfsRequired() {
  const char* require = std::getenv("HOTROW_REQUIRE_TMPFS");
  if (require != nullptr && std::string(require) == "1") return true;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") return true;
  return geteuid() == 0;
}

// Mounts the tmpfs or says why the test cannot run. Call with ASSERT_NO_FATAL_FAILURE / return.
#define HOTROW_MOUNT_OR_SKIP(mount)                                                          \
  do {                                                                                      \
    if (!(mount).mounted()) {                                                               \
      if ((mount).permission_denied() && !TmpfsRequired()) {                                \
        GTEST_SKIP() << "cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): "              \
                     << (mount).error() << "; fails instead in CI, as root or with "        \
                     << "HOTROW_REQUIRE_TMPFS=1";                                           \
      }                                                                                     \
      FAIL() << (mount).error();                                                            \
    }                                                                                       \
  } while (0)

// ---- The store alone ----

class DiskFullStoreTest : public ::testing::Test {
 protected:
  store::StoreOptions Options(const std::string& path) {
    store::StoreOptions o;
    o.path = path;
    o.salts = 4;
    o.ttl_ms = 60'000;
    o.bucket_ms = 10'000;
    o.wall_clock = &clock_;
    return o;
  }

  // A batch of `n` rows of partition 0 from offset `first`, at the clock's time.
  store::WriteBatchInput Batch(const store::EventStore& s, int64_t first, int n) {
    store::WriteBatchInput in;
    const std::string payload(500, 'p');
    for (int64_t off = first; off < first + n; ++off) {
      const std::string id = "dev-" + std::to_string(off % 50);
      keying::RowKey key{s.salter().SaltOf(kTopic, 0, off, id), keying::IdHash(id),
                         clock_.NowMs(), 0, 0, off};
      in.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, payload)});
    }
    in.next_offsets[{kTopic, 0}] = first + n;
    return in;
  }

  ManualClock clock_{1'700'000'000'000};
};

TEST_F(DiskFullStoreTest, RefusesWritesWhileFullDropsBucketsAndResumesWhenSpaceIsBack) {
  TempDir dir;
  TmpfsMount disk(dir.Sub("disk"), 24);
  HOTROW_MOUNT_OR_SKIP(disk);
  const std::string filler = dir.Sub("disk/filler");
  int64_t stored_until = 0;  // every offset below is stored
  {
    auto opened = store::EventStore::Open(Options(dir.Sub("disk/store")));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto& s = *opened;
    ASSERT_TRUE(s->TopicNumber(kTopic).ok());
    store::WriteOutcome out;
    ASSERT_TRUE(s->Write(Batch(*s, 0, 200), &out).ok());
    stored_until = 200;
    testing::FillUntilFull(filler);

    // Writes fail with NoSpace (never another code, never a crash) until space is back.
    Status w;
    for (int i = 0; i < 200 && w.ok(); ++i) {
      w = s->Write(Batch(*s, stored_until, 200), &out);
      if (w.ok()) stored_until += 200;
    }
    ASSERT_TRUE(w.IsNoSpace()) << w.ToString();
    w = s->Write(Batch(*s, stored_until, 200), &out);
    EXPECT_TRUE(w.IsNoSpace()) << w.ToString();

    // Expiry works in that state: it is how a full hot store frees space by itself.
    clock_.Advance(5 * 60'000);
    Result<size_t> dropped = s->DropExpiredBuckets();
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
    EXPECT_GE(*dropped, 1u);
    EXPECT_TRUE(s->Buckets().empty());

    std::filesystem::remove(filler);
    w = s->Write(Batch(*s, stored_until, 200), &out);
    ASSERT_TRUE(w.ok()) << w.ToString();
    EXPECT_EQ(out.stored, 200u);
    stored_until += 200;
  }
  // Closed cleanly (no abort on the WAL that failed) and reopens with exactly the last batch.
  auto reopened = store::EventStore::Open(Options(dir.Sub("disk/store")));
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  const store::TopicPartition tp{kTopic, 0};
  EXPECT_EQ((*reopened)->StoredOffsets()[tp], stored_until);
  const auto events = ingest::testing::ReadStore(**reopened);
  ASSERT_EQ(events.size(), 200u);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_GE(events[i].offset, stored_until - 200);
  }
}

// ---- Through `hotrow serve` ----

// How many partitions /v1/stats says are paused.
int PausedPartitions(const json& stats) {
  int paused = 0;
  if (!stats.contains("partitions")) return 0;
  for (const auto& p : stats["partitions"]) paused += p.value("paused", false) ? 1 : 0;
  return paused;
}

// Sums one numeric field over /v1/stats "partitions".
int64_t SumPartitions(const json& stats, const char* field) {
  int64_t sum = 0;
  if (!stats.contains("partitions")) return -1;
  for (const auto& p : stats["partitions"]) sum += p.value(field, int64_t{0});
  return sum;
}

class DiskFullServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    disk_ = std::make_unique<TmpfsMount>(dir_.Sub("disk"), 32);
    HOTROW_MOUNT_OR_SKIP(*disk_);
    auto kafka = ingest::EmbeddedKafka::Start(kTopic, kPartitions);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
    producer_ = std::make_unique<ingest::testing::TestProducer>(kafka_->bootstrap());
    std::ofstream config(dir_.Sub("hotrow.yaml"));
    config << "kafka:\n  brokers: " << kafka_->bootstrap() << "\n  topics: [" << kTopic
           << "]\n  group_id: disk-full\n  properties: {";
    bool first = true;
    for (const auto& [k, v] : ingest::testing::FastGroupProperties()) {
      config << (first ? "" : ", ") << k << ": \"" << v << "\"";
      first = false;
    }
    config << "}\nstore:\n  path: " << dir_.Sub("disk/store") << "\n"
           << "keying:\n  salts: 4\n"
           << "ingest:\n  batch_max_events: 500\n  batch_max_ms: 50ms\n"
           << "http:\n  listen: 127.0.0.1:0\n"
           << "query:\n  threads: 2\n";
  }

  void TearDown() override {
    serve_.reset();  // SIGTERM first: the mount goes only when serve lets go of it
    producer_.reset();
    kafka_.reset();
    disk_.reset();
  }

  void StartServe() {
    serve_.reset();
    serve_ = std::make_unique<ServeProcess>(dir_.Sub("hotrow.yaml"),
                                            dir_.Sub("serve" + std::to_string(++starts_) + ".log"));
    ASSERT_TRUE(serve_->AwaitStarted()) << serve_->Log();
    ASSERT_TRUE(serve_->AwaitReady()) << serve_->Log();
  }

  // Produces `n` events now; remembers each record's value as the oracle.
  void Produce(int n) {
    const std::string pad(300, 'x');
    for (int i = 0; i < n; ++i, ++produced_) {
      const json value = {{"event_id", "dev-" + std::to_string(produced_ % 40)},
                          {"ts", WallClock::Default()->NowMs()},
                          {"seq", produced_},
                          {"pad", pad}};
      producer_->Produce(kTopic, static_cast<int32_t>(produced_ % kPartitions), std::nullopt,
                         value.dump());
    }
    for (const auto& r : producer_->Flush()) oracle_[{r.partition, r.offset}] = json::parse(*r.value);
  }

  uint64_t Ingested() { return serve_->Stats().value("ingested", uint64_t{0}); }

  // /metrics, parsed.
  std::vector<testing::MetricSample> Metrics() {
    auto [status, text] = serve_->Get("/metrics");
    EXPECT_EQ(status, 200) << text;
    std::vector<std::string> bad;
    std::vector<testing::MetricSample> samples = testing::ParsePrometheusText(text, &bad);
    EXPECT_EQ(bad, std::vector<std::string>{});
    return samples;
  }

  // The sum of the samples named `name` over every partition of the topic.
  static double SumOverPartitions(const std::vector<testing::MetricSample>& samples,
                                  const std::string& name) {
    double sum = 0;
    for (const auto& s : testing::FindSamples(samples, name, {{"topic", kTopic}})) sum += s.value;
    return sum;
  }

  // /readyz: its status and body.
  std::pair<int, json> Readyz() {
    auto [status, body] = serve_->Get("/readyz");
    return {status, json::parse(body, nullptr, false)};
  }

  // Every event a full scan returns, by (partition, offset), with how often each came.
  std::map<std::pair<int32_t, int64_t>, std::vector<json>> Scan() {
    const int64_t to = WallClock::Default()->NowMs() + 3'600'000;
    auto [status, body] = serve_->Get("/v1/scan?from=0&to=" + std::to_string(to));
    EXPECT_EQ(status, 200) << body;
    std::map<std::pair<int32_t, int64_t>, std::vector<json>> out;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      const json e = json::parse(line);
      out[{e.at("partition").get<int32_t>(), e.at("offset").get<int64_t>()}].push_back(
          e.at("payload"));
    }
    return out;
  }

  // Each scanned event is a produced record with its payload intact, stored once; with
  // `complete`, every produced record is there.
  void ExpectScanMatchesOracle(bool complete) {
    const auto scanned = Scan();
    for (const auto& [po, payloads] : scanned) {
      auto it = oracle_.find(po);
      ASSERT_NE(it, oracle_.end()) << "unknown record " << po.first << "/" << po.second;
      ASSERT_EQ(payloads.size(), 1u) << "record " << po.first << "/" << po.second << " stored "
                                     << payloads.size() << " times";
      EXPECT_EQ(payloads[0], it->second) << po.first << "/" << po.second;
    }
    if (complete) {
      EXPECT_EQ(scanned.size(), oracle_.size());
    }
  }

  TempDir dir_;
  std::unique_ptr<TmpfsMount> disk_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
  std::unique_ptr<ingest::testing::TestProducer> producer_;
  std::unique_ptr<ServeProcess> serve_;
  std::map<std::pair<int32_t, int64_t>, json> oracle_;
  int produced_ = 0;
  int starts_ = 0;
};

TEST_F(DiskFullServeTest, PausesOnAFullDiskKeepsAnsweringAndResumesWhenSpaceReturns) {
  ASSERT_NO_FATAL_FAILURE(StartServe());
  Produce(1000);
  ASSERT_TRUE(WaitFor([&] { return Ingested() >= 1000; }, 60s, 100ms)) << serve_->Log();

  // Fill the disk, then produce until a store write meets it.
  const std::string filler = dir_.Sub("disk/filler");
  testing::FillUntilFull(filler);
  bool full = false;
  for (int round = 0; round < 100 && !full; ++round) {
    Produce(500);
    full = WaitFor(
        [&] {
          const json s = serve_->Stats();
          return s.value("out_of_disk", false) ||
                 s.value("ingested", uint64_t{0}) >= static_cast<uint64_t>(produced_);
        },
        60s, 50ms) &&
           serve_->Stats().value("out_of_disk", false);
  }
  ASSERT_TRUE(full) << "the store never ran out of space; " << serve_->Log();

  // Reported everywhere: not ready, saying why; out of disk in /v1/stats and /metrics.
  const auto [ready_status, ready] = Readyz();
  EXPECT_EQ(ready_status, 503) << ready.dump();
  EXPECT_EQ(ready, json({{"ready", false}, {"reason", "ingestion paused: the disk is full"}}));
  EXPECT_EQ(testing::MetricValue(Metrics(), "hotrow_out_of_disk"), 1.0);
  const json stats_full = serve_->Stats();
  EXPECT_NE(stats_full.value("last_error", "").find("no space"), std::string::npos)
      << stats_full.dump();
  EXPECT_TRUE(serve_->Running());

  // Consuming is paused: the partitions say so (in /v1/stats and /metrics), and records produced
  // now stay in Kafka (the lag grows to cover them) while the stored count does not move.
  ASSERT_TRUE(WaitFor([&] { return PausedPartitions(serve_->Stats()) == kPartitions; }, 30s, 50ms));
  EXPECT_EQ(SumOverPartitions(Metrics(), "hotrow_partition_paused"), double{kPartitions});
  const uint64_t stored_while_full = Ingested();
  const int64_t lag_before = SumPartitions(serve_->Stats(), "lag");
  Produce(300);
  ASSERT_TRUE(WaitFor([&] { return SumPartitions(serve_->Stats(), "lag") >= lag_before + 300; },
                      30s, 100ms))
      << serve_->Stats().dump();
  const json full_stats = serve_->Stats();
  EXPECT_EQ(full_stats.value("ingested", uint64_t{0}), stored_while_full);
  EXPECT_TRUE(full_stats.value("out_of_disk", false));

  // Queries still answer, with exactly what was stored.
  auto [latest_status, latest] = serve_->Get("/v1/events/dev-1/latest?n=5");
  EXPECT_EQ(latest_status, 200) << latest;
  ExpectScanMatchesOracle(/*complete=*/false);
  EXPECT_EQ(Scan().size(), stored_while_full);

  // Space comes back: ingestion resumes by itself and catches up, every record exactly once:
  // those stored before, those that waited in Kafka while the disk was full, those produced after.
  std::filesystem::remove(filler);
  ASSERT_TRUE(WaitFor([&] { return Readyz().first == 200; }, 60s, 100ms)) << serve_->Log();
  EXPECT_EQ(Readyz().second, json({{"ready", true}}));
  Produce(200);
  ASSERT_TRUE(WaitFor([&] { return Ingested() >= static_cast<uint64_t>(produced_); }, 60s, 100ms))
      << serve_->Stats().dump();
  ASSERT_TRUE(WaitFor([&] { return SumPartitions(serve_->Stats(), "lag") == 0; }, 30s, 100ms))
      << serve_->Stats().dump();
  const json stats_after = serve_->Stats();
  EXPECT_EQ(stats_after.value("ingested", uint64_t{0}), static_cast<uint64_t>(produced_));
  EXPECT_FALSE(stats_after.value("out_of_disk", true));
  EXPECT_EQ(PausedPartitions(stats_after), 0) << stats_after.dump();
  const std::vector<testing::MetricSample> metrics_after = Metrics();
  EXPECT_EQ(testing::MetricValue(metrics_after, "hotrow_out_of_disk"), 0.0);
  EXPECT_EQ(SumOverPartitions(metrics_after, "hotrow_partition_paused"), 0.0);
  ExpectScanMatchesOracle(/*complete=*/true);
  EXPECT_EQ(Scan().size(), static_cast<size_t>(produced_));

  // Nothing is damaged: a clean stop, and a restart on the same store answers the same.
  EXPECT_EQ(serve_->Stop(), 0) << serve_->Log();
  ASSERT_NO_FATAL_FAILURE(StartServe());
  ExpectScanMatchesOracle(/*complete=*/true);
}

}  // namespace
}  // namespace hotrow
