#pragma once

#include <cstdint>

namespace hotrow::store {

// The block reads RocksDB made for the calling thread's reads since the thread started counting
// (RocksDB's per-thread perf context): blocks found in the block cache, and blocks read from a
// table file (from the page cache, or from the disk when the page cache did not hold them; the
// process's /proc/self/io read_bytes tells those apart). For benchmarks and diagnostics.
struct BlockReads {
  uint64_t cache_hits = 0;         // data, index and filter blocks found in the block cache
  uint64_t index_filter_hits = 0;  // of those, index and filter blocks
  uint64_t file_reads = 0;         // blocks read from table files (block cache misses)
  uint64_t index_filter_reads = 0;  // of those, index and filter blocks
  uint64_t file_read_bytes = 0;

  BlockReads operator-(const BlockReads& before) const {
    return {cache_hits - before.cache_hits, index_filter_hits - before.index_filter_hits,
            file_reads - before.file_reads, index_filter_reads - before.index_filter_reads,
            file_read_bytes - before.file_read_bytes};
  }
};

// Starts counting on the calling thread (counts only, no timers: a few increments per block).
// Other threads are not affected.
void CountBlockReadsOnThisThread();

// What the calling thread has counted so far; zeros when it never started.
BlockReads BlockReadsOnThisThread();

}  // namespace hotrow::store
