#include "ingest/avro_decoder.h"

#include <avro.h>

#include <nlohmann/json.hpp>

#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "ingest/json_text.h"

namespace hotrow::ingest {
namespace {

// Where a value sits in its parent, as the key of its decimal scale: (parent schema, slot) with
// slot a record's field index, a union's branch, 0 for an array's items or a map's values; a
// fixed type by itself (fixed schema, -1); the top level (nullptr, 0). Avro C keeps no logical
// types, so the decimals are found in the schema's JSON (AnnotateDecimals).
using Slot = std::pair<const void*, int>;

const char* AvroError() {
  const char* e = avro_strerror();
  return e != nullptr && *e != '\0' ? e : "unknown Avro error";
}

// Walks the schema's JSON beside Avro C's parsed schema and records the scale of every bytes or
// fixed that carries logicalType decimal.
void AnnotateDecimals(const nlohmann::json& j, avro_schema_t s, Slot slot, int depth,
                      std::map<Slot, int>* scales) {
  if (s == nullptr || depth > 64) return;
  if (j.is_array()) {
    if (!is_avro_union(s)) return;
    for (size_t i = 0; i < j.size() && i < avro_schema_union_size(s); ++i) {
      AnnotateDecimals(j[i], avro_schema_union_branch(s, static_cast<int>(i)),
                       {s, static_cast<int>(i)}, depth + 1, scales);
    }
    return;
  }
  if (!j.is_object()) return;  // a name: a primitive, or a named type annotated where defined
  auto type = j.find("type");
  if (type == j.end()) return;
  if (type->is_object() || type->is_array()) {  // {"type": {"type": "array", ...}}
    AnnotateDecimals(*type, s, slot, depth + 1, scales);
    return;
  }
  if (!type->is_string()) return;
  const std::string& t = type->get_ref<const std::string&>();
  if (auto logical = j.find("logicalType");
      logical != j.end() && *logical == "decimal" && (t == "bytes" || t == "fixed")) {
    const int scale = j.value("scale", nlohmann::json(0)).is_number_integer()
                          ? j.value("scale", 0)
                          : 0;
    (*scales)[t == "fixed" ? Slot{s, -1} : slot] = scale;
    return;
  }
  if (t == "record" || t == "error") {
    auto fields = j.find("fields");
    if (!is_avro_record(s) || fields == j.end() || !fields->is_array()) return;
    for (size_t i = 0; i < fields->size() && i < avro_schema_record_size(s); ++i) {
      const nlohmann::json& field = (*fields)[i];
      if (!field.is_object() || !field.contains("type")) continue;
      AnnotateDecimals(field["type"], avro_schema_record_field_get_by_index(s, static_cast<int>(i)),
                       {s, static_cast<int>(i)}, depth + 1, scales);
    }
  } else if (t == "array" && j.contains("items") && is_avro_array(s)) {
    AnnotateDecimals(j["items"], avro_schema_array_items(s), {s, 0}, depth + 1, scales);
  } else if (t == "map" && j.contains("values") && is_avro_map(s)) {
    AnnotateDecimals(j["values"], avro_schema_map_values(s), {s, 0}, depth + 1, scales);
  }
}

// Avro C trusts the lengths and counts it reads: a negative bytes length makes it ask malloc for
// 2^64 - n bytes, a count of a billion items loops a billion times (found by fuzzing). So the
// datum is walked first against the schema, with every length and count checked against the bytes
// left, before avro_value_read sees it. False, with *why, when it cannot be read.
bool ReadAvroLong(std::string_view* in, int64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in->empty()) return false;
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      *value = static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
      return true;
    }
  }
  return false;
}

bool Skip(std::string_view* in, size_t n) {
  if (in->size() < n) return false;
  in->remove_prefix(n);
  return true;
}

bool CheckDatum(avro_schema_t s, std::string_view* in, int depth, const char** why) {
  if (depth > 64) {
    *why = "nested deeper than 64";
    return false;
  }
  if (s != nullptr && avro_typeof(s) == AVRO_LINK) s = avro_schema_link_target(s);
  if (s == nullptr) return false;
  int64_t n = 0;
  switch (avro_typeof(s)) {
    case AVRO_NULL:
      return true;
    case AVRO_BOOLEAN:
      return Skip(in, 1);
    case AVRO_INT32:
    case AVRO_INT64:
      return ReadAvroLong(in, &n);
    case AVRO_FLOAT:
      return Skip(in, 4);
    case AVRO_DOUBLE:
      return Skip(in, 8);
    case AVRO_STRING:
    case AVRO_BYTES:
      if (!ReadAvroLong(in, &n) || n < 0 || static_cast<uint64_t>(n) > in->size()) {
        *why = "a length beyond the bytes left";
        return false;
      }
      return Skip(in, static_cast<size_t>(n));
    case AVRO_FIXED:
      return Skip(in, static_cast<size_t>(avro_schema_fixed_size(s)));
    case AVRO_ENUM:
      if (!ReadAvroLong(in, &n) || n < 0 || n >= avro_schema_enum_number_of_symbols(s)) {
        *why = "an enum index out of range";
        return false;
      }
      return true;
    case AVRO_UNION:
      if (!ReadAvroLong(in, &n) || n < 0 || static_cast<size_t>(n) >= avro_schema_union_size(s)) {
        *why = "a union branch out of range";
        return false;
      }
      return CheckDatum(avro_schema_union_branch(s, static_cast<int>(n)), in, depth + 1, why);
    case AVRO_RECORD:
      for (size_t i = 0; i < avro_schema_record_size(s); ++i) {
        if (!CheckDatum(avro_schema_record_field_get_by_index(s, static_cast<int>(i)), in,
                        depth + 1, why)) {
          return false;
        }
      }
      return true;
    case AVRO_ARRAY:
    case AVRO_MAP: {
      const bool map = avro_typeof(s) == AVRO_MAP;
      avro_schema_t item = map ? avro_schema_map_values(s) : avro_schema_array_items(s);
      // Blocks: a count (negative: its absolute value, then the block's size in bytes), items.
      while (true) {
        if (!ReadAvroLong(in, &n)) return false;
        if (n == 0) return true;
        if (n < 0) {
          int64_t block_bytes = 0;
          if (n == INT64_MIN || !ReadAvroLong(in, &block_bytes)) return false;
          n = -n;
        }
        // Every item takes a byte at least (a map's key's length), but for an array of nulls:
        // a count beyond the bytes left (or beyond 1M nulls) cannot be a real block.
        if (static_cast<uint64_t>(n) > in->size() + (map ? 0 : 1'000'000)) {
          *why = "an item count beyond the bytes left";
          return false;
        }
        for (int64_t i = 0; i < n; ++i) {
          int64_t key_size = 0;
          if (map && (!ReadAvroLong(in, &key_size) || key_size < 0 ||
                      !Skip(in, static_cast<size_t>(key_size)))) {
            *why = "a map key beyond the bytes left";
            return false;
          }
          if (!CheckDatum(item, in, depth + 1, why)) return false;
        }
      }
    }
    default:
      *why = "a schema type hotrow does not read";
      return false;
  }
}

}  // namespace

struct AvroDecoder::Writer {
  avro_schema_t schema = nullptr;
  avro_value_iface_t* iface = nullptr;
  avro_value_t value{};
  std::map<Slot, int> decimal_scales;

  ~Writer() {
    if (iface != nullptr) {
      avro_value_decref(&value);
      avro_value_iface_decref(iface);
    }
    if (schema != nullptr) avro_schema_decref(schema);
  }

  // Parses `json` as a writer schema. On failure, the message says why.
  static Result<std::unique_ptr<Writer>> Make(std::string_view json) {
    auto w = std::make_unique<Writer>();
    if (avro_schema_from_json_length(json.data(), json.size(), &w->schema) != 0) {
      w->schema = nullptr;
      return Status::InvalidArgument(std::string("not an Avro schema: ") + AvroError());
    }
    w->iface = avro_generic_class_from_schema(w->schema);
    if (w->iface == nullptr) {
      return Status::InvalidArgument(std::string("unusable Avro schema: ") + AvroError());
    }
    if (avro_generic_value_new(w->iface, &w->value) != 0) {
      avro_value_iface_decref(w->iface);
      w->iface = nullptr;
      return Status::InvalidArgument(std::string("unusable Avro schema: ") + AvroError());
    }
    nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) AnnotateDecimals(j, w->schema, {nullptr, 0}, 0, &w->decimal_scales);
    return w;
  }

  // Appends the JSON text of `v` (at `slot` of its parent). False, with *detail, on a string
  // that is not UTF-8 or a value Avro C cannot give.
  bool Write(const avro_value_t* v, Slot slot, std::string* out, std::string* detail) const {
    switch (avro_value_get_type(v)) {
      case AVRO_NULL:
        out->append("null");
        return true;
      case AVRO_BOOLEAN: {
        int b = 0;
        if (avro_value_get_boolean(v, &b) != 0) break;
        out->append(b ? "true" : "false");
        return true;
      }
      case AVRO_INT32: {
        int32_t i = 0;
        if (avro_value_get_int(v, &i) != 0) break;
        AppendInt(i, out);
        return true;
      }
      case AVRO_INT64: {
        int64_t i = 0;
        if (avro_value_get_long(v, &i) != 0) break;
        AppendInt(i, out);
        return true;
      }
      case AVRO_FLOAT: {
        float f = 0;
        if (avro_value_get_float(v, &f) != 0) break;
        AppendFloat(f, out);
        return true;
      }
      case AVRO_DOUBLE: {
        double d = 0;
        if (avro_value_get_double(v, &d) != 0) break;
        AppendDouble(d, out);
        return true;
      }
      case AVRO_STRING: {
        const char* s = nullptr;
        size_t size = 0;  // with the terminating NUL
        if (avro_value_get_string(v, &s, &size) != 0) break;
        std::string_view text(s, size > 0 ? size - 1 : 0);
        if (!IsUtf8(text)) {
          *detail = "a string that is not valid UTF-8";
          return false;
        }
        AppendJsonString(text, out);
        return true;
      }
      case AVRO_BYTES:
      case AVRO_FIXED: {
        const void* buf = nullptr;
        size_t size = 0;
        const bool fixed = avro_value_get_type(v) == AVRO_FIXED;
        if ((fixed ? avro_value_get_fixed(v, &buf, &size) : avro_value_get_bytes(v, &buf, &size)) !=
            0) {
          break;
        }
        std::string_view bytes(static_cast<const char*>(buf), size);
        auto scale = decimal_scales.find(fixed ? Slot{avro_value_get_schema(v), -1} : slot);
        out->push_back('"');
        if (scale != decimal_scales.end()) {
          AppendDecimal(bytes, scale->second, out);
        } else {
          AppendBase64(bytes, out);
        }
        out->push_back('"');
        return true;
      }
      case AVRO_ENUM: {
        int index = 0;
        if (avro_value_get_enum(v, &index) != 0) break;
        const char* symbol = avro_schema_enum_get(avro_value_get_schema(v), index);
        if (symbol == nullptr) {
          *detail = "enum index " + std::to_string(index) + " out of range";
          return false;
        }
        AppendJsonString(symbol, out);
        return true;
      }
      case AVRO_ARRAY:
      case AVRO_MAP:
      case AVRO_RECORD: {
        const avro_type_t type = avro_value_get_type(v);
        size_t size = 0;
        if (avro_value_get_size(v, &size) != 0) break;
        const void* schema = avro_value_get_schema(v);
        out->push_back(type == AVRO_ARRAY ? '[' : '{');
        for (size_t i = 0; i < size; ++i) {
          avro_value_t child;
          const char* name = nullptr;
          if (avro_value_get_by_index(v, i, &child, type == AVRO_ARRAY ? nullptr : &name) != 0) {
            *detail = AvroError();
            return false;
          }
          if (i > 0) out->push_back(',');
          if (type != AVRO_ARRAY) {
            std::string_view key = name != nullptr ? name : "";
            if (!IsUtf8(key)) {
              *detail = "a map key that is not valid UTF-8";
              return false;
            }
            AppendJsonString(key, out);
            out->push_back(':');
          }
          if (!Write(&child, {schema, type == AVRO_RECORD ? static_cast<int>(i) : 0}, out,
                     detail)) {
            return false;
          }
        }
        out->push_back(type == AVRO_ARRAY ? ']' : '}');
        return true;
      }
      case AVRO_UNION: {
        int branch_index = 0;
        avro_value_t branch;
        if (avro_value_get_discriminant(v, &branch_index) != 0 ||
            avro_value_get_current_branch(v, &branch) != 0) {
          break;
        }
        return Write(&branch, {avro_value_get_schema(v), branch_index}, out, detail);
      }
      default:
        *detail = "an Avro type hotrow does not map";
        return false;
    }
    *detail = AvroError();
    return false;
  }
};

AvroDecoder::AvroDecoder() : reader_(avro_reader_memory(nullptr, 0)) {}

AvroDecoder::~AvroDecoder() {
  if (reader_ != nullptr) avro_reader_free(static_cast<avro_reader_t>(reader_));
}

Result<std::unique_ptr<AvroDecoder>> AvroDecoder::WithSchema(std::string_view schema_json) {
  Result<std::unique_ptr<Writer>> writer = Writer::Make(schema_json);
  if (!writer.ok()) return writer.status();
  std::unique_ptr<AvroDecoder> decoder(new AvroDecoder());
  decoder->single_ = std::move(*writer);
  return decoder;
}

std::unique_ptr<AvroDecoder> AvroDecoder::WithRegistry(std::unique_ptr<SchemaSource> registry) {
  std::unique_ptr<AvroDecoder> decoder(new AvroDecoder());
  decoder->registry_ = std::move(registry);
  return decoder;
}

DecodeStatus AvroDecoder::WriterFor(uint32_t id, Writer** writer, const char** reject,
                                    std::string* detail) {
  auto it = by_id_.find(id);
  if (it != by_id_.end()) {
    *writer = it->second.get();
    return DecodeStatus::kOk;
  }
  Result<RegistrySchema> schema = registry_->ById(id, /*serialized=*/false);
  if (!schema.ok()) {
    *detail = schema.status().message();
    if (schema.status().code() != Status::Code::kNotFound) return DecodeStatus::kWait;
    *reject = kRejectUnknownSchema;
    return DecodeStatus::kReject;
  }
  if (schema->schema_type != "AVRO") {
    *reject = kRejectUnknownSchema;
    *detail = "schema id " + std::to_string(id) + " is " + schema->schema_type + ", not AVRO";
    return DecodeStatus::kReject;
  }
  Result<std::unique_ptr<Writer>> made = Writer::Make(schema->schema);
  if (!made.ok()) {
    *reject = kRejectUnknownSchema;
    *detail = "schema id " + std::to_string(id) + ": " + made.status().message();
    return DecodeStatus::kReject;
  }
  *writer = made->get();
  by_id_[id] = std::move(*made);
  return DecodeStatus::kOk;
}

DecodeStatus AvroDecoder::Read(std::string_view value, const char** reject, std::string* detail) {
  current_ = single_.get();
  std::string_view body = value;
  if (registry_ != nullptr) {
    uint32_t id = 0;
    if (!ParseConfluentHeader(value, &id, &body)) {
      *reject = kRejectNotFramed;
      *detail = value.empty() ? "an empty value" : "no Confluent framing (magic byte 0, schema id)";
      return DecodeStatus::kReject;
    }
    DecodeStatus s = WriterFor(id, &current_, reject, detail);
    if (s != DecodeStatus::kOk) return s;
  }
  std::string_view rest = body;
  const char* why = "truncated";
  if (!CheckDatum(current_->schema, &rest, 0, &why)) {
    *reject = kRejectBadAvro;
    *detail = std::string("does not read as Avro under its schema: ") + why;
    return DecodeStatus::kReject;
  }
  auto* reader = static_cast<avro_reader_t>(reader_);
  avro_reader_memory_set_source(reader, body.data(), static_cast<int64_t>(body.size()));
  avro_value_reset(&current_->value);
  if (avro_value_read(reader, &current_->value) != 0) {
    *reject = kRejectBadAvro;
    *detail = std::string("does not read as Avro under its schema: ") + AvroError();
    return DecodeStatus::kReject;
  }
  return DecodeStatus::kOk;
}

bool AvroDecoder::WriteJson(std::string* json, std::string* detail) {
  json->clear();
  return current_->Write(&current_->value, {nullptr, 0}, json, detail);
}

DecodeStatus AvroDecoder::Decode(std::string_view value, std::string* json, const char** reject,
                                 std::string* detail) {
  DecodeStatus s = Read(value, reject, detail);
  if (s != DecodeStatus::kOk) return s;
  if (!WriteJson(json, detail)) {
    *reject = kRejectBadAvro;
    return DecodeStatus::kReject;
  }
  return DecodeStatus::kOk;
}

}  // namespace hotrow::ingest
