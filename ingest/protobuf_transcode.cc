// The wire-to-JSON transcoding of ProtobufDecoder (protobuf_decoder.h): one pass over the wire
// bytes of a message, driven by its descriptor, every append checked against the bound.
#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cstring>

#include "ingest/json_text.h"
#include "ingest/protobuf_decoder.h"
#include "ingest/protobuf_well_known.h"
#include "ingest/varint.h"

namespace hotrow::ingest {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using WireField = ProtobufDecoder::WireField;

namespace {

constexpr size_t kMaxProtobufDepth = 100;

// Whether f is a google.protobuf.NullValue, which the JSON mapping writes as null.
bool IsNullValue(const FieldDescriptor* f) {
  return f->type() == FieldDescriptor::TYPE_ENUM &&
         f->enum_type()->full_name() == "google.protobuf.NullValue";
}

bool ReadFixed(std::string_view* in, size_t size, uint64_t* value) {
  if (in->size() < size) return false;
  uint64_t v = 0;
  std::memcpy(&v, in->data(), size);  // little-endian on the wire and on hotrow's platforms
  in->remove_prefix(size);
  *value = v;
  return true;
}

// The wire type a field of `type` is written with (packed repeated scalars aside).
int WireTypeOf(FieldDescriptor::Type type) {
  switch (type) {
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_DOUBLE:
      return 1;
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_FLOAT:
      return 5;
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
    case FieldDescriptor::TYPE_MESSAGE:
      return 2;
    case FieldDescriptor::TYPE_GROUP:
      return 3;
    default:
      return 0;
  }
}

// Appends the JSON of a scalar (not string, bytes or message) from its wire number.
void AppendScalar(const FieldDescriptor* f, uint64_t v, std::string* out) {
  switch (f->type()) {
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_SFIXED32:
      AppendInt(static_cast<int32_t>(v), out);
      break;
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_SFIXED64:
      AppendInt(static_cast<int64_t>(v), out);
      break;
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_FIXED32:
      AppendUint(static_cast<uint32_t>(v), out);
      break;
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_FIXED64:
      AppendUint(v, out);
      break;
    case FieldDescriptor::TYPE_SINT32: {
      const auto u = static_cast<uint32_t>(v);
      AppendInt(static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1)), out);
      break;
    }
    case FieldDescriptor::TYPE_SINT64:
      AppendInt(static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)), out);
      break;
    case FieldDescriptor::TYPE_BOOL:
      out->append(v != 0 ? "true" : "false");
      break;
    case FieldDescriptor::TYPE_FLOAT: {
      float x;
      const auto bits = static_cast<uint32_t>(v);
      std::memcpy(&x, &bits, sizeof x);
      AppendFloat(x, out);
      break;
    }
    case FieldDescriptor::TYPE_DOUBLE: {
      double x;
      std::memcpy(&x, &v, sizeof x);
      AppendDouble(x, out);
      break;
    }
    case FieldDescriptor::TYPE_ENUM: {
      const int number = static_cast<int32_t>(v);
      const auto* value = f->enum_type()->FindValueByNumber(number);
      if (value != nullptr) {
        AppendJsonString(value->name(), out);
      } else {
        AppendInt(number, out);
      }
      break;
    }
    default:
      out->append("null");
  }
}

// Appends the default of an absent singular scalar, string or bytes field.
void AppendDefault(const FieldDescriptor* f, std::string* out) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      AppendInt(f->default_value_int32(), out);
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      AppendInt(f->default_value_int64(), out);
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      AppendUint(f->default_value_uint32(), out);
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      AppendUint(f->default_value_uint64(), out);
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      AppendFloat(f->default_value_float(), out);
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      AppendDouble(f->default_value_double(), out);
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append(f->default_value_bool() ? "true" : "false");
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      AppendJsonString(f->default_value_enum()->name(), out);
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        out->push_back('"');
        AppendBase64(f->default_value_string(), out);
        out->push_back('"');
      } else {
        AppendJsonString(f->default_value_string(), out);
      }
      break;
    default:
      out->append("null");
  }
}

// What a check before a small append allows for: a number, a literal, punctuation.
constexpr uint64_t kSmallAppend = 64;

// At most the size of AppendScalar's text for an enum field: its longest symbol.
[[gnu::noinline]] uint64_t EnumSize(const FieldDescriptor* f) {
  uint64_t longest = 0;
  for (int i = 0; i < f->enum_type()->value_count(); ++i) {
    longest = std::max<uint64_t>(longest, f->enum_type()->value(i)->name().size());
  }
  return kSmallAppend + 6 * longest;
}

// At most the size of AppendScalar's text for f.
inline uint64_t ScalarSize(const FieldDescriptor* f) {
  return f->type() == FieldDescriptor::TYPE_ENUM ? EnumSize(f) : kSmallAppend;
}

// At most the size of AppendDefault's text for f.
uint64_t DefaultSize(const FieldDescriptor* f) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
    return kSmallAppend + 6 * f->default_value_enum()->name().size();
  }
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
    return kSmallAppend + 6 * f->default_value_string().size();
  }
  return kSmallAppend;
}

// Reads the fields of one message's wire bytes into *fields (unknown fields skipped).
bool ReadFields(const Descriptor* d, std::string_view in, std::vector<WireField>* fields,
                std::string* detail) {
  fields->clear();
  while (!in.empty()) {
    uint64_t tag = 0;
    if (!ReadVarint(&in, &tag) || (tag >> 3) == 0 || (tag >> 3) > 536870911) {
      *detail = d->full_name() + ": a malformed field tag";
      return false;
    }
    WireField w;
    w.wire_type = static_cast<uint8_t>(tag & 7);
    bool ok = false;
    switch (w.wire_type) {
      case 0:
        ok = ReadVarint(&in, &w.number);
        break;
      case 1:
        ok = ReadFixed(&in, 8, &w.number);
        break;
      case 5:
        ok = ReadFixed(&in, 4, &w.number);
        break;
      case 2: {
        uint64_t size = 0;
        ok = ReadVarint(&in, &size) && size <= in.size();
        if (ok) {
          w.bytes = in.substr(0, size);
          in.remove_prefix(size);
        }
        break;
      }
      default:
        *detail = d->full_name() + ": wire type " + std::to_string(w.wire_type) +
                  " (groups are not read)";
        return false;
    }
    if (!ok) {
      *detail = d->full_name() + ": truncated at field " + std::to_string(tag >> 3);
      return false;
    }
    const FieldDescriptor* f = d->FindFieldByNumber(static_cast<int>(tag >> 3));
    if (f == nullptr) continue;
    w.index = f->index();
    w.order = static_cast<uint32_t>(fields->size());
    fields->push_back(w);
  }
  std::stable_sort(fields->begin(), fields->end(),
                   [](const WireField& a, const WireField& b) { return a.index < b.index; });
  return true;
}

}  // namespace

bool ProtobufDecoder::TooLarge(std::string* detail) {
  too_large_ = true;
  *detail = "decodes to more than " + std::to_string(max_decoded_bytes_) +
            " bytes of JSON (ingest.max_decoded_bytes)";
  return false;
}

bool ProtobufDecoder::RoomForString(const std::string& out, std::string_view text, uint64_t extra,
                                    std::string* detail) {
  // Scanned for escapes only when its worst case (6 bytes a byte) would not fit.
  if (out.size() <= max_decoded_bytes_ &&
      6 * uint64_t{text.size()} + 2 + extra <= max_decoded_bytes_ - out.size()) {
    return true;
  }
  return Room(out, JsonStringSize(text) + extra, detail);
}

bool ProtobufDecoder::Transcode(const Descriptor* message, std::string_view body, std::string* json,
                                std::string* detail) {
  json->clear();
  too_large_ = false;
  return Message(message, body, 0, json, detail);
}

bool ProtobufDecoder::Message(const Descriptor* d, std::string_view in, size_t depth,
                              std::string* out, std::string* detail) {
  if (depth >= kMaxProtobufDepth) {
    *detail = "messages nested deeper than 100";
    return false;
  }
  if (!Room(*out, kSmallAppend, detail)) return false;
  if (scratch_.size() <= depth) scratch_.resize(depth + 1);
  // Owned by this depth until the message is written; deeper calls use the next slots (a
  // resize may move the vectors, so the reference is taken again after each nested call).
  if (!ReadFields(d, in, &scratch_[depth], detail)) return false;

  // One element (not a packed run) of field f from its occurrence w.
  auto element = [&](const FieldDescriptor* f, const WireField& w) -> bool {
    if (w.wire_type != WireTypeOf(f->type())) {
      *detail = f->full_name() + ": wire type " + std::to_string(w.wire_type) + " for a " +
                f->type_name();
      return false;
    }
    switch (f->type()) {
      case FieldDescriptor::TYPE_STRING:
        if (!IsUtf8(w.bytes)) {
          *detail = f->full_name() + ": a string that is not valid UTF-8";
          return false;
        }
        if (!RoomForString(*out, w.bytes, 0, detail)) return false;
        AppendJsonString(w.bytes, out);
        return true;
      case FieldDescriptor::TYPE_BYTES:
        if (!Room(*out, (w.bytes.size() + 2) / 3 * 4 + 2, detail)) return false;
        out->push_back('"');
        AppendBase64(w.bytes, out);
        out->push_back('"');
        return true;
      case FieldDescriptor::TYPE_MESSAGE:
        return Message(f->message_type(), w.bytes, depth + 1, out, detail);
      default:
        if (!Room(*out, ScalarSize(f), detail)) return false;
        if (well_known_json_ && IsNullValue(f)) {
          out->append("null");
        } else {
          AppendScalar(f, w.number, out);
        }
        return true;
    }
  };

  // Well-known types in proto3's JSON mapping (ingest.protobuf.well_known: json); Struct and
  // ListValue are their one field's object or array, written below without the field's name.
  bool unwrap = false;
  if (well_known_json_ && d->well_known_type() != Descriptor::WELLKNOWNTYPE_UNSPECIFIED) {
    const WellKnown written = WellKnownType(d, depth, element, out, detail);
    if (written != WellKnown::kNotMapped) return written == WellKnown::kWritten;
    unwrap = d->well_known_type() == Descriptor::WELLKNOWNTYPE_STRUCT ||
             d->well_known_type() == Descriptor::WELLKNOWNTYPE_LISTVALUE;
  }

  // The member of each oneof written: the last one on the wire, as a parser keeps it.
  oneof_winners_.resize(depth + 1);
  std::vector<int>& winners = oneof_winners_[depth];
  winners.assign(static_cast<size_t>(d->oneof_decl_count()), -1);
  if (!winners.empty()) {
    std::vector<uint32_t> orders(winners.size(), 0);
    for (const WireField& w : scratch_[depth]) {
      const auto* oneof = d->field(w.index)->containing_oneof();
      if (oneof == nullptr) continue;
      const size_t o = static_cast<size_t>(oneof->index());
      if (winners[o] < 0 || w.order >= orders[o]) {
        winners[o] = w.index;
        orders[o] = w.order;
      }
    }
  }

  if (!unwrap) out->push_back('{');
  bool first = true;
  size_t at = 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::vector<WireField>& fields = scratch_[depth];
    size_t end = at;
    while (end < fields.size() && fields[end].index == i) ++end;
    const size_t begin = at;
    at = end;
    const bool absent = begin == end;
    if (absent && !f->is_repeated() &&
        (f->containing_oneof() != nullptr || f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE)) {
      continue;
    }
    if (!absent && f->containing_oneof() != nullptr &&
        oneof_winners_[depth][static_cast<size_t>(f->containing_oneof()->index())] != i) {
      continue;
    }
    if (!RoomForString(*out, f->name(), kSmallAppend, detail)) return false;
    if (!unwrap) {
      if (!first) out->push_back(',');
      first = false;
      AppendJsonString(f->name(), out);
      out->push_back(':');
    }
    if (f->is_map()) {
      const FieldDescriptor* key = f->message_type()->map_key();
      const FieldDescriptor* value = f->message_type()->map_value();
      out->push_back('{');
      for (size_t k = begin; k < end; ++k) {
        const WireField w = scratch_[depth][k];
        if (w.wire_type != 2) {
          *detail = f->full_name() + ": a map entry that is not length-delimited";
          return false;
        }
        // The entry's key and value, each at its last occurrence.
        std::string_view entry = w.bytes;
        WireField key_field, value_field;
        bool has_key = false, has_value = false;
        while (!entry.empty()) {
          uint64_t tag = 0;
          WireField e;
          if (!ReadVarint(&entry, &tag)) break;
          e.wire_type = static_cast<uint8_t>(tag & 7);
          bool ok = false;
          if (e.wire_type == 0) ok = ReadVarint(&entry, &e.number);
          if (e.wire_type == 1) ok = ReadFixed(&entry, 8, &e.number);
          if (e.wire_type == 5) ok = ReadFixed(&entry, 4, &e.number);
          if (e.wire_type == 2) {
            uint64_t size = 0;
            ok = ReadVarint(&entry, &size) && size <= entry.size();
            if (ok) {
              e.bytes = entry.substr(0, size);
              entry.remove_prefix(size);
            }
          }
          if (!ok) {
            *detail = f->full_name() + ": a malformed map entry";
            return false;
          }
          if ((tag >> 3) == 1) {
            key_field = e;
            has_key = true;
          } else if ((tag >> 3) == 2) {
            value_field = e;
            has_value = true;
          }
        }
        if (!entry.empty()) {
          *detail = f->full_name() + ": a malformed map entry";
          return false;
        }
        if (!Room(*out, kSmallAppend, detail)) return false;
        if (k > begin) out->push_back(',');
        // The key as text: a string as is, a number or bool as its JSON text.
        if (key->type() == FieldDescriptor::TYPE_STRING) {
          if (!has_key) {
            out->append("\"\"");
          } else if (!element(key, key_field)) {
            return false;
          }
        } else {
          std::string text;
          if (has_key) {
            if (key_field.wire_type != WireTypeOf(key->type())) {
              *detail = f->full_name() + ": a map key of the wrong wire type";
              return false;
            }
            AppendScalar(key, key_field.number, &text);
          } else {
            AppendDefault(key, &text);
          }
          if (!RoomForString(*out, text, 2, detail)) return false;
          AppendJsonString(text, out);
        }
        out->push_back(':');
        if (has_value) {
          if (!element(value, value_field)) return false;
        } else if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          if (!Message(value->message_type(), {}, depth + 1, out, detail)) return false;
        } else {
          if (!Room(*out, DefaultSize(value), detail)) return false;
          AppendDefault(value, out);
        }
      }
      out->push_back('}');
    } else if (f->is_repeated()) {
      out->push_back('[');
      bool first_item = true;
      for (size_t k = begin; k < end; ++k) {
        const WireField w = scratch_[depth][k];
        const int scalar_wire = WireTypeOf(f->type());
        if (w.wire_type == 2 && scalar_wire != 2) {  // a packed run of scalars
          std::string_view run = w.bytes;
          while (!run.empty()) {
            uint64_t v = 0;
            const bool ok = scalar_wire == 0   ? ReadVarint(&run, &v)
                            : scalar_wire == 1 ? ReadFixed(&run, 8, &v)
                                               : ReadFixed(&run, 4, &v);
            if (!ok) {
              *detail = f->full_name() + ": a truncated packed run";
              return false;
            }
            if (!Room(*out, ScalarSize(f), detail)) return false;
            if (!first_item) out->push_back(',');
            first_item = false;
            AppendScalar(f, v, out);
          }
          continue;
        }
        if (!Room(*out, 1, detail)) return false;
        if (!first_item) out->push_back(',');
        first_item = false;
        if (!element(f, w)) return false;
      }
      out->push_back(']');
    } else if (absent) {
      if (!Room(*out, DefaultSize(f), detail)) return false;
      if (well_known_json_ && IsNullValue(f)) {
        out->append("null");
      } else {
        AppendDefault(f, out);
      }
    } else {
      const WireField w = scratch_[depth][end - 1];  // the last occurrence wins
      if (!element(f, w)) return false;
    }
  }
  if (!unwrap) out->push_back('}');
  return true;
}

template <typename Element>
ProtobufDecoder::WellKnown ProtobufDecoder::WellKnownType(const Descriptor* d, size_t depth,
                                                          Element& element, std::string* out,
                                                          std::string* detail) {
  // The last occurrence of field `number`, copied (a nested Message may move scratch_).
  auto last = [&](int number, WireField* found) {
    const FieldDescriptor* f = d->FindFieldByNumber(number);
    if (f == nullptr) return false;
    bool any = false;
    for (const WireField& w : scratch_[depth]) {
      if (w.index == f->index()) {
        *found = w;
        any = true;
      }
    }
    return any;
  };
  switch (d->well_known_type()) {
    case Descriptor::WELLKNOWNTYPE_TIMESTAMP:
    case Descriptor::WELLKNOWNTYPE_DURATION: {
      WireField seconds, nanos;
      const bool has_seconds = last(1, &seconds), has_nanos = last(2, &nanos);
      if ((has_seconds && seconds.wire_type != 0) || (has_nanos && nanos.wire_type != 0)) {
        *detail = d->full_name() + ": a field of the wrong wire type";
        return WellKnown::kFailed;
      }
      const auto s = has_seconds ? static_cast<int64_t>(seconds.number) : 0;
      const auto n = has_nanos ? static_cast<int32_t>(nanos.number) : 0;
      if (!Room(*out, kMaxWellKnownText, detail)) return WellKnown::kFailed;
      const bool ok = d->well_known_type() == Descriptor::WELLKNOWNTYPE_TIMESTAMP
                          ? AppendJsonTimestamp(s, n, out)
                          : AppendJsonDuration(s, n, out);
      if (!ok) {
        *detail = d->full_name() + " out of its range: seconds " + std::to_string(s) + ", nanos " +
                  std::to_string(n);
        return WellKnown::kFailed;
      }
      return WellKnown::kWritten;
    }
    case Descriptor::WELLKNOWNTYPE_DOUBLEVALUE:
    case Descriptor::WELLKNOWNTYPE_FLOATVALUE:
    case Descriptor::WELLKNOWNTYPE_INT64VALUE:
    case Descriptor::WELLKNOWNTYPE_UINT64VALUE:
    case Descriptor::WELLKNOWNTYPE_INT32VALUE:
    case Descriptor::WELLKNOWNTYPE_UINT32VALUE:
    case Descriptor::WELLKNOWNTYPE_STRINGVALUE:
    case Descriptor::WELLKNOWNTYPE_BYTESVALUE:
    case Descriptor::WELLKNOWNTYPE_BOOLVALUE: {
      // The wrapped value itself; a wrapper without it holds the default.
      const FieldDescriptor* f = d->FindFieldByNumber(1);
      if (f == nullptr) return WellKnown::kNotMapped;
      WireField value;
      if (last(1, &value)) return element(f, value) ? WellKnown::kWritten : WellKnown::kFailed;
      if (!Room(*out, DefaultSize(f), detail)) return WellKnown::kFailed;
      AppendDefault(f, out);
      return WellKnown::kWritten;
    }
    case Descriptor::WELLKNOWNTYPE_VALUE: {
      // Its kind: the member of the oneof last on the wire; none set is null.
      const WireField* kind = nullptr;
      for (const WireField& w : scratch_[depth]) {
        if (kind == nullptr || w.order >= kind->order) kind = &w;
      }
      if (kind == nullptr || d->field(kind->index)->number() == 1) {
        out->append("null");
        return WellKnown::kWritten;
      }
      const WireField w = *kind;
      return element(d->field(w.index), w) ? WellKnown::kWritten : WellKnown::kFailed;
    }
    case Descriptor::WELLKNOWNTYPE_FIELDMASK: {
      // The paths in lowerCamelCase, joined by ',' in one string.
      const FieldDescriptor* paths = d->FindFieldByNumber(1);
      if (paths == nullptr) return WellKnown::kNotMapped;
      std::string joined;
      for (const WireField& w : scratch_[depth]) {
        if (w.index != paths->index()) continue;
        if (w.wire_type != 2 || !IsUtf8(w.bytes)) {
          *detail = d->full_name() + ": a path that is not a UTF-8 string";
          return WellKnown::kFailed;
        }
        if (!Room(*out, joined.size() + w.bytes.size() + 1, detail)) return WellKnown::kFailed;
        if (!joined.empty()) joined.push_back(',');
        AppendFieldMaskPath(w.bytes, &joined);
      }
      if (!RoomForString(*out, joined, 0, detail)) return WellKnown::kFailed;
      AppendJsonString(joined, out);
      return WellKnown::kWritten;
    }
    default:
      return WellKnown::kNotMapped;  // Struct, ListValue, Empty, Any: written as messages
  }
}

}  // namespace hotrow::ingest
