#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hotrow::ingest {

// What the long at `path` (ingest.ts_field's segments) counts per millisecond under the Avro
// writer schema `root`, a value inside `text` (the whole parsed JSON, whose named types a path
// may use by name): 1000 for timestamp-micros and local-timestamp-micros, 1000000 for the -nanos
// ones, 1 for anything else (the -millis ones, a plain long, a path the schema does not resolve
// to a long, an empty path). A local timestamp names no zone: it is read as UTC. The path is
// followed through records, a record named again by its name, and a union of null and one type.
int64_t AvroTimeUnitsPerMs(const nlohmann::json& text, const nlohmann::json& root,
                           const std::vector<std::string>& path);

}  // namespace hotrow::ingest
