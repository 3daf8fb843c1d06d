// The status page as built into the binary and as ServeStatusPage answers it. What it does in a
// browser is tested in headless Chromium by tests/browser/status_page_test.js.

#include "http/status_page.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>
#include <string>
#include <vector>

namespace hotrow::http {
namespace {

TEST(StatusPageTest, IsServedAsUtf8HtmlThatMayReachOnlyThisServer) {
  httplib::Response res;
  ServeStatusPage(&res);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(res.body, StatusPageHtml());
  const std::string csp = res.get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(res.get_header_value("Cache-Control"), "no-cache");
}

TEST(StatusPageTest, TheBuiltInPageIsTheWholeSourceFile) {
  const std::string_view html = StatusPageHtml();
  EXPECT_EQ(html.substr(0, 15), "<!doctype html>");
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
  EXPECT_EQ(html.find('\0'), std::string_view::npos);
}

TEST(StatusPageTest, HoldsTheElementsScriptsReadAndNoExternalAsset) {
  const std::string html(StatusPageHtml());
  for (const char* id : {"stat-ingested", "stat-lag", "stat-buckets", "query-form", "q-results",
                         "cluster-card", "cluster"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  // Nothing loaded from elsewhere: no src= or href= to another origin, no @import, no url().
  const std::regex external(R"((src|href)\s*=\s*"(https?:)?//|@import|url\()", std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, external));
}

TEST(StatusPageTest, ServedAtTheRootOnly) {
  EXPECT_TRUE(IsStatusPagePath({""}));
  EXPECT_FALSE(IsStatusPagePath({}));
  EXPECT_FALSE(IsStatusPagePath({"index.html"}));
  EXPECT_FALSE(IsStatusPagePath({"", ""}));
  EXPECT_FALSE(IsStatusPagePath({"v1", "stats"}));
}

}  // namespace
}  // namespace hotrow::http
