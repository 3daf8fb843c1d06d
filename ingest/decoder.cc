// The one place that picks a record decoder from ingest.format (decoder.h). A new format is a
// new file beside avro_decoder.cc and protobuf_decoder.cc, and a case here.
#include "ingest/decoder.h"

#include <cstdio>
#include <new>

#include "ingest/avro_decoder.h"
#include "ingest/ingestor.h"
#include "ingest/protobuf_decoder.h"
#include "ingest/schema_fetcher.h"
#include "ingest/schema_registry.h"

namespace hotrow::ingest {

const char* FormatName(Format format) {
  switch (format) {
    case Format::kJson:
      return "json";
    case Format::kAvro:
      return "avro";
    case Format::kProtobuf:
      return "protobuf";
  }
  return "json";
}

namespace {

Result<std::string> ReadFileNamed(const std::string& key, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::InvalidArgument(key + ": cannot read " + path);
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::InvalidArgument(key + ": cannot read " + path);
  return text;
}

Result<std::unique_ptr<SchemaSource>> Registry(const FormatOptions& options) {
  RegistryOptions registry;
  registry.url = options.registry_url;
  registry.user_info = options.registry_user_info;
  registry.ca_file = options.registry_ca;
  registry.timeout_ms = options.registry_timeout_ms;
  if (!options.registry_user_info_file.empty()) {
    Result<std::string> text =
        ReadFileNamed("ingest.schema_registry.user_info_file", options.registry_user_info_file);
    if (!text.ok()) return text.status();
    while (!text->empty() && (text->back() == '\n' || text->back() == '\r')) text->pop_back();
    registry.user_info = std::move(*text);
  }
  if (!options.registry_ca.empty()) {
    HOTROW_RETURN_IF_ERROR(
        ReadFileNamed("ingest.schema_registry.ca", options.registry_ca).status());
  }
  Result<std::unique_ptr<SchemaSource>> source = OpenSchemaRegistry(registry);
  if (!source.ok()) return source.status();
  // Fetched off the decoding thread (the poller), so that a registry that hangs holds only the
  // partitions whose records wait for it.
  return FetchInBackground(RememberNotFound(std::move(*source)), options.fetch_stats);
}

}  // namespace

DecodeStatus DecodeRecord(Decoder* decoder, std::string_view value, std::string* json,
                          const char** reject, std::string* detail) {
  try {
    return decoder->Decode(value, json, reject, detail);
  } catch (const std::bad_alloc&) {
    json->clear();
    json->shrink_to_fit();
    *reject = kRejectTooLarge;
    *detail = "decoding it ran out of memory";
    return DecodeStatus::kReject;
  }
}

Result<std::unique_ptr<Decoder>> MakeDecoder(const FormatOptions& options) {
  const bool registry = !options.registry_url.empty();
  switch (options.format) {
    case Format::kJson:
      return std::unique_ptr<Decoder>();
    case Format::kAvro: {
      if (registry) {
        Result<std::unique_ptr<SchemaSource>> source = Registry(options);
        if (!source.ok()) return source.status();
        return std::unique_ptr<Decoder>(AvroDecoder::WithRegistry(
            std::move(*source), options.max_decoded_bytes, options.ts_field));
      }
      Result<std::string> schema =
          ReadFileNamed("ingest.avro.schema_file", options.avro_schema_file);
      if (!schema.ok()) return schema.status();
      Result<std::unique_ptr<AvroDecoder>> decoder =
          AvroDecoder::WithSchema(*schema, options.max_decoded_bytes, options.ts_field);
      if (!decoder.ok()) {
        return Status::InvalidArgument("ingest.avro.schema_file: " + options.avro_schema_file +
                                       ": " + decoder.status().message());
      }
      return std::unique_ptr<Decoder>(std::move(*decoder));
    }
    case Format::kProtobuf: {
      if (registry) {
        Result<std::unique_ptr<SchemaSource>> source = Registry(options);
        if (!source.ok()) return source.status();
        return std::unique_ptr<Decoder>(ProtobufDecoder::WithRegistry(
            std::move(*source), options.max_decoded_bytes, options.protobuf_legacy_indexes,
            options.protobuf_well_known_json));
      }
      Result<std::string> set =
          ReadFileNamed("ingest.protobuf.descriptor_set", options.protobuf_descriptor_set);
      if (!set.ok()) return set.status();
      Result<std::unique_ptr<ProtobufDecoder>> decoder = ProtobufDecoder::WithDescriptorSet(
          *set, options.protobuf_message, options.max_decoded_bytes,
          options.protobuf_well_known_json);
      if (!decoder.ok()) {
        return Status::InvalidArgument(
            "ingest.protobuf.descriptor_set: " + options.protobuf_descriptor_set + ": " +
            decoder.status().message());
      }
      return std::unique_ptr<Decoder>(std::move(*decoder));
    }
  }
  return std::unique_ptr<Decoder>();
}

}  // namespace hotrow::ingest
