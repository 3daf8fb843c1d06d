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

Result<query::Event> ParseEventJson(std::string_view text) {
  // ordered_json keeps the payload's members in their stored order.
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  try {
    query::Event e;
    e.id = j.at("event_id").get<std::string>();
    e.ts_ms = j.at("ts").get<int64_t>();
    e.topic = j.at("topic").get<std::string>();
    e.partition = j.at("partition").get<int32_t>();
    e.offset = j.at("offset").get<int64_t>();
    e.payload = j.at("payload").dump();
    return e;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("not an event object: ") + e.what());
  }
}

}  // namespace hotrow::service
