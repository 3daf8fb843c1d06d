#include "service/event_json.h"

#include <nlohmann/json.hpp>

namespace hotrow::service {

void AppendJsonString(std::string_view text, std::string* out) {
  // dump() with error_handler_t::replace never throws on invalid UTF-8.
  out->append(nlohmann::json(std::string(text))
                  .dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace));
}

void AppendEventJson(const query::Event& event, std::string* out) {
  out->append("{\"event_id\":");
  AppendJsonString(event.id, out);
  out->append(",\"ts\":");
  out->append(std::to_string(event.ts_ms));
  out->append(",\"topic\":");
  AppendJsonString(event.topic, out);
  out->append(",\"partition\":");
  out->append(std::to_string(event.partition));
  out->append(",\"offset\":");
  out->append(std::to_string(event.offset));
  out->append(",\"payload\":");
  const size_t payload_at = out->size();
  if (event.payload.empty()) {
    out->append("null");  // never stored so; keeps the line valid JSON if it ever were
  } else {
    out->append(event.payload);
    for (size_t i = payload_at; i < out->size(); ++i) {
      char& c = (*out)[i];
      if (c == '\n' || c == '\r') c = ' ';
    }
  }
  out->push_back('}');
}

}  // namespace hotrow::service
