#include "tests/support/oracle.h"

#include <algorithm>
#include <tuple>

#include "tests/support/event_gen.h"

namespace hotrow::testing {

void Oracle::Add(const query::Event& event, uint16_t topic_number) {
  all_.push_back(Entry{event, topic_number});
  by_id_[event.id].push_back(Entry{event, topic_number});
}

bool Oracle::NewerFirst(const Entry& a, const Entry& b) {
  return std::tie(b.event.ts_ms, b.event.topic, b.event.partition, b.event.offset) <
         std::tie(a.event.ts_ms, a.event.topic, a.event.partition, a.event.offset);
}

std::vector<Oracle::Entry> Oracle::Visible(const std::vector<Entry>& entries, int64_t from_ms,
                                           int64_t to_ms, int64_t window_start_ms) const {
  std::vector<Entry> out;
  for (const Entry& e : entries) {
    const int64_t ts = e.event.ts_ms;
    if (ts >= window_start_ms && ts >= from_ms && ts < to_ms) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), NewerFirst);
  return out;
}

std::vector<query::Event> Oracle::Latest(std::string_view id, int n,
                                         int64_t window_start_ms) const {
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return {};
  std::vector<Entry> visible = Visible(it->second, INT64_MIN, INT64_MAX, window_start_ms);
  std::vector<query::Event> out;
  for (size_t i = 0; i < visible.size() && static_cast<int64_t>(i) < n; ++i) {
    out.push_back(visible[i].event);
  }
  return out;
}

std::vector<query::Event> Oracle::Range(std::string_view id, int64_t from_ms, int64_t to_ms,
                                        int64_t limit, query::Order order,
                                        int64_t window_start_ms) const {
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return {};
  std::vector<Entry> visible = Visible(it->second, from_ms, to_ms, window_start_ms);
  if (order == query::Order::kAsc) std::reverse(visible.begin(), visible.end());
  std::vector<query::Event> out;
  for (size_t i = 0; i < visible.size() && static_cast<int64_t>(i) < limit; ++i) {
    out.push_back(visible[i].event);
  }
  return out;
}

std::vector<query::Event> Oracle::Scan(int64_t from_ms, int64_t to_ms,
                                       int64_t window_start_ms) const {
  std::vector<query::Event> out;
  for (const Entry& e : Visible(all_, from_ms, to_ms, window_start_ms)) out.push_back(e.event);
  SortCanonical(&out);
  return out;
}

bool Oracle::CanonicalLess(const query::Event& a, const query::Event& b) {
  return std::tie(a.ts_ms, a.topic, a.partition, a.offset, a.id, a.payload) <
         std::tie(b.ts_ms, b.topic, b.partition, b.offset, b.id, b.payload);
}

void Oracle::SortCanonical(std::vector<query::Event>* events) {
  std::sort(events->begin(), events->end(), CanonicalLess);
}

std::string Describe(const query::Event& e) {
  return Describe(TestEvent{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload});
}

std::string DiffEvents(const std::vector<query::Event>& expected,
                       const std::vector<query::Event>& got) {
  if (expected == got) return "";
  size_t first = 0;
  while (first < expected.size() && first < got.size() && expected[first] == got[first]) ++first;
  std::string out = "expected " + std::to_string(expected.size()) + " events, got " +
                    std::to_string(got.size()) + "; first difference at index " +
                    std::to_string(first) + "\n";
  const size_t from = first >= 2 ? first - 2 : 0;
  for (size_t i = from; i < first + 3; ++i) {
    if (i >= expected.size() && i >= got.size()) break;
    out += "  [" + std::to_string(i) + "] expected " +
           (i < expected.size() ? Describe(expected[i]) : std::string("(none)")) + "\n";
    out += "  [" + std::to_string(i) + "]      got " +
           (i < got.size() ? Describe(got[i]) : std::string("(none)")) + "\n";
  }
  return out;
}

}  // namespace hotrow::testing
