#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "keying/index_key.h"
#include "keying/row_key.h"
#include "store/rocks_bucket.h"

namespace hotrow::store {

// Gathers the index entries of one write batch into postings (keying/index_key.h): one per
// bucket, (field, value) and aligned second, listing the batch's events with that value.
//
// Operation: Add every event the batch stores, then Finish once. Not thread-safe (one per Write).
class PostingBuilder {
 public:
  // One posting, encoded, with the salt of its newest event (whose counters carry its key and
  // header bytes).
  struct Posting {
    RocksBucket* bucket = nullptr;
    char key[keying::kIndexKeySize];
    std::string value;
    size_t header_bytes = 0;  // of `value`, before its list of events
    uint8_t salt = 0;
  };

  // Notes the entries of the event with data key `key` (`encoded`: its kRowKeySize bytes, which
  // must stay valid until Finish) placed in `bucket`, for the fields `bucket` indexes. Returns
  // the bytes the event adds to the postings (its data key once per entry kept). An entry too
  // long for the format is skipped (the parser never makes one).
  uint64_t Add(RocksBucket* bucket, const keying::RowKey& key, const char* encoded,
               const std::vector<keying::IndexEntry>& entries);

  // The postings, in the order a memtable takes them fastest: by bucket, then by key.
  std::vector<Posting> Finish();

 private:
  struct Entry {
    RocksBucket* bucket;
    uint64_t value_hash;
    int64_t span;  // keying::PostingSpanStart of the event's time
    std::string_view field;
    std::string_view value;
    keying::RowKey key;
    const char* encoded;
  };
  std::vector<Entry> entries_;
};

}  // namespace hotrow::store
