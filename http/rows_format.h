#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace hotrow::http {

// `?format=rows` (CONTRACT.md "Grafana"): an answer of the series and latest routes rewritten as
// one flat JSON object per event or series point, the form Grafana's Infinity datasource reads
// (its backend parser, which alerting needs, takes an array of objects at a root selector and
// picks columns by key). The answer's other members (its head: "event_id", "next", "step_ms",
// "skipped", "unindexed", and in cluster mode "complete", "missing", "stale", ...) stay beside the
// rows, unchanged, so nothing the JSON answer says is lost:
//
//   {<head members, in the answer's order>, "rows": [ROW...]}
//
// An event E becomes {"time": ts, "event_id", "topic", "partition", "offset", then its payload
// flattened}: each member of the payload object becomes a column "payload_<name>", a nested
// object's members "payload_<name>_<inner>" (to 32 levels; deeper objects stay whole values), an
// array or an empty object stays one value; a name met twice (`{"a_b": 1, "a": {"b": 2}}`) keeps
// its first value. '_' joins the names because Infinity's column selectors are GJSON paths, in
// which '.' would mean nesting. A series point becomes {"time": t, the subject ("event_id": ID,
// or "index_field": F, "index_value": V), then the point's aggregates as answered}.
//
// The rows are, in order: the answer's "events" (latest of an id, latest of every id, index
// latest), each id's events in the order the ids were asked ("ids", the latest of many), or the
// series' "points". `answer` is one of those answers as this server writes it; anything else is
// Incompatible (a bug of the server, not the client's: answered 500).
Result<std::string> AnswerAsRows(std::string_view answer);

}  // namespace hotrow::http
