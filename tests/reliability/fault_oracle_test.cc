// ProducedLog's ledger of offsets, without a broker: an answer is accepted at the offset the
// producer was acknowledged at or at a broker copy of the same record (AddBrokerCopy), and at no
// other offset, whenever the acknowledgement and the copy become known.
#include "tests/reliability/fault_oracle.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "ingest/ingestor.h"

namespace hotrow::testing::fault {
namespace {

constexpr char kTopic[] = "events";

// A good record of id "dev-<seq>" on `partition`, with its seq in its value as the fault run's.
ProducedRecord GoodRecord(int64_t seq, int32_t partition) {
  ProducedRecord r;
  r.seq = seq;
  r.id = "dev-" + std::to_string(seq);
  r.ts_ms = 1'700'000'000'000 + seq;
  r.partition = partition;
  nlohmann::ordered_json value;
  value["event_id"] = r.id;
  value["ts"] = r.ts_ms;
  value["seq"] = seq;
  r.value = value.dump();
  return r;
}

// The event the service answers for `r` when it stored it at `offset`.
query::Event AnsweredAt(const ProducedRecord& r, int64_t offset) {
  return {r.id, r.ts_ms, kTopic, r.partition, offset, r.value};
}

TEST(ProducedLogTest, AnswerAtTheAcknowledgedOffsetPasses) {
  ProducedLog log(kTopic);
  const ProducedRecord r = GoodRecord(1, 3);
  log.Register(r);
  log.Acknowledge(r.seq, 5);
  EXPECT_EQ(log.CheckEvent(AnsweredAt(r, 5)), "");
  EXPECT_EQ(log.CheckDeferred(), "");
  EXPECT_EQ(log.stored_good(), 1u);
  EXPECT_TRUE(log.BrokerCopies().empty());
}

TEST(ProducedLogTest, AnswerAtABrokerCopyIsAccepted) {
  ProducedLog log(kTopic);
  const ProducedRecord r = GoodRecord(1, 3);
  log.Register(r);
  log.Acknowledge(r.seq, 5);
  // Answered at the copy's offset before the run has read the topic back: deferred, not failed.
  EXPECT_EQ(log.CheckEvent(AnsweredAt(r, 9)), "");
  log.AddBrokerCopy(r.seq, r.partition, 9);
  EXPECT_EQ(log.CheckDeferred(), "");
  EXPECT_EQ(log.BrokerCopies(), (std::vector<std::tuple<int64_t, int32_t, int64_t>>{{1, 3, 9}}));
  // The copy is a record of its own: the store must hold both.
  EXPECT_EQ(log.stored_good(), 2u);
}

TEST(ProducedLogTest, AnswerBeforeTheAcknowledgementIsCheckedWhenItArrives) {
  ProducedLog log(kTopic);
  const ProducedRecord r = GoodRecord(1, 3);
  log.Register(r);
  EXPECT_EQ(log.CheckEvent(AnsweredAt(r, 5)), "");
  log.Acknowledge(r.seq, 5);
  EXPECT_EQ(log.CheckDeferred(), "");
}

TEST(ProducedLogTest, AnswerAtNeitherTheAcknowledgedOffsetNorACopyFails) {
  ProducedLog log(kTopic);
  const ProducedRecord r = GoodRecord(1, 3);
  log.Register(r);
  log.Acknowledge(r.seq, 5);
  log.AddBrokerCopy(r.seq, r.partition, 9);
  EXPECT_EQ(log.CheckEvent(AnsweredAt(r, 7)), "");  // decided by CheckDeferred
  const std::string problem = log.CheckDeferred();
  EXPECT_NE(problem.find("seq 1 was answered at offset 7"), std::string::npos) << problem;
}

TEST(ProducedLogTest, CopyOfAnotherRecordDoesNotCoverAnAnswer) {
  ProducedLog log(kTopic);
  const ProducedRecord a = GoodRecord(1, 3), b = GoodRecord(2, 3);
  log.Register(a);
  log.Register(b);
  log.Acknowledge(a.seq, 5);
  log.Acknowledge(b.seq, 6);
  log.AddBrokerCopy(b.seq, b.partition, 9);  // offset 9 holds b, not a
  EXPECT_EQ(log.CheckEvent(AnsweredAt(a, 9)), "");
  EXPECT_NE(log.CheckDeferred(), "");
}

TEST(ProducedLogTest, CopyOnAnotherPartitionDoesNotCoverAnAnswer) {
  ProducedLog log(kTopic);
  const ProducedRecord r = GoodRecord(1, 3);
  log.Register(r);
  log.Acknowledge(r.seq, 5);
  log.AddBrokerCopy(r.seq, r.partition + 1, 9);
  EXPECT_EQ(log.CheckEvent(AnsweredAt(r, 9)), "");
  EXPECT_NE(log.CheckDeferred(), "");
}

TEST(ProducedLogTest, StoredGoodCountsEachGoodCopyOnce) {
  ProducedLog log(kTopic);
  const ProducedRecord good = GoodRecord(1, 3);
  ProducedRecord bad = GoodRecord(2, 3);
  bad.reject_reason = ingest::kRejectNotJson;
  bad.value = "{not json";
  log.Register(good);
  log.Register(bad);
  log.Acknowledge(good.seq, 5);
  log.Acknowledge(bad.seq, 6);
  log.AddBrokerCopy(good.seq, good.partition, 9);
  log.AddBrokerCopy(good.seq, good.partition, 9);  // read back twice: still one copy
  log.AddBrokerCopy(bad.seq, bad.partition, 10);   // a rejected record's copy is rejected too
  log.AddBrokerCopy(99, 3, 11);                    // never produced: ignored
  EXPECT_EQ(log.stored_good(), 2u);
  EXPECT_EQ(log.BrokerCopies().size(), 2u);
}

}  // namespace
}  // namespace hotrow::testing::fault
