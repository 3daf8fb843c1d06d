#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// Confluent's framing of a record value written through a Schema Registry (its serializers for
// Avro, Protobuf and JSON Schema):
//
//   byte 0      magic, always 0
//   bytes 1..4  the schema id, a big-endian 32-bit integer (GET /schemas/ids/{id})
//   Protobuf only: the message-index list, the path from the schema's file to the message type:
//               a zigzag varint count, then that many zigzag varint indexes (message_type(i0),
//               its nested_type(i1), ...). The common case [0] (the file's first message) is
//               the single byte 0 (a count of 0 read as [0]).
//   then        the encoded message
//
// Pure functions, no I/O. Parsers return false on malformed input and leave outputs unspecified.
namespace hotrow::ingest {

inline constexpr size_t kConfluentHeaderSize = 5;
// A message-index list longer than this is refused (nesting is never that deep in practice).
inline constexpr size_t kMaxMessageIndexes = 64;

// Splits a framed value into its schema id and what follows. False when the value is shorter
// than kConfluentHeaderSize or byte 0 is not 0.
bool ParseConfluentHeader(std::string_view value, uint32_t* schema_id, std::string_view* rest);

// Reads the Protobuf message-index list at the start of `in`; `*rest` is the message after it.
// False on a truncated or overlong varint, a negative count or index, or more than
// kMaxMessageIndexes indexes, and on what cannot be the zigzag form: [0] written long (count 1,
// index 0), which no zigzag writer writes (they all write the single byte 0) but which is how the
// legacy form of a two-level path [0, n] reads (02 00 n), the rest then misread as the message.
//
// `legacy`: the form python3-confluent-kafka before 1.8.2 writes (Confluent's
// use.deprecated.format): the count and the indexes as plain varints, [0] the single byte 0.
// Zigzag and legacy agree on the byte 0 and differ on every other path.
bool ParseMessageIndexes(std::string_view in, std::vector<int>* indexes, std::string_view* rest,
                         bool legacy = false);

// The writers' side, for `hotrow produce` and tests.
void AppendConfluentHeader(uint32_t schema_id, std::string* out);
// Writes [0] as the single byte 0, as Confluent's serializers do; `legacy`: plain varints.
void AppendMessageIndexes(const std::vector<int>& indexes, std::string* out, bool legacy = false);

}  // namespace hotrow::ingest
