// Internal to service/: the table of configuration keys, each with the reader that checks its
// value and stores it in a Config (config_keys.cc). Loading files, merging and --set are in config.cc.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "common/status.h"
#include "config/config.h"

namespace hotrow::config {

// One key of the table: its name and its reader.
struct KeySpec;

// A value as a message shows it: quoted scalars (one line, at most 64 characters), or what kind of
// node stood where a scalar was expected.
std::string Describe(const YAML::Node& node);
// InvalidArgument "<key>: expected <what>, got <value>".
Status Expected(const std::string& key, const std::string& what, const YAML::Node& got);

// The key named `name` ("store.ttl"), or nullptr if there is none.
const KeySpec* FindKey(std::string_view name);
// Whether `name` ("store") is the section of some key.
// The sections of the key table, in its order: "kafka, store, ..., query or cluster".
std::string SectionNames();
bool IsSection(std::string_view name);
// Whether `name` ("ingest.schema_registry") is the prefix of keys one level deeper.
bool IsSubsection(std::string_view name);
// Sets one key, "section.key" or "kafka.properties.<name>" (one librdkafka property).
Status SetKey(const std::string& key, const YAML::Node& value, Config* config);

}  // namespace hotrow::config
