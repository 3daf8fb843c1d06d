// Exactly once into the store across kill -9: an ingesting child process is killed with SIGKILL
// at random moments, many times, while records flow, and restarted each time. At the end every
// (topic, partition, offset) is stored exactly once.

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "ingest/embedded_kafka.h"
#include "ingest/synthetic_producer.h"
#include "store/event_store.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::ChildProcess;
using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using namespace std::chrono_literals;

constexpr char kTopic[] = "events";
constexpr char kGroup[] = "kill-group";
constexpr int kPartitions = 8;
constexpr int kKills = 8;

int64_t Sum(const std::map<int32_t, int64_t>& offsets) {
  int64_t sum = 0;
  for (const auto& [p, o] : offsets) sum += std::max<int64_t>(o, 0);
  return sum;
}

std::string Tail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

// The parameter: the Ingestor's store writers.
class ExactlyOnceTest : public ::testing::TestWithParam<int> {};

TEST_P(ExactlyOnceTest, EveryRecordIsStoredOnceAcrossRepeatedKill9) {
  testing::InitLoggingOnce();
  const char* seed_env = getenv("HOTROW_TEST_SEED");
  const uint64_t seed = seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 20240611;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("HOTROW_TEST_SEED=" + std::to_string(seed));

  auto kafka = EmbeddedKafka::Start(kTopic, kPartitions);
  ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
  const std::string bootstrap = (*kafka)->bootstrap();
  TempDir dir;
  const std::string store_path = dir.Sub("store");
  const std::string log_path = dir.Sub("child.log");
  const std::string child = hotrow::testing::SiblingExecutable("ingest_child");
  const std::vector<std::string> argv = {
      child,     "--brokers", bootstrap,  "--topic",   kTopic,
      "--group", kGroup,      "--store",  store_path,
      "--writers", std::to_string(GetParam())};

  ProducerOptions popts;
  popts.brokers = bootstrap;
  popts.topic = kTopic;
  popts.rate = 1500;
  popts.count = 0;  // until stopped
  auto producer = SyntheticProducer::Create(popts);
  ASSERT_TRUE(producer.ok());
  (*producer)->Start();

  auto committed = [&] {
    return Sum(testing::CommittedOffsets(bootstrap, kGroup, kTopic, kPartitions));
  };
  for (int kill = 0; kill < kKills; ++kill) {
    ChildProcess child(argv, log_path, hotrow::testing::ChildLines::kProtocolFd);
    std::string line;
    ASSERT_TRUE(child.ReadLine(&line, 30s)) << Tail(log_path);
    ASSERT_EQ(line, "started");
    // Kill it while it writes: once its commits show progress, at a random moment after.
    const int64_t before = committed();
    ASSERT_TRUE(WaitFor([&] { return committed() > before; }, 60s))
        << "the child made no progress\n"
        << Tail(log_path);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));  // the random moment
    child.Signal(SIGKILL);
    EXPECT_EQ(child.Wait(), 128 + SIGKILL);
  }
  (*producer)->Stop();
  Status produced = (*producer)->Wait();
  ASSERT_TRUE(produced.ok()) << produced.ToString();
  const std::map<int32_t, int64_t> high = testing::HighWatermarks(bootstrap, kTopic, kPartitions);

  // A last run catches up and stops cleanly.
  {
    ChildProcess child(argv, log_path, hotrow::testing::ChildLines::kProtocolFd);
    std::string line;
    ASSERT_TRUE(child.ReadLine(&line, 30s)) << Tail(log_path);
    ASSERT_TRUE(WaitFor([&] { return committed() >= Sum(high); }, 90s)) << Tail(log_path);
    child.Signal(SIGTERM);
    ASSERT_EQ(child.Wait(), 0) << Tail(log_path);
  }

  store::StoreOptions options;
  options.path = store_path;
  options.salts = 4;
  auto store = store::EventStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<testing::StoredEvent> events = testing::ReadStore(**store);
  EXPECT_EQ(testing::CheckExactlyOnce(testing::OffsetCounts(events, kTopic), high), "");
  EXPECT_EQ(static_cast<int64_t>(events.size()), Sum(high));
  EXPECT_EQ(static_cast<int64_t>((*store)->Stats().events), Sum(high));
  for (const auto& [tp, next] : (*store)->StoredOffsets()) {
    EXPECT_EQ(next, high.at(tp.partition)) << tp.partition;
  }
  std::printf("exactly once: %lld records over %d partitions, %d kills\n",
              static_cast<long long>(Sum(high)), kPartitions, kKills);
}

HOTROW_WITH_WRITERS(ExactlyOnceTest);

}  // namespace
}  // namespace hotrow::ingest
