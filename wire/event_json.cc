#include "wire/event_json.h"

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace hotrow::wire {

bool IsValidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;  // a continuation byte first, 0xC0/0xC1 (overlong) or above 0xF4
    }
    if (static_cast<size_t>(end - p) < len) return false;
    for (size_t i = 1; i < len; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    p += len;
  }
  return true;
}

void AppendJsonString(std::string_view text, std::string* out) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (!ascii && !IsValidUtf8(text)) {
    // dump() with error_handler_t::replace never throws on invalid UTF-8.
    out->append(nlohmann::json(std::string(text))
                    .dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace));
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t plain = 0;  // start of the run of bytes copied as they are
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(text.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default: {
        const char u[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(u, sizeof(u));
      }
    }
  }
  out->append(text.data() + plain, text.size() - plain);
  out->push_back('"');
}

namespace {
void AppendInt(int64_t v, std::string* out) {
  char digits[24];
  out->append(digits, std::to_chars(digits, digits + sizeof(digits), v).ptr);
}
}  // namespace

void AppendEventJson(const query::Event& event, std::string* out) {
  out->append("{\"event_id\":");
  AppendJsonString(event.id, out);
  out->append(",\"ts\":");
  AppendInt(event.ts_ms, out);
  out->append(",\"topic\":");
  AppendJsonString(event.topic, out);
  out->append(",\"partition\":");
  AppendInt(event.partition, out);
  out->append(",\"offset\":");
  AppendInt(event.offset, out);
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

}  // namespace hotrow::wire
