#include "http/rows_format.h"

#include <simdjson.h>

#include <string>
#include <unordered_set>
#include <utility>

#include "wire/event_json.h"

// The answer is read once with simdjson's on-demand parser and every value is copied as the text
// it has in the answer (numbers and strings exactly as the JSON answer writes them), never parsed
// into a tree and printed again: the rewrite costs about a scan of the answer.

namespace hotrow::http {
namespace {

namespace od = simdjson::ondemand;

// Deeper payload objects are one value: a bound on the recursion, far beyond any device reading.
constexpr int kMaxFlattenDepth = 32;

Status Bad(std::string_view what) {
  return Status::Incompatible("format=rows: " + std::string(what));
}

#define ROWS_TRY(expr)                                                \
  do {                                                                \
    if (const simdjson::error_code rows_error = (expr); rows_error) { \
      return Bad(simdjson::error_message(rows_error));                \
    }                                                                 \
  } while (0)

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// The JSON text of `v` as it is in the answer.
Status RawText(od::value v, std::string_view* out) {
  od::json_type type;
  ROWS_TRY(v.type().get(type));
  if (type == od::json_type::object) {
    od::object object;
    ROWS_TRY(v.get_object().get(object));
    ROWS_TRY(object.raw_json().get(*out));
  } else if (type == od::json_type::array) {
    od::array array;
    ROWS_TRY(v.get_array().get(array));
    ROWS_TRY(array.raw_json().get(*out));
  } else {
    *out = v.raw_json_token();
  }
  *out = Trim(*out);  // a token's text runs to the next one, spaces included
  return Status::Ok();
}

// The members of one row after its "time", each behind a comma; a column named twice keeps its
// first value.
class RowBody {
 public:
  void Add(std::string_view name, std::string_view raw_value) {
    if (!names_.emplace(name).second) return;
    text_.push_back(',');
    wire::AppendJsonString(name, &text_);
    text_.push_back(':');
    text_.append(raw_value);
  }

  // `v` under `name`, an object's members as columns `name_<member>` (an empty object, or one
  // deeper than kMaxFlattenDepth, is one value).
  Status AddFlattened(const std::string& name, od::value v, int depth) {
    od::json_type type;
    ROWS_TRY(v.type().get(type));
    if (type != od::json_type::object || depth >= kMaxFlattenDepth) {
      std::string_view raw;
      HOTROW_RETURN_IF_ERROR(RawText(v, &raw));
      Add(name, raw);
      return Status::Ok();
    }
    od::object object;
    ROWS_TRY(v.get_object().get(object));
    bool empty = true;
    for (auto field : object) {
      empty = false;
      std::string_view key;
      ROWS_TRY(field.unescaped_key().get(key));
      const std::string column = name + "_" + std::string(key);
      od::value inner;
      ROWS_TRY(field.value().get(inner));
      HOTROW_RETURN_IF_ERROR(AddFlattened(column, inner, depth + 1));
    }
    if (empty) Add(name, "{}");
    return Status::Ok();
  }

  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::unordered_set<std::string> names_;
};

// One element of the answer as a row: {"time": <its `time_member`>, `subject`, its other members},
// with its `payload` flattened into payload_... columns when `flatten_payload` (events). `what`
// names it in errors.
Status AppendRow(od::value item, std::string_view time_member, std::string_view what,
                 std::string_view subject, bool flatten_payload, std::string* out) {
  od::object object;
  if (item.get_object().get(object)) {
    return Bad("a" + std::string(what) + " of the answer is not an object");
  }
  std::string_view time;
  RowBody body;
  for (auto field : object) {
    std::string_view key;
    ROWS_TRY(field.unescaped_key().get(key));
    const std::string name(key);
    od::value value;
    ROWS_TRY(field.value().get(value));
    if (flatten_payload && name == "payload") {
      HOTROW_RETURN_IF_ERROR(body.AddFlattened("payload", value, 0));
      continue;
    }
    std::string_view raw;
    HOTROW_RETURN_IF_ERROR(RawText(value, &raw));
    if (name == time_member) {
      time = raw;
    } else {
      body.Add(name, raw);
    }
  }
  if (time.empty()) {
    return Bad("a" + std::string(what) + " of the answer has no \"" + std::string(time_member) +
               "\"");
  }
  out->append("{\"time\":");
  out->append(time);
  out->append(subject);
  out->append(body.text());
  out->push_back('}');
  return Status::Ok();
}

// E -> {"time": ts, "event_id", "topic", "partition", "offset", "payload_..."}.
Status AppendEventRow(od::value event, std::string* out) {
  return AppendRow(event, "ts", "n event", "", /*flatten_payload=*/true, out);
}

// A series point -> {"time": t, the subject, the aggregates}.
Status AppendPointRow(od::value point, const std::string& subject, std::string* out) {
  return AppendRow(point, "t", " point", subject, /*flatten_payload=*/false, out);
}

enum class RowsMember { kNone, kPoints, kEvents, kIds };

}  // namespace

Result<std::string> AnswerAsRows(std::string_view answer) {
  simdjson::padded_string padded(answer);
  // The on-demand reader sets no depth limit on this path: an answer holds its payloads a few
  // levels below the top, and a payload as deep as ingest takes (simdjson's DOM default, 1024
  // levels) must still be rewritten (rows_format_test).
  od::parser parser;
  od::document doc;
  ROWS_TRY(parser.iterate(padded).get(doc));
  od::object top;
  if (doc.get_object().get(top)) return Bad("the answer is not a JSON object");

  // First pass: which member holds the rows, and what a series' rows name as their subject.
  RowsMember rows_member = RowsMember::kNone;
  std::string subject;  // ,"event_id":ID or ,"index_field":F,"index_value":V
  for (auto field : top) {
    std::string_view key;
    ROWS_TRY(field.unescaped_key().get(key));
    const std::string name(key);
    od::value value;
    ROWS_TRY(field.value().get(value));
    od::json_type type;
    ROWS_TRY(value.type().get(type));
    if (name == "points" && type == od::json_type::array) {
      rows_member = RowsMember::kPoints;
    } else if (name == "events" && type == od::json_type::array &&
               rows_member != RowsMember::kPoints) {
      rows_member = RowsMember::kEvents;
    } else if (name == "ids" && type == od::json_type::object && rows_member == RowsMember::kNone) {
      rows_member = RowsMember::kIds;
    } else if (name == "event_id") {
      std::string_view raw;
      HOTROW_RETURN_IF_ERROR(RawText(value, &raw));
      subject = ",\"event_id\":" + std::string(raw);
    } else if (name == "index" && type == od::json_type::object) {
      od::object index;
      ROWS_TRY(value.get_object().get(index));
      for (auto member : index) {
        std::string_view member_key;
        ROWS_TRY(member.unescaped_key().get(member_key));
        const std::string member_name(member_key);
        od::value member_value;
        ROWS_TRY(member.value().get(member_value));
        std::string_view raw;
        HOTROW_RETURN_IF_ERROR(RawText(member_value, &raw));
        if (member_name == "field" || member_name == "value") {
          subject += ",\"index_" + member_name + "\":" + std::string(raw);
        }
      }
    }
  }
  if (rows_member == RowsMember::kNone) return Bad("the answer has no events or points");
  const char* rows_name = rows_member == RowsMember::kPoints   ? "points"
                          : rows_member == RowsMember::kEvents ? "events"
                                                               : "ids";

  // Second pass: the head as it is, the rows rewritten.
  doc.rewind();
  if (doc.get_object().get(top)) return Bad("the answer is not a JSON object");
  std::string out = "{";
  std::string rows;
  bool first_row = true;
  auto next_row = [&] {
    if (!first_row) rows.push_back(',');
    first_row = false;
  };
  for (auto field : top) {
    std::string_view key;
    ROWS_TRY(field.unescaped_key().get(key));
    const std::string name(key);
    od::value value;
    ROWS_TRY(field.value().get(value));
    if (name != rows_name) {
      std::string_view raw;
      HOTROW_RETURN_IF_ERROR(RawText(value, &raw));
      wire::AppendJsonString(name, &out);
      out.push_back(':');
      out.append(raw);
      out.push_back(',');
      continue;
    }
    if (rows_member == RowsMember::kIds) {
      od::object ids;
      ROWS_TRY(value.get_object().get(ids));
      for (auto id : ids) {
        od::array events;
        if (id.value().get_array().get(events)) return Bad("an id's events are not an array");
        for (auto event : events) {
          od::value e;
          ROWS_TRY(event.get(e));
          next_row();
          HOTROW_RETURN_IF_ERROR(AppendEventRow(e, &rows));
        }
      }
      continue;
    }
    od::array array;
    ROWS_TRY(value.get_array().get(array));
    for (auto item : array) {
      od::value v;
      ROWS_TRY(item.get(v));
      next_row();
      HOTROW_RETURN_IF_ERROR(rows_member == RowsMember::kPoints ? AppendPointRow(v, subject, &rows)
                                                                : AppendEventRow(v, &rows));
    }
  }
  out.append("\"rows\":[");
  out.append(rows);
  out.append("]}");
  return out;
}

#undef ROWS_TRY

}  // namespace hotrow::http
