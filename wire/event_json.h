#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "query/query_engine.h"

namespace hotrow::wire {

// The JSON form of events in HTTP answers (CONTRACT.md "HTTP API"):
//   {"event_id": ID, "ts": MS, "topic": T, "partition": P, "offset": O, "payload": <stored JSON>}
//
// The payload is inserted as the raw JSON text stored at ingest (validated there as a JSON object),
// never parsed again: answering costs a copy, not a parse and a dump. Its raw line breaks, which
// valid JSON can only hold as whitespace between tokens, are turned into spaces so that every
// event is exactly one line of NDJSON.
//
// Strings hotrow did not build (ids, topic names) are escaped as nlohmann::json would. Ids may be any
// bytes; JSON text cannot carry bytes that are not UTF-8, so each invalid UTF-8 sequence is
// replaced by U+FFFD. Valid UTF-8 ids, and all the ids taken from JSON events, come back exactly.

// Appends `text` as a JSON string literal, quotes included: escaped by hand for valid UTF-8 (the
// same bytes nlohmann::json would write, without a JSON document per string), by nlohmann's
// replacing dump otherwise.
void AppendJsonString(std::string_view text, std::string* out);

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points above
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Appends one event object, without a trailing newline.
void AppendEventJson(const query::Event& event, std::string* out);

// The inverse, for clients of the API (and its tests): one event object back into an Event, its
// payload in compact JSON. InvalidArgument when `text` is not such an object.
Result<query::Event> ParseEventJson(std::string_view text);

}  // namespace hotrow::wire
