#include "ingest/confluent_framing.h"

#include "ingest/varint.h"

namespace hotrow::ingest {
namespace {

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void AppendZigzag(int64_t v, std::string* out) {
  AppendVarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63), out);
}

}  // namespace

bool ParseConfluentHeader(std::string_view value, uint32_t* schema_id, std::string_view* rest) {
  if (value.size() < kConfluentHeaderSize || value[0] != 0) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(value.data());
  *schema_id = (uint32_t{p[1]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 8) | p[4];
  *rest = value.substr(kConfluentHeaderSize);
  return true;
}

bool ParseMessageIndexes(std::string_view in, std::vector<int>* indexes, std::string_view* rest,
                         bool legacy) {
  indexes->clear();
  uint64_t raw = 0;
  if (!ReadVarint(&in, &raw)) return false;
  if (legacy && raw > kMaxMessageIndexes) return false;
  const int64_t count = legacy ? static_cast<int64_t>(raw) : Unzigzag(raw);
  if (count < 0 || static_cast<uint64_t>(count) > kMaxMessageIndexes) return false;
  if (count == 0) {
    indexes->push_back(0);
  } else {
    for (int64_t i = 0; i < count; ++i) {
      if (!ReadVarint(&in, &raw)) return false;
      if (legacy && raw > INT32_MAX) return false;
      const int64_t index = legacy ? static_cast<int64_t>(raw) : Unzigzag(raw);
      if (index < 0 || index > INT32_MAX) return false;
      indexes->push_back(static_cast<int>(index));
    }
  }
  // [0] written long cannot be the zigzag form (see the header); in the legacy form it is a
  // writer's choice that no writer makes either.
  if (count == 1 && (*indexes)[0] == 0) return false;
  *rest = in;
  return true;
}

void AppendConfluentHeader(uint32_t schema_id, std::string* out) {
  const char header[] = {0, static_cast<char>(schema_id >> 24), static_cast<char>(schema_id >> 16),
                         static_cast<char>(schema_id >> 8), static_cast<char>(schema_id)};
  out->append(header, sizeof header);
}

void AppendMessageIndexes(const std::vector<int>& indexes, std::string* out, bool legacy) {
  if (indexes.size() == 1 && indexes[0] == 0) {
    out->push_back(0);
    return;
  }
  if (legacy) {
    AppendVarint(indexes.size(), out);
    for (int index : indexes) AppendVarint(static_cast<uint64_t>(index), out);
    return;
  }
  AppendZigzag(static_cast<int64_t>(indexes.size()), out);
  for (int index : indexes) AppendZigzag(index, out);
}

}  // namespace hotrow::ingest
