#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hotrow::testing {

// A closed hotrow store opened with RocksDB itself, for tests that rewrite or damage what the
// store wrote: every column family, the metadata's with the store's merge operator (without it a
// flush drops the counters' merge operands). Closed, its handles destroyed, on destruction.
class RawStore {
 public:
  // Null, with a test failure naming the reason, when the store cannot be opened.
  static std::unique_ptr<RawStore> Open(const std::string& path);
  ~RawStore();
  RawStore(const RawStore&) = delete;
  RawStore& operator=(const RawStore&) = delete;

  rocksdb::DB* db() const { return db_.get(); }
  // Every column family, the metadata's (the default) first.
  const std::vector<rocksdb::ColumnFamilyHandle*>& handles() const { return handles_; }
  rocksdb::ColumnFamilyHandle* metadata() const { return handles_.front(); }
  // The column family of the bucket [start_ms, end_ms); null when the store has none.
  rocksdb::ColumnFamilyHandle* Bucket(int64_t start_ms, int64_t end_ms) const;

 private:
  RawStore() = default;
  std::vector<std::string> names_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace hotrow::testing
