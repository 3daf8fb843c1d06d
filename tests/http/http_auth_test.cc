// The bearer-token gate (http/auth.h): the Authorization parser, the comparison and the
// token file, pure; then the 401/200 table through a real HttpServer on a loopback port, token
// rotation while serving, and the refusal to listen beyond loopback without a token.

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <string>

#include "access/token_file.h"
#include "http/auth.h"
#include "http/metrics.h"
#include "http/server.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::http {
namespace {

using testing::WriteFile;

TEST(ParseBearerTest, AcceptsTheSchemeInAnyCaseAndSpaces) {
  struct Case {
    const char* header;
    const char* token;  // null: refused
  } cases[] = {
      {"Bearer abc", "abc"},
      {"bearer abc", "abc"},
      {"BEARER abc", "abc"},
      {"Bearer    abc", "abc"},
      {"  Bearer abc \t", "abc"},
      {"Bearer a-b.c_d~e+f/g==", "a-b.c_d~e+f/g=="},
      {"Bearer", nullptr},
      {"Bearer ", nullptr},
      {"Bearer   ", nullptr},
      {"Bearerabc", nullptr},
      {"Bearer\tabc", nullptr},
      {"Basic abc", nullptr},
      {"Bearer a b", nullptr},
      {"Bearer =abc", nullptr},
      {"Bearer ab=c", nullptr},
      {"Bearer abc\n", nullptr},
      {"", nullptr},
  };
  for (const Case& c : cases) {
    std::string_view token;
    const bool ok = access::ParseBearer(c.header, &token);
    EXPECT_EQ(ok, c.token != nullptr) << "'" << c.header << "'";
    if (ok && c.token != nullptr) {
      EXPECT_EQ(token, c.token) << c.header;
    }
  }
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(access::ConstantTimeEquals("", ""));
  EXPECT_TRUE(access::ConstantTimeEquals("secret", "secret"));
  EXPECT_FALSE(access::ConstantTimeEquals("secret", "secreT"));
  EXPECT_FALSE(access::ConstantTimeEquals("secret", "secretsecret"));  // cyclic read must not match
  EXPECT_FALSE(access::ConstantTimeEquals("secretsecret", "secret"));
  EXPECT_FALSE(access::ConstantTimeEquals("", "a"));
  EXPECT_FALSE(access::ConstantTimeEquals("a", ""));
  EXPECT_FALSE(access::ConstantTimeEquals("ab", "a"));
}

TEST(ReadTokenFileTest, TrimsTheEndAndRefusesEmptyOrMissing) {
  testing::TempDir dir;
  const std::string path = dir.Sub("token");
  WriteFile(path, "s3cret\n");
  Result<std::string> token = access::ReadTokenFile(path);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, "s3cret");
  WriteFile(path, "s3cret \r\n\n");
  EXPECT_EQ(access::ReadTokenFile(path).value(), "s3cret");
  for (const char* bad : {"", "\n", "  \n", "two words\n", "a\nb\n"}) {
    WriteFile(path, bad);
    Result<std::string> r = access::ReadTokenFile(path);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  }
  Result<std::string> missing = access::ReadTokenFile(dir.Sub("absent"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir.Sub("absent")), std::string::npos);
}

TEST(CheckOpenListenTest, RefusesAnOpenAddressWithoutATokenOrConsent) {
  for (const char* loopback : {"127.0.0.1:8080", "127.1.2.3:0", "localhost:80", "[::1]:8080"}) {
    EXPECT_TRUE(CheckOpenListen(loopback, false, false).ok()) << loopback;
  }
  for (const char* open :
       {"0.0.0.0:8080", "10.0.0.1:80", "my-host.example:80", "127.example.com:80", "[::]:8080"}) {
    const Status st = CheckOpenListen(open, false, false);
    ASSERT_FALSE(st.ok()) << open;
    EXPECT_TRUE(st.IsInvalidArgument());
    EXPECT_EQ(st.message().find('\n'), std::string::npos);
    EXPECT_NE(st.message().find("http.allow_open"), std::string::npos);
    EXPECT_TRUE(CheckOpenListen(open, true, false).ok()) << open;
    EXPECT_TRUE(CheckOpenListen(open, false, true).ok()) << open;
  }
}

// The real HTTP server on loopback with a token file.
class HttpAuthServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_path_ = dir_.Sub("token");
    WriteFile(token_path_, "right-token\n");  // the trailing newline is not part of the token
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.salts = 2;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    query::QueryOptions q;
    q.threads = 2;
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), q);
    access::CredentialsOptions credentials;
    credentials.token_file = token_path_;
    auto opened = access::Credentials::Open(credentials);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    credentials_ = std::move(opened).value();
    auth_ = std::make_unique<Authenticator>(credentials_.get(), &metrics_);
    HttpServerOptions http_options;
    http_options.listen = "127.0.0.1:0";
    HttpBackend backend{store_.get(), engine_.get(), nullptr, &metrics_, auth_.get()};
    Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(http_options, backend);
    ASSERT_TRUE(http.ok()) << http.status().ToString();
    http_ = std::move(http).value();
  }
  void TearDown() override {
    if (http_) http_->Stop();
  }

  // GET `path` with `authorization` (null: no header). Returns the status; sets `*body`.
  int Get(const std::string& path, const char* authorization, std::string* body = nullptr,
          std::string* www_authenticate = nullptr) {
    httplib::Client client("127.0.0.1", http_->port());
    httplib::Headers headers;
    if (authorization != nullptr) headers.emplace("Authorization", authorization);
    httplib::Result res = client.Get(path, headers);
    if (!res) return -1;
    if (body != nullptr) *body = res->body;
    if (www_authenticate != nullptr) *www_authenticate = res->get_header_value("WWW-Authenticate");
    return res->status;
  }

  testing::TempDir dir_;
  std::string token_path_;
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  Metrics metrics_;
  std::unique_ptr<access::Credentials> credentials_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpAuthServerTest, TableOf401And200) {
  const std::string latest = "/v1/events/dev-1/latest?n=1";
  struct Case {
    const char* authorization;
    int status;
  } cases[] = {
      {nullptr, 401},
      {"Basic cmlnaHQtdG9rZW4=", 401},
      {"Bearer ", 401},
      {"Bearer", 401},
      {"Bearer wrong-token", 401},
      {"Bearer right-token-", 401},
      {"Bearer right-toke", 401},
      {"Bearer right-token\\n", 401},
      {"Bearer right-token", 200},
      {"bearer right-token", 200},
      {"Bearer    right-token  ", 200},
  };
  for (const Case& c : cases) {
    std::string body;
    std::string challenge;
    const char* shown = c.authorization ? c.authorization : "(none)";
    for (const std::string& path : {latest, std::string("/metrics"), std::string("/v1/stats")}) {
      EXPECT_EQ(Get(path, c.authorization, &body, &challenge), c.status) << shown << " " << path;
      if (c.status == 401) {
        EXPECT_EQ(challenge, "Bearer") << shown;
        EXPECT_EQ(body.rfind("{\"error\":\"", 0), 0u) << body;
        EXPECT_EQ(body.find("right-token"), std::string::npos) << body;
      }
    }
  }
  // Unknown paths and other methods are behind the gate too: nothing is learnt without the token.
  EXPECT_EQ(Get("/v1/nothing", nullptr), 401);
  EXPECT_EQ(Get("/v1/nothing", "Bearer right-token"), 404);
}

TEST_F(HttpAuthServerTest, HealthReadinessAndThePageStayOpen) {
  EXPECT_EQ(Get("/healthz", nullptr), 200);
  const int ready = Get("/readyz", nullptr);
  EXPECT_NE(ready, 401);
  EXPECT_NE(Get("/", nullptr), 401);
  EXPECT_NE(Get("/healthz?x=1", nullptr), 401);
}

TEST_F(HttpAuthServerTest, OutcomesAreCountedAndTheTokenNeverShows) {
  Get("/metrics", nullptr);
  Get("/metrics", "Basic x");
  Get("/metrics", "Bearer nope");
  std::string text;
  ASSERT_EQ(Get("/metrics", "Bearer right-token", &text), 200);
  EXPECT_NE(text.find("hotrow_http_auth_total{outcome=\"missing\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("hotrow_http_auth_total{outcome=\"malformed\"} 1"), std::string::npos);
  EXPECT_NE(text.find("hotrow_http_auth_total{outcome=\"wrong\"} 1"), std::string::npos);
  EXPECT_NE(text.find("hotrow_http_auth_total{outcome=\"ok\"} 1"), std::string::npos);
  EXPECT_EQ(text.find("right-token"), std::string::npos);
}

TEST_F(HttpAuthServerTest, ReloadRotatesAndABadFileKeepsTheOldToken) {
  ASSERT_EQ(Get("/v1/stats", "Bearer right-token"), 200);
  WriteFile(token_path_, "new-token\n");
  ASSERT_TRUE(credentials_->Reload().ok());
  EXPECT_EQ(Get("/v1/stats", "Bearer right-token"), 401);
  EXPECT_EQ(Get("/v1/stats", "Bearer new-token"), 200);
  WriteFile(token_path_, "");
  const Status st = credentials_->Reload();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(token_path_), std::string::npos);
  EXPECT_EQ(Get("/v1/stats", "Bearer new-token"), 200);
}

}  // namespace
}  // namespace hotrow::http
