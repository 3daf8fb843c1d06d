// Internal to store/: the small pieces every RocksDB-facing file of the store shares.
#pragma once

#include <rocksdb/env.h>
#include <rocksdb/status.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace hotrow::store {

// A RocksDB status as a hotrow Status, with `context` in front of RocksDB's message.
Status FromRocks(const rocksdb::Status& s, const std::string& context);

// The bytes of every regular file under `path` (0 when it cannot be read).
uint64_t DirectoryBytes(const std::string& path);

// RocksDB's own log (warnings and errors), sent to spdlog instead of a LOG file in the store.
std::shared_ptr<rocksdb::Logger> NewSpdlogRocksLogger();

// The default Env, except that it does not tell RocksDB how much disk is free. Stateless; shared.
rocksdb::Env* NoFreeSpaceEnv();

}  // namespace hotrow::store
