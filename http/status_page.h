#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/exchange.h"

namespace hotrow::http {

// The status page a person opens at GET /: one self-contained HTML page (http/status_page.html,
// embedded into the binary at build time) that polls /v1/stats, /readyz and /metrics at most once
// a second and runs latest, range and index queries from a form. It needs no external asset, so it
// works offline; when http.token_file is set it asks for the token and sends it as a bearer token.

// The page's bytes, as built into the binary. Valid for the life of the process.
std::string_view StatusPageHtml();

// True for the request paths the page is served at: "/" (SplitRequestTarget's single empty
// segment).
bool IsStatusPagePath(const std::vector<std::string>& segments);

// Answers 200 with the page: text/html; charset=utf-8, not cached, and a Content-Security-Policy
// that lets it reach nothing but this server.
void ServeStatusPage(Response* res);

}  // namespace hotrow::http
