#include "query/payload_field.h"

#include <simdjson.h>

namespace hotrow::query {

struct PayloadField::Impl {
  simdjson::ondemand::parser parser;
  std::string buffer;  // the payload, copied with the padding the parser reads past its end
};

PayloadField::PayloadField(std::string_view path) : impl_(std::make_unique<Impl>()) {
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    segments_.emplace_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
}

PayloadField::~PayloadField() = default;

PayloadField::Kind PayloadField::Read(std::string_view payload, double* value) {
  std::string& buffer = impl_->buffer;
  buffer.assign(payload);
  buffer.resize(payload.size() + simdjson::SIMDJSON_PADDING);
  simdjson::ondemand::document doc;
  if (impl_->parser.iterate(buffer.data(), payload.size(), buffer.size()).get(doc) !=
      simdjson::SUCCESS) {
    return Kind::kNotNumber;
  }
  simdjson::ondemand::value v;
  simdjson::ondemand::object object;
  if (const simdjson::error_code e = doc.get_object().get(object); e != simdjson::SUCCESS) {
    return e == simdjson::INCORRECT_TYPE ? Kind::kAbsent : Kind::kNotNumber;
  }
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (i > 0 && v.get_object().get(object) != simdjson::SUCCESS) return Kind::kAbsent;
    const simdjson::error_code e = object.find_field_unordered(segments_[i]).get(v);
    if (e == simdjson::NO_SUCH_FIELD) return Kind::kAbsent;
    if (e != simdjson::SUCCESS) return Kind::kNotNumber;  // not JSON after all
  }
  simdjson::ondemand::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return Kind::kNotNumber;
  if (type == simdjson::ondemand::json_type::null) return Kind::kAbsent;
  if (type != simdjson::ondemand::json_type::number) return Kind::kNotNumber;
  double d = 0;
  if (v.get_double().get(d) != simdjson::SUCCESS) return Kind::kNotNumber;
  *value = d;
  return Kind::kNumber;
}

}  // namespace hotrow::query
