// The status page as built into the binary and as ServeStatusPage answers it. What it does in a
// browser is tested in headless Chromium by tests/browser/status_page_test.js.

#include "http/status_page.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/paths.h"

namespace hotrow::http {
namespace {

TEST(StatusPageTest, IsServedAsUtf8HtmlThatMayReachOnlyThisServer) {
  Response res;
  ServeStatusPage(&res);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.content_type, "text/html; charset=utf-8");
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
                         "cluster-card", "cluster", "devices-table", "devices-prefix",
                         "device-view", "device-chart"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  // Nothing loaded from elsewhere: no src= or href= to another origin, no @import, no url().
  const std::regex external(R"((src|href)\s*=\s*"(https?:)?//|@import|url\()", std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, external));
}

// The page is written as four files (http/CMakeLists.txt joins them at build time): the page
// served holds each of them whole, style inline, both scripts in its one script element, and
// none of the lines that mark where they go.
TEST(StatusPageTest, TheBuiltPageJoinsItsHtmlStyleAndScripts) {
  const std::string html(StatusPageHtml());
  for (const char* part : {"status_page.css", "status_page.js", "status_page_devices.js"}) {
    std::ifstream in(hotrow::testing::SourceDir() + "/http/" + part);
    ASSERT_TRUE(in) << part;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(text.size(), 100u) << part;
    EXPECT_NE(html.find(text), std::string::npos) << part << " is not in the page whole";
  }
  EXPECT_EQ(html.find("goes here at build time"), std::string::npos);
  const size_t script = html.find("<script>");
  ASSERT_NE(script, std::string::npos);
  EXPECT_EQ(html.find("<script", script + 1), std::string::npos) << "one script element";
  const size_t uses = html.find("const shared = window.hotrowPage;");
  ASSERT_NE(uses, std::string::npos);
  EXPECT_LT(html.find("window.hotrowPage = {"), uses)
      << "the devices' script comes after the one it uses";
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
