#include "tests/reliability/fault_oracle.h"

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>

#include "tests/support/oracle.h"
#include "wire/event_json.h"

namespace hotrow::testing::fault {
namespace {

using nlohmann::ordered_json;

// The order of answers within one topic: (ts, partition, offset).
using OrderKey = std::tuple<int64_t, int32_t, int64_t>;

OrderKey KeyOf(const query::Event& e) { return {e.ts_ms, e.partition, e.offset}; }

// One event of an answer, through the API's own inverse of its event JSON; throws what the
// callers below turn into an error message.
query::Event EventFromJson(const std::string& text) {
  Result<query::Event> event = wire::ParseEventJson(text);
  if (!event.ok()) throw std::runtime_error(event.status().ToString());
  return *event;
}

// Checks what every kind of answer shares: each event is a produced good record, none twice,
// at most `limit` of them (0: no limit).
std::string CheckEventsAndDuplicates(const std::vector<query::Event>& events, int64_t limit,
                                     ProducedLog* log) {
  if (limit > 0 && static_cast<int64_t>(events.size()) > limit) {
    return std::to_string(events.size()) + " events for a limit of " + std::to_string(limit);
  }
  std::set<std::pair<int32_t, int64_t>> seen;
  for (const query::Event& e : events) {
    if (!seen.emplace(e.partition, e.offset).second) {
      return "a record answered twice: " + Describe(e);
    }
    std::string problem = log->CheckEvent(e);
    if (!problem.empty()) return problem;
  }
  return "";
}

// "" when every event has `id`.
std::string CheckIds(const std::string& id, const std::vector<query::Event>& events) {
  for (const query::Event& e : events) {
    if (e.id != id) return "asked for id " + id + ", got " + Describe(e);
  }
  return "";
}

// "" when every event has from <= ts < to.
std::string CheckTimes(int64_t from_ms, int64_t to_ms, const std::vector<query::Event>& events) {
  for (const query::Event& e : events) {
    if (e.ts_ms < from_ms || e.ts_ms >= to_ms) {
      return "outside [" + std::to_string(from_ms) + ", " + std::to_string(to_ms) +
             "): " + Describe(e);
    }
  }
  return "";
}

// "" when the events are strictly ordered, newest first for kDesc.
std::string CheckOrder(query::Order order, const std::vector<query::Event>& events) {
  for (size_t i = 1; i < events.size(); ++i) {
    const bool ordered = order == query::Order::kDesc ? KeyOf(events[i - 1]) > KeyOf(events[i])
                                                      : KeyOf(events[i - 1]) < KeyOf(events[i]);
    if (!ordered) {
      return std::string(order == query::Order::kDesc ? "desc" : "asc") + " order broken at " +
             std::to_string(i) + ": " + Describe(events[i - 1]) + " then " + Describe(events[i]);
    }
  }
  return "";
}

}  // namespace

void ProducedLog::Register(const ProducedRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  by_seq_[record.seq] = record;
}

void ProducedLog::Acknowledge(int64_t seq, int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_seq_.find(seq);
  if (it == by_seq_.end() || offset < 0) return;
  it->second.offset = offset;
  if (it->second.reject_reason.empty()) ++acked_good_;
}

size_t ProducedLog::acked_good() const {
  std::lock_guard<std::mutex> lock(mu_);
  return acked_good_;
}

std::vector<ProducedRecord> ProducedLog::Snapshot() const {
  std::map<int64_t, ProducedRecord> ordered;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ordered.insert(by_seq_.begin(), by_seq_.end());
  }
  std::vector<ProducedRecord> out;
  out.reserve(ordered.size());
  for (auto& [seq, record] : ordered) out.push_back(std::move(record));
  return out;
}

std::string ProducedLog::CheckEvent(const query::Event& event) {
  ordered_json payload;
  int64_t seq = -1;
  try {
    payload = ordered_json::parse(event.payload);
    seq = payload.at("seq").get<int64_t>();
  } catch (const std::exception& e) {
    return "a payload without a seq (" + std::string(e.what()) + "): " + Describe(event);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_seq_.find(seq);
  if (it == by_seq_.end()) return "an event never produced: " + Describe(event);
  const ProducedRecord& r = it->second;
  if (!r.reject_reason.empty()) {
    return "a record that must be rejected (" + r.reject_reason +
           ") was stored: " + Describe(event);
  }
  if (event.id != r.id || event.ts_ms != r.ts_ms || event.topic != topic_ ||
      event.partition != r.partition) {
    return "an event differs from its record (id " + r.id + ", ts " + std::to_string(r.ts_ms) +
           ", partition " + std::to_string(r.partition) + "): " + Describe(event);
  }
  if (payload != ordered_json::parse(r.value)) {
    return "a payload differs from the record value " + r.value + ": " + Describe(event);
  }
  // Not acknowledged yet, or at another offset: CheckDeferred decides once the run has read the
  // topic back and knows the broker's copies.
  if (r.offset != event.offset) deferred_.emplace_back(seq, event.offset);
  return "";
}

std::string ProducedLog::CheckDeferred() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [seq, offset] : deferred_) {
    const ProducedRecord& r = by_seq_.at(seq);
    if (r.offset == offset) continue;
    auto copy = copies_.find({r.partition, offset});
    if (copy != copies_.end() && copy->second == seq) continue;
    return "seq " + std::to_string(seq) + " was answered at offset " + std::to_string(offset) +
           ", the broker holds it at " + std::to_string(r.offset) + " (and no copy there)";
  }
  return "";
}

void ProducedLog::AddBrokerCopy(int64_t seq, int32_t partition, int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_seq_.find(seq);
  if (it == by_seq_.end()) return;
  if (copies_.emplace(std::make_pair(partition, offset), seq).second &&
      it->second.reject_reason.empty()) {
    ++good_copies_;
  }
}

std::vector<std::tuple<int64_t, int32_t, int64_t>> ProducedLog::BrokerCopies() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::tuple<int64_t, int32_t, int64_t>> out;
  for (const auto& [where, seq] : copies_) out.emplace_back(seq, where.first, where.second);
  return out;
}

size_t ProducedLog::stored_good() const {
  std::lock_guard<std::mutex> lock(mu_);
  return acked_good_ + good_copies_;
}

bool ParseEventsAnswer(const std::string& body, std::string* answered_id,
                       std::vector<query::Event>* events, std::string* error) {
  try {
    const ordered_json answer = ordered_json::parse(body);
    *answered_id = answer.at("event_id").get<std::string>();
    for (const auto& e : answer.at("events")) events->push_back(EventFromJson(e.dump()));
    return true;
  } catch (const std::exception& e) {
    *error = std::string("unparsable answer (") + e.what() + "): " + body.substr(0, 300);
    return false;
  }
}

bool ParseScanLine(const std::string& line, query::Event* event, std::string* error) {
  try {
    const ordered_json j = ordered_json::parse(line);
    if (j.contains("error")) {
      *error = j.at("error").dump();
      return false;
    }
    *event = EventFromJson(line);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("unparsable scan line (") + e.what() + "): " + line.substr(0, 300);
    return false;
  }
}

std::string CheckLatestAnswer(const std::string& id, int n, const std::vector<query::Event>& events,
                              ProducedLog* log) {
  for (std::string problem : {CheckEventsAndDuplicates(events, n, log), CheckIds(id, events),
                              CheckOrder(query::Order::kDesc, events)}) {
    if (!problem.empty()) return "latest " + id + " n=" + std::to_string(n) + ": " + problem;
  }
  return "";
}

std::string CheckRangeAnswer(const std::string& id, int64_t from_ms, int64_t to_ms, int64_t limit,
                             query::Order order, const std::vector<query::Event>& events,
                             ProducedLog* log) {
  for (std::string problem : {CheckEventsAndDuplicates(events, limit, log), CheckIds(id, events),
                              CheckTimes(from_ms, to_ms, events), CheckOrder(order, events)}) {
    if (!problem.empty()) return "range " + id + ": " + problem;
  }
  return "";
}

std::string CheckScanAnswer(int64_t from_ms, int64_t to_ms, int64_t limit,
                            const std::vector<query::Event>& events, ProducedLog* log) {
  for (std::string problem :
       {CheckEventsAndDuplicates(events, limit, log), CheckTimes(from_ms, to_ms, events)}) {
    if (!problem.empty()) return "scan: " + problem;
  }
  return "";
}

}  // namespace hotrow::testing::fault
