// HTTPS through the real `hotrow serve` binary (CONTRACT.md, "Access": http.tls_cert, http.tls_key,
// `hotrow query --cacert`), with a self-signed certificate for 127.0.0.1 made here by the openssl
// CLI and driven by curl: 200 with the token and 401 without over HTTPS, plain HTTP to the HTTPS
// port gets no answer, `hotrow query --cacert` verifies the certificate; a missing, garbage or
// mismatched file stops the start with exit 2 naming it.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::tls_e2e_test {
namespace {

using testing::ChildProcess;
using testing::FreePort;
using testing::ReadFile;
using testing::WriteFile;
using testing::WaitFor;

// Runs a command to its end; returns its exit code and its stdout in `out` (when not null). Its
// stderr replaces what `stderr_path` held (ChildProcess appends).
int RunToEnd(const std::vector<std::string>& argv, const std::string& stderr_path,
             std::string* out = nullptr) {
  WriteFile(stderr_path, "");
  ChildProcess child(argv, stderr_path);
  std::string text;
  for (std::string line; child.ReadLine(&line);) text += line + "\n";
  if (out != nullptr) *out = text;
  return child.Wait();
}

// A self-signed certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1) and its key, in
// `dir`/<name>.crt and `dir`/<name>.key.
void MakeCertificate(const testing::TempDir& dir, const std::string& name) {
  const int rc = RunToEnd(
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
       "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
       "-keyout", dir.Sub(name + ".key"), "-out", dir.Sub(name + ".crt")},
      dir.Sub("openssl.err"));
  ASSERT_EQ(rc, 0) << "openssl (scripts/install-deps.sh installs it): "
                   << ReadFile(dir.Sub("openssl.err"));
}

// A config whose broker is never reached: the HTTP side does not need it.
std::string WriteConfig(const testing::TempDir& dir, int port) {
  const std::string path = dir.Sub("hotrow.yaml");
  WriteFile(path,
            "kafka:\n  brokers: 127.0.0.1:1\n  topics: [events]\n"
            "store:\n  path: " +
                dir.Sub("store") + "\nhttp:\n  listen: 127.0.0.1:" + std::to_string(port) + "\n");
  return path;
}

// curl's exit code, and the HTTP status it printed ("000" when there was no answer).
struct CurlResult {
  int exit_code = -1;
  std::string status;
};

CurlResult Curl(const testing::TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"curl",           "-sS",        "-o", "/dev/null", "-w",
                                   "%{http_code}\n", "--max-time", "10"};
  argv.insert(argv.end(), args.begin(), args.end());
  CurlResult result;
  result.exit_code = RunToEnd(argv, dir.Sub("curl.err"), &result.status);
  while (!result.status.empty() && result.status.back() == '\n') result.status.pop_back();
  return result;
}

TEST(TlsE2ETest, ServesHttpsWithTheTokenAndNothingOverPlainHttp) {
  testing::TempDir dir;
  MakeCertificate(dir, "server");
  MakeCertificate(dir, "other");  // a certificate the server does not have
  const int port = FreePort();
  const std::string config = WriteConfig(dir, port);
  WriteFile(dir.Sub("token"), "tls-token\n");
  ChildProcess serve(
      {testing::HotrowBinary(), "serve", "--config", config, "--set",
       "http.token_file=" + dir.Sub("token"), "--set", "http.tls_cert=" + dir.Sub("server.crt"),
       "--set", "http.tls_key=" + dir.Sub("server.key")},
      dir.Sub("serve.log"));
  const std::string https = "https://127.0.0.1:" + std::to_string(port);
  const std::string cacert = dir.Sub("server.crt");
  ASSERT_TRUE(WaitFor(
      [&] {
        return Curl(dir, {"--cacert", cacert, https + "/healthz"}).status == "200" ||
               !serve.Running();
      },
      std::chrono::seconds(60), std::chrono::milliseconds(50)))
      << ReadFile(dir.Sub("serve.log"));
  ASSERT_TRUE(serve.Running()) << ReadFile(dir.Sub("serve.log"));
  EXPECT_NE(ReadFile(dir.Sub("serve.log")).find("listening on " + https), std::string::npos)
      << ReadFile(dir.Sub("serve.log"));

  // Over HTTPS, verified against the certificate: the token gate as over HTTP.
  CurlResult with_token =
      Curl(dir, {"--cacert", cacert, "-H", "Authorization: Bearer tls-token", https + "/v1/stats"});
  EXPECT_EQ(with_token.exit_code, 0) << ReadFile(dir.Sub("curl.err"));
  EXPECT_EQ(with_token.status, "200");
  EXPECT_EQ(Curl(dir, {"--cacert", cacert, https + "/v1/stats"}).status, "401");
  EXPECT_EQ(Curl(dir, {"--cacert", cacert, https + "/"}).status, "200");  // the page stays open

  // The certificate is really checked: another CA is refused (curl 60: peer certificate).
  CurlResult wrong_ca = Curl(dir, {"--cacert", dir.Sub("other.crt"), https + "/healthz"});
  EXPECT_EQ(wrong_ca.exit_code, 60) << ReadFile(dir.Sub("curl.err"));
  EXPECT_EQ(wrong_ca.status, "000");

  // Plain HTTP to the HTTPS port: no HTTP answer at all (curl 52: empty reply, or 56: reset).
  CurlResult plain = Curl(dir, {"http://127.0.0.1:" + std::to_string(port) + "/healthz"});
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_EQ(plain.status, "000");

  // `hotrow query --cacert`: in with the right CA and token; a clear refusal with another CA.
  WriteFile(dir.Sub("client-token"), "tls-token");
  auto query = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {
        testing::HotrowBinary(), "query", "latest", "dev-1", "--server", https, "--token-file",
        dir.Sub("client-token")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunToEnd(argv, dir.Sub("query.err"));
  };
  EXPECT_EQ(query({"--cacert", cacert}), 0) << ReadFile(dir.Sub("query.err"));
  EXPECT_EQ(query({"--cacert", dir.Sub("other.crt")}), 1);
  EXPECT_NE(ReadFile(dir.Sub("query.err")).find("certificate is not trusted"), std::string::npos)
      << ReadFile(dir.Sub("query.err"));
  // --cacert is for https:// only, and a file that holds no certificate is named.
  EXPECT_EQ(query({"--cacert", cacert, "--server", "http://127.0.0.1:" + std::to_string(port)}), 2);
  EXPECT_EQ(query({"--cacert", dir.Sub("token")}), 2);
  EXPECT_NE(ReadFile(dir.Sub("query.err")).find(dir.Sub("token")), std::string::npos)
      << ReadFile(dir.Sub("query.err"));

  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(), 0) << ReadFile(dir.Sub("serve.log"));
}

TEST(TlsE2ETest, AMissingGarbageOrMismatchedFileExitsTwoNamingIt) {
  testing::TempDir dir;
  MakeCertificate(dir, "server");
  MakeCertificate(dir, "other");
  WriteFile(dir.Sub("garbage.pem"), "not a certificate\n");
  const std::string config = WriteConfig(dir, FreePort());
  struct Case {
    std::string cert, key, named;
  };
  const std::vector<Case> cases = {
      {dir.Sub("missing.crt"), dir.Sub("server.key"), dir.Sub("missing.crt")},
      {dir.Sub("garbage.pem"), dir.Sub("server.key"), dir.Sub("garbage.pem")},
      {dir.Sub("server.key"), dir.Sub("server.key"), dir.Sub("server.key")},  // a key, no cert
      {dir.Sub("server.crt"), dir.Sub("missing.key"), dir.Sub("missing.key")},
      {dir.Sub("server.crt"), dir.Sub("garbage.pem"), dir.Sub("garbage.pem")},
      {dir.Sub("server.crt"), dir.Sub("other.key"), dir.Sub("other.key")},  // not its key
  };
  for (const Case& c : cases) {
    const int rc = RunToEnd({testing::HotrowBinary(), "serve", "--config", config, "--set",
                             "http.tls_cert=" + c.cert, "--set", "http.tls_key=" + c.key},
                            dir.Sub("err"));
    EXPECT_EQ(rc, 2) << c.cert << " " << c.key << ": " << ReadFile(dir.Sub("err"));
    EXPECT_NE(ReadFile(dir.Sub("err")).find(c.named), std::string::npos)
        << c.cert << " " << c.key << ": " << ReadFile(dir.Sub("err"));
    // Refused before anything else starts: no store was made (nor a consumer group joined).
    EXPECT_FALSE(std::filesystem::exists(dir.Sub("store"))) << c.cert << " " << c.key;
  }
  // One key alone: exit 2, one line naming the key that is missing.
  EXPECT_EQ(RunToEnd({testing::HotrowBinary(), "serve", "--config", config, "--set",
                      "http.tls_cert=" + dir.Sub("server.crt")},
                     dir.Sub("err")),
            2);
  EXPECT_EQ(ReadFile(dir.Sub("err")).rfind("hotrow: http.tls_key: ", 0), 0u)
      << ReadFile(dir.Sub("err"));
}

}  // namespace
}  // namespace hotrow::tls_e2e_test
