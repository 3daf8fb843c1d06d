#pragma once

#include <string>

#include "ingest/ingestor.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::http {

// The body of GET /v1/stats (CONTRACT.md): one JSON object,
//   {"ingested": N,                       events stored by this process
//    "records_consumed": N, "duplicates": N, "dead_lettered": N,
//    "rejected": {"not_json": N, ...},    every reason, zeros included
//    "lost_to_retention": N, "skipped_cold": N, "batches_discarded": N,
//    "batches_written": N, "batch_size_mean": X, "batch_write_seconds": X,
//    "lag": {"events/0": N, ...},         consumer lag per "topic/partition"
//    "partitions": [{"topic", "partition", "next_offset", "high_watermark", "lag", "paused",
//                    "lost_to_retention", "skipped_cold"}...],
//    "assigned": B, "stalled": B, "out_of_disk": B, "last_error": S,
//    "store": {"events", "now_ms", "window_start_ms", "ttl_ms", "bucket_ms", "clock"},
//    "buckets": [{"start": MS, "events": N, "bytes": N, "sorted_runs": N,
//                 "spread_ids": N}...],   oldest first; spread_ids: ids the bucket spread over
//                                         every salt under salt_by adaptive, 0 otherwise
//    "salt_by": "record"|"id"|"adaptive",
//    "salts": [{"salt": S, "events": N}...],
//    "last_cache": {"enabled", "depth", "ids", "bytes", "max_bytes", "evicted", "hits", "misses",
//                   "hit_rate", "rebuilding", "rebuild": {"whole", "buckets_done",
//                   "buckets_total", "rows", "seconds"}}}
// `ingest` is null when this process does not ingest: the ingest fields are then zero or empty.
// `cache` null leaves "last_cache" out.
std::string RenderStatsJson(const ingest::IngestStats* ingest, const store::StoreStats& store,
                            const store::StoreOptions& store_options,
                            const query::LastCacheStatus* cache = nullptr);

}  // namespace hotrow::http
