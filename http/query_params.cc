#include "http/query_params.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "cluster/standby_request.h"
#include "common/time_format.h"
#include "keying/row_value.h"
#include "query/series_answer.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

// The parameters of one request, checked against the names a route accepts.
class Params {
 public:
  // InvalidArgument for bad encoding, a name the route does not take, or a name given twice.
  static Result<Params> Parse(std::string_view raw_query,
                              std::initializer_list<std::string_view> allowed) {
    Result<std::vector<wire::QueryParam>> parsed = wire::ParseQueryString(raw_query);
    if (!parsed.ok()) return parsed.status();
    Params out;
    for (auto& [name, value] : parsed.value()) {
      bool ok = false;
      for (std::string_view a : allowed) ok = ok || name == a;
      if (!ok) {
        std::string expected;
        for (std::string_view a : allowed) {
          if (!expected.empty()) expected += ", ";
          expected += a;
        }
        return Status::InvalidArgument(
            "unknown parameter " + QuoteClientText(name) +
            (allowed.size() == 0 ? "; this path takes none" : "; expected " + expected));
      }
      if (out.values_.count(name) != 0) {
        return Status::InvalidArgument("parameter " + QuoteClientText(name) +
                                       " is given more than once");
      }
      out.values_.emplace(std::move(name), std::move(value));
    }
    return out;
  }

  const std::string* Find(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }

  // An integer in [min, max]; `fallback` when absent.
  Result<int64_t> Int(const std::string& name, int64_t fallback, int64_t min, int64_t max,
                      const std::string& expected) const {
    const std::string* text = Find(name);
    if (text == nullptr) return fallback;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (text->empty() || ec != std::errc() || ptr != text->data() + text->size() || v < min ||
        v > max) {
      return Status::InvalidArgument(name + " must be " + expected + ", got " +
                                     QuoteClientText(*text));
    }
    return v;
  }

  // A required time: ms since the epoch or RFC 3339.
  Result<int64_t> Time(const std::string& name) const {
    const std::string* text = Find(name);
    if (text == nullptr) {
      return Status::InvalidArgument("missing parameter " + QuoteClientText(name) +
                                     ": a time in ms since the epoch or RFC 3339");
    }
    Result<int64_t> t = ParseTimeMs(*text);
    if (!t.ok()) return Status::InvalidArgument(name + ": " + t.status().message());
    return t;
  }

  // from and to, with from < to.
  Status Window(int64_t* from_ms, int64_t* to_ms) const {
    Result<int64_t> from = Time("from");
    if (!from.ok()) return from.status();
    Result<int64_t> to = Time("to");
    if (!to.ok()) return to.status();
    if (*from >= *to) {
      return Status::InvalidArgument(
          "from must be before to (the window is from <= ts < to), got from=" +
          std::to_string(*from) + " to=" + std::to_string(*to));
    }
    *from_ms = *from;
    *to_ms = *to;
    return Status::Ok();
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace

Result<LatestParams> ParseLatestParams(std::string_view raw_query) {
  Result<Params> params = Params::Parse(raw_query, {"n"});
  if (!params.ok()) return params.status();
  Result<int64_t> n = params->Int("n", LatestParams().n, 1, query::kMaxLatest,
                                  "an integer from 1 to " + std::to_string(query::kMaxLatest));
  if (!n.ok()) return n.status();
  return LatestParams{static_cast<int>(*n)};
}

Result<RangeParams> ParseRangeParams(std::string_view raw_query) {
  Result<Params> params = Params::Parse(raw_query, {"from", "to", "limit", "order"});
  if (!params.ok()) return params.status();
  RangeParams out;
  HOTROW_RETURN_IF_ERROR(params->Window(&out.from_ms, &out.to_ms));
  Result<int64_t> limit =
      params->Int("limit", out.limit, 1, query::kMaxRangeLimit,
                  "an integer from 1 to " + std::to_string(query::kMaxRangeLimit));
  if (!limit.ok()) return limit.status();
  out.limit = *limit;
  if (const std::string* order = params->Find("order")) {
    if (*order == "asc") {
      out.order = query::Order::kAsc;
    } else if (*order != "desc") {
      return Status::InvalidArgument("order must be asc or desc, got " + QuoteClientText(*order));
    }
  }
  return out;
}

Result<ScanParams> ParseScanParams(std::string_view raw_query) {
  Result<Params> params = Params::Parse(raw_query, {"from", "to", "limit"});
  if (!params.ok()) return params.status();
  ScanParams out;
  HOTROW_RETURN_IF_ERROR(params->Window(&out.from_ms, &out.to_ms));
  Result<int64_t> limit = params->Int("limit", out.limit, 1, INT64_MAX, "a positive integer");
  if (!limit.ok()) return limit.status();
  out.limit = *limit;
  return out;
}

namespace {

// At most kMaxIdSize bytes, like the ids they are compared with.
Status CheckIdLike(const std::string& name, const std::string& text) {
  if (text.size() > keying::kMaxIdSize) {
    return Status::InvalidArgument(name + " is " + std::to_string(text.size()) +
                                   " bytes; at most " + std::to_string(keying::kMaxIdSize));
  }
  return Status::Ok();
}

// Adds `id` to `out` unless it is there already; InvalidArgument naming the rule it breaks.
Status AddId(std::string id, std::set<std::string>* seen, LatestIdsParams* out) {
  HOTROW_RETURN_IF_ERROR(CheckQueryId(id));
  if (!seen->insert(id).second) return Status::Ok();
  if (out->ids.size() == query::kMaxLatestIds) {
    return Status::InvalidArgument("ids: at most " + std::to_string(query::kMaxLatestIds) +
                                   " ids at once");
  }
  out->ids.push_back(std::move(id));
  return Status::Ok();
}

Status CheckHasIds(const LatestIdsParams& p) {
  if (p.ids.empty()) return Status::InvalidArgument("ids: expected at least one id");
  return Status::Ok();
}

}  // namespace

Result<LatestAllParams> ParseLatestAllParams(std::string_view raw_query) {
  Result<Params> params = Params::Parse(raw_query, {"prefix", "limit", "after"});
  if (!params.ok()) return params.status();
  LatestAllParams out;
  if (const std::string* prefix = params->Find("prefix")) out.prefix = *prefix;
  if (const std::string* after = params->Find("after")) out.after = *after;
  HOTROW_RETURN_IF_ERROR(CheckIdLike("prefix", out.prefix));
  HOTROW_RETURN_IF_ERROR(CheckIdLike("after", out.after));
  Result<int64_t> limit =
      params->Int("limit", out.limit, 1, query::kMaxLatestAllLimit,
                  "an integer from 1 to " + std::to_string(query::kMaxLatestAllLimit));
  if (!limit.ok()) return limit.status();
  out.limit = *limit;
  return out;
}

namespace {

// The raw values of the pieces of a query string named `name` ("name" alone has an empty value),
// in order; every other non-empty piece goes to `*rest`, joined by '&' as it came. Values stay
// percent-encoded: the caller decides how to split and decode them.
std::vector<std::string_view> TakeRawParam(std::string_view raw, std::string_view name,
                                           std::string* rest) {
  std::vector<std::string_view> values;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = raw.find('&', start);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view piece = raw.substr(start, end - start);
    if (piece.starts_with(name) && (piece.size() == name.size() || piece[name.size()] == '=')) {
      values.push_back(piece.substr(std::min(piece.size(), name.size() + 1)));
    } else if (!piece.empty()) {
      if (!rest->empty()) rest->push_back('&');
      rest->append(piece);
    }
    start = end + 1;
  }
  return values;
}

}  // namespace

bool HasIdsParam(std::string_view raw_query) {
  std::string rest;
  return !TakeRawParam(raw_query, "ids", &rest).empty();
}

Result<LatestIdsParams> ParseLatestIdsParams(std::string_view raw_query) {
  // The ids are taken out raw, split on their commas, then each decoded; the rest as usual.
  std::string rest;
  const std::vector<std::string_view> ids_values = TakeRawParam(raw_query, "ids", &rest);
  if (ids_values.size() > 1) {
    return Status::InvalidArgument("parameter \"ids\" is given more than once");
  }
  const bool have_ids = !ids_values.empty();
  const std::string_view raw_ids = have_ids ? ids_values[0] : std::string_view();
  Result<Params> params = Params::Parse(rest, {"n", "ids"});
  if (!params.ok()) return params.status();
  LatestIdsParams out;
  Result<int64_t> n = params->Int("n", out.n, 1, query::kMaxLatest,
                                  "an integer from 1 to " + std::to_string(query::kMaxLatest));
  if (!n.ok()) return n.status();
  out.n = static_cast<int>(*n);
  std::set<std::string> seen;
  size_t from = 0;
  while (have_ids && from <= raw_ids.size()) {
    size_t comma = raw_ids.find(',', from);
    if (comma == std::string_view::npos) comma = raw_ids.size();
    Result<std::string> id = wire::PercentDecode(raw_ids.substr(from, comma - from));
    if (!id.ok()) return Status::InvalidArgument("ids: " + id.status().message());
    if (Status st = AddId(std::move(id).value(), &seen, &out); !st.ok()) {
      return Status::InvalidArgument("ids: " + st.message());
    }
    from = comma + 1;
  }
  HOTROW_RETURN_IF_ERROR(CheckHasIds(out));
  return out;
}

Result<LatestIdsParams> ParseLatestIdsBody(std::string_view body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument(
        "the body must be a JSON object such as {\"ids\": [\"a\", \"b\"], \"n\": 1}");
  }
  LatestIdsParams out;
  std::set<std::string> seen;
  for (const auto& [key, value] : j.items()) {
    if (key == "n") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
          value.get<int64_t>() > query::kMaxLatest) {
        return Status::InvalidArgument("n must be an integer from 1 to " +
                                       std::to_string(query::kMaxLatest));
      }
      out.n = static_cast<int>(value.get<int64_t>());
    } else if (key == "ids") {
      if (!value.is_array()) return Status::InvalidArgument("ids must be an array of strings");
      for (const auto& id : value) {
        if (!id.is_string()) return Status::InvalidArgument("ids must be an array of strings");
        if (Status st = AddId(id.get<std::string>(), &seen, &out); !st.ok()) {
          return Status::InvalidArgument("ids: " + st.message());
        }
      }
    } else {
      return Status::InvalidArgument("unknown member " + QuoteClientText(key) +
                                     " of the body; expected ids, n");
    }
  }
  HOTROW_RETURN_IF_ERROR(CheckHasIds(out));
  return out;
}

Result<SeriesParams> ParseSeriesParams(std::string_view raw_query) {
  Result<Params> params =
      Params::Parse(raw_query, {"field", "from", "to", "step", "max_points", "agg"});
  if (!params.ok()) return params.status();
  SeriesParams out;
  const std::string* field = params->Find("field");
  if (field == nullptr || field->empty()) {
    return Status::InvalidArgument(
        "missing parameter \"field\": the payload field to chart (a dotted path)");
  }
  out.field = *field;
  HOTROW_RETURN_IF_ERROR(params->Window(&out.from_ms, &out.to_ms));
  const std::string* step = params->Find("step");
  const bool points = params->Find("max_points") != nullptr;
  if ((step != nullptr) == points) {
    return Status::InvalidArgument(
        "expected exactly one of step (a duration such as 10s) and "
        "max_points (an integer)");
  }
  if (step != nullptr) {
    // Plain ms (`${__interval_ms}`) or Grafana's interval forms (`${__interval}`: 500ms, 30s, 1d).
    Result<int64_t> ms = ParseIntervalMs(*step);
    if (!ms.ok()) return Status::InvalidArgument("step: " + ms.status().message());
    out.step_ms = *ms;
  } else {
    Result<int64_t> k =
        params->Int("max_points", 0, 1, query::kMaxSeriesPoints,
                    "an integer from 1 to " + std::to_string(query::kMaxSeriesPoints));
    if (!k.ok()) return k.status();
    out.step_ms = query::StepForMaxPoints(out.from_ms, out.to_ms, *k);
  }
  HOTROW_RETURN_IF_ERROR(query::CheckSeriesArgs(out.from_ms, out.to_ms, out.step_ms));
  if (const std::string* agg = params->Find("agg")) {
    out.aggs = 0;
    size_t from = 0;
    while (from <= agg->size()) {
      size_t comma = agg->find(',', from);
      if (comma == std::string::npos) comma = agg->size();
      const std::string name = agg->substr(from, comma - from);
      uint32_t bit = 0;
      if (name == "avg") bit = kAggAvg;
      if (name == "min") bit = kAggMin;
      if (name == "max") bit = kAggMax;
      if (name == "count") bit = kAggCount;
      if (name == "last") bit = kAggLast;
      if (bit == 0) {
        return Status::InvalidArgument("agg: expected a list of avg, min, max, count, last, got " +
                                       QuoteClientText(*agg));
      }
      out.aggs |= bit;
      from = comma + 1;
    }
  }
  return out;
}

Status TakeFormatParam(std::string_view raw, AnswerFormat* format, std::string* rest) {
  *format = AnswerFormat::kJson;
  const std::vector<std::string_view> values = TakeRawParam(raw, "format", rest);
  if (values.size() > 1) {
    return Status::InvalidArgument("parameter \"format\" is given more than once");
  }
  if (values.empty()) return Status::Ok();
  Result<std::string> value = wire::PercentDecode(values[0]);
  if (!value.ok()) return Status::InvalidArgument("format: " + value.status().message());
  if (*value == "rows") {
    *format = AnswerFormat::kRows;
  } else if (*value != "json") {
    return Status::InvalidArgument("format must be json or rows, got " + QuoteClientText(*value));
  }
  return Status::Ok();
}

Status CheckQueryId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("the event id is empty");
  if (id.size() > keying::kMaxIdSize) {
    return Status::InvalidArgument("the event id is " + std::to_string(id.size()) +
                                   " bytes; ids are at most " + std::to_string(keying::kMaxIdSize) +
                                   " bytes");
  }
  if (!wire::IsValidUtf8(id)) {
    return Status::InvalidArgument("the event id is not valid UTF-8; ids are UTF-8 text");
  }
  return Status::Ok();
}

Status CheckNoParams(std::string_view raw_query) { return Params::Parse(raw_query, {}).status(); }

std::string QuoteClientText(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string out = "\"";
  out.append(text.substr(0, kMax));
  if (text.size() > kMax) out.append("...");
  out.push_back('"');
  return out;
}

// Takes `local=true|false` out of a raw query string; the rest is left for the route's parser.
Status TakeLocalFlag(std::string_view raw, bool* local, std::string* rest) {
  *local = false;
  std::string without_standby;
  const std::vector<std::string_view> standby = TakeRawParam(raw, "standby", &without_standby);
  const std::vector<std::string_view> values = TakeRawParam(without_standby, "local", rest);
  if (values.size() > 1) {
    return Status::InvalidArgument("parameter \"local\" is given more than once");
  }
  if (standby.size() > 1) {
    return Status::InvalidArgument("parameter \"standby\" is given more than once");
  }
  const bool local_true = !values.empty() && values[0] == "true";
  if (!standby.empty() && !local_true) {
    return Status::InvalidArgument("standby is asked of one instance: it needs local=true");
  }
  if (values.empty() || values[0] == "false") return Status::Ok();
  if (values[0] != "true") {
    return Status::InvalidArgument("local must be true or false, got " +
                                   QuoteClientText(values[0]));
  }
  *local = true;
  if (!standby.empty()) {
    Result<std::string> text = wire::PercentDecode(standby[0]);
    if (!text.ok()) return text.status();
    Result<cluster::Partitions> partitions = cluster::ParseStandbyParam(*text);
    if (!partitions.ok()) return partitions.status();
    cluster::SetStandbyRequest(std::move(partitions).value());
  }
  return Status::Ok();
}

}  // namespace hotrow::http
