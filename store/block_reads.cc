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

BlockReads BlockReadsOnThisThread() {
  const rocksdb::PerfContext& p = *rocksdb::get_perf_context();
  BlockReads r;
  r.cache_hits = p.block_cache_hit_count;
  r.index_filter_hits = p.block_cache_index_hit_count + p.block_cache_filter_hit_count;
  r.file_reads = p.block_read_count;
  r.index_filter_reads = p.index_block_read_count + p.filter_block_read_count;
  r.file_read_bytes = p.block_read_byte;
  return r;
}

}  // namespace hotrow::store
