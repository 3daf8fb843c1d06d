// Fuzz target: what the HTTP API does with a request target before it reaches the query engine
// (http/server.cc): split and percent-decode the path, split and decode the query string,
// and the route rules of http/query_params.h (which names a route takes, ranges of n and limit,
// times, from < to, order).
//
// Input: a raw request target, "/v1/events/dev%2F1?from=...&to=...".
//
// Properties:
// - PercentDecode(PercentEncode(x)) == x for any bytes, and PercentEncode writes only unreserved
//   characters and %XX;
// - a split target re-encoded segment by segment splits back to the same segments, and keeps its
//   raw query;
// - a parsed query string re-encoded parameter by parameter parses back to the same parameters;
// - a parameter value accepted as a time is not negative and survives a format/parse round trip;
// - what the latest, range and scan parsers accept is inside the contract's bounds (1 <= n <=
//   10000, from < to, 1 <= limit <= 100000 for a range, any positive limit for a scan), and every
//   refusal says why;
// - the same bytes as an Authorization header value (access/bearer_token.h): a token ParseBearer
//   gives back is a non-empty token68 inside the header, and "Bearer " + that token parses back
//   to it; ConstantTimeEquals agrees with ==.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "access/bearer_token.h"
#include "common/time_format.h"
#include "http/query_params.h"
#include "tests/fuzz/fuzz_check.h"
#include "wire/url_codec.h"

namespace {

using hotrow::Result;
using hotrow::wire::QueryParam;

// The last millisecond FormatRfc3339Ms writes with a four-digit year (9999-12-31T23:59:59.999Z).
constexpr int64_t kMaxFourDigitYearMs = 253'402'300'799'999;

bool IsUnreservedOrEscape(std::string_view encoded) {
  for (size_t i = 0; i < encoded.size(); ++i) {
    const char c = encoded[i];
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) continue;
    if (c != '%' || i + 2 >= encoded.size()) return false;
    i += 2;
  }
  return true;
}

void CheckPercentRoundTrip(std::string_view bytes) {
  const std::string encoded = hotrow::wire::PercentEncode(bytes);
  FUZZ_CHECK(IsUnreservedOrEscape(encoded));
  Result<std::string> decoded = hotrow::wire::PercentDecode(encoded);
  FUZZ_CHECK(decoded.ok() && *decoded == bytes);
}

void CheckTarget(std::string_view target) {
  Result<hotrow::wire::RequestTarget> split = hotrow::wire::SplitRequestTarget(target);
  if (!split.ok()) {
    FUZZ_CHECK(!split.status().message().empty());
    return;
  }
  FUZZ_CHECK(!split->segments.empty());
  const size_t question = target.find('?');
  FUZZ_CHECK(split->raw_query ==
             (question == std::string_view::npos ? std::string_view() : target.substr(question + 1)));
  std::string rebuilt;
  for (const std::string& segment : split->segments) {
    rebuilt += '/';
    rebuilt += hotrow::wire::PercentEncode(segment);
  }
  Result<hotrow::wire::RequestTarget> again = hotrow::wire::SplitRequestTarget(rebuilt);
  FUZZ_CHECK(again.ok() && again->segments == split->segments && again->raw_query.empty());
}

void CheckTime(const std::string& value) {
  Result<int64_t> ms = hotrow::ParseTimeMs(value);
  if (!ms.ok()) return;
  FUZZ_CHECK(*ms >= 0);
  if (*ms > kMaxFourDigitYearMs) return;
  Result<int64_t> again = hotrow::ParseTimeMs(hotrow::FormatRfc3339Ms(*ms));
  FUZZ_CHECK(again.ok() && *again == *ms);
}

void CheckQuery(std::string_view query) {
  Result<std::vector<QueryParam>> params = hotrow::wire::ParseQueryString(query);
  if (!params.ok()) {
    FUZZ_CHECK(!params.status().message().empty());
    return;
  }
  std::string rebuilt;
  for (const auto& [name, value] : *params) {
    if (!rebuilt.empty()) rebuilt += '&';
    rebuilt += hotrow::wire::PercentEncode(name) + "=" + hotrow::wire::PercentEncode(value);
    CheckTime(value);  // from and to are times; any value may be one
  }
  Result<std::vector<QueryParam>> again = hotrow::wire::ParseQueryString(rebuilt);
  FUZZ_CHECK(again.ok() && *again == *params);
}

void CheckRouteRules(std::string_view query) {
  namespace http = hotrow::http;
  namespace wire = hotrow::wire;
  if (Result<http::LatestParams> latest = http::ParseLatestParams(query); latest.ok()) {
    FUZZ_CHECK(latest->n >= 1 && latest->n <= hotrow::query::kMaxLatest);
  } else {
    FUZZ_CHECK(!latest.status().message().empty());
  }
  if (Result<http::RangeParams> range = http::ParseRangeParams(query); range.ok()) {
    FUZZ_CHECK(range->from_ms >= 0 && range->from_ms < range->to_ms);
    FUZZ_CHECK(range->limit >= 1 && range->limit <= hotrow::query::kMaxRangeLimit);
  } else {
    FUZZ_CHECK(!range.status().message().empty());
  }
  if (Result<http::ScanParams> scan = http::ParseScanParams(query); scan.ok()) {
    FUZZ_CHECK(scan->from_ms >= 0 && scan->from_ms < scan->to_ms && scan->limit >= 1);
  } else {
    FUZZ_CHECK(!scan.status().message().empty());
  }
  Result<std::vector<QueryParam>> params = wire::ParseQueryString(query);
  FUZZ_CHECK(http::CheckNoParams(query).ok() == (params.ok() && params->empty()));
}

}  // namespace

void CheckAuthorization(std::string_view header) {
  std::string_view token;
  if (hotrow::access::ParseBearer(header, &token)) {
    FUZZ_CHECK(hotrow::access::IsToken68(token));
    FUZZ_CHECK(token.data() >= header.data() &&
               token.data() + token.size() <= header.data() + header.size());
    const std::string again = "Bearer " + std::string(token);
    std::string_view reparsed;
    FUZZ_CHECK(hotrow::access::ParseBearer(again, &reparsed) && reparsed == token);
    FUZZ_CHECK(hotrow::access::ConstantTimeEquals(token, reparsed));
  }
  const size_t half = header.size() / 2;
  const std::string_view a = header.substr(0, half);
  const std::string_view b = header.substr(half);
  FUZZ_CHECK(hotrow::access::ConstantTimeEquals(a, b) == (a == b));
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  CheckPercentRoundTrip(target);
  CheckTarget(target);
  const size_t question = target.find('?');
  const std::string_view query =
      question == std::string_view::npos ? target : target.substr(question + 1);
  CheckQuery(query);
  CheckRouteRules(query);
  CheckAuthorization(target);
  return 0;
}
