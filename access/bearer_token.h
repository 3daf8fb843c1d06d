#pragma once

// The pure parts of bearer-token access (no I/O, no HTTP library): what http/auth.h
// builds on, and what the http_params fuzz target checks.

#include <string_view>

namespace hotrow::access {

// Parses the value of an Authorization header as a bearer credential (RFC 6750 section 2.1):
// the scheme "Bearer" in any case, one or more spaces, then a token68 (A-Z a-z 0-9 - . _ ~ + /,
// then any '='). Spaces and tabs around the whole value are ignored. On success sets `*token` to
// a view into `header` and returns true; anything else (another scheme, an empty token, a space
// or other byte inside the token) returns false. Pure; never throws.
bool ParseBearer(std::string_view header, std::string_view* token);

// True when `token` is a non-empty token68 (what ParseBearer can give back).
bool IsToken68(std::string_view token);

// a == b, in time that depends only on the lengths of both, never on where they differ, and
// without stopping early on a length mismatch.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace hotrow::access
