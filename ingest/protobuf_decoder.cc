#include "ingest/protobuf_decoder.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "ingest/json_text.h"
#include "ingest/varint.h"

namespace hotrow::ingest {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::FileDescriptorProto;
using WireField = ProtobufDecoder::WireField;

namespace {

constexpr size_t kMaxProtobufDepth = 100;
constexpr int kMaxReferenceDepth = 32;

// Keeps the first error of a BuildFile.
class FirstError final : public DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name,
                const google::protobuf::Message*, ErrorLocation,
                const std::string& message) override {
    if (text.empty()) text = filename + ": " + element_name + ": " + message;
  }
  std::string text;
};

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
    fields->push_back(w);
  }
  std::stable_sort(fields->begin(), fields->end(),
                   [](const WireField& a, const WireField& b) { return a.index < b.index; });
  return true;
}

}  // namespace

struct ProtobufDecoder::Schema {
  std::unique_ptr<DescriptorPool> pool;
  const FileDescriptor* file = nullptr;
};

ProtobufDecoder::ProtobufDecoder() = default;
ProtobufDecoder::~ProtobufDecoder() = default;

Result<std::unique_ptr<ProtobufDecoder>> ProtobufDecoder::WithDescriptorSet(
    std::string_view descriptor_set, const std::string& message, size_t max_decoded_bytes) {
  google::protobuf::FileDescriptorSet set;
  if (!set.ParseFromArray(descriptor_set.data(), static_cast<int>(descriptor_set.size()))) {
    return Status::InvalidArgument("not a serialized FileDescriptorSet");
  }
  std::unique_ptr<ProtobufDecoder> decoder(new ProtobufDecoder());
  decoder->max_decoded_bytes_ = max_decoded_bytes;
  decoder->single_pool_ = std::make_unique<DescriptorPool>(DescriptorPool::generated_pool());
  for (const FileDescriptorProto& file : set.file()) {
    if (decoder->single_pool_->FindFileByName(file.name()) != nullptr) continue;
    FirstError error;
    if (decoder->single_pool_->BuildFileCollectingErrors(file, &error) == nullptr) {
      return Status::InvalidArgument("the descriptor set does not build: " + error.text);
    }
  }
  decoder->single_ = decoder->single_pool_->FindMessageTypeByName(message);
  if (decoder->single_ == nullptr) {
    return Status::InvalidArgument("the descriptor set has no message " + message +
                                   " (give its full name, package included)");
  }
  return decoder;
}

std::unique_ptr<ProtobufDecoder> ProtobufDecoder::WithRegistry(
    std::unique_ptr<SchemaSource> registry, size_t max_decoded_bytes, bool legacy_indexes) {
  std::unique_ptr<ProtobufDecoder> decoder(new ProtobufDecoder());
  decoder->max_decoded_bytes_ = max_decoded_bytes;
  decoder->legacy_indexes_ = legacy_indexes;
  decoder->registry_ = std::move(registry);
  return decoder;
}

namespace {

// What loading a schema and its references into a pool came to.
struct LoadOutcome {
  DecodeStatus status = DecodeStatus::kOk;
  std::string detail;
  const FileDescriptor* file = nullptr;
};

LoadOutcome Fail(const Status& status) {
  return {status.code() == Status::Code::kNotFound ? DecodeStatus::kReject : DecodeStatus::kWait,
          status.message(), nullptr};
}

// Builds `schema` (its references first) into `pool` as the file `name`. The names the files
// carry are not used: Confluent's registry answers ?format=serialized with every file named
// "default", the root and each reference alike. A reference is built under its import path (the
// reference's name, which is what its importer's dependency list says), the root under a name
// of its own, as Confluent's clients do; otherwise the root would be found as its first
// reference and records read as the imported message.
LoadOutcome LoadInto(SchemaSource* registry, const RegistrySchema& schema, const std::string& name,
                     int depth, DescriptorPool* pool) {
  if (depth > kMaxReferenceDepth) {
    return {DecodeStatus::kReject, "references nested deeper than 32", nullptr};
  }
  if (schema.schema_type != "PROTOBUF") {
    return {DecodeStatus::kReject, "a " + schema.schema_type + " schema, not PROTOBUF", nullptr};
  }
  for (const RegistrySchema::Reference& ref : schema.references) {
    if (pool->FindFileByName(ref.name) != nullptr) continue;
    Result<RegistrySchema> referenced =
        registry->BySubjectVersion(ref.subject, ref.version, /*serialized=*/true);
    if (!referenced.ok()) return Fail(referenced.status());
    LoadOutcome loaded = LoadInto(registry, *referenced, ref.name, depth + 1, pool);
    if (loaded.status != DecodeStatus::kOk) {
      loaded.detail = "reference " + ref.name + " (subject " + ref.subject + " version " +
                      std::to_string(ref.version) + "): " + loaded.detail;
      return loaded;
    }
  }
  std::string bytes;
  FileDescriptorProto proto;
  if (!DecodeBase64(schema.schema, &bytes) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return {DecodeStatus::kReject, "not a base64 FileDescriptorProto", nullptr};
  }
  proto.set_name(name);
  FirstError error;
  const FileDescriptor* file = pool->BuildFileCollectingErrors(proto, &error);
  if (file == nullptr) return {DecodeStatus::kReject, "does not build: " + error.text, nullptr};
  return {DecodeStatus::kOk, "", file};
}

}  // namespace

DecodeStatus ProtobufDecoder::SchemaFor(uint32_t id, Schema** schema, const char** reject,
                                        std::string* detail) {
  if (Schema* made = by_id_.Find(id)) {
    *schema = made;
    return DecodeStatus::kOk;
  }
  if (const std::string* failure = by_id_.Failure(id)) {
    *reject = kRejectUnknownSchema;
    *detail = *failure;
    return DecodeStatus::kReject;
  }
  Result<RegistrySchema> fetched = registry_->ById(id, /*serialized=*/true);
  LoadOutcome loaded;
  auto made = std::make_unique<Schema>();
  if (!fetched.ok()) {
    loaded = Fail(fetched.status());
  } else {
    made->pool = std::make_unique<DescriptorPool>(DescriptorPool::generated_pool());
    // No import path can name the root: a reference of that name would be a cycle.
    loaded = LoadInto(registry_.get(), *fetched, "<schema id " + std::to_string(id) + ">", 0,
                      made->pool.get());
  }
  if (loaded.status != DecodeStatus::kOk) {
    *detail = "schema id " + std::to_string(id) + ": " + loaded.detail;
    if (loaded.status == DecodeStatus::kReject) {
      *reject = kRejectUnknownSchema;
      // The id itself unknown is remembered by RememberNotFound; the rest here.
      if (fetched.ok()) by_id_.RememberFailure(id, *detail);
    }
    return loaded.status;
  }
  made->file = loaded.file;
  *schema = by_id_.Insert(id, std::move(made));
  return DecodeStatus::kOk;
}

DecodeStatus ProtobufDecoder::Locate(std::string_view value, const Descriptor** message,
                                     std::string_view* body, const char** reject,
                                     std::string* detail) {
  if (registry_ == nullptr) {
    *message = single_;
    *body = value;
    return DecodeStatus::kOk;
  }
  uint32_t id = 0;
  std::string_view rest;
  if (!ParseConfluentHeader(value, &id, &rest) ||
      !ParseMessageIndexes(rest, &indexes_, body, legacy_indexes_)) {
    *reject = kRejectNotFramed;
    *detail = "no Confluent framing (magic byte 0, schema id, message indexes)";
    return DecodeStatus::kReject;
  }
  Schema* schema = nullptr;
  DecodeStatus s = SchemaFor(id, &schema, reject, detail);
  if (s != DecodeStatus::kOk) return s;
  const Descriptor* d = nullptr;
  for (size_t i = 0; i < indexes_.size(); ++i) {
    const int count = i == 0 ? schema->file->message_type_count() : d->nested_type_count();
    if (indexes_[i] >= count) {
      *reject = kRejectUnknownSchema;
      *detail = "schema id " + std::to_string(id) + " has no message at index " +
                std::to_string(indexes_[i]) + " of level " + std::to_string(i);
      return DecodeStatus::kReject;
    }
    d = i == 0 ? schema->file->message_type(indexes_[i]) : d->nested_type(indexes_[i]);
  }
  *message = d;
  return DecodeStatus::kOk;
}

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

DecodeStatus ProtobufDecoder::Decode(std::string_view value, std::string* json, const char** reject,
                                     std::string* detail) {
  const Descriptor* message = nullptr;
  std::string_view body;
  DecodeStatus s = Locate(value, &message, &body, reject, detail);
  if (s != DecodeStatus::kOk) return s;
  if (!Transcode(message, body, json, detail)) {
    *reject = too_large_ ? kRejectTooLarge : kRejectBadProtobuf;
    return DecodeStatus::kReject;
  }
  return DecodeStatus::kOk;
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
        AppendScalar(f, w.number, out);
        return true;
    }
  };

  out->push_back('{');
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
    if (!RoomForString(*out, f->name(), kSmallAppend, detail)) return false;
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(f->name(), out);
    out->push_back(':');
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
      AppendDefault(f, out);
    } else {
      const WireField w = scratch_[depth][end - 1];  // the last occurrence wins
      if (!element(f, w)) return false;
    }
  }
  out->push_back('}');
  return true;
}

}  // namespace hotrow::ingest
