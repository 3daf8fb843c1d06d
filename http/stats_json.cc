#include "http/stats_json.h"

#include <nlohmann/json.hpp>

#include "keying/salter.h"

namespace hotrow::http {

std::string RenderStatsJson(const ingest::IngestStats* ingest, const store::StoreStats& store,
                            const store::StoreOptions& store_options,
                            const query::LastCacheStatus* cache) {
  using nlohmann::ordered_json;
  ingest::IngestStats none;
  const ingest::IngestStats& in = ingest != nullptr ? *ingest : none;

  ordered_json j;
  j["ingested"] = in.events_stored;
  j["records_consumed"] = in.records_consumed;
  j["duplicates"] = in.duplicates;
  ordered_json rejected = ordered_json::object();
  for (const char* reason : ingest::kRejectReasons) rejected[reason] = 0;
  for (const auto& [reason, count] : in.rejected) rejected[reason] = count;
  j["rejected"] = std::move(rejected);
  j["dead_lettered"] = in.dead_lettered;
  j["lost_to_retention"] = in.lost_to_retention;
  j["skipped_cold"] = in.skipped_cold;
  j["route_broken"] = in.route_broken;
  j["index_skipped"] = {{"absent", in.index_absent},
                        {"not_scalar", in.index_not_scalar},
                        {"too_long", in.index_too_long}};
  j["batches_discarded"] = in.batches_discarded;
  j["batches_written"] = in.batches_written;
  j["batch_size_mean"] = in.batches_written == 0 ? 0.0
                                                 : static_cast<double>(in.batch_events_sum) /
                                                       static_cast<double>(in.batches_written);
  j["batch_write_seconds"] = in.batch_write_seconds_sum;

  ordered_json lag = ordered_json::object();
  ordered_json partitions = ordered_json::array();
  for (const auto& p : in.partitions) {
    lag[p.topic + "/" + std::to_string(p.partition)] = p.lag;
    partitions.push_back({{"topic", p.topic},
                          {"partition", p.partition},
                          {"next_offset", p.next_offset},
                          {"high_watermark", p.high_watermark},
                          {"lag", p.lag},
                          {"paused", p.paused},
                          {"lost_to_retention", p.lost_to_retention},
                          {"skipped_cold", p.skipped_cold}});
  }
  j["lag"] = std::move(lag);
  j["partitions"] = std::move(partitions);
  j["assigned"] = in.assigned;
  j["stalled"] = in.stalled;
  j["out_of_disk"] = in.out_of_disk;
  j["last_error"] = in.last_error;
  // Partitions waiting for the schema registry (ingest.format avro / protobuf).
  j["schema_registry"] = {{"waiting", in.held_partitions > 0},
                          {"held_partitions", in.held_partitions},
                          {"waiting_ms", in.registry_wait_ms},
                          {"reason", in.registry_wait},
                          {"fetches_waiting", in.schema_fetches_waiting},
                          {"fetch_failures", in.schema_fetch_failures}};

  j["store"] = {{"events", store.events},
                {"now_ms", store.now_ms},
                {"window_start_ms", store.window_start_ms},
                {"ttl_ms", store_options.ttl_ms},
                {"bucket_ms", store_options.bucket_ms},
                {"clock", store_options.clock == store::ClockKind::kStream ? "stream" : "wall"}};
  ordered_json buckets = ordered_json::array();
  for (const auto& b : store.buckets) {
    buckets.push_back({{"start", b.start_ms},
                       {"events", b.events},
                       {"bytes", b.bytes},
                       {"sorted_runs", b.sorted_runs},
                       {"spread_ids", b.spread_ids}});
  }
  j["buckets"] = std::move(buckets);
  j["salt_by"] = std::string(keying::SaltByName(store_options.salt_by));
  ordered_json salts = ordered_json::array();
  for (size_t s = 0; s < store.salt_events.size(); ++s) {
    salts.push_back({{"salt", s}, {"events", store.salt_events[s]}});
  }
  j["salts"] = std::move(salts);
  if (cache != nullptr) {
    const query::LastCacheStats& c = cache->cache;
    const uint64_t asked = c.hits + c.misses;
    j["last_cache"] = {
        {"enabled", cache->enabled},
        {"depth", cache->depth},
        {"ids", c.ids},
        {"bytes", c.bytes},
        {"max_bytes", c.max_bytes},
        {"evicted", c.evicted},
        {"hits", c.hits},
        {"misses", c.misses},
        {"hit_rate", asked == 0 ? 0.0 : static_cast<double>(c.hits) / static_cast<double>(asked)},
        {"rebuilding", cache->rebuild.running},
        {"rebuild",
         {{"whole", cache->rebuild.whole},
          {"buckets_done", cache->rebuild.buckets_done},
          {"buckets_total", cache->rebuild.buckets_total},
          {"rows", cache->rebuild.rows},
          {"seconds", cache->rebuild.seconds}}}};
  }
  // Topic names and the last error may hold any bytes: replace what is not UTF-8.
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

}  // namespace hotrow::http
