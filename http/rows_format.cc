#include "http/rows_format.h"

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <utility>

#include "wire/event_json.h"

namespace hotrow::http {
namespace {

using Json = nlohmann::ordered_json;

// Deeper payload objects are one value: a bound on the recursion, far beyond any device reading.
constexpr int kMaxFlattenDepth = 32;

void AppendValue(const Json& value, std::string* out) {
  out->append(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// Writes one row object; a column named twice keeps its first value.
class RowWriter {
 public:
  explicit RowWriter(std::string* out) : out_(out) { out_->push_back('{'); }
  ~RowWriter() { out_->push_back('}'); }
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  void Add(const std::string& name, const Json& value) {
    if (!names_.insert(name).second) return;
    if (names_.size() > 1) out_->push_back(',');
    wire::AppendJsonString(name, out_);
    out_->push_back(':');
    AppendValue(value, out_);
  }

  // `value` under `name`, an object's members as columns `name_<member>`.
  void AddFlattened(const std::string& name, const Json& value, int depth) {
    if (!value.is_object() || value.empty() || depth >= kMaxFlattenDepth) {
      Add(name, value);
      return;
    }
    for (const auto& [member, inner] : value.items()) {
      AddFlattened(name + "_" + member, inner, depth + 1);
    }
  }

 private:
  std::string* out_;
  std::unordered_set<std::string> names_;
};

// E -> {"time", "event_id", "topic", "partition", "offset", "payload_..."}.
Status AppendEventRow(const Json& event, std::string* out) {
  if (!event.is_object() || !event.contains("ts")) {
    return Status::Incompatible("format=rows: an event of the answer is not an event object");
  }
  RowWriter row(out);
  row.Add("time", event.at("ts"));
  for (const auto& [name, value] : event.items()) {
    if (name == "ts") continue;
    if (name == "payload") {
      row.AddFlattened("payload", value, 0);
    } else {
      row.Add(name, value);
    }
  }
  return Status::Ok();
}

// A series point -> {"time", the subject, the aggregates}.
Status AppendPointRow(const Json& point, const Json& answer, std::string* out) {
  if (!point.is_object() || !point.contains("t")) {
    return Status::Incompatible("format=rows: a point of the answer has no \"t\"");
  }
  RowWriter row(out);
  row.Add("time", point.at("t"));
  if (answer.contains("event_id")) row.Add("event_id", answer.at("event_id"));
  if (const auto index = answer.find("index"); index != answer.end() && index->is_object()) {
    row.Add("index_field", index->value("field", Json()));
    row.Add("index_value", index->value("value", Json()));
  }
  for (const auto& [name, value] : point.items()) {
    if (name != "t") row.Add(name, value);
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> AnswerAsRows(std::string_view answer) {
  const Json j = Json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Incompatible("format=rows: the answer is not a JSON object");
  }
  // Which member holds the rows: a series' points, the events, or the events of each id.
  std::string rows_member;
  for (const char* name : {"points", "events"}) {
    if (const auto it = j.find(name); it != j.end() && it->is_array()) {
      rows_member = name;
      break;
    }
  }
  if (rows_member.empty()) {
    if (const auto it = j.find("ids"); it != j.end() && it->is_object()) rows_member = "ids";
  }
  if (rows_member.empty()) {
    return Status::Incompatible("format=rows: the answer has no events or points");
  }
  std::string out = "{";
  for (const auto& [name, value] : j.items()) {
    if (name == rows_member) continue;
    wire::AppendJsonString(name, &out);
    out.push_back(':');
    AppendValue(value, &out);
    out.push_back(',');
  }
  out.append("\"rows\":[");
  bool first = true;
  auto next_row = [&] {
    if (!first) out.push_back(',');
    first = false;
  };
  const Json& rows = j.at(rows_member);
  if (rows_member == "points") {
    for (const Json& point : rows) {
      next_row();
      HOTROW_RETURN_IF_ERROR(AppendPointRow(point, j, &out));
    }
  } else if (rows_member == "events") {
    for (const Json& event : rows) {
      next_row();
      HOTROW_RETURN_IF_ERROR(AppendEventRow(event, &out));
    }
  } else {
    for (const auto& [id, events] : rows.items()) {
      if (!events.is_array()) return Status::Incompatible("format=rows: ids." + id + " is no array");
      for (const Json& event : events) {
        next_row();
        HOTROW_RETURN_IF_ERROR(AppendEventRow(event, &out));
      }
    }
  }
  out.append("]}");
  return out;
}

}  // namespace hotrow::http
