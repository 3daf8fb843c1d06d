#include "live/replay.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "query/index_query.h"
#include "wire/event_json.h"

namespace hotrow::live {
namespace {

// The owed events seen so far, at most `max` of them: the lowest by (topic, partition, offset).
// A max-heap on that order, so that the highest kept gives way to a lower one.
class LowestOwed {
 public:
  explicit LowestOwed(size_t max) : max_(max) {}

  void Add(query::Event&& e) {
    ++owed_;
    if (max_ == 0) return;
    if (heap_.size() == max_) {
      if (!Less(e, heap_.front())) return;
      std::pop_heap(heap_.begin(), heap_.end(), Less);
      heap_.back() = std::move(e);
    } else {
      heap_.push_back(std::move(e));
    }
    std::push_heap(heap_.begin(), heap_.end(), Less);
  }

  Replay Finish() && {
    std::sort_heap(heap_.begin(), heap_.end(), Less);
    Replay out;
    out.truncated = owed_ > heap_.size();
    out.events.reserve(heap_.size());
    for (const query::Event& e : heap_) out.events.push_back(MakeLiveEvent(e));
    return out;
  }

 private:
  static bool Less(const query::Event& a, const query::Event& b) {
    return std::tie(a.topic, a.partition, a.offset) < std::tie(b.topic, b.partition, b.offset);
  }
  const size_t max_;
  size_t owed_ = 0;
  std::vector<query::Event> heap_;
};

}  // namespace

LiveEventPtr MakeLiveEvent(const query::Event& e) {
  auto live = std::make_shared<LiveEvent>();
  live->id = e.id;
  live->tp = {e.topic, e.partition};
  live->offset = e.offset;
  live->ts_ms = e.ts_ms;
  wire::AppendEventJson(e, &live->json);
  return live;
}

Result<Replay> ReadReplay(store::EventStore* store, query::QueryEngine* engine,
                          const StreamSpec& spec, const StreamPosition& after,
                          const StreamPosition& start, const query::PartitionFilter* filter,
                          size_t max_events) {
  store::TopicPartition tp;
  auto owed = [&](const std::string& topic, int32_t partition, int64_t offset) {
    tp.topic = topic;
    tp.partition = partition;
    return offset >= after.NextOf(tp) && offset < start.NextOf(tp);
  };
  LowestOwed kept(max_events);
  const int64_t from = store->WindowStartMs();
  const int64_t to = std::numeric_limits<int64_t>::max();
  switch (spec.kind) {
    case StreamSpec::Kind::kId: {
      const query::EventSink sink = [&](const query::Event& e) {
        if (owed(e.topic, e.partition, e.offset)) kept.Add(query::Event(e));
        return true;
      };
      HOTROW_RETURN_IF_ERROR(engine->RangeEach(spec.id, from, to, sink, filter));
      break;
    }
    case StreamSpec::Kind::kIndex: {
      // Topic numbers as the postings carry them, named once each.
      std::map<uint16_t, std::optional<std::string>> names;
      auto want = [&](const keying::RowKey& key) {
        auto it = names.find(key.topic);
        if (it == names.end()) it = names.emplace(key.topic, store->TopicName(key.topic)).first;
        return it->second.has_value() && owed(*it->second, key.partition, key.offset);
      };
      const query::EventSink sink = [&](const query::Event& e) {
        kept.Add(query::Event(e));
        return true;
      };
      query::IndexQuery index(store, nullptr, filter);
      HOTROW_RETURN_IF_ERROR(index.Each(spec.field, spec.value, from, to, want, sink));
      break;
    }
    case StreamSpec::Kind::kLatest: {
      std::string page_after;
      while (true) {
        Result<query::LatestAllPage> page =
            engine->LatestAll(spec.prefix, page_after, query::kMaxLatestAllLimit, filter);
        if (!page.ok()) return page.status();
        for (query::Event& e : page->events) {
          if (owed(e.topic, e.partition, e.offset)) kept.Add(std::move(e));
        }
        if (!page->next) break;
        page_after = *page->next;
      }
      break;
    }
  }
  return std::move(kept).Finish();
}

}  // namespace hotrow::live
