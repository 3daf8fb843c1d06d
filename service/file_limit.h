#pragma once

#include <cstdint>

#include "common/status.h"
#include "config/config.h"

namespace hotrow::service {

// File descriptors kept aside for everything but client connections: RocksDB's table files and
// WAL (every bucket's files stay open), librdkafka's sockets to the brokers, the peers' clients,
// the log and the listener. A store of a 10-minute window in 1-minute buckets holds a few hundred
// files.
inline constexpr uint64_t kReservedFiles = 1024;

// The descriptors a configuration needs at most: http.max_connections (streams are connections)
// and kReservedFiles.
uint64_t FilesNeeded(const config::Config& config);

// At start (CONTRACT.md "The HTTP core"): raises the soft limit on open files to the hard one,
// then checks that the configuration fits in it. InvalidArgument naming the numbers (exit 2) when
// it does not. With `raise` false (check-config), only checks against the hard limit.
Status FitFileLimit(const config::Config& config, bool raise);

}  // namespace hotrow::service
