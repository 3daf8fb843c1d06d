// The wire-to-JSON transcoding of ProtobufDecoder (protobuf_decoder.h): one pass over the wire
// bytes of a message, driven by its descriptor, every append checked against the bound.
#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "ingest/json_text.h"
#include "ingest/protobuf_decoder.h"
#include "ingest/protobuf_well_known.h"
#include "ingest/protobuf_wire.h"
#include "ingest/varint.h"

namespace hotrow::ingest {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using WireField = ProtobufDecoder::WireField;
using namespace protobuf_wire;  // NOLINT: the wire helpers, this file's vocabulary

namespace {

constexpr size_t kMaxProtobufDepth = 100;

// Whether f is a google.protobuf.NullValue, which the JSON mapping writes as null.
bool IsNullValue(const FieldDescriptor* f) {
  return f->type() == FieldDescriptor::TYPE_ENUM &&
         f->enum_type()->full_name() == "google.protobuf.NullValue";
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
  merged_bytes_ = 0;
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
      bool first_entry = true;
      std::vector<char> keep;
      if (end - begin > 1) MarkLastOfEachKey(key, begin, end, depth, &keep);
      for (size_t k = begin; k < end; ++k) {
        const WireField w = scratch_[depth][k];
        if (w.wire_type != 2) {
          *detail = f->full_name() + ": a map entry that is not length-delimited";
          return false;
        }
        WireField key_field, value_field;
        bool has_key = false, has_value = false;
        if (!ParseMapEntry(w.bytes, &key_field, &has_key, &value_field, &has_value)) {
          *detail = f->full_name() + ": a malformed map entry";
          return false;
        }
        // Of entries with one key, the last is written (a parser keeps it).
        if (!keep.empty() && !keep[k - begin]) continue;
        if (!Room(*out, kSmallAppend, detail)) return false;
        if (!first_entry) out->push_back(',');
        first_entry = false;
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
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && end - begin > 1) {
      // A message written more than once is merged, as a parser merges it: read as the
      // concatenation of its occurrences.
      std::string merged;
      for (size_t k = begin; k < end; ++k) {
        const WireField& w = scratch_[depth][k];
        if (w.wire_type != 2) {
          *detail =
              f->full_name() + ": wire type " + std::to_string(w.wire_type) + " for a message";
          return false;
        }
        // The copies of nested merges count against the bound too: 100 levels of a 1 MiB
        // record must not hold 100 MiB.
        merged_bytes_ += w.bytes.size();
        if (merged_bytes_ > max_decoded_bytes_) return TooLarge(detail);
        merged.append(w.bytes);
      }
      if (!Message(f->message_type(), merged, depth + 1, out, detail)) return false;
    } else {
      const WireField w = scratch_[depth][end - 1];  // the last occurrence wins
      if (!element(f, w)) return false;
    }
  }
  if (!unwrap) out->push_back('}');
  return true;
}

void ProtobufDecoder::MarkLastOfEachKey(const FieldDescriptor* key, size_t begin, size_t end,
                                        size_t depth, std::vector<char>* keep) {
  // Keys compared by their wire form: the bytes of a string, the number of a scalar (32-bit and
  // bool keys as the value they read as). One pass from the end, a hash set: linear in entries.
  const bool narrow = key->cpp_type() == FieldDescriptor::CPPTYPE_INT32 ||
                      key->cpp_type() == FieldDescriptor::CPPTYPE_UINT32;
  const bool boolean = key->cpp_type() == FieldDescriptor::CPPTYPE_BOOL;
  std::unordered_set<std::string_view> strings;
  std::unordered_set<uint64_t> numbers;
  keep->assign(end - begin, 1);
  for (size_t i = end; i-- > begin;) {
    WireField kf, vf;
    bool has_key = false, has_value = false;
    ParseMapEntry(scratch_[depth][i].bytes, &kf, &has_key, &vf, &has_value);
    bool seen;
    if (key->type() == FieldDescriptor::TYPE_STRING) {
      seen = !strings.insert(has_key ? kf.bytes : std::string_view()).second;
    } else {
      uint64_t n = has_key ? kf.number : 0;
      if (narrow) n &= 0xffffffffu;
      if (boolean) n = n != 0;
      seen = !numbers.insert(n).second;
    }
    if (seen) (*keep)[i - begin] = 0;
  }
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
