// The unit of the time ingest.ts_field names, read from an Avro writer schema's JSON.
#include "ingest/avro_time_unit.h"

namespace hotrow::ingest {
namespace {

// The named types of a schema's JSON, by full name and by simple name (the first of that name
// wins), for a path that passes through a record defined once and used again by its name.
using NamedTypes = std::map<std::string, const nlohmann::json*>;

void IndexNamedTypes(const nlohmann::json& j, const std::string& space, int depth,
                     NamedTypes* named) {
  if (depth > 64) return;
  if (j.is_array()) {
    for (const nlohmann::json& branch : j) IndexNamedTypes(branch, space, depth + 1, named);
    return;
  }
  if (!j.is_object()) return;
  auto type = j.find("type");
  if (type == j.end()) return;
  if (type->is_object() || type->is_array()) {
    IndexNamedTypes(*type, space, depth + 1, named);
    return;
  }
  std::string inner = space;
  if (auto ns = j.find("namespace"); ns != j.end() && ns->is_string())
    inner = ns->get<std::string>();
  if (auto name = j.find("name"); name != j.end() && name->is_string()) {
    const std::string n = name->get<std::string>();
    const size_t dot = n.rfind('.');
    if (dot != std::string::npos) inner = n.substr(0, dot);
    named->emplace(dot != std::string::npos ? n : inner.empty() ? n : inner + "." + n, &j);
    named->emplace(dot != std::string::npos ? n.substr(dot + 1) : n, &j);
  }
  if (!type->is_string()) return;
  if (*type == "record" || *type == "error") {
    auto fields = j.find("fields");
    if (fields == j.end() || !fields->is_array()) return;
    for (const nlohmann::json& field : *fields) {
      if (field.is_object() && field.contains("type")) {
        IndexNamedTypes(field["type"], inner, depth + 1, named);
      }
    }
  } else if (*type == "array" && j.contains("items")) {
    IndexNamedTypes(j["items"], inner, depth + 1, named);
  } else if (*type == "map" && j.contains("values")) {
    IndexNamedTypes(j["values"], inner, depth + 1, named);
  }
}

// The object that defines the type `j` denotes: a name looked up, {"type": {...}} unwrapped, a
// union's only branch that is not null. nullptr for a primitive named by itself ("long"), a union
// of several types, or a name the schema does not define.
const nlohmann::json* TypeObject(const nlohmann::json* j, const NamedTypes& named) {
  for (int i = 0; i < 64 && j != nullptr; ++i) {
    if (j->is_string()) {
      auto it = named.find(j->get<std::string>());
      j = it == named.end() ? nullptr : it->second;
    } else if (j->is_array()) {
      const nlohmann::json* only = nullptr;
      for (const nlohmann::json& branch : *j) {
        if (branch == "null") continue;
        if (only != nullptr) return nullptr;
        only = &branch;
      }
      j = only;
    } else if (j->is_object() && j->contains("type") && !(*j)["type"].is_string()) {
      j = &(*j)["type"];
    } else {
      return j->is_object() ? j : nullptr;
    }
  }
  return nullptr;
}

}  // namespace

int64_t AvroTimeUnitsPerMs(const nlohmann::json& text, const nlohmann::json& root,
                           const std::vector<std::string>& path) {
  if (path.empty()) return 1;
  NamedTypes named;
  IndexNamedTypes(text, "", 0, &named);
  const nlohmann::json* node = &root;
  for (const std::string& segment : path) {
    node = TypeObject(node, named);
    if (node == nullptr || !node->contains("fields") || !(*node)["fields"].is_array()) return 1;
    const nlohmann::json* next = nullptr;
    for (const nlohmann::json& field : (*node)["fields"]) {
      if (field.is_object() && field.value("name", nlohmann::json()) == segment &&
          field.contains("type")) {
        next = &field["type"];
        break;
      }
    }
    if (next == nullptr) return 1;
    node = next;
  }
  node = TypeObject(node, named);
  if (node == nullptr || node->value("type", nlohmann::json()) != "long") return 1;
  auto logical = node->find("logicalType");
  if (logical == node->end() || !logical->is_string()) return 1;
  const std::string& l = logical->get_ref<const std::string&>();
  if (l == "timestamp-micros" || l == "local-timestamp-micros") return 1000;
  if (l == "timestamp-nanos" || l == "local-timestamp-nanos") return 1000000;
  return 1;
}

}  // namespace hotrow::ingest
