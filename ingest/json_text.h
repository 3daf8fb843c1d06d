#pragma once

#include <cstdint>
#include <string>
#include <string_view>

// Small writers of JSON text for the decoders (avro_decoder.h, protobuf_decoder.h) and the record
// metadata (record_meta.h): they append to a caller's buffer, so that a record's JSON is written
// in one pass with no intermediate tree. Writing only: parsing stays with simdjson / nlohmann.
namespace hotrow::ingest {

// Appends `text` as a JSON string, quoted and escaped. REQUIRES: `text` is valid UTF-8
// (IsUtf8); control characters are written as \uXXXX, '"' and '\\' escaped.
void AppendJsonString(std::string_view text, std::string* out);

// Whether `bytes` is valid UTF-8.
bool IsUtf8(std::string_view bytes);

// Appends standard base64 (RFC 4648, with '=' padding), unquoted.
void AppendBase64(std::string_view bytes, std::string* out);
// Decodes standard base64 (padding optional, no whitespace). False on any other byte.
bool DecodeBase64(std::string_view text, std::string* out);

// Appends the decimal text of an integer.
void AppendInt(int64_t value, std::string* out);
void AppendUint(uint64_t value, std::string* out);
// Appends the shortest text that reads back as the same value; NaN and the infinities, which
// JSON numbers cannot hold, as the strings "NaN", "Infinity" and "-Infinity" (Protobuf's JSON
// mapping).
void AppendDouble(double value, std::string* out);
void AppendFloat(float value, std::string* out);

// Appends the decimal text of a two's-complement big-endian integer (Avro's decimal), with the
// point `scale` digits from the right: {0x30, 0x39} with scale 2 is "123.45". Any length.
void AppendDecimal(std::string_view big_endian, int scale, std::string* out);

}  // namespace hotrow::ingest
