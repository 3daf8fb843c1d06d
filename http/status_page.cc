#include "http/status_page.h"


#include <cstddef>
#include <string>

namespace hotrow::http {

// Defined in status_page_html.cc, which CMake generates from status_page.html.
extern const char kStatusPageHtml[];
extern const size_t kStatusPageHtmlSize;

namespace {

// The page's own script and style are inline; everything else, from any origin, is refused, and
// fetch() may reach this server only. A page that loaded an external asset would fail here, not
// only when offline.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

}  // namespace

std::string_view StatusPageHtml() { return {kStatusPageHtml, kStatusPageHtmlSize}; }

bool IsStatusPagePath(const std::vector<std::string>& segments) {
  return segments.size() == 1 && segments[0].empty();
}

void ServeStatusPage(Response* res) {
  res->status = 200;
  res->set_header("Cache-Control", "no-cache");
  res->set_header("Content-Security-Policy", kContentSecurityPolicy);
  res->set_header("X-Content-Type-Options", "nosniff");
  res->set_header("Referrer-Policy", "no-referrer");
  const std::string_view html = StatusPageHtml();
  res->set_content(std::string(html), "text/html; charset=utf-8");
}

}  // namespace hotrow::http
