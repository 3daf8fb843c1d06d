// `hotrow embedded-kafka` and `hotrow produce`, run as the user runs them (CONTRACT.md).

#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>

#include <regex>
#include <string>

#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::ChildProcess;
using hotrow::testing::HotrowBinary;
using hotrow::testing::TempDir;
using namespace std::chrono_literals;

TEST(IngestCommandsTest, EmbeddedKafkaPrintsOneBootstrapLineAndProduceFillsItsTopic) {
  TempDir dir;
  ChildProcess kafka({HotrowBinary(), "embedded-kafka", "--topic", "readings", "--partitions", "3"},
                     dir.Sub("kafka.log"));
  std::string line;
  ASSERT_TRUE(kafka.ReadLine(&line, 30s));
  ASSERT_TRUE(std::regex_match(line, std::regex(R"(bootstrap=127\.0\.0\.1:[0-9]{1,5})"))) << line;
  const std::string bootstrap = line.substr(std::string("bootstrap=").size());

  ChildProcess produce({HotrowBinary(), "produce", "--brokers", bootstrap, "--topic", "readings",
                        "--count", "600", "--rate", "0", "--devices", "20"},
                       dir.Sub("produce.log"));
  ASSERT_EQ(produce.Wait(60s), 0);

  std::vector<testing::KafkaRecord> records = testing::ConsumeAll(bootstrap, "readings", 3, 600);
  ASSERT_EQ(records.size(), 600u);
  simdjson::dom::parser parser;
  std::set<int32_t> partitions;
  std::set<std::string> devices;
  for (const testing::KafkaRecord& r : records) {
    ASSERT_TRUE(r.key.has_value());
    ASSERT_TRUE(r.value.has_value());
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(*r.value).get(doc), simdjson::SUCCESS) << *r.value;
    std::string_view id;
    ASSERT_EQ(doc["event_id"].get(id), simdjson::SUCCESS);
    EXPECT_EQ(id, *r.key);  // keyed by device id
    int64_t ts;
    ASSERT_EQ(doc["ts"].get(ts), simdjson::SUCCESS);
    EXPECT_NEAR(static_cast<double>(ts), static_cast<double>(r.timestamp_ms), 60'000.0);
    partitions.insert(r.partition);
    devices.insert(*r.key);
  }
  EXPECT_EQ(partitions.size(), 3u);
  EXPECT_LE(devices.size(), 20u);
  EXPECT_GT(devices.size(), 5u);

  kafka.Signal(SIGTERM);
  EXPECT_EQ(kafka.Wait(30s), 0);
  EXPECT_FALSE(kafka.ReadLine(&line, 1s)) << "a second line on stdout: " << line;
}

TEST(IngestCommandsTest, ProduceStopsOnSigtermAndExitsZero) {
  TempDir dir;
  ChildProcess kafka({HotrowBinary(), "embedded-kafka"}, dir.Sub("kafka.log"));
  std::string line;
  ASSERT_TRUE(kafka.ReadLine(&line, 30s));
  const std::string bootstrap = line.substr(std::string("bootstrap=").size());
  ChildProcess produce(
      {HotrowBinary(), "produce", "--brokers", bootstrap, "--topic", "events", "--rate", "500"},
      dir.Sub("produce.log"));
  ASSERT_TRUE(hotrow::testing::WaitFor(
      [&] { return !testing::ConsumeAll(bootstrap, "events", 16, 1, 1000).empty(); }, 30s));
  produce.Signal(SIGTERM);
  EXPECT_EQ(produce.Wait(30s), 0);
  kafka.Signal(SIGTERM);
  EXPECT_EQ(kafka.Wait(30s), 0);
}

TEST(IngestCommandsTest, BadFlagsAreUsageErrors) {
  TempDir dir;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"embedded-kafka", "--partitions", "0"},
           {"embedded-kafka", "--partitions", "many"},
           {"produce", "--topic", "t"},
           {"produce", "--brokers", "127.0.0.1:1"},
           {"produce", "--brokers", "127.0.0.1:1", "--topic", "t", "--rate", "-1"},
           {"produce", "--brokers", "127.0.0.1:1", "--topic", "t", "--devices", "0"}}) {
    std::vector<std::string> argv = {HotrowBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess child(argv, dir.Sub("err.log"));
    EXPECT_EQ(child.Wait(30s), 2) << args[0] << " " << args[1];
  }
}

}  // namespace
}  // namespace hotrow::ingest
