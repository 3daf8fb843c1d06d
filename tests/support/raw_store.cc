#include "tests/support/raw_store.h"

#include <gtest/gtest.h>

#include "store/store_metadata.h"

namespace hotrow::testing {

std::unique_ptr<RawStore> RawStore::Open(const std::string& path) {
  std::unique_ptr<RawStore> raw(new RawStore());
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &raw->names_);
  if (!s.ok()) {
    ADD_FAILURE() << "cannot list the column families of " << path << ": " << s.ToString();
    return nullptr;
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : raw->names_) {
    rocksdb::ColumnFamilyOptions cf;
    if (name == rocksdb::kDefaultColumnFamilyName) {
      cf.merge_operator = store::NewMetadataMergeOperator();
    }
    descriptors.emplace_back(name, cf);
  }
  rocksdb::DB* db = nullptr;
  s = rocksdb::DB::Open(rocksdb::DBOptions(), path, descriptors, &raw->handles_, &db);
  if (!s.ok()) {
    ADD_FAILURE() << "cannot open " << path << " with RocksDB: " << s.ToString();
    return nullptr;
  }
  raw->db_.reset(db);
  if (raw->names_.front() != rocksdb::kDefaultColumnFamilyName) {
    ADD_FAILURE() << path << ": the first column family is not the metadata's";
    return nullptr;
  }
  return raw;
}

RawStore::~RawStore() {
  if (db_ == nullptr) return;
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    EXPECT_TRUE(db_->DestroyColumnFamilyHandle(h).ok());
  }
  EXPECT_TRUE(db_->Close().ok());
}

rocksdb::ColumnFamilyHandle* RawStore::Bucket(int64_t start_ms, int64_t end_ms) const {
  const std::string name = store::BucketName(start_ms, end_ms);
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i].rfind(name, 0) == 0) return handles_[i];
  }
  return nullptr;
}

}  // namespace hotrow::testing
