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
  // Nanoseconds, counted only after CountBlockReadTimesOnThisThread: the read calls of the table
  // files (the page cache's copy, or the disk), the checksums of the blocks read, their
  // decompression, and everything that fetched the data blocks seeks landed in (a block-cache
  // lookup, or the read, its checksum, decompression and insertion into the cache).
  uint64_t read_nanos = 0;
  uint64_t checksum_nanos = 0;
  uint64_t decompress_nanos = 0;
  uint64_t data_block_nanos = 0;
  // The seeks in table files and memtables, all included (index, filter, data block, the seek
  // inside it).
  uint64_t seek_nanos = 0;

  BlockReads operator-(const BlockReads& before) const {
    return {cache_hits - before.cache_hits,
            index_filter_hits - before.index_filter_hits,
            file_reads - before.file_reads,
            index_filter_reads - before.index_filter_reads,
            file_read_bytes - before.file_read_bytes,
            read_nanos - before.read_nanos,
            checksum_nanos - before.checksum_nanos,
            decompress_nanos - before.decompress_nanos,
            data_block_nanos - before.data_block_nanos,
            seek_nanos - before.seek_nanos};
  }
  BlockReads& operator+=(const BlockReads& more) {
    cache_hits += more.cache_hits;
    index_filter_hits += more.index_filter_hits;
    file_reads += more.file_reads;
    index_filter_reads += more.index_filter_reads;
    file_read_bytes += more.file_read_bytes;
    read_nanos += more.read_nanos;
    checksum_nanos += more.checksum_nanos;
    decompress_nanos += more.decompress_nanos;
    data_block_nanos += more.data_block_nanos;
    seek_nanos += more.seek_nanos;
    return *this;
  }
};

// Starts counting on the calling thread (counts only, no timers: a few increments per block).
// Other threads are not affected.
void CountBlockReadsOnThisThread();

// As CountBlockReadsOnThisThread, and times them too (a clock read around each step: tens of
// nanoseconds per block).
void CountBlockReadTimesOnThisThread();

// What the calling thread has counted so far; zeros when it never started.
BlockReads BlockReadsOnThisThread();

}  // namespace hotrow::store
