#include "ingest/record_meta.h"

#include "ingest/json_text.h"

namespace hotrow::ingest {

bool ParseMetaRef(std::string_view field, MetaRef* out) {
  *out = MetaRef();
  if (field.empty() || field[0] != '@') return true;
  static constexpr std::string_view kHeaderPrefix = "@header.";
  if (field == "@key") {
    out->kind = MetaRef::Kind::kKey;
  } else if (field == "@timestamp") {
    out->kind = MetaRef::Kind::kTimestamp;
  } else if (field.substr(0, kHeaderPrefix.size()) == kHeaderPrefix &&
             field.size() > kHeaderPrefix.size()) {
    out->kind = MetaRef::Kind::kHeader;
    out->header = std::string(field.substr(kHeaderPrefix.size()));
  } else {
    return false;
  }
  return true;
}

const RecordHeader* FindHeader(std::span<const RecordHeader> headers, std::string_view name) {
  for (size_t i = headers.size(); i-- > 0;) {
    if (headers[i].name == name) return &headers[i];
  }
  return nullptr;
}

namespace {

void AppendBytesAsJson(std::string_view bytes, std::string* out) {
  if (IsUtf8(bytes)) {
    AppendJsonString(bytes, out);
  } else {
    out->push_back('"');
    AppendBase64(bytes, out);
    out->push_back('"');
  }
}

}  // namespace

void AppendWithMeta(std::string_view object_text, std::string_view key, bool key_null,
                    std::span<const RecordHeader> headers, int64_t kafka_ts_ms, std::string* out) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t close = object_text.size();
  while (close > 0 && is_space(object_text[close - 1])) --close;
  if (close == 0 || object_text[close - 1] != '}') {
    out->append(object_text);
    return;
  }
  --close;  // at the closing brace
  size_t before = close;
  while (before > 0 && is_space(object_text[before - 1])) --before;
  const bool empty_object = before > 0 && object_text[before - 1] == '{';
  out->append(object_text.substr(0, close));
  out->append(empty_object ? "\"_kafka\":{\"key\":" : ",\"_kafka\":{\"key\":");
  if (key_null) {
    out->append("null");
  } else {
    AppendBytesAsJson(key, out);
  }
  out->append(",\"headers\":{");
  for (size_t i = 0; i < headers.size(); ++i) {
    // A name repeated keeps its last value, as @header.NAME reads it.
    if (FindHeader(headers.subspan(i + 1), headers[i].name) != nullptr) continue;
    if (out->back() != '{') out->push_back(',');
    AppendBytesAsJson(headers[i].name, out);
    out->push_back(':');
    if (headers[i].null) {
      out->append("null");
    } else {
      AppendBytesAsJson(headers[i].value, out);
    }
  }
  out->append("},\"timestamp\":");
  if (kafka_ts_ms >= 0) {
    AppendInt(kafka_ts_ms, out);
  } else {
    out->append("null");
  }
  out->append("}");
  out->append(object_text.substr(close));
}

}  // namespace hotrow::ingest
