// The operational answers of the HTTP API: /readyz, /metrics and /v1/stats.

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cluster/cluster.h"
#include "http/server_impl.h"
#include "http/stats_json.h"
#include "live/stream_hub.h"
#include "wire/event_json.h"

namespace hotrow::http {

void HttpServer::Impl::Readyz(Response& res) {
  std::string reason;
  if (stopping.load()) {
    reason = "shutting down";
  } else if (backend.ingestor == nullptr) {
    reason = "not ingesting";
  } else {
    Status st = backend.ingestor->Ready();
    if (!st.ok()) reason = st.message().empty() ? st.ToString() : st.message();
  }
  if (reason.empty()) {
    SetJson(res, 200, "{\"ready\":true}");
    return;
  }
  std::string body = "{\"ready\":false,\"reason\":";
  wire::AppendJsonString(reason, &body);
  body.push_back('}');
  SetJson(res, 503, std::move(body));
}

void HttpServer::Impl::MetricsText(Response& res) {
  std::optional<ingest::IngestStats> ingest;
  if (backend.ingestor != nullptr) ingest = backend.ingestor->Stats();
  res.status = 200;
  if (transport != nullptr) {
    backend.metrics->SetConnections(transport->open_connections(),
                                    transport->refused_connections());
  }
  const query::QueryWorkStats work = backend.engine->Work();
  std::optional<ingest::OwnershipSnapshot> ownership;  // cluster mode only
  std::optional<uint64_t> refused;
  std::optional<cluster::RouteCounts> routed;
  std::optional<cluster::StandbyCounts> standby;
  if (backend.cluster != nullptr && backend.cluster->enabled()) {
    ownership = backend.cluster->Local();
    refused = backend.cluster->peer_answers_refused();
    if (backend.cluster->routing()) routed = backend.cluster->route_counts();
    if (backend.cluster->has_standby()) {
      standby = cluster::StandbyCounts{backend.cluster->standby_answers(),
                                       backend.cluster->standby_partitions()};
    }
  }
  const query::LastCacheStatus cache = backend.engine->Cache();
  std::optional<live::StreamHubStats> streams;
  if (backend.hub != nullptr) streams = backend.hub->Stats();
  res.set_content(backend.metrics->Render(ingest ? &*ingest : nullptr, backend.store->Stats(),
                                          backend.store->options(), &work,
                                          ownership ? &*ownership : nullptr,
                                          refused ? &*refused : nullptr, &cache,
                                          routed ? &*routed : nullptr,
                                          streams ? &*streams : nullptr,
                                          standby ? &*standby : nullptr),
                  "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::Impl::Stats(Response& res) {
  std::optional<ingest::IngestStats> ingest;
  if (backend.ingestor != nullptr) ingest = backend.ingestor->Stats();
  const query::LastCacheStatus cache = backend.engine->Cache();
  SetJson(res, 200,
          RenderStatsJson(ingest ? &*ingest : nullptr, backend.store->Stats(),
                          backend.store->options(), &cache));
}

}  // namespace hotrow::http
