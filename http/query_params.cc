#include "http/query_params.h"

#include <charconv>
#include <initializer_list>
#include <map>
#include <utility>
#include <vector>

#include "common/time_format.h"
#include "keying/row_value.h"
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

Status CheckQueryId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("the event id is empty");
  if (id.size() > keying::kMaxIdSize) {
    return Status::InvalidArgument("the event id is " + std::to_string(id.size()) +
                                   " bytes; ids are at most " +
                                   std::to_string(keying::kMaxIdSize) + " bytes");
  }
  if (!wire::IsValidUtf8(id)) {
    return Status::InvalidArgument("the event id is not valid UTF-8; ids are UTF-8 text");
  }
  return Status::Ok();
}

Status CheckNoParams(std::string_view raw_query) {
  return Params::Parse(raw_query, {}).status();
}

std::string QuoteClientText(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string out = "\"";
  out.append(text.substr(0, kMax));
  if (text.size() > kMax) out.append("...");
  out.push_back('"');
  return out;
}

}  // namespace hotrow::http
