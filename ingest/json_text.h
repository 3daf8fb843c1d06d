#pragma once

#include <cstddef>
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

// The size of AppendJsonString's text for `text`, quotes included: what a writer checks against
// its bound before it appends.
size_t JsonStringSize(std::string_view text);

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

// The longest unscaled decimal AppendDecimal converts: 1 KiB (2,466 digits), far beyond any
// database's decimal (38 to 1,000 digits). Binary to decimal text costs the square of the length,
// so this bound, not the record's size, is what bounds a decimal's CPU.
inline constexpr size_t kMaxDecimalBytes = 1024;

// Appends the decimal text of a two's-complement big-endian integer (Avro's decimal), with the
// point `scale` digits from the right: {0x30, 0x39} with scale 2 is "123.45"; a negative scale
// appends zeros. Returns false, appending nothing, when the value without its sign-extension
// bytes is longer than kMaxDecimalBytes or its text would take `out` past `max_size` bytes: both
// checked before anything is converted or allocated. Linear in big_endian.size() beyond the
// first kMaxDecimalBytes.
bool AppendDecimal(std::string_view big_endian, int scale, size_t max_size, std::string* out);

}  // namespace hotrow::ingest
