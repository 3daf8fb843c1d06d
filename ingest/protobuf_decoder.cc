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

}  // namespace

struct ProtobufDecoder::Schema {
  std::unique_ptr<DescriptorPool> pool;
  const FileDescriptor* file = nullptr;
};

ProtobufDecoder::ProtobufDecoder() = default;
ProtobufDecoder::~ProtobufDecoder() = default;

Result<std::unique_ptr<ProtobufDecoder>> ProtobufDecoder::WithDescriptorSet(
    std::string_view descriptor_set, const std::string& message, size_t max_decoded_bytes,
    bool well_known_json) {
  google::protobuf::FileDescriptorSet set;
  if (!set.ParseFromArray(descriptor_set.data(), static_cast<int>(descriptor_set.size()))) {
    return Status::InvalidArgument("not a serialized FileDescriptorSet");
  }
  std::unique_ptr<ProtobufDecoder> decoder(new ProtobufDecoder());
  decoder->max_decoded_bytes_ = max_decoded_bytes;
  decoder->well_known_json_ = well_known_json;
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
    std::unique_ptr<SchemaSource> registry, size_t max_decoded_bytes, bool legacy_indexes,
    bool well_known_json) {
  std::unique_ptr<ProtobufDecoder> decoder(new ProtobufDecoder());
  decoder->max_decoded_bytes_ = max_decoded_bytes;
  decoder->legacy_indexes_ = legacy_indexes;
  decoder->well_known_json_ = well_known_json;
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

}  // namespace hotrow::ingest
