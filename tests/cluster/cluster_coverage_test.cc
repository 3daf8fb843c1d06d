// The pure part of answering for the whole group: coverage, merge and the peers' answers.

#include <gtest/gtest.h>

#include "cluster/coverage.h"
#include "cluster/device_merge.h"
#include "cluster/local_answer.h"
#include "cluster/partition_holders.h"
#include "cluster/standby_request.h"
#include "wire/event_json.h"

namespace hotrow::cluster {
namespace {

using store::TopicPartition;

GroupPartitions All(int n) {
  GroupPartitions out;
  for (int p = 0; p < n; ++p) out.partitions.push_back({"t", p});
  return out;
}

PeerEvent Ev(int64_t ts, int32_t partition, int64_t offset) {
  PeerEvent e;
  e.ts_ms = ts;
  e.topic = "t";
  e.partition = partition;
  e.offset = offset;
  e.json = "{\"ts\":" + std::to_string(ts) + "}";
  return e;
}

TEST(ClusterCoverageTest, CompleteOnlyWhenEveryPartitionIsCovered) {
  std::vector<PeerCoverage> peers(3);
  peers[0] = {true, {{"t", 0}, {"t", 1}}, {}};
  peers[1] = {true, {{"t", 2}}, {}};
  peers[2] = {true, {{"t", 3}}, {}};
  CoverageDecision d = DecideCoverage(All(4), peers);
  EXPECT_TRUE(d.complete);
  EXPECT_TRUE(d.missing.empty());
  EXPECT_EQ(d.owner.at(TopicPartition{"t", 2}), 1u);

  peers[2].answered = false;  // did not answer in time: its partition is missing
  d = DecideCoverage(All(4), peers);
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.missing, (Partitions{{"t", 3}}));

  peers[2] = {true, {}, {{"t", 3}}};  // answered, owns partition 3 but cannot vouch for it
  d = DecideCoverage(All(5), peers);
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.stale, (Partitions{{"t", 3}}));
  EXPECT_EQ(d.missing, (Partitions{{"t", 4}}));
}

// A topic that grew from 4 to 6 partitions before the metadata was read again: the instances
// report 4 and 5 as assigned. One that is assigned but not yet serving is stale, never absent
// from both lists; one covered counts as covered.
TEST(ClusterCoverageTest, APartitionOnlyTheInstancesKnowIsCoveredOrStaleNeverIgnored) {
  std::vector<PeerCoverage> peers(2);
  peers[0] = {true, {{"t", 0}, {"t", 1}, {"t", 4}}, {}};
  peers[1] = {true, {{"t", 2}, {"t", 3}}, {{"t", 5}}};
  CoverageDecision d = DecideCoverage(All(4), peers);
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.stale, (Partitions{{"t", 5}}));
  EXPECT_TRUE(d.missing.empty());
  EXPECT_EQ(d.owner.at(TopicPartition{"t", 4}), 0u);
  peers[1].covered.push_back({"t", 5});
  peers[1].stale.clear();
  d = DecideCoverage(All(4), peers);
  EXPECT_TRUE(d.complete) << "every partition the instances report is covered";
  EXPECT_EQ(d.owner.at(TopicPartition{"t", 5}), 1u);
}

TEST(ClusterCoverageTest, AnUnknownPartitionListIsNeverComplete) {
  std::vector<PeerCoverage> peers = {{true, {{"t", 0}}, {}}, {true, {{"t", 1}}, {}}};
  GroupPartitions unknown;
  unknown.unknown_topics = {"t"};
  CoverageDecision d = DecideCoverage(unknown, peers);
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.unknown_topics, (std::vector<std::string>{"t"}));
  // Another topic known whole does not make up for it.
  unknown.partitions = {{"u", 0}};
  peers[0].covered.push_back({"u", 0});
  EXPECT_FALSE(DecideCoverage(unknown, peers).complete);
  std::string json;
  AppendCoverageJson(DecideCoverage(unknown, peers), &json);
  EXPECT_EQ(json, ",\"complete\":false,\"missing\":{},\"stale\":{},\"unknown_topics\":[\"t\"]");
}

TEST(ClusterCoverageTest, APartitionCoveredTwiceCountsOnceAndItsEventsAreNeverDoubled) {
  std::vector<PeerCoverage> peers = {{true, {{"t", 0}}, {}}, {true, {{"t", 0}, {"t", 1}}, {}}};
  CoverageDecision d = DecideCoverage(All(2), peers);
  EXPECT_TRUE(d.complete);
  EXPECT_EQ(d.owner.at(TopicPartition{"t", 0}), 0u);
  std::vector<std::vector<PeerEvent>> per_peer = {{Ev(10, 0, 1), Ev(5, 0, 0)},
                                                  {Ev(10, 0, 1), Ev(7, 1, 0), Ev(5, 0, 0)}};
  std::vector<PeerEvent> merged = MergePeerEvents(per_peer, d, 10, query::Order::kDesc);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].ts_ms, 10);
  EXPECT_EQ(merged[1].ts_ms, 7);
  EXPECT_EQ(merged[2].ts_ms, 5);
}

TEST(ClusterCoverageTest, MergeOrdersTiesByTopicPartitionOffsetAndCutsAtTheLimit) {
  std::vector<PeerCoverage> peers = {{true, {{"t", 0}}, {}}, {true, {{"t", 1}}, {}}};
  CoverageDecision d = DecideCoverage(All(2), peers);
  std::vector<std::vector<PeerEvent>> per_peer = {{Ev(5, 0, 9), Ev(4, 0, 8)},
                                                  {Ev(5, 1, 2), Ev(3, 1, 1)}};
  std::vector<PeerEvent> desc = MergePeerEvents(per_peer, d, 3, query::Order::kDesc);
  ASSERT_EQ(desc.size(), 3u);
  EXPECT_EQ(desc[0].partition, 1);  // ts tie: partition 1 before 0, descending
  EXPECT_EQ(desc[1].partition, 0);
  EXPECT_EQ(desc[2].ts_ms, 4);
  std::vector<PeerEvent> asc = MergePeerEvents(per_peer, d, 2, query::Order::kAsc);
  ASSERT_EQ(asc.size(), 2u);
  EXPECT_EQ(asc[0].ts_ms, 3);
  EXPECT_EQ(asc[1].ts_ms, 4);
}

TEST(ClusterCoverageTest, LocalAnswersAreReadWithTheirEventsByteForByte) {
  query::Event e{"dev-1", 1700000000123, "t", 3, 42, "{\"x\":1.50,\"a\":[1, 2]}"};
  std::string body = "{\"event_id\":\"dev-1\",\"events\":[";
  wire::AppendEventJson(e, &body);
  body += "]";
  LocalHead written;
  written.partitions = {{"t", 3}, {"t", 1}, {"u", 0}};
  written.stale = {{"u", 1}};
  written.group = "g";
  written.topics = {"t", "u"};
  written.unindexed = {{60000, 120000}};
  AppendLocalHead(written, &body);
  body += "}";
  std::vector<PeerEvent> events;
  LocalHead head;
  Status st = ParseLocalAnswer(body, &events, &head);
  ASSERT_TRUE(st.ok()) << st.ToString() << " in " << body;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].ts_ms, e.ts_ms);
  EXPECT_EQ(events[0].partition, 3);
  EXPECT_EQ(events[0].offset, 42);
  std::string expected;
  wire::AppendEventJson(e, &expected);
  EXPECT_EQ(events[0].json, expected);
  EXPECT_EQ(head.partitions, (Partitions{{"t", 1}, {"t", 3}, {"u", 0}}));
  EXPECT_EQ(head.stale, (Partitions{{"u", 1}}));
  EXPECT_EQ(head.group, "g");
  EXPECT_EQ(head.topics, (std::vector<std::string>{"t", "u"}));
  EXPECT_EQ(head.unindexed, (std::vector<query::UnindexedSpan>{{60000, 120000}}));
  EXPECT_TRUE(SameGroup(written, head).ok());
  LocalHead other = head;
  other.group = "h";
  EXPECT_FALSE(SameGroup(written, other).ok());
  other = head;
  other.topics = {"t"};
  EXPECT_FALSE(SameGroup(written, other).ok());

  LocalHead ignored;
  EXPECT_FALSE(ParseLocalAnswer("{\"event_id\":\"x\",\"events\":[]}", &events, &ignored).ok());
  // A 200 with events and partitions but no group is not a hotrow peer's answer.
  EXPECT_FALSE(ParseLocalAnswer("{\"events\":[],\"partitions\":{}}", &events, &ignored).ok());
  EXPECT_FALSE(ParseLocalAnswer("not json", &events, &ignored).ok());
}

TEST(ClusterCoverageTest, ScanLinesAreEventsOrTheFinalCoverageLine) {
  query::Event e{"d", 5, "t", 0, 7, "{}"};
  std::string line;
  wire::AppendEventJson(e, &line);
  bool is_event = false;
  PeerEvent ev;
  LocalHead covered;
  ASSERT_TRUE(ParseScanLine(line, &is_event, &ev, &covered).ok());
  EXPECT_TRUE(is_event);
  EXPECT_EQ(ev.json, line);
  ASSERT_TRUE(ParseScanLine("{\"complete\":true,\"partitions\":{\"t\":[0,2]},\"group\":\"g\"}",
                            &is_event, &ev, &covered)
                  .ok());
  EXPECT_FALSE(is_event);
  EXPECT_EQ(covered.partitions, (Partitions{{"t", 0}, {"t", 2}}));
  EXPECT_FALSE(ParseScanLine("{\"error\":\"scan failed\"}", &is_event, &ev, &covered).ok());
}

TEST(ClusterCoverageTest, PartitionsJsonGroupsByTopic) {
  std::string out;
  AppendPartitionsJson({{"b", 2}, {"a", 1}, {"b", 0}}, &out);
  EXPECT_EQ(out, "{\"a\":[1],\"b\":[0,2]}");
  out.clear();
  AppendPartitionsJson({}, &out);
  EXPECT_EQ(out, "{}");
  Partitions back;
  ASSERT_TRUE(ParsePartitionsJson("{\"a\":[1],\"b\":[0,2]}", &back).ok());
  EXPECT_EQ(back, (Partitions{{"a", 1}, {"b", 0}, {"b", 2}}));
}

// The latest of every id: an instance's full page whose events were left out (their partition
// is another instance's) still bounds the merged page: ids after its last one may be on it,
// unsent, so the merged page stops there instead of skipping them.
TEST(ClusterCoverageTest, LatestOfEveryIdStopsAtTheSmallestLastIdOfAFullPage) {
  std::vector<PeerCoverage> peers(2);
  peers[0] = {true, {{"t", 0}}, {}};
  peers[1] = {true, {{"t", 0}, {"t", 1}}, {}};  // a handoff seen from both sides: t/0 is 0's
  const CoverageDecision d = DecideCoverage(All(2), peers);
  auto ev = [](const std::string& id, int64_t ts, int32_t partition) {
    PeerEvent e = Ev(ts, partition, ts);
    e.id = id;
    return e;
  };
  PeerLatestAll zero, one;
  zero.events = {ev("a", 5, 0), ev("c", 5, 0)};
  zero.next = "c";
  one.events = {ev("a", 4, 0), ev("b", 4, 0)};  // both left out; "bb" (t/1) is after its page
  one.next = "b";
  MergedLatestAll m = MergeLatestAll({&zero, &one}, d, 2);
  ASSERT_EQ(m.events.size(), 1u);
  EXPECT_EQ(m.events[0].id, "a");
  EXPECT_EQ(m.events[0].ts_ms, 5);
  ASSERT_TRUE(m.next.has_value());
  EXPECT_EQ(*m.next, "a");
  // The page after: "bb" is found.
  zero.events = {ev("c", 5, 0)};
  zero.next.reset();
  one.events = {ev("b", 4, 0), ev("bb", 4, 1)};
  one.next = "bb";
  m = MergeLatestAll({&zero, &one}, d, 2);
  ASSERT_EQ(m.events.size(), 1u);
  EXPECT_EQ(m.events[0].id, "bb");
  EXPECT_EQ(m.next, std::optional<std::string>("bb"));
  // Nobody had more: no next.
  one.events = {ev("bc", 4, 1)};
  one.next.reset();
  m = MergeLatestAll({&zero, &one}, d, 2);
  ASSERT_EQ(m.events.size(), 2u);
  EXPECT_EQ(m.events[0].id, "bc");
  EXPECT_EQ(m.events[1].id, "c");
  EXPECT_FALSE(m.next.has_value());
}

// A series: an instance that covers a partition another one was given cannot have its aggregates
// split by partition: it is left out whole and the partitions given to it are missing.
TEST(ClusterCoverageTest, SeriesLeavesOutAnInstanceOverlappingAnother) {
  std::vector<PeerCoverage> peers(2);
  peers[0] = {true, {{"t", 0}}, {}};
  peers[1] = {true, {{"t", 0}, {"t", 1}}, {}};
  CoverageDecision d = DecideCoverage(All(2), peers);
  ASSERT_TRUE(d.complete);
  PeerSeries zero, one;
  zero.step_ms = one.step_ms = 10;
  zero.points = {{0, 2, 3.0, 1.0, 2.0, 2.0, 5, "t", 0, 1}};
  one.points = {{0, 4, 10.0, 1.0, 4.0, 4.0, 6, "t", 1, 1}};
  const PeerSeries m = MergeSeries({&zero, &one}, {peers[0].covered, peers[1].covered}, 10, &d);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.points[0].count, 2u);
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.missing, (Partitions{{"t", 1}}));
}

TEST(ClusterCoverageTest, AStandbyIsAskedOnlyForWhatNoOwnerServedEachPartitionOfOne) {
  // Instance 0 owns 0 and serves it; instance 1 owns 1 but is stale; nobody answered for 2 and 3.
  std::vector<PeerCoverage> first = {{true, {{"t", 0}}, {}}, {true, {}, {{"t", 1}}}, {}};
  const CoverageDecision d = DecideCoverage(All(4), first);
  ASSERT_FALSE(d.complete);
  // Standbys: 0 follows 1 and 2, 1 follows 0, 2 and 3; 2 did not answer.
  const std::vector<Partitions> standby = {{{"t", 1}, {"t", 2}}, {{"t", 0}, {"t", 2}, {"t", 3}}, {}};
  const std::vector<Partitions> ask = ChooseStandbys(d, standby);
  ASSERT_EQ(ask.size(), 3u);
  EXPECT_EQ(ask[0], (Partitions{{"t", 1}, {"t", 2}}));  // this instance first
  EXPECT_EQ(ask[1], (Partitions{{"t", 3}}));            // never 0: its owner served it
  EXPECT_EQ(ask[2], Partitions{});

  // The second round's answers come after the first's: each covers what it was asked for.
  std::vector<PeerCoverage> both = first;
  both.resize(6);
  both[3] = {true, {{"t", 1}, {"t", 2}}, {}};
  both[4] = {true, {{"t", 3}}, {}};
  CoverageDecision again = DecideCoverage(All(4), both);
  MarkFromStandby(&again, 3);
  EXPECT_TRUE(again.complete);
  EXPECT_EQ(again.from_standby, (Partitions{{"t", 1}, {"t", 2}, {"t", 3}}));
  // Events of a partition come from the one answer it was given to: the standby's copy of
  // partition 1 counts, the stale owner's (none here) and any other copy do not.
  std::vector<std::vector<PeerEvent>> events(6);
  events[0] = {Ev(10, 0, 0)};
  events[1] = {Ev(11, 1, 0)};  // the stale owner's: not counted
  events[3] = {Ev(11, 1, 0), Ev(12, 2, 0)};
  events[4] = {Ev(13, 3, 0), Ev(12, 2, 0)};  // 2 is the other standby's: not counted
  const std::vector<PeerEvent> merged = MergePeerEvents(events, again, 10, query::Order::kDesc);
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged[0].partition, 3);
  EXPECT_EQ(merged[1].partition, 2);
  EXPECT_EQ(merged[2].partition, 1);
  EXPECT_EQ(merged[3].partition, 0);
  std::string json;
  AppendCoverageJson(again, &json);
  EXPECT_EQ(json, ",\"from_standby\":{\"t\":[1,2,3]},\"complete\":true");
}

TEST(ClusterCoverageTest, AHeadNamesItsStandbyPartitionsAndReadsThemBack) {
  LocalHead head;
  head.partitions = {{"t", 0}};
  head.standby = {{"t", 1}, {"t", 4}};
  head.group = "g";
  head.topics = {"t"};
  std::string body = "{\"events\":[]";
  AppendLocalHead(head, &body);
  body.push_back('}');
  std::vector<PeerEvent> events;
  LocalHead read;
  ASSERT_TRUE(ParseLocalAnswer(body, &events, &read).ok()) << body;
  EXPECT_EQ(read.standby, head.standby);
  EXPECT_EQ(read.partitions, head.partitions);
}

TEST(ClusterCoverageTest, HoldersNameTheServingOwnerElseTheFirstServingStandby) {
  std::vector<InstanceHoldings> in(3);
  ASSERT_TRUE(ReadHoldings(R"({"address":"a","owned":[{"topic":"t","partition":0,"serving":false,)"
                           R"("rebuilding":true,"lag":7,"staleness_ms":-1,"why":"rebuilding"}],)"
                           R"("followed":[{"topic":"t","partition":1,"serving":true,"lag":0,)"
                           R"("staleness_ms":3}],"partitions":{}})",
                           "a", &in[0])
                  .ok());
  ASSERT_TRUE(ReadHoldings(R"({"owned":[{"topic":"t","partition":0,"serving":true,"lag":2,)"
                           R"("staleness_ms":0}],"followed":[{"topic":"t","partition":0,)"
                           R"("serving":true,"lag":5,"staleness_ms":9}]})",
                           "b", &in[1])
                  .ok());
  // An instance that gave no status holds nothing; a body that is not a status is refused.
  EXPECT_FALSE(ReadHoldings(R"({"events":[]})", "c", &in[2]).ok());
  EXPECT_FALSE(ReadHoldings(R"({"owned":[{"topic":"t"}]})", "c", &in[2]).ok());
  in[2] = InstanceHoldings{};
  const std::vector<PartitionHolders> h = CollectHolders({{"t", 0}, {"t", 1}, {"t", 2}}, in);
  ASSERT_EQ(h.size(), 3u);
  // t:0 is owned by both a (rebuilding) and b (serving), as a hand-over seen from both sides:
  // the serving owner comes first and answers.
  ASSERT_EQ(h[0].owners.size(), 2u);
  EXPECT_EQ(h[0].owners[0].address, "b");
  EXPECT_EQ(h[0].owners[1].address, "a");
  EXPECT_TRUE(h[0].owners[1].rebuilding);
  EXPECT_EQ(h[0].owners[1].lag, 7);
  EXPECT_EQ(h[0].served_by, "b");
  EXPECT_FALSE(h[0].from_standby);
  EXPECT_EQ(h[0].serving_copies, 2);
  ASSERT_EQ(h[0].standbys.size(), 1u);
  EXPECT_EQ(h[0].standbys[0].lag, 5);
  // t:1 has no owner that answered: its standby on a answers.
  EXPECT_TRUE(h[1].owners.empty());
  EXPECT_EQ(h[1].served_by, "a");
  EXPECT_TRUE(h[1].from_standby);
  // t:2 is held by nobody.
  EXPECT_TRUE(h[2].served_by.empty());
  EXPECT_EQ(h[2].serving_copies, 0);

  std::string json;
  AppendHoldersJson(h, &json);
  EXPECT_EQ(json.substr(0, 16), ",\"by_partition\":");
  EXPECT_NE(json.find(R"("owner":{"address":"b","serving":true,"lag":2,"staleness_ms":0,)"
                      R"("rebuilding":false},"other_owners":[{"address":"a","serving":false,)"
                      R"("lag":7,"staleness_ms":-1,"rebuilding":true,"why":"rebuilding"}])"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"({"topic":"t","partition":2,"owner":null,"standbys":[],)"
                      R"("served_by":null,"from_standby":false,"serving_copies":0})"),
            std::string::npos)
      << json;
}

TEST(ClusterCoverageTest, AStandbyRequestCarriesTheOwnersPositionsAndAHeadItsOwn) {
  const Partitions asked = {{"a", 0}, {"b", 3}};
  const std::string param = StandbyParam(asked, {{{"b", 3}, 1500}, {{"c", 1}, 7}});
  EXPECT_EQ(param, "a:0,b:3@1500");
  Result<Partitions> parsed = ParseStandbyParam(param);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, asked);
  SetStandbyRequest(*parsed);
  EXPECT_EQ(StandbyRequestPositions(),
            (std::map<store::TopicPartition, int64_t>{{{"b", 3}, 1500}}));
  SetStandbyRequest({});
  EXPECT_TRUE(StandbyRequestPositions().empty());
  for (const char* bad : {"a:0@", "a:0@x", "a:0@-1", "a@5", "a:0@12345678901234567890"}) {
    EXPECT_FALSE(ParseStandbyParam(bad).ok()) << bad;
  }

  LocalHead head;
  head.partitions = {{"a", 0}, {"a", 2}, {"b", 3}};
  head.positions = {{{"a", 0}, 10}, {{"a", 2}, 0}, {{"b", 3}, 1500}};
  head.group = "g";
  std::string text = "{\"events\":[]";
  AppendLocalHead(head, &text);
  text.push_back('}');
  EXPECT_NE(text.find(R"("positions":{"a":[[0,10],[2,0]],"b":[[3,1500]]})"), std::string::npos)
      << text;
  std::vector<PeerEvent> events;
  LocalHead read;
  ASSERT_TRUE(ParseLocalAnswer(text, &events, &read).ok()) << text;
  EXPECT_EQ(read.positions, head.positions);
}

}  // namespace
}  // namespace hotrow::cluster
