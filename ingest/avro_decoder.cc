#include "ingest/avro_decoder.h"

#include <avro.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "ingest/json_text.h"
#include "ingest/varint.h"

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
    const int scale =
        j.value("scale", nlohmann::json(0)).is_number_integer() ? j.value("scale", 0) : 0;
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

// Reads a zigzag varint long, as Avro writes int and long. False when truncated or too long.
bool ReadAvroLong(std::string_view* in, int64_t* value) {
  uint64_t v = 0;
  if (!ReadVarint(in, &v)) return false;
  *value = Unzigzag(v);
  return true;
}

}  // namespace

struct AvroDecoder::Writer {
  avro_schema_t schema = nullptr;
  std::map<Slot, int> decimal_scales;

  ~Writer() {
    if (schema != nullptr) avro_schema_decref(schema);
  }

  // Parses `json` as a writer schema. On failure, the message says why.
  static Result<std::unique_ptr<Writer>> Make(std::string_view json) {
    auto w = std::make_unique<Writer>();
    if (avro_schema_from_json_length(json.data(), json.size(), &w->schema) != 0) {
      w->schema = nullptr;
      return Status::InvalidArgument(std::string("not an Avro schema: ") + AvroError());
    }
    nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) AnnotateDecimals(j, w->schema, {nullptr, 0}, 0, &w->decimal_scales);
    return w;
  }

  // Reads one datum of schema `s` (at `slot` of its parent) from `*in` and appends its JSON text:
  // the binary read and the text written in one pass, every length and count checked against
  // the bytes left. False, with *detail, when the bytes do not read under the schema.
  bool Emit(avro_schema_t s, Slot slot, std::string_view* in, int depth, std::string* out,
            std::string* detail) const {
    if (depth > 64) {
      *detail = "nested deeper than 64";
      return false;
    }
    if (s != nullptr && avro_typeof(s) == AVRO_LINK) s = avro_schema_link_target(s);
    if (s == nullptr) {
      *detail = "an unresolved schema";
      return false;
    }
    int64_t n = 0;
    switch (avro_typeof(s)) {
      case AVRO_NULL:
        out->append("null");
        return true;
      case AVRO_BOOLEAN:
        if (in->empty() || static_cast<uint8_t>(in->front()) > 1) break;
        out->append(in->front() != 0 ? "true" : "false");
        in->remove_prefix(1);
        return true;
      case AVRO_INT32:
        if (!ReadAvroLong(in, &n) || n < INT32_MIN || n > INT32_MAX) break;
        AppendInt(n, out);
        return true;
      case AVRO_INT64:
        if (!ReadAvroLong(in, &n)) break;
        AppendInt(n, out);
        return true;
      case AVRO_FLOAT: {
        if (in->size() < 4) break;
        float f;
        std::memcpy(&f, in->data(), 4);  // little-endian, as Avro writes it
        in->remove_prefix(4);
        AppendFloat(f, out);
        return true;
      }
      case AVRO_DOUBLE: {
        if (in->size() < 8) break;
        double d;
        std::memcpy(&d, in->data(), 8);
        in->remove_prefix(8);
        AppendDouble(d, out);
        return true;
      }
      case AVRO_STRING:
      case AVRO_BYTES:
      case AVRO_FIXED: {
        const bool fixed = avro_typeof(s) == AVRO_FIXED;
        if (fixed) {
          n = avro_schema_fixed_size(s);
        } else if (!ReadAvroLong(in, &n)) {
          break;
        }
        if (n < 0 || static_cast<uint64_t>(n) > in->size()) {
          *detail = "a length beyond the bytes left";
          return false;
        }
        const std::string_view bytes = in->substr(0, static_cast<size_t>(n));
        in->remove_prefix(static_cast<size_t>(n));
        if (avro_typeof(s) == AVRO_STRING) {
          if (!IsUtf8(bytes)) {
            *detail = "a string that is not valid UTF-8";
            return false;
          }
          AppendJsonString(bytes, out);
          return true;
        }
        auto scale = decimal_scales.find(fixed ? Slot{s, -1} : slot);
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
        if (!ReadAvroLong(in, &n) || n < 0 || n >= avro_schema_enum_number_of_symbols(s)) {
          *detail = "an enum index out of range";
          return false;
        }
        AppendJsonString(avro_schema_enum_get(s, static_cast<int>(n)), out);
        return true;
      }
      case AVRO_UNION:
        if (!ReadAvroLong(in, &n) || n < 0 || static_cast<size_t>(n) >= avro_schema_union_size(s)) {
          *detail = "a union branch out of range";
          return false;
        }
        return Emit(avro_schema_union_branch(s, static_cast<int>(n)), {s, static_cast<int>(n)}, in,
                    depth + 1, out, detail);
      case AVRO_RECORD: {
        out->push_back('{');
        const size_t fields = avro_schema_record_size(s);
        for (size_t i = 0; i < fields; ++i) {
          if (i > 0) out->push_back(',');
          AppendJsonString(avro_schema_record_field_name(s, static_cast<int>(i)), out);
          out->push_back(':');
          if (!Emit(avro_schema_record_field_get_by_index(s, static_cast<int>(i)),
                    {s, static_cast<int>(i)}, in, depth + 1, out, detail)) {
            return false;
          }
        }
        out->push_back('}');
        return true;
      }
      case AVRO_ARRAY:
      case AVRO_MAP: {
        const bool map = avro_typeof(s) == AVRO_MAP;
        avro_schema_t item = map ? avro_schema_map_values(s) : avro_schema_array_items(s);
        out->push_back(map ? '{' : '[');
        bool first = true;
        // Blocks: a count (negative: its absolute value, then the block's size in bytes), items.
        while (true) {
          if (!ReadAvroLong(in, &n)) break;
          if (n == 0) {
            out->push_back(map ? '}' : ']');
            return true;
          }
          if (n < 0) {
            int64_t block_bytes = 0;
            if (n == INT64_MIN || !ReadAvroLong(in, &block_bytes)) break;
            n = -n;
          }
          // Every item takes a byte at least (a map's key's length), but in an array of nulls:
          // a count beyond the bytes left (or beyond 1M nulls) cannot be a real block.
          if (static_cast<uint64_t>(n) > in->size() + (map ? 0 : 1'000'000)) {
            *detail = "an item count beyond the bytes left";
            return false;
          }
          for (int64_t i = 0; i < n; ++i) {
            if (!first) out->push_back(',');
            first = false;
            if (map) {
              int64_t key_size = 0;
              if (!ReadAvroLong(in, &key_size) || key_size < 0 ||
                  static_cast<uint64_t>(key_size) > in->size()) {
                *detail = "a map key beyond the bytes left";
                return false;
              }
              const std::string_view key = in->substr(0, static_cast<size_t>(key_size));
              in->remove_prefix(static_cast<size_t>(key_size));
              if (!IsUtf8(key)) {
                *detail = "a map key that is not valid UTF-8";
                return false;
              }
              AppendJsonString(key, out);
              out->push_back(':');
            }
            if (!Emit(item, {s, 0}, in, depth + 1, out, detail)) return false;
          }
        }
        break;
      }
      default:
        *detail = "a schema type hotrow does not read";
        return false;
    }
    *detail = "truncated or malformed";
    return false;
  }
};

AvroDecoder::AvroDecoder() = default;
AvroDecoder::~AvroDecoder() = default;

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
  body_ = body;
  return DecodeStatus::kOk;
}

bool AvroDecoder::WriteJson(std::string* json, std::string* detail) {
  json->clear();
  std::string_view in = body_;
  if (current_->Emit(current_->schema, {nullptr, 0}, &in, 0, json, detail)) return true;
  *detail = "does not read as Avro under its schema: " + *detail;
  return false;
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
