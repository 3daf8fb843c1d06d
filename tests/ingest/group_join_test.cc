// Joining the consumer group (CONTRACT.md "Round 3 additions", Ingest): on the embedded broker,
// hotrow's short session must not make joining impossible after a member of another client with a
// longer session (kafka-python's: session 6 s, max.poll 10 s), and while it waits for partitions,
// Ready() says so and since when.

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "ingest/ingestor.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using testing::CheckExactlyOnce;
using testing::IngestTestBase;
using testing::Key;
using testing::kTopic;
using testing::OffsetCounts;
using testing::ReadStore;
using testing::TestProducer;
using namespace std::chrono_literals;

class GroupJoinTest : public IngestTestBase {
 protected:
  // Options with hotrow's own session settings: the embedded broker's session heuristic applies.
  IngestOptions DefaultSessionOptions(const std::string& group) {
    IngestOptions options = Options(group);
    options.properties.erase("session.timeout.ms");
    options.properties.erase("heartbeat.interval.ms");
    options.properties.erase("max.poll.interval.ms");
    return options;
  }
};

// A plain librdkafka consumer configured as kafka-python's is by default (session 6 s, max.poll
// 10 s) joins the group, reads every record, commits and leaves. The embedded broker then waits
// 5 s (its last member's session less 1 s) before it answers the next join, and evicts hotrow's
// member, whose session is 3 s, while it waits; that join is never answered. hotrow must still
// join, and store every record once.
// (Failed with the fixed 3 s session: no partition for 5 minutes, /readyz 503 with no reason.)
TEST_F(GroupJoinTest, JoinsAfterAMemberWithALongerSessionLeft) {
  TestProducer producer(kafka_->bootstrap());
  for (int i = 0; i < 400; ++i) producer.Produce(kTopic, i % partitions_, Key(i), "{}");
  producer.Flush();

  const std::string group = "after-foreign";
  {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    for (const auto& [k, v] :
         std::map<std::string, std::string>{{"bootstrap.servers", kafka_->bootstrap()},
                                            {"group.id", group},
                                            {"session.timeout.ms", "6000"},
                                            {"max.poll.interval.ms", "10000"},
                                            {"enable.auto.commit", "false"},
                                            {"auto.offset.reset", "earliest"},
                                            {"log_level", "3"}}) {
      ASSERT_EQ(rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)), RD_KAFKA_CONF_OK)
          << err;
    }
    rd_kafka_t* foreign = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    ASSERT_NE(foreign, nullptr) << err;
    rd_kafka_poll_set_consumer(foreign);
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, kTopic, RD_KAFKA_PARTITION_UA);
    ASSERT_EQ(rd_kafka_subscribe(foreign, topics), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(topics);
    int read = 0;
    ASSERT_TRUE(WaitFor(
        [&] {
          rd_kafka_message_t* msg = rd_kafka_consumer_poll(foreign, 100);
          if (msg != nullptr) {
            if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) ++read;
            rd_kafka_message_destroy(msg);
          }
          return read == 400;
        },
        60s, 0ms));
    ASSERT_EQ(rd_kafka_commit(foreign, nullptr, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_consumer_close(foreign);
    rd_kafka_destroy(foreign);
  }

  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  auto ingestor = StartIngestor(DefaultSessionOptions(group), store.get());
  ASSERT_NE(ingestor, nullptr);
  ASSERT_TRUE(WaitFor([&] { return ingestor->Stats().partitions.size() == 4u; }, 60s))
      << ingestor->Ready().ToString();
  ASSERT_TRUE(WaitCaughtUp(*store));
  ASSERT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(*store), kTopic), High()), "");
}

// With no partition to give (its topic does not exist), the group assigns nothing: Ready() names
// the wait and how long it has lasted, by the Ingestor's clock.
TEST_F(GroupJoinTest, ReadyNamesTheWaitForTheGroupsAssignment) {
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  ManualClock clock(1'000'000);
  IngestOptions options = Options("no-partitions");
  options.topics = {"no-such-topic"};
  options.clock = &clock;
  auto ingestor = StartIngestor(options, store.get());
  ASSERT_NE(ingestor, nullptr);
  Status ready = ingestor->Ready();
  EXPECT_TRUE(ready.IsBusy()) << ready.ToString();
  EXPECT_EQ(ready.message(), "waiting for the group's assignment since 0 s (group no-partitions)");
  clock.Advance(12'400);
  EXPECT_EQ(ingestor->Ready().message(),
            "waiting for the group's assignment since 12 s (group no-partitions)");
  ASSERT_TRUE(ingestor->Stop().ok());
}

// A cooperative-sticky consumer whose joins are answered but whose SyncGroup never succeeds has
// an assignor but no assignor state, and librdkafka 2.0.2 aborts destroying it
// (confluentinc/librdkafka#4312): both when the session ladder makes the consumer again and when
// Stop ends it. Neither may take the process down; the ingestor leaves such a client to the
// process exit and counts it. (Failed, the process aborting in rd_kafka_destroy, with
// DestroyConsumer always destroying.)
TEST_F(GroupJoinTest, AConsumerNeverAssignedUnderCooperativeStickyDoesNotAbortTheProcess) {
  constexpr int16_t kSyncGroup = 14;
  const std::vector<rd_kafka_resp_err_t> errors(400, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
  rd_kafka_mock_push_request_errors_array(kafka_->cluster(), kSyncGroup, errors.size(),
                                          errors.data());
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  IngestOptions options = DefaultSessionOptions("never-synced");
  options.properties["partition.assignment.strategy"] = "cooperative-sticky";
  auto ingestor = StartIngestor(options, store.get());
  ASSERT_NE(ingestor, nullptr);
  // The ladder's first step comes after four sessions of 3 s without an assignment.
  ASSERT_TRUE(WaitFor([&] { return ingestor->Stats().group_rejoins >= 1; }, 60s))
      << ingestor->Ready().ToString();
  EXPECT_FALSE(ingestor->Stats().assigned);
  EXPECT_TRUE(ingestor->Stop().ok());
  EXPECT_EQ(ingestor->Stats().consumers_left, 2u);
}

}  // namespace
}  // namespace hotrow::ingest
