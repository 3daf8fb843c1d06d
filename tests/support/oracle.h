#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "query/query_engine.h"

namespace hotrow::testing {

// A brute-force model of what CONTRACT.md promises for latest / range / scan, to compare the query
// engine against. It holds every stored event in memory and answers by filtering and sorting.
//
// Semantics it implements:
// - the window: only events with ts >= window_start_ms (the store's now - ttl) are visible;
// - range and scan: from_ms <= ts < to_ms;
// - order: newest first; ties in ts by (topic NAME, partition, offset) descending, whatever number
//   the store gave each topic (query/topic_order.h; `topic_number` passed to Add is not used for
//   the order);
// - asc order is the exact reverse of that;
// - latest n / range limit: the first n / limit of that order;
// - scan: the same set as range over every id; its order is unspecified, so Scan returns it in a
//   canonical order and SortCanonical puts the engine's answer in the same one.
//
// Events are kept as given: the caller adds only events the store accepted (stored, not expired,
// not future, not duplicate).
//
// Thread-safety: not thread-safe; const methods may be called concurrently.
class Oracle {
 public:
  // Records a stored event. `topic_number` is the store's number for event.topic.
  void Add(const query::Event& event, uint16_t topic_number);

  size_t size() const { return all_.size(); }

  std::vector<query::Event> Latest(std::string_view id, int n, int64_t window_start_ms) const;
  std::vector<query::Event> Range(std::string_view id, int64_t from_ms, int64_t to_ms,
                                  int64_t limit, query::Order order, int64_t window_start_ms) const;
  // Every visible event with from_ms <= ts < to_ms, in canonical order.
  std::vector<query::Event> Scan(int64_t from_ms, int64_t to_ms, int64_t window_start_ms) const;

  // A total order on events (ts, topic, partition, offset, id, payload), for comparing sets.
  static bool CanonicalLess(const query::Event& a, const query::Event& b);
  static void SortCanonical(std::vector<query::Event>* events);

 private:
  struct Entry {
    query::Event event;
    uint16_t topic_number;
  };
  // Newest first, ties by (topic name, partition, offset) descending.
  static bool NewerFirst(const Entry& a, const Entry& b);
  std::vector<Entry> Visible(const std::vector<Entry>& entries, int64_t from_ms, int64_t to_ms,
                             int64_t window_start_ms) const;

  std::vector<Entry> all_;
  std::unordered_map<std::string, std::vector<Entry>> by_id_;
};

// "id=... ts=... topic/partition@offset payload=...", with non-printable bytes escaped.
std::string Describe(const query::Event& event);

// Empty when `got` equals `expected` element by element; else says how they differ: sizes, the
// first differing position with both events, and a few events around it.
std::string DiffEvents(const std::vector<query::Event>& expected,
                       const std::vector<query::Event>& got);

}  // namespace hotrow::testing
