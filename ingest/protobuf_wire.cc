// Reading Protobuf's wire format for the transcoder (protobuf_wire.h).
#include "ingest/protobuf_wire.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cstring>

#include "ingest/json_text.h"
#include "ingest/varint.h"

namespace hotrow::ingest::protobuf_wire {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

namespace {

constexpr int kMaxGroupDepth = 100;

}  // namespace

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

// At most the size of AppendScalar's text for an enum field: its longest symbol.
uint64_t EnumSize(const FieldDescriptor* f) {
  uint64_t longest = 0;
  for (int i = 0; i < f->enum_type()->value_count(); ++i) {
    longest = std::max<uint64_t>(longest, f->enum_type()->value(i)->name().size());
  }
  return kSmallAppend + 6 * longest;
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
bool SkipGroup(std::string_view* in, uint64_t number, int depth) {
  if (depth >= kMaxGroupDepth) return false;
  while (!in->empty()) {
    uint64_t tag = 0, v = 0;
    if (!ReadVarint(in, &tag) || (tag >> 3) == 0) return false;
    bool ok = false;
    switch (tag & 7) {
      case 0:
        ok = ReadVarint(in, &v);
        break;
      case 1:
        ok = ReadFixed(in, 8, &v);
        break;
      case 5:
        ok = ReadFixed(in, 4, &v);
        break;
      case 2:
        ok = ReadVarint(in, &v) && v <= in->size();
        if (ok) in->remove_prefix(v);
        break;
      case 3:
        ok = SkipGroup(in, tag >> 3, depth + 1);
        break;
      case 4:
        return (tag >> 3) == number;
      default:
        return false;
    }
    if (!ok) return false;
  }
  return false;  // no end-group tag
}

bool ParseMapEntry(std::string_view entry, WireField* key, bool* has_key, WireField* value,
                   bool* has_value) {
  *has_key = *has_value = false;
  while (!entry.empty()) {
    uint64_t tag = 0;
    WireField e;
    if (!ReadVarint(&entry, &tag)) return false;
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
    if (!ok) return false;
    if ((tag >> 3) == 1) {
      *key = e;
      *has_key = true;
    } else if ((tag >> 3) == 2) {
      *value = e;
      *has_value = true;
    }
  }
  return true;
}

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
      case 3:
        // A group: skipped when no field of the message has its number (an unknown field, as
        // any other); a known group field is not read.
        if (d->FindFieldByNumber(static_cast<int>(tag >> 3)) != nullptr) {
          *detail = d->full_name() + ": field " + std::to_string(tag >> 3) +
                    " is a group (groups are not read)";
          return false;
        }
        if (!SkipGroup(&in, tag >> 3, 0)) {
          *detail =
              d->full_name() + ": a malformed or unterminated group " + std::to_string(tag >> 3);
          return false;
        }
        continue;
      default:
        *detail = d->full_name() + ": wire type " + std::to_string(w.wire_type) +
                  " where no group is open";
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

}  // namespace hotrow::ingest::protobuf_wire
