#pragma once

#include <cstdint>
#include <string>
#include <string_view>

// The text of Protobuf's well-known types as proto3's JSON mapping writes them
// (https://protobuf.dev/programming-guides/proto3/#json), for the transcoder of
// protobuf_decoder.h under ingest.protobuf.well_known: json. Pure functions: no descriptor, no
// allocation past the appended text.
namespace hotrow::ingest {

// The most text one of these appends: a quoted timestamp with nine fractional digits.
inline constexpr size_t kMaxWellKnownText = 40;

// Appends a google.protobuf.Timestamp as a quoted RFC 3339 time in UTC,
// "2017-01-15T01:30:15.010Z": 0, 3, 6 or 9 fractional digits, as few as hold `nanos`. False
// (nothing appended) outside the type's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z,
// nanos from 0 to 999,999,999.
bool AppendJsonTimestamp(int64_t seconds, int32_t nanos, std::string* out);

// Appends a google.protobuf.Duration as a quoted number of seconds with the suffix "s":
// "1.000340012s", "-0.5s", "3s" (0, 3, 6 or 9 fractional digits). False (nothing appended)
// outside +-315,576,000,000 s, for nanos of 1e9 or more, or of a sign other than seconds'.
bool AppendJsonDuration(int64_t seconds, int32_t nanos, std::string* out);

// Appends one path of a google.protobuf.FieldMask in lowerCamelCase ("user.display_name" ->
// "user.displayName"), unquoted: the caller joins the paths with ',' inside one string.
void AppendFieldMaskPath(std::string_view path, std::string* out);

}  // namespace hotrow::ingest
