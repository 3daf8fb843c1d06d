// Test helpers of tests/store: the rows of an id read through per-id cursors, and a store's table
// files counted by a property read with RocksDB's SstFileReader.
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "keying/row_key.h"
#include "store/event_store.h"

namespace hotrow::store::table_files {

// Rows of `id` in every bucket and salt, read through per-id cursors (index and filter consulted).
inline uint64_t RowsOf(EventStore* store, const std::string& id) {
  uint64_t rows = 0;
  for (const auto& bucket : store->Buckets()) {
    for (int salt = 0; salt < store->salter().salts(); ++salt) {
      auto it = bucket->NewIterator(
          keying::IdKeyRange(static_cast<uint8_t>(salt), keying::IdHash(id)), true);
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++rows;
      EXPECT_TRUE(it->status().ok()) << it->status().ToString();
    }
  }
  return rows;
}

// The table files under `path` counted by `kind` of their properties; a file whose kind is empty
// is not counted.
inline std::map<std::string, int> TableFilesBy(
    const std::string& path,
    const std::function<std::string(const rocksdb::TableProperties&)>& kind) {
  std::map<std::string, int> kinds;
  rocksdb::Options options;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.path().extension() != ".sst") continue;
    rocksdb::SstFileReader reader(options);
    const rocksdb::Status s = reader.Open(entry.path().string());
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) continue;
    const std::string k = kind(*reader.GetTableProperties());
    if (!k.empty()) ++kinds[k];
  }
  return kinds;
}

}  // namespace hotrow::store::table_files
