#include "store/rocks_support.h"

#include <rocksdb/env.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <filesystem>

#include "common/sanitizers.h"
#include "common/thread_priority.h"

#ifdef HOTROW_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

namespace hotrow::store {
namespace {

// RocksDB's own log, sent to spdlog instead of a LOG file in the store directory. On a full disk
// the LOG file is the first write to fail, and the librocksdb Debian ships keeps its assertions:
// the next line logged after a failed append aborts the process. A full disk must only pause
// ingestion, so RocksDB writes no file of its own besides the database. Warnings and errors
// (background errors, recovery) still reach the service log.
class SpdlogRocksLogger final : public rocksdb::Logger {
 public:
  SpdlogRocksLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    char line[1024];
    std::vsnprintf(line, sizeof(line), format, ap);
    spdlog::log(
        level >= rocksdb::InfoLogLevel::ERROR_LEVEL ? spdlog::level::err : spdlog::level::warn,
        "rocksdb: {}", line);
  }
};

// The default Env, except that it does not tell RocksDB how much disk is free. RocksDB's own
// recovery from a full disk waits until a whole memtable's worth (the largest write_buffer_size,
// 32-64 MiB) is free, which a small disk may never have, and while it waits DB::Resume() is
// refused. Without a free-space figure RocksDB leaves the recovery to the store
// (ResumeAfterFailedWrite), which retries as soon as the next write comes.
class NoFreeSpaceEnvImpl final : public rocksdb::EnvWrapper {
 public:
  NoFreeSpaceEnvImpl() : rocksdb::EnvWrapper(rocksdb::Env::Default()) {}
  static const char* kClassName() { return "HotrowNoFreeSpaceEnv"; }
  const char* Name() const override { return kClassName(); }
  rocksdb::Status GetFreeSpace(const std::string&, uint64_t*) override {
    return rocksdb::Status::NotSupported("hotrow recovers from a full disk itself");
  }
};

}  // namespace

Status FromRocks(const rocksdb::Status& s, const std::string& context) {
  if (s.ok()) return Status::Ok();
  std::string msg = context + ": " + s.ToString();
  if (s.IsNoSpace()) return Status::NoSpace(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument() || s.IsNotSupported()) return Status::InvalidArgument(msg);
  return Status::IOError(msg);
}

uint64_t DirectoryBytes(const std::string& path) {
  std::error_code ec;
  uint64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

std::shared_ptr<rocksdb::Logger> NewSpdlogRocksLogger() {
  return std::make_shared<SpdlogRocksLogger>();
}

rocksdb::Env* NoFreeSpaceEnv() {
  static NoFreeSpaceEnvImpl env;  // stateless; shared by every store
  return &env;
}

rocksdb::Status WriteToDb(rocksdb::DB* db, const rocksdb::WriteOptions& options,
                          rocksdb::WriteBatch* batch) {
#ifdef HOTROW_TSAN
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  rocksdb::Status s = db->Write(options, batch);
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  return s;
#else
  return db->Write(options, batch);
#endif
}

void BackgroundAsBatch::OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo&) {
  RunAsBatchThread();
}

void BackgroundAsBatch::OnCompactionBegin(rocksdb::DB*, const rocksdb::CompactionJobInfo&) {
  RunAsBatchThread();
}

}  // namespace hotrow::store
