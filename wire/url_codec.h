#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace hotrow::wire {

// Percent-encoding of URL parts (RFC 3986), shared by the HTTP server, which decodes what clients
// send, and `hotrow query`, which encodes what it sends.
//
// Event ids may hold any bytes, '/' included, so an id travels as one percent-encoded path segment
// and is decoded exactly once, by PercentDecode, from the raw request target: never from a path a
// library has already decoded.

// Decodes every "%XX" (two hex digits, either case) into its byte. Everything else, '+' included,
// stands for itself: hotrow's parameters never hold spaces, and a literal '+' must survive so that
// an unencoded RFC 3339 offset ("...T10:00:00+01:00") still parses. On a '%' not followed by two
// hex digits returns InvalidArgument naming the offending text.
Result<std::string> PercentDecode(std::string_view text);

// Encodes every byte outside RFC 3986's unreserved set (A-Z a-z 0-9 - . _ ~) as "%XX", so the
// result is safe as one path segment or one query value.
std::string PercentEncode(std::string_view bytes);

// One decoded "name=value" of a query string; a parameter without '=' has an empty value.
using QueryParam = std::pair<std::string, std::string>;

// Splits a raw query string ("n=5&order=asc", without the '?') on '&' and '=', decoding names and
// values with PercentDecode. Empty pieces ("a=1&&b=2") are skipped. Order and repeats are kept, so
// that the caller can refuse a parameter given twice.
Result<std::vector<QueryParam>> ParseQueryString(std::string_view query);

// The pieces of a raw request target "/a/b%2Fc?x=1": the path split on '/' with every segment
// decoded once ({"a", "b/c"}), and the raw query after the first '?' ("x=1"). A leading '/' is
// required; empty segments ("//", a trailing '/') are kept as "" so that "/v1/scan/" is not
// "/v1/scan".
struct RequestTarget {
  std::vector<std::string> segments;
  std::string_view raw_query;
};
Result<RequestTarget> SplitRequestTarget(std::string_view target);

}  // namespace hotrow::wire
