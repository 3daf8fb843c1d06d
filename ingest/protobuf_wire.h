#pragma once

#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/protobuf_decoder.h"

// Reading Protobuf's wire format, for the transcoder of protobuf_decoder.h (protobuf_transcode.cc):
// fixed-width values, one message's fields, groups skipped, map entries, and the JSON text of a
// scalar with the most room it may take. Internal to ingest/.
namespace hotrow::ingest::protobuf_wire {

using WireField = ProtobufDecoder::WireField;

// What a check before a small append allows for: a number, a literal, punctuation.
inline constexpr uint64_t kSmallAppend = 64;

// Reads a little-endian value of `size` (4 or 8) bytes. False when fewer are left.
inline bool ReadFixed(std::string_view* in, size_t size, uint64_t* value) {
  if (in->size() < size) return false;
  uint64_t v = 0;
  std::memcpy(&v, in->data(), size);  // little-endian on the wire and on hotrow's platforms
  in->remove_prefix(size);
  *value = v;
  return true;
}

// The wire type a field of `type` is written with (packed repeated scalars aside).
int WireTypeOf(google::protobuf::FieldDescriptor::Type type);

// Appends the JSON of a scalar (not string, bytes or message) from its wire number.
void AppendScalar(const google::protobuf::FieldDescriptor* f, uint64_t v, std::string* out);

// Appends the default of an absent singular scalar, string or bytes field.
void AppendDefault(const google::protobuf::FieldDescriptor* f, std::string* out);

// At most the size of AppendScalar's text for an enum field f (its longest symbol).
uint64_t EnumSize(const google::protobuf::FieldDescriptor* f);
// At most the size of AppendScalar's text for f.
inline uint64_t ScalarSize(const google::protobuf::FieldDescriptor* f) {
  return f->type() == google::protobuf::FieldDescriptor::TYPE_ENUM ? EnumSize(f) : kSmallAppend;
}
// At most the size of AppendDefault's text for f.
uint64_t DefaultSize(const google::protobuf::FieldDescriptor* f);

// Skips the rest of group `number`, whose start tag was just read: up to its end-group tag,
// nested groups included (at most 100 deep). False when malformed or unterminated.
bool SkipGroup(std::string_view* in, uint64_t number, int depth);

// The key (field 1) and value (field 2) of a map entry's bytes, each at its last occurrence.
// False when malformed.
bool ParseMapEntry(std::string_view entry, WireField* key, bool* has_key, WireField* value,
                   bool* has_value);

// Reads the fields of one message's wire bytes into *fields, sorted by the field's index in `d`
// (stable: the wire order kept within one field; WireField::order says it across fields).
// Unknown fields are skipped, unknown groups too; a known group field, a stray end-group tag, a
// malformed tag or a truncated value fail with *detail.
bool ReadFields(const google::protobuf::Descriptor* d, std::string_view in,
                std::vector<WireField>* fields, std::string* detail);

}  // namespace hotrow::ingest::protobuf_wire
