#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "keying/index_key.h"
#include "keying/row_key.h"

namespace hotrow::store {

// One row as it was stored: its key as written (under salt_by adaptive, with the salt the store
// chose), its value (keying/row_value.h: the id and the payload) and the indexed fields found in
// it (Row::index; each one the bucket indexes has its index row). The views point into the Write's
// input and are valid only during the call that passes them.
struct WrittenRow {
  keying::RowKey key;
  std::string_view value;
  std::span<const keying::IndexEntry> index = {};
};

// Told of every row the store holds from the moment it is added (EventStore::AddWriteObserver)
// and of every bucket the store drops, so that something kept beside the store (the query
// engine's last-N cache, query/last_cache.h) can stay equal to it.
//
// Operation:
// - RowsWritten runs once per successful EventStore::Write, after its WriteBatch is durable and
//   visible to readers and before the Write returns, on the writing thread, with every row the
//   Write stored and no other (no duplicate, expired or future row; nothing of a Write that
//   failed). Several Writes run in parallel, so RowsWritten may run on several threads at once.
// - BucketsDropped runs after DropExpiredBuckets dropped buckets, before it returns: every row
//   with ts < `until_ms` is gone from the store.
//
// Neither call may call back into the store's Write or DropExpiredBuckets; both should be quick
// (a Write waits for RowsWritten). Neither may fail: the store's write is already done.
class WriteObserver {
 public:
  virtual ~WriteObserver() = default;
  virtual void RowsWritten(std::span<const WrittenRow> rows) = 0;
  virtual void BucketsDropped(int64_t until_ms) = 0;
};

}  // namespace hotrow::store
