#include "store/index_postings.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace hotrow::store {

uint64_t PostingBuilder::Add(RocksBucket* bucket, const keying::RowKey& key, const char* encoded,
                             const std::vector<keying::IndexEntry>& entries) {
  uint64_t bytes = 0;
  for (const keying::IndexEntry& e : entries) {
    if (e.field.size() > keying::kMaxIndexFieldSize ||
        e.value.size() > keying::kMaxIndexValueSize || !bucket->Indexes(e.field)) {
      continue;
    }
    entries_.push_back({bucket, keying::IndexHash(e.field, e.value),
                        keying::PostingSpanStart(key.ts_ms), e.field, e.value, key, encoded});
    bytes += keying::kRowKeySize;
  }
  return bytes;
}

std::vector<PostingBuilder::Posting> PostingBuilder::Finish() {
  auto group = [](const Entry& e) {
    return std::make_tuple(e.bucket->start_ms(), e.value_hash, e.span, e.field, e.value);
  };
  // Stable: a posting lists its events in the order they were added (the batch's key order, so
  // that a query reading them seeks forward).
  std::stable_sort(entries_.begin(), entries_.end(),
                   [&](const Entry& a, const Entry& b) { return group(a) < group(b); });
  std::vector<Posting> postings;
  for (size_t first = 0; first < entries_.size();) {
    size_t end = first + 1;
    while (end < entries_.size() && group(entries_[end]) == group(entries_[first])) ++end;
    const Entry* newest = &entries_[first];
    auto place = [](const keying::RowKey& k) {
      return std::make_tuple(k.ts_ms, k.topic, k.partition, k.offset);
    };
    Posting& p = postings.emplace_back();
    p.bucket = entries_[first].bucket;
    keying::EncodePostingHeaderTo(entries_[first].field, entries_[first].value, &p.value);
    p.header_bytes = p.value.size();
    p.value.reserve(p.value.size() + (end - first) * keying::kRowKeySize);
    for (size_t i = first; i < end; ++i) {
      if (place(entries_[i].key) > place(newest->key)) newest = &entries_[i];
      keying::AppendPostingEvent(std::string_view(entries_[i].encoded, keying::kRowKeySize),
                                 &p.value);
    }
    keying::EncodeIndexKeyTo(keying::IndexKeyFor(newest->key, newest->value_hash), p.key);
    p.salt = newest->key.salt;
    first = end;
  }
  std::sort(postings.begin(), postings.end(), [](const Posting& a, const Posting& b) {
    if (a.bucket != b.bucket) return a.bucket->start_ms() < b.bucket->start_ms();
    return std::memcmp(a.key, b.key, keying::kIndexKeySize) < 0;
  });
  entries_.clear();
  return postings;
}

}  // namespace hotrow::store
