#include "keying/row_value.h"

#include "keying/row_key.h"

namespace hotrow::keying {

void EncodeRowValueTo(std::string_view id, std::string_view payload, std::string* out) {
  out->resize(2 + id.size() + payload.size());
  StoreBigEndian16(static_cast<uint16_t>(id.size()), out->data());
  out->replace(2, id.size(), id);
  out->replace(2 + id.size(), payload.size(), payload);
}

std::string EncodeRowValue(std::string_view id, std::string_view payload) {
  std::string out;
  EncodeRowValueTo(id, payload, &out);
  return out;
}

bool DecodeRowValue(std::string_view value, std::string_view* id, std::string_view* payload) {
  if (value.size() < 2) return false;
  const size_t id_len = LoadBigEndian16(value.data());
  if (id_len > kMaxIdSize || value.size() < 2 + id_len) return false;
  *id = value.substr(2, id_len);
  *payload = value.substr(2 + id_len);
  return true;
}

}  // namespace hotrow::keying
