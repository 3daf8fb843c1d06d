#include "store/block_reads.h"

#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>

namespace hotrow::store {

void CountBlockReadsOnThisThread() {
  if (rocksdb::GetPerfLevel() < rocksdb::PerfLevel::kEnableCount) {
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
    rocksdb::get_perf_context()->Reset();
  }
}

void CountBlockReadTimesOnThisThread() {
  if (rocksdb::GetPerfLevel() < rocksdb::PerfLevel::kEnableTimeExceptForMutex) {
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableTimeExceptForMutex);
    rocksdb::get_perf_context()->Reset();
  }
}

BlockReads BlockReadsOnThisThread() {
  const rocksdb::PerfContext& p = *rocksdb::get_perf_context();
  BlockReads r;
  r.cache_hits = p.block_cache_hit_count;
  r.index_filter_hits = p.block_cache_index_hit_count + p.block_cache_filter_hit_count;
  r.file_reads = p.block_read_count;
  r.index_filter_reads = p.index_block_read_count + p.filter_block_read_count;
  r.file_read_bytes = p.block_read_byte;
  r.read_nanos = p.block_read_time;
  r.checksum_nanos = p.block_checksum_time;
  r.decompress_nanos = p.block_decompress_time;
  r.data_block_nanos = p.new_table_block_iter_nanos;
  r.seek_nanos = p.seek_child_seek_time;
  return r;
}

}  // namespace hotrow::store
