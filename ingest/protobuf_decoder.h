#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "ingest/decoder.h"
#include "ingest/schema_cache.h"
#include "ingest/schema_registry.h"

namespace google::protobuf {
class Descriptor;
class FieldDescriptor;
class DescriptorPool;
class FileDescriptor;
}  // namespace google::protobuf

namespace hotrow::ingest {

// Protobuf record values to JSON text (CONTRACT.md "Input formats"). The descriptors come from
// libprotobuf (a DescriptorPool built from a descriptor set, or from the registry's serialized
// FileDescriptorProtos); the wire-to-JSON transcoding is this file's own, driven by the
// descriptor: one pass over the wire bytes per message, no DynamicMessage, no re-serialization
// (util::MessageToJsonString costs tens of µs per record; it is the tests' oracle).
//
// The mapping: Protobuf's JSON mapping, with field names as declared (not lowerCamelCase); every
// field written, those absent at their default (0, "", false, the enum's default symbol, [] for a
// repeated field, {} for a map) except absent message fields and fields of a oneof (proto3
// `optional` included), which are left out, as json_format's including_default_value_fields does;
// enums as their symbol (a number outside the enum as the number); 64-bit integers as JSON
// numbers (not strings); bytes as base64; float and double numbers (NaN and the infinities as
// strings); maps as objects keyed by the key's text. Well-known types as proto3's JSON mapping
// writes them (protobuf_well_known.h: Timestamp an RFC 3339 string, Duration "1.5s", a wrapper
// its value, Struct, Value and ListValue the JSON they hold, FieldMask its camelCase paths;
// Any and Empty as messages), or as the messages they are when well_known_json is false.
// Unknown fields are skipped, unknown groups too; a later occurrence of a singular scalar wins,
// occurrences of a singular message are merged, of a oneof's members the last on the wire is
// written, and of map entries with one key the last. A known group field, a wire type that does
// not match the field, a string that is not UTF-8, nesting deeper than 100 and truncated input
// are bad_protobuf.
//
// Sources of descriptors:
// - one message of a descriptor set (ingest.protobuf.descriptor_set, ingest.protobuf.message):
//   records are the bare message;
// - a registry: records carry Confluent's framing with the message-index list; the schema of each
//   id (GET /schemas/ids/{id}?format=serialized) and its references (recursively, GET
//   /subjects/{s}/versions/{v}?format=serialized) go into a pool of their own, kept in
//   schema_cache.h (the least recently used evicted past kMaxCachedSchemas, a failure remembered
//   for 10 s). The registry names every serialized file "default": a reference is built under
//   its import path (the reference's name), the root under a name of its own.
//
// Rejects: not_framed, unknown_schema (a 404 for the id or a reference, not a PROTOBUF schema, a
// descriptor that does not build, a message index outside the schema), bad_protobuf, too_large
// (its JSON text would pass max_decoded_bytes: checked before each append, so a repeated field of
// empty messages that each write every default cannot grow memory or CPU past the bound). kWait
// when the registry cannot be asked.
//
// Thread-safety: not thread-safe; one per thread.
class ProtobufDecoder final : public Decoder {
 public:
  // Unframed records of `message` (a full name), described in `descriptor_set` (a serialized
  // FileDescriptorSet, imports included). InvalidArgument when it does not parse or build, or
  // lacks the message. `well_known_json` (ingest.protobuf.well_known: json): well-known types in
  // proto3's JSON mapping; false writes them as the messages they are.
  static Result<std::unique_ptr<ProtobufDecoder>> WithDescriptorSet(
      std::string_view descriptor_set, const std::string& message,
      size_t max_decoded_bytes = kDefaultMaxDecodedBytes, bool well_known_json = true);
  // Framed records, schemas from `registry`.
  // `legacy_indexes`: the message-index list as python3-confluent-kafka before 1.8.2 writes it
  // (confluent_framing.h).
  static std::unique_ptr<ProtobufDecoder> WithRegistry(
      std::unique_ptr<SchemaSource> registry, size_t max_decoded_bytes = kDefaultMaxDecodedBytes,
      bool legacy_indexes = false, bool well_known_json = true);
  ~ProtobufDecoder() override;

  DecodeStatus Decode(std::string_view value, std::string* json, const char** reject,
                      std::string* detail) override;

  // Decode in two steps, for the ingest benchmark's stages: the framing and the message type
  // (*message, *body), then the transcoding of the body.
  DecodeStatus Locate(std::string_view value, const google::protobuf::Descriptor** message,
                      std::string_view* body, const char** reject, std::string* detail);
  bool Transcode(const google::protobuf::Descriptor* message, std::string_view body,
                 std::string* json, std::string* detail);

  // One field occurrence on the wire; internal to the transcoder, public for its helpers.
  struct WireField {
    int index = 0;           // the field's index in its message's descriptor
    uint8_t wire_type = 0;   // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
    uint64_t number = 0;     // the varint or fixed value
    std::string_view bytes;  // the length-delimited payload
    uint32_t order = 0;      // its place among the message's fields on the wire
  };

 private:
  struct Schema;  // the pool of one schema id, and its main file
  ProtobufDecoder();
  DecodeStatus SchemaFor(uint32_t id, Schema** schema, const char** reject, std::string* detail);
  bool Message(const google::protobuf::Descriptor* d, std::string_view in, size_t depth,
               std::string* out, std::string* detail);
  // A well-known type's JSON from the fields Message read at `depth` (protobuf_transcode.cc);
  // `element` writes one field occurrence.
  enum class WellKnown { kWritten, kFailed, kNotMapped };
  // (*keep)[k - begin]: whether map entry k of [begin, end) at `depth` is the last with its
  // key. Linear in the entries.
  void MarkLastOfEachKey(const google::protobuf::FieldDescriptor* key, size_t begin, size_t end,
                         size_t depth, std::vector<char>* keep);
  template <typename Element>
  WellKnown WellKnownType(const google::protobuf::Descriptor* d, size_t depth, Element& element,
                          std::string* out, std::string* detail);
  // Whether `n` more bytes fit in `out` under max_decoded_bytes_; when not, sets too_large_ and
  // *detail. Checked before every append.
  bool Room(const std::string& out, uint64_t n, std::string* detail) {
    if (out.size() <= max_decoded_bytes_ && n <= max_decoded_bytes_ - out.size()) [[likely]] {
      return true;
    }
    return TooLarge(detail);
  }
  [[gnu::noinline]] bool TooLarge(std::string* detail);
  bool RoomForString(const std::string& out, std::string_view text, uint64_t extra,
                     std::string* detail);

  std::unique_ptr<SchemaSource> registry_;  // null when unframed
  std::unique_ptr<google::protobuf::DescriptorPool> single_pool_;
  const google::protobuf::Descriptor* single_ = nullptr;  // the message when unframed
  SchemaCache<Schema> by_id_;                             // when framed
  std::vector<int> indexes_;                              // scratch: the message-index list
  std::vector<std::vector<WireField>> scratch_;           // the fields read, per nesting depth
  std::vector<std::vector<int>> oneof_winners_;           // per depth: each oneof's member written
  size_t max_decoded_bytes_ = kDefaultMaxDecodedBytes;    // the bound on a record's JSON text
  bool too_large_ = false;                                // why the last Transcode failed
  uint64_t merged_bytes_ = 0;  // bytes copied to merge messages in this Transcode
  bool legacy_indexes_ = false;                           // the message indexes unzigzagged
  bool well_known_json_ = true;  // ingest.protobuf.well_known: json (else message)
};

}  // namespace hotrow::ingest
