#include "cluster/group_query.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "common/logging.h"
#include "wire/event_json.h"

namespace hotrow::cluster {

namespace {

// Peers that do not answer, or answer something else, are logged at most 10 times per 10 s.
void Warn(const std::string& message) {
  static RateLimiter limiter(10, 10000);
  uint64_t suppressed = 0;
  if (!limiter.Allow(&suppressed)) return;
  if (suppressed > 0) {
    spdlog::warn("cluster: {} ({} similar warnings suppressed)", message, suppressed);
  } else {
    spdlog::warn("cluster: {}", message);
  }
}

PeerEvent ToPeerEvent(const query::Event& e) {
  PeerEvent pe;
  pe.ts_ms = e.ts_ms;
  pe.topic = e.topic;
  pe.partition = e.partition;
  pe.offset = e.offset;
  wire::AppendEventJson(e, &pe.json);
  return pe;
}

// The spans of every instance that can hold events of `merged` (a full answer's last event bounds
// them), in the answer's order, each once.
std::vector<query::UnindexedSpan> MergeUnindexed(std::vector<query::UnindexedSpan> spans,
                                                 const std::vector<PeerEvent>& merged,
                                                 int64_t limit, query::Order order) {
  const bool desc = order == query::Order::kDesc;
  if (limit >= 0 && static_cast<int64_t>(merged.size()) >= limit && !merged.empty()) {
    const int64_t last = merged.back().ts_ms;
    std::erase_if(spans, [&](const query::UnindexedSpan& s) {
      return desc ? s.end_ms <= last : s.start_ms > last;
    });
  }
  auto key = [](const query::UnindexedSpan& s) { return std::make_pair(s.start_ms, s.end_ms); };
  std::sort(spans.begin(), spans.end(),
            [&](const auto& a, const auto& b) { return desc ? key(a) > key(b) : key(a) < key(b); });
  spans.erase(std::unique(spans.begin(), spans.end()), spans.end());
  return spans;
}

}  // namespace

bool ReadPeerStatus(Cluster* cluster, const PeerReply& reply, LocalHead* head, std::string* why) {
  if (!reply.answered) {
    *why = reply.error;
    return false;
  }
  Status st = ParseClusterLocal(reply.body, head);
  if (st.ok()) st = cluster->CheckPeer(*head);
  if (!st.ok()) *why = "refused: " + st.message();
  return st.ok();
}

size_t GroupSize(Cluster* cluster) { return 1 + cluster->peers().options().peers.size(); }
size_t AnswerSlots(Cluster* cluster) { return (1 + kStandbyRounds) * GroupSize(cluster); }

namespace {

// The peers a plan asks (null: every peer), and the partitions the answers must cover.
const std::vector<bool>* PeersOf(const RoutePlan* plan, std::vector<bool>* peers) {
  if (plan == nullptr) return nullptr;
  peers->assign(plan->ask.begin() + 1, plan->ask.end());
  return peers;
}
GroupPartitions ToCover(Cluster* cluster, const RoutePlan* plan) {
  if (plan == nullptr) return cluster->KnownPartitions();
  GroupPartitions needed;
  needed.partitions = plan->needed;
  return needed;
}
// What an answer covers and owns without serving, of the partitions a plan needs: an asked
// instance's other partitions are not the answer's business.
PeerCoverage CoverageOf(bool answered, Partitions covered, Partitions stale,
                        const RoutePlan* plan) {
  if (plan != nullptr) {
    auto unneeded = [&](const store::TopicPartition& tp) {
      return !std::binary_search(plan->needed.begin(), plan->needed.end(), tp);
    };
    std::erase_if(covered, unneeded);
    std::erase_if(stale, unneeded);
  }
  return PeerCoverage{answered, std::move(covered), std::move(stale)};
}

// Whether an asked instance's head (of a routed answer) serves a partition the plan did not
// need and that it no longer vouches for as routable: the map said it was, and the plan dropped
// it, but it may hold events of the query's ids now (CONTRACT.md "Routing by key").
bool Unvouched(const LocalHead& head, const RoutePlan* plan) {
  if (plan == nullptr) return false;
  for (const store::TopicPartition& tp : head.partitions) {
    if (!std::binary_search(plan->needed.begin(), plan->needed.end(), tp) &&
        std::find(head.routable.begin(), head.routable.end(), tp) == head.routable.end()) {
      return true;
    }
  }
  return false;
}

// Asks the instances `plan` names (every instance without one), then, when every instance asked
// answered and yet the routed answer is incomplete (a handoff the route map had not seen yet), or
// an asked instance no longer vouches for a partition the plan left out (Unvouched), every
// instance; counts which it was. An instance that did not answer (busy, too slow, down) is
// not asked again: asking every instance would not cover its partitions either, and would add load
// where there is too much.
template <typename Answer, typename Ask>
Answer Routed(Cluster* cluster, const std::vector<std::string>& ids, const Ask& ask) {
  const std::optional<RoutePlan> plan = ids.empty() ? std::nullopt : cluster->PlanRoute(ids);
  if (plan) {
    Answer routed = ask(&*plan);
    if (!routed.status.ok() || (routed.coverage.complete && !routed.unvouched) ||
        routed.unanswered > 0) {
      cluster->CountRoute(true, false);
      return routed;
    }
    cluster->RouteMissed();
    cluster->CountRoute(false, true);
    return ask(nullptr);
  }
  if (cluster->routing() && !ids.empty()) cluster->CountRoute(false, false);
  return ask(nullptr);
}

// A standby round (CONTRACT.md "cluster.standby_replicas"): the partitions `decision` left
// uncovered that an instance said it serves as a standby (`standby[i]`, i: 0 this one, i + 1
// peers[i]) are asked of one such instance each, restricted to exactly those
// (`?local=true&standby=t:p,...`), so that none is counted twice and no limit is spent on
// partitions another instance gives. `local` is this instance's part, run under a StandbyScope
// when it is asked. Asked only when something is uncovered, so a group whose owners all serve
// pays nothing. What a round asked of an instance leaves `standby` (Offered): a partition its
// standby did not give after all (it stopped, or holds less than its owner gave) goes to another
// standby in the next round, up to kStandbyRounds.
struct StandbyRound {
  bool asked = false;              // some instance was asked
  std::vector<Partitions> choice;  // per instance, what it was asked for
  std::vector<PeerReply> replies;  // per peer
};
StandbyRound AskStandbys(Cluster* cluster, const CoverageDecision& decision,
                         const std::vector<Partitions>& standby, const std::string& target,
                         const std::string* post_json, const std::function<void()>& local) {
  StandbyRound round;
  if (decision.complete) return round;
  round.choice = ChooseStandbys(decision, standby);
  std::vector<std::string> targets(round.choice.size() - 1);
  for (size_t i = 1; i < round.choice.size(); ++i) {
    if (round.choice[i].empty()) continue;
    targets[i - 1] = target + "&standby=" +
                     StandbyParam(round.choice[i], cluster->OwnerPositionsOf(round.choice[i]));
    round.asked = true;
  }
  std::function<void()> meanwhile;
  if (!round.choice[0].empty()) {
    round.asked = true;
    meanwhile = [&] {
      StandbyScope scope(round.choice[0]);
      StandbyPositionsScope positions(cluster->OwnerPositionsOf(round.choice[0]));
      local();
    };
  }
  if (!round.asked) return round;
  round.replies = cluster->peers().AskEach(targets, meanwhile, post_json);
  return round;
}

// Takes what `round` asked of each instance out of what it offers.
void Offered(const StandbyRound& round, std::vector<Partitions>* standby) {
  for (size_t i = 0; i < round.choice.size(); ++i) {
    std::erase_if((*standby)[i], [&](const store::TopicPartition& tp) {
      return std::binary_search(round.choice[i].begin(), round.choice[i].end(), tp);
    });
  }
}

GroupAskAnswer AskGroupWith(Cluster* cluster, const GroupAsk& ask, const RoutePlan* plan) {
  GroupAskAnswer out;
  Result<std::string> mine = std::string();
  const std::string target =
      ask.peer_target + (ask.peer_target.find('?') == std::string::npos ? "?" : "&") + "local=true";
  const bool ask_self = plan == nullptr || plan->ask[0];
  std::vector<bool> only;
  // Without this instance's part, nothing runs meanwhile (no pool thread is woken for it).
  std::function<void()> meanwhile;
  if (ask_self) meanwhile = [&] { mine = ask.local(); };
  std::vector<PeerReply> replies = cluster->peers().AskAll(
      target, meanwhile, ask.post_body.empty() ? nullptr : &ask.post_body, PeersOf(plan, &only));
  if (!mine.ok() && !mine.status().IsBusy()) {
    out.status = mine.status();
    return out;
  }
  const size_t first = 1 + replies.size();  // the standby rounds' answers come after
  const size_t slots = (1 + kStandbyRounds) * first;
  std::vector<PeerCoverage> coverage(slots);
  std::vector<Partitions> standby(first);
  out.accepted.assign(slots, false);
  out.covered.resize(slots);
  auto read = [&](size_t index, std::string_view body, bool self) {
    LocalHead head;
    Status st = ask.parse(index, body, &head);
    if (st.ok() && !self) st = cluster->CheckPeer(head);
    if (!st.ok()) return st;
    out.accepted[index] = true;
    if (index < first) {
      out.unvouched = out.unvouched || Unvouched(head, plan);
      cluster->NoteOwnerPositions(head);
      standby[index] = std::move(head.standby);
    } else {
      cluster->JudgeStandby(&head);
    }
    coverage[index] = CoverageOf(true, std::move(head.partitions), std::move(head.stale), plan);
    out.covered[index] = coverage[index].covered;
    return Status::Ok();
  };
  if (ask_self && mine.ok()) {
    if (Status st = read(0, *mine, true); !st.ok()) {
      Warn("this instance's own answer is not read back: " + st.ToString());
    }
  }
  if (ask_self && !out.accepted[0]) ++out.unanswered;
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].asked) continue;
    if (!replies[i].answered) {
      ++out.unanswered;
      Warn(replies[i].peer + " did not answer: " + replies[i].error);
      continue;
    }
    if (Status st = read(i + 1, replies[i].body, false); !st.ok()) {
      ++out.unanswered;
      Warn("the answer of " + replies[i].peer + " is refused: " + st.message());
    }
  }
  out.coverage = DecideCoverage(ToCover(cluster, plan), coverage);
  bool any_round = false;
  for (size_t r = 1; r <= kStandbyRounds && !out.coverage.complete; ++r) {
    const size_t base = r * first;
    cluster->BetweenRounds();
    Result<std::string> again = std::string();
    const StandbyRound round =
        AskStandbys(cluster, out.coverage, standby, target,
                    ask.post_body.empty() ? nullptr : &ask.post_body, [&] { again = ask.local(); });
    if (!round.asked) break;
    any_round = true;
    if (!round.choice[0].empty() && again.ok()) {
      if (Status st = read(base, *again, true); !st.ok()) {
        Warn("this instance's own standby answer is not read back: " + st.ToString());
      }
    }
    for (size_t i = 0; i < round.replies.size(); ++i) {
      if (!round.replies[i].asked) continue;
      if (!round.replies[i].answered) {
        Warn(round.replies[i].peer + " did not answer as a standby: " + round.replies[i].error);
        continue;
      }
      if (Status st = read(base + 1 + i, round.replies[i].body, false); !st.ok()) {
        Warn("the standby answer of " + round.replies[i].peer + " is refused: " + st.message());
      }
    }
    out.coverage = DecideCoverage(ToCover(cluster, plan), coverage);
    Offered(round, &standby);
  }
  if (!any_round) return out;
  MarkFromStandby(&out.coverage, first);
  cluster->CountStandby(out.coverage.from_standby.size());
  return out;
}

}  // namespace

GroupAskAnswer AskGroup(Cluster* cluster, const GroupAsk& ask) {
  return Routed<GroupAskAnswer>(cluster, ask.route_ids, [&](const RoutePlan* plan) {
    return AskGroupWith(cluster, ask, plan);
  });
}

std::string WithLocal(const std::string& path, const std::string& query) {
  return path + "?" + query + (query.empty() ? "" : "&") + "local=true";
}

LocalPart AnswerLocally(Cluster* cluster, const GroupQuery& q) {
  LocalPart out;
  const QueryView view = cluster->View();
  std::vector<query::UnindexedSpan> unindexed;
  out.status = q.run(view.filter, &out.events, &unindexed);
  if (!out.status.ok()) return out;
  out.head = cluster->Head(*view.ownership);
  out.head.unindexed = std::move(unindexed);
  return out;
}

namespace {

GroupAnswer AnswerWith(Cluster* cluster, const GroupQuery& q, const RoutePlan* plan) {
  GroupAnswer out;
  LocalPart mine;
  const std::string target =
      q.peer_target + (q.peer_target.find('?') == std::string::npos ? "?" : "&") + "local=true";
  const bool ask_self = plan == nullptr || plan->ask[0];
  std::vector<bool> only;
  std::function<void()> meanwhile;
  if (ask_self) meanwhile = [&] { mine = AnswerLocally(cluster, q); };
  std::vector<PeerReply> replies =
      cluster->peers().AskAll(target, meanwhile, nullptr, PeersOf(plan, &only));
  if (!mine.status.ok() && !mine.status.IsBusy()) {
    out.status = mine.status;
    return out;
  }
  const size_t first = 1 + replies.size();  // the standby rounds' answers come after
  const size_t slots = (1 + kStandbyRounds) * first;
  std::vector<PeerCoverage> coverage(slots);
  std::vector<std::vector<PeerEvent>> events(slots);
  std::vector<Partitions> standby(first);
  std::vector<query::UnindexedSpan> unindexed;
  if (ask_self && !mine.status.ok()) ++out.unanswered;
  if (ask_self && mine.status.ok()) {
    out.unvouched = out.unvouched || Unvouched(mine.head, plan);
    cluster->NoteOwnerPositions(mine.head);
    standby[0] = mine.head.standby;
    coverage[0] = CoverageOf(true, mine.head.partitions, mine.head.stale, plan);
    events[0].reserve(mine.events.size());
    for (const query::Event& e : mine.events) events[0].push_back(ToPeerEvent(e));
    unindexed = std::move(mine.head.unindexed);
  }
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].asked) continue;
    if (!replies[i].answered) {
      ++out.unanswered;
      Warn(replies[i].peer + " did not answer: " + replies[i].error);
      continue;
    }
    LocalHead head;
    Status st = ParseLocalAnswer(replies[i].body, &events[i + 1], &head);
    if (st.ok()) st = cluster->CheckPeer(head);
    if (!st.ok()) {
      ++out.unanswered;
      Warn("the answer of " + replies[i].peer + " is refused: " + st.message());
      events[i + 1].clear();
      continue;
    }
    out.unvouched = out.unvouched || Unvouched(head, plan);
    cluster->NoteOwnerPositions(head);
    standby[i + 1] = std::move(head.standby);
    coverage[i + 1] = CoverageOf(true, std::move(head.partitions), std::move(head.stale), plan);
    unindexed.insert(unindexed.end(), head.unindexed.begin(), head.unindexed.end());
  }
  out.coverage = DecideCoverage(ToCover(cluster, plan), coverage);
  bool any_round = false;
  for (size_t r = 1; r <= kStandbyRounds && !out.coverage.complete; ++r) {
    const size_t base = r * first;
    cluster->BetweenRounds();
    LocalPart again;
    const StandbyRound round = AskStandbys(cluster, out.coverage, standby, target, nullptr,
                                           [&] { again = AnswerLocally(cluster, q); });
    if (!round.asked) break;
    any_round = true;
    if (!round.choice[0].empty() && again.status.ok()) {
      cluster->JudgeStandby(&again.head);
      coverage[base] = CoverageOf(true, again.head.partitions, again.head.stale, plan);
      for (const query::Event& e : again.events) events[base].push_back(ToPeerEvent(e));
      unindexed.insert(unindexed.end(), again.head.unindexed.begin(), again.head.unindexed.end());
    }
    for (size_t i = 0; i < round.replies.size(); ++i) {
      const PeerReply& reply = round.replies[i];
      if (!reply.asked) continue;
      if (!reply.answered) {
        Warn(reply.peer + " did not answer as a standby: " + reply.error);
        continue;
      }
      LocalHead head;
      const size_t index = base + 1 + i;
      Status st = ParseLocalAnswer(reply.body, &events[index], &head);
      if (st.ok()) st = cluster->CheckPeer(head);
      if (!st.ok()) {
        Warn("the standby answer of " + reply.peer + " is refused: " + st.message());
        events[index].clear();
        continue;
      }
      cluster->JudgeStandby(&head);
      coverage[index] = CoverageOf(true, std::move(head.partitions), std::move(head.stale), plan);
      unindexed.insert(unindexed.end(), head.unindexed.begin(), head.unindexed.end());
    }
    out.coverage = DecideCoverage(ToCover(cluster, plan), coverage);
    Offered(round, &standby);
  }
  if (any_round) {
    MarkFromStandby(&out.coverage, first);
    cluster->CountStandby(out.coverage.from_standby.size());
  }
  out.events = MergePeerEvents(std::move(events), out.coverage, q.limit, q.order);
  out.unindexed = MergeUnindexed(std::move(unindexed), out.events, q.limit, q.order);
  return out;
}

}  // namespace

GroupAnswer AnswerForGroup(Cluster* cluster, const GroupQuery& q) {
  return Routed<GroupAnswer>(cluster, q.route_ids,
                             [&](const RoutePlan* plan) { return AnswerWith(cluster, q, plan); });
}

ScanEnd ScanLocally(Cluster* cluster, const GroupScan& scan,
                    const std::function<bool(std::string_view)>& line) {
  ScanEnd end;
  const QueryView view = cluster->View();
  std::string text;
  const Status st = cluster->engine()->Scan(
      scan.from_ms, scan.to_ms, scan.limit,
      [&](const query::Event& e) {
        if (scan.stopping && scan.stopping()) return false;
        text.clear();
        wire::AppendEventJson(e, &text);
        if (!line(text)) {
          end.cut = true;
          return false;
        }
        return true;
      },
      &view.filter);
  end.status = st;
  if (end.cut || !st.ok()) return end;
  const LocalHead head = cluster->Head(*view.ownership);
  std::string members;
  AppendLocalHead(head, &members);
  // The head's own ,"complete":... goes: the line starts with it (ParseScanLine looks for it).
  members.erase(members.rfind(",\"complete\":"));
  end.last_line.append("{\"complete\":");
  end.last_line.append(head.complete ? "true" : "false");
  end.last_line.append(members);
  end.last_line.push_back('}');
  return end;
}

ScanEnd ScanGroup(Cluster* cluster, const GroupScan& scan,
                  const std::function<bool(std::string_view)>& line) {
  ScanEnd end;
  int64_t remaining = scan.limit;
  auto stopping = [&] { return scan.stopping && scan.stopping(); };

  // 1. Who serves what: every instance's /v1/cluster?local=true, this one's in process: the view
  // its share below is read through.
  QueryView mine;
  std::vector<PeerReply> replies =
      cluster->peers().AskAll("/v1/cluster?local=true", [&] { mine = cluster->View(); });
  std::vector<PeerCoverage> coverage(1 + replies.size());
  coverage[0] = {true, mine.ownership->Serving(), mine.ownership->Stale()};
  for (size_t i = 0; i < replies.size(); ++i) {
    LocalHead head;
    std::string why;
    if (!ReadPeerStatus(cluster, replies[i], &head, &why)) {
      Warn("scan: " + replies[i].peer + ": " + why);
      continue;
    }
    coverage[i + 1] = {true, std::move(head.partitions), std::move(head.stale)};
  }
  const CoverageDecision decision = DecideCoverage(cluster->KnownPartitions(), coverage);
  Partitions missing = decision.missing;
  auto owned_by = [&](size_t index, const std::string& topic, int32_t partition) {
    auto it = decision.owner.find(store::TopicPartition{topic, partition});
    return it != decision.owner.end() && it->second == index;
  };
  // Partitions given to `index` that its answer did not cover after all: missing.
  auto check_covered = [&](size_t index, const Partitions& covered, bool answered) {
    for (const auto& [tp, owner] : decision.owner) {
      if (owner != index) continue;
      if (!answered || std::find(covered.begin(), covered.end(), tp) == covered.end()) {
        missing.push_back(tp);
      }
    }
  };

  // 2. Each instance's share, one after the other: this one's first. Peers are asked without a
  // limit and read only as far as needed: a limit a peer applied would count events that are
  // not its to give (a partition the decision gives another instance), and the answer would be
  // short of `limit` while complete.
  {
    std::string text;
    const Status st = cluster->engine()->Scan(
        scan.from_ms, scan.to_ms, query::kNoLimit,
        [&](const query::Event& e) {
          if (stopping() || remaining <= 0) return false;
          if (!owned_by(0, e.topic, e.partition)) return true;
          text.clear();
          wire::AppendEventJson(e, &text);
          --remaining;
          if (!line(text)) {
            end.cut = true;
            return false;
          }
          return true;
        },
        &mine.filter);
    if (end.cut) return end;
    if (!st.ok()) Warn("scan: this instance's part failed: " + st.ToString());
    check_covered(0, coverage[0].covered, st.ok());
  }
  const std::string target = "/v1/scan?from=" + std::to_string(scan.from_ms) +
                             "&to=" + std::to_string(scan.to_ms) + "&local=true";
  for (size_t i = 0; i < replies.size() && remaining > 0; ++i) {
    const size_t index = i + 1;
    bool any = false;
    for (const auto& [tp, owner] : decision.owner) any = any || owner == index;
    if (!any) continue;
    std::string pending, error;
    LocalHead head;
    bool saw_last = false;
    Status parse_error;
    const bool streamed = cluster->peers().Stream(
        replies[i].peer, target,
        [&](const char* data, size_t size) {
          pending.append(data, size);
          size_t begin = 0;
          for (size_t nl; (nl = pending.find('\n', begin)) != std::string::npos; begin = nl + 1) {
            const std::string_view text(pending.data() + begin, nl - begin);
            if (text.empty()) continue;
            bool is_event = false;
            PeerEvent e;
            Status st = ParseScanLine(text, &is_event, &e, &head);
            if (!st.ok()) {
              parse_error = st;
              return false;
            }
            if (!is_event) {
              saw_last = true;
              continue;
            }
            if (!owned_by(index, e.topic, e.partition) || remaining <= 0) continue;
            --remaining;
            if (!line(e.json)) {
              end.cut = true;
              return false;
            }
          }
          pending.erase(0, begin);
          return remaining > 0 && !stopping();
        },
        &error);
    if (end.cut) return end;
    if (saw_last && parse_error.ok()) parse_error = cluster->CheckPeer(head);
    const bool whole = streamed && parse_error.ok() && (saw_last || remaining <= 0);
    if (!whole) {
      Warn("scan: " + replies[i].peer +
           " did not answer whole: " + (!parse_error.ok() ? parse_error.ToString() : error));
    }
    check_covered(index, head.partitions, whole && saw_last);
  }
  if (stopping()) {
    end.status = Status::Cancelled("the server is shutting down");
    return end;
  }
  // The limit was reached: the answer holds as many events as asked, nothing is missing from it.
  CoverageDecision result = decision;
  if (remaining <= 0) {
    result.complete = true;
  } else {
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    result.missing = std::move(missing);
    result.complete = result.complete && result.missing.empty();
  }
  std::string last;
  AppendCoverageJson(result, &last);
  end.last_line.push_back('{');
  end.last_line.append(last, 1, std::string::npos);  // without the leading comma
  end.last_line.push_back('}');
  return end;
}

}  // namespace hotrow::cluster
