#include "ingest/avro_decoder.h"

#include <avro.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "ingest/avro_time_unit.h"
#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "ingest/json_text.h"
#include "ingest/record_parser.h"
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

// `v` as an integer within [lo, hi], if it is one.
std::optional<int64_t> IntegerIn(const nlohmann::json* v, int64_t lo, int64_t hi) {
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return std::nullopt;
  }
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) return std::nullopt;
  return i;
}

// The scale of a decimal the Avro spec calls valid: a precision from 1, a scale from 0 to the
// precision (0 when absent), and for a fixed of n bytes a precision its 8n - 1 bits can hold.
// The spec reads an invalid one as its underlying type (bytes or fixed, base64 here), as Java's
// LogicalTypes.fromSchemaIgnoreInvalid does, so a nonsense scale never reaches AppendDecimal.
std::optional<int> DecimalScale(const nlohmann::json& j, avro_schema_t s, bool fixed) {
  auto member = [&](const char* name) -> const nlohmann::json* {
    auto it = j.find(name);
    return it == j.end() ? nullptr : &*it;
  };
  const std::optional<int64_t> precision = IntegerIn(member("precision"), 1, INT32_MAX);
  if (!precision) return std::nullopt;
  const nlohmann::json* scale_json = member("scale");
  const std::optional<int64_t> scale =
      scale_json == nullptr ? std::optional<int64_t>(0) : IntegerIn(scale_json, 0, *precision);
  if (!scale) return std::nullopt;
  if (fixed) {
    const int64_t size = avro_schema_fixed_size(s);
    const double max_precision =
        std::floor((8.0 * static_cast<double>(size) - 1) * std::log10(2.0));
    if (size <= 0 || static_cast<double>(*precision) > max_precision) return std::nullopt;
  }
  return static_cast<int>(*scale);
}

// Walks the schema's JSON beside Avro C's parsed schema and records the scale of every bytes or
// fixed that carries a valid logicalType decimal.
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
    const bool fixed = t == "fixed";
    if ((fixed && !is_avro_fixed(s)) || (!fixed && !is_avro_bytes(s))) return;
    if (std::optional<int> scale = DecimalScale(j, s, fixed)) {
      (*scales)[fixed ? Slot{s, -1} : slot] = *scale;
    }
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

// ingest.ts_field's segments when it is a path into the value; none when it names the record's
// key, a header or its Kafka timestamp (record_meta.h), or is empty.
std::vector<std::string> TsPath(std::string_view ts_field) {
  if (ts_field.empty() || ts_field.front() == '@') return {};
  return SplitDottedPath(ts_field);
}

}  // namespace

struct AvroDecoder::Writer {
  avro_schema_t schema = nullptr;  // what was parsed (owned)
  avro_schema_t root = nullptr;    // the writer schema in it
  Slot root_slot{nullptr, 0};      // where root sits in `schema`
  std::map<Slot, int> decimal_scales;
  int64_t time_units_per_ms = 1;  // of the long at ingest.ts_field (avro_time_unit.h)

  ~Writer() {
    if (schema != nullptr) avro_schema_decref(schema);
  }

  // Parses `json` as a writer schema, after `references` (the JSON of the named types it uses
  // that other schemas define, each after those it uses itself). On failure, the message says
  // why.
  // `ts_path`: ingest.ts_field's segments, whose unit is read from the schema.
  static Result<std::unique_ptr<Writer>> Make(std::string_view json,
                                              const std::vector<std::string>& references = {},
                                              const std::vector<std::string>& ts_path = {}) {
    // Avro C parses one schema with no names known beforehand, but a union defines its branches'
    // names in order, for the later ones to use: [references..., the schema], read at its last
    // branch. Java's Schema.Parser, which Confluent's AvroSchema uses, parses them in the same
    // order.
    std::string text(json);
    if (!references.empty()) {
      if (!json.empty() && json.find_first_not_of(" \t\r\n") != std::string_view::npos &&
          json[json.find_first_not_of(" \t\r\n")] == '[') {
        return Status::InvalidArgument("a union with references is not read");
      }
      text = "[";
      for (const std::string& ref : references) text += ref + ",";
      text += std::string(json) + "]";
    }
    auto w = std::make_unique<Writer>();
    if (avro_schema_from_json_length(text.data(), text.size(), &w->schema) != 0) {
      w->schema = nullptr;
      return Status::InvalidArgument(std::string("not an Avro schema: ") + AvroError());
    }
    w->root = w->schema;
    if (!references.empty()) {
      const int last = static_cast<int>(references.size());
      if (!is_avro_union(w->schema) || avro_schema_union_size(w->schema) != references.size() + 1) {
        return Status::InvalidArgument("its references do not parse as named types");
      }
      w->root = avro_schema_union_branch(w->schema, last);
      w->root_slot = {w->schema, last};
    }
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) {
      AnnotateDecimals(j, w->schema, {nullptr, 0}, 0, &w->decimal_scales);
      if (!ts_path.empty()) {
        // With references the text is [references..., the schema].
        const nlohmann::json& root =
            !references.empty() && j.is_array() && !j.empty() ? j.back() : j;
        w->time_units_per_ms = AvroTimeUnitsPerMs(j, root, ts_path);
      }
    }
    return w;
  }

  // Where Emit writes, and its bound: every append is checked against `limit` before it is
  // made (Room), so a record that would decode past it stops there, whatever its schema.
  struct Out {
    std::string* text;
    std::string* detail;
    size_t limit;
    bool too_large = false;

    // Whether `n` more bytes fit; when not, says so (too_large).
    bool Room(uint64_t n) {
      if (text->size() <= limit && n <= limit - text->size()) [[likely]] {
        return true;
      }
      return TooLarge();
    }
    [[gnu::noinline]] bool TooLarge() {
      too_large = true;
      *detail = "decodes to more than " + std::to_string(limit) +
                " bytes of JSON (ingest.max_decoded_bytes)";
      return false;
    }
    // Whether `str` fits as a JSON string; scanned for escapes only when its worst case (6
    // bytes a byte) would not fit.
    bool RoomForString(std::string_view str, uint64_t extra = 0) {
      if (text->size() <= limit && 6 * uint64_t{str.size()} + 2 + extra <= limit - text->size()) {
        return true;
      }
      return Room(JsonStringSize(str) + extra);
    }
  };
  // What one Emit call appends besides strings, bytes, decimals and names, which are checked by
  // their size: a number, a literal, punctuation.
  static constexpr uint64_t kSmallAppend = 64;

  // Reads one datum of schema `s` (at `slot` of its parent) from `*in` and appends its JSON text:
  // the binary read and the text written in one pass, every length and count checked against
  // the bytes left and every append against the bound. False, with *o->detail (and
  // o->too_large when the bound was hit), when the bytes do not read under the schema.
  bool Emit(avro_schema_t s, Slot slot, std::string_view* in, int depth, Out* o) const {
    std::string* out = o->text;
    std::string* detail = o->detail;
    if (depth > 64) {
      *detail = "nested deeper than 64";
      return false;
    }
    if (!o->Room(kSmallAppend)) return false;
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
          if (!o->RoomForString(bytes)) return false;
          AppendJsonString(bytes, out);
          return true;
        }
        auto scale = decimal_scales.find(fixed ? Slot{s, -1} : slot);
        if (scale != decimal_scales.end()) {
          out->push_back('"');
          if (!AppendDecimal(bytes, scale->second, o->limit - 1, out)) {
            out->pop_back();
            o->too_large = true;
            *detail = "a decimal longer than " + std::to_string(kMaxDecimalBytes) +
                      " bytes, or whose text passes ingest.max_decoded_bytes (" +
                      std::to_string(o->limit) + ")";
            return false;
          }
          out->push_back('"');
          return true;
        }
        if (!o->Room((bytes.size() + 2) / 3 * 4 + 2)) return false;
        out->push_back('"');
        AppendBase64(bytes, out);
        out->push_back('"');
        return true;
      }
      case AVRO_ENUM: {
        if (!ReadAvroLong(in, &n) || n < 0 || n >= avro_schema_enum_number_of_symbols(s)) {
          *detail = "an enum index out of range";
          return false;
        }
        const char* symbol = avro_schema_enum_get(s, static_cast<int>(n));
        if (!o->RoomForString(symbol)) return false;
        AppendJsonString(symbol, out);
        return true;
      }
      case AVRO_UNION:
        if (!ReadAvroLong(in, &n) || n < 0 || static_cast<size_t>(n) >= avro_schema_union_size(s)) {
          *detail = "a union branch out of range";
          return false;
        }
        return Emit(avro_schema_union_branch(s, static_cast<int>(n)), {s, static_cast<int>(n)}, in,
                    depth + 1, o);
      case AVRO_RECORD: {
        out->push_back('{');
        const size_t fields = avro_schema_record_size(s);
        for (size_t i = 0; i < fields; ++i) {
          const char* name = avro_schema_record_field_name(s, static_cast<int>(i));
          if (!o->RoomForString(name, 2)) return false;
          if (i > 0) out->push_back(',');
          AppendJsonString(name, out);
          out->push_back(':');
          if (!Emit(avro_schema_record_field_get_by_index(s, static_cast<int>(i)),
                    {s, static_cast<int>(i)}, in, depth + 1, o)) {
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
          // Items that take no bytes (null, an empty record, fixed(0)) still write one byte
          // and a comma each: a block of them past the bound is refused before one is read.
          if (!o->Room(2 * static_cast<uint64_t>(n))) return false;
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
              if (!o->RoomForString(key, 1)) return false;
              AppendJsonString(key, out);
              out->push_back(':');
            }
            if (!Emit(item, {s, 0}, in, depth + 1, o)) return false;
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

Result<std::unique_ptr<AvroDecoder>> AvroDecoder::WithSchema(std::string_view schema_json,
                                                             size_t max_decoded_bytes,
                                                             std::string_view ts_field) {
  std::unique_ptr<AvroDecoder> decoder(new AvroDecoder());
  decoder->ts_path_ = TsPath(ts_field);
  Result<std::unique_ptr<Writer>> writer = Writer::Make(schema_json, {}, decoder->ts_path_);
  if (!writer.ok()) return writer.status();
  decoder->max_decoded_bytes_ = max_decoded_bytes;
  decoder->single_ = std::move(*writer);
  return decoder;
}

std::unique_ptr<AvroDecoder> AvroDecoder::WithRegistry(std::unique_ptr<SchemaSource> registry,
                                                       size_t max_decoded_bytes,
                                                       std::string_view ts_field) {
  std::unique_ptr<AvroDecoder> decoder(new AvroDecoder());
  decoder->ts_path_ = TsPath(ts_field);
  decoder->max_decoded_bytes_ = max_decoded_bytes;
  decoder->registry_ = std::move(registry);
  return decoder;
}

namespace {

constexpr int kMaxReferenceDepth = 32;

// Appends to *ordered the JSON of every schema `schema` references, depth first (a reference's
// own references before it), each (subject, version) once. kReject (the record's fault: a 404,
// a schema of another type, too deep) or kWait (the registry cannot be asked), with *detail.
DecodeStatus CollectReferences(SchemaSource* registry, const RegistrySchema& schema, int depth,
                               std::set<std::pair<std::string, int>>* seen,
                               std::vector<std::string>* ordered, std::string* detail) {
  if (depth > kMaxReferenceDepth) {
    *detail = "references nested deeper than 32";
    return DecodeStatus::kReject;
  }
  for (const RegistrySchema::Reference& ref : schema.references) {
    if (!seen->insert({ref.subject, ref.version}).second) continue;
    Result<RegistrySchema> referenced =
        registry->BySubjectVersion(ref.subject, ref.version, /*serialized=*/false);
    const std::string what = "reference " + ref.name + " (subject " + ref.subject + " version " +
                             std::to_string(ref.version) + "): ";
    if (!referenced.ok()) {
      *detail = what + referenced.status().message();
      return referenced.status().code() == Status::Code::kNotFound ? DecodeStatus::kReject
                                                                   : DecodeStatus::kWait;
    }
    if (referenced->schema_type != "AVRO") {
      *detail = what + "a " + referenced->schema_type + " schema, not AVRO";
      return DecodeStatus::kReject;
    }
    DecodeStatus s = CollectReferences(registry, *referenced, depth + 1, seen, ordered, detail);
    if (s != DecodeStatus::kOk) return s;
    ordered->push_back(std::move(referenced->schema));
  }
  return DecodeStatus::kOk;
}

}  // namespace

DecodeStatus AvroDecoder::WriterFor(uint32_t id, Writer** writer, const char** reject,
                                    std::string* detail) {
  if (Writer* made = by_id_.Find(id)) {
    *writer = made;
    return DecodeStatus::kOk;
  }
  if (const std::string* failure = by_id_.Failure(id)) {
    *reject = kRejectUnknownSchema;
    *detail = *failure;
    return DecodeStatus::kReject;
  }
  const std::string name = "schema id " + std::to_string(id);
  Result<RegistrySchema> schema = registry_->ById(id, /*serialized=*/false);
  if (!schema.ok()) {
    *detail = schema.status().message();
    if (schema.status().code() != Status::Code::kNotFound) return DecodeStatus::kWait;
    *reject = kRejectUnknownSchema;
    return DecodeStatus::kReject;
  }
  // The record's fault from here: remembered for the id (schema_cache.h).
  auto fail = [&](std::string why) {
    *reject = kRejectUnknownSchema;
    *detail = name + ": " + std::move(why);
    by_id_.RememberFailure(id, *detail);
    return DecodeStatus::kReject;
  };
  if (schema->schema_type != "AVRO") return fail("a " + schema->schema_type + " schema, not AVRO");
  // References are resolved here, by subject and version, never with ?format=resolved: a
  // registry from before 2023 ignores it and answers the schema unresolved.
  std::vector<std::string> references;
  std::set<std::pair<std::string, int>> seen;
  std::string why;
  switch (CollectReferences(registry_.get(), *schema, 0, &seen, &references, &why)) {
    case DecodeStatus::kOk:
      break;
    case DecodeStatus::kReject:
      return fail(why);
    case DecodeStatus::kWait:
      *detail = name + ": " + why;
      return DecodeStatus::kWait;
  }
  Result<std::unique_ptr<Writer>> made = Writer::Make(schema->schema, references, ts_path_);
  if (!made.ok()) return fail(made.status().message());
  *writer = by_id_.Insert(id, std::move(*made));
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
  Writer::Out out{json, detail, max_decoded_bytes_};
  too_large_ = false;
  if (current_->Emit(current_->root, current_->root_slot, &in, 0, &out)) return true;
  too_large_ = out.too_large;
  if (!too_large_) *detail = "does not read as Avro under its schema: " + *detail;
  return false;
}

int64_t AvroDecoder::TimeUnitsPerMs() const {
  return current_ != nullptr ? current_->time_units_per_ms : 1;
}

DecodeStatus AvroDecoder::Decode(std::string_view value, std::string* json, const char** reject,
                                 std::string* detail) {
  DecodeStatus s = Read(value, reject, detail);
  if (s != DecodeStatus::kOk) return s;
  if (!WriteJson(json, detail)) {
    *reject = too_large_ ? kRejectTooLarge : kRejectBadAvro;
    return DecodeStatus::kReject;
  }
  return DecodeStatus::kOk;
}

}  // namespace hotrow::ingest
