// Fuzz target: what the HTTP API does with a request target before it reaches the query engine
// (service/http_server.cc Dispatch and its Params): split and percent-decode the path, split and
// decode the query string, read times. The route-level rules (which names a route takes, ranges
// of n and limit, from < to) live in an unnamed namespace of http_server.cc and are not reachable
// without a server; this target covers every public piece they are built from.
//
// Input: a raw request target, "/v1/events/dev%2F1?from=...&to=...".
//
// Properties:
// - PercentDecode(PercentEncode(x)) == x for any bytes, and PercentEncode writes only unreserved
//   characters and %XX;
// - a split target re-encoded segment by segment splits back to the same segments, and keeps its
//   raw query;
// - a parsed query string re-encoded parameter by parameter parses back to the same parameters;
// - a parameter value accepted as a time is not negative and survives a format/parse round trip.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/time_format.h"
#include "service/url_codec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using hotrow::Result;
using hotrow::service::QueryParam;

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
  const std::string encoded = hotrow::service::PercentEncode(bytes);
  FUZZ_CHECK(IsUnreservedOrEscape(encoded));
  Result<std::string> decoded = hotrow::service::PercentDecode(encoded);
  FUZZ_CHECK(decoded.ok() && *decoded == bytes);
}

void CheckTarget(std::string_view target) {
  Result<hotrow::service::RequestTarget> split = hotrow::service::SplitRequestTarget(target);
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
    rebuilt += hotrow::service::PercentEncode(segment);
  }
  Result<hotrow::service::RequestTarget> again = hotrow::service::SplitRequestTarget(rebuilt);
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
  Result<std::vector<QueryParam>> params = hotrow::service::ParseQueryString(query);
  if (!params.ok()) {
    FUZZ_CHECK(!params.status().message().empty());
    return;
  }
  std::string rebuilt;
  for (const auto& [name, value] : *params) {
    if (!rebuilt.empty()) rebuilt += '&';
    rebuilt += hotrow::service::PercentEncode(name) + "=" + hotrow::service::PercentEncode(value);
    CheckTime(value);  // from and to are times; any value may be one
  }
  Result<std::vector<QueryParam>> again = hotrow::service::ParseQueryString(rebuilt);
  FUZZ_CHECK(again.ok() && *again == *params);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  CheckPercentRoundTrip(target);
  CheckTarget(target);
  const size_t question = target.find('?');
  CheckQuery(question == std::string_view::npos ? target : target.substr(question + 1));
  return 0;
}
