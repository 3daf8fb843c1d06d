#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

// What a decoder made of each schema id (an Avro writer, a Protobuf pool), and the ids it could
// not make anything of.
//
// - Made schemas are bounded by count and the least recently used is evicted past it: a topic
//   whose producers register a schema per deploy, or a hostile one naming new ids, cannot grow
//   the poller's memory without end. An evicted id is fetched again when a record names it.
// - A failure (a reference the registry has no such subject or version for, a schema that does
//   not parse or build, one of another type) is remembered for `failure_ttl_ms` of the steady
//   clock, as RememberNotFound remembers a 404 for an id: a run of records of a broken schema is
//   rejected without a request per record. Only the record's-fault failures are remembered; a
//   registry that cannot be asked is never cached (the record waits).
//
// Thread-safety: not thread-safe; one per decoder.
namespace hotrow::ingest {

// The default bound on the schemas a decoder keeps made.
inline constexpr size_t kMaxCachedSchemas = 1000;

template <typename Made>
class SchemaCache {
 public:
  explicit SchemaCache(size_t max_schemas = kMaxCachedSchemas, int64_t failure_ttl_ms = 10000)
      : max_schemas_(max_schemas < 1 ? 1 : max_schemas), failure_ttl_ms_(failure_ttl_ms) {}

  // The schema made for `id`, now the most recently used; nullptr when there is none.
  Made* Find(uint32_t id) {
    auto it = index_.find(id);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second.get();
  }

  // Keeps `made` for `id` (replacing any) and returns it; evicts the least recently used past
  // the bound (never `made`).
  Made* Insert(uint32_t id, std::unique_ptr<Made> made) {
    if (auto it = index_.find(id); it != index_.end()) {
      lru_.erase(it->second);
      index_.erase(it);
    }
    lru_.emplace_front(id, std::move(made));
    index_[id] = lru_.begin();
    while (lru_.size() > max_schemas_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return lru_.front().second.get();
  }

  // The failure remembered for `id` (why), or nullptr when none or it has expired.
  const std::string* Failure(uint32_t id) {
    auto it = failures_.find(id);
    if (it == failures_.end()) return nullptr;
    if (NowMs() >= it->second.first) {
      failures_.erase(it);
      return nullptr;
    }
    return &it->second.second;
  }

  void RememberFailure(uint32_t id, std::string detail) {
    if (failures_.size() >= max_schemas_) failures_.clear();
    failures_[id] = {NowMs() + failure_ttl_ms_, std::move(detail) + " (remembered)"};
  }

  size_t size() const { return lru_.size(); }

 private:
  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  const size_t max_schemas_;
  const int64_t failure_ttl_ms_;
  std::list<std::pair<uint32_t, std::unique_ptr<Made>>> lru_;  // most recently used first
  std::unordered_map<uint32_t, typename decltype(lru_)::iterator> index_;
  std::unordered_map<uint32_t, std::pair<int64_t, std::string>> failures_;  // until, why
};

}  // namespace hotrow::ingest
