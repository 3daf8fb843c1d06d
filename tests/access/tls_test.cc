// HTTPS set-up (access/tls.h) in process: which files NewHttplibServer accepts and what it
// says about the others, the CA file check of clients, and a real TLS round trip on a loopback
// port through ClientAccess (verified against the right CA; refused against another). The
// certificates are made by the openssl CLI. The same through the binary: tls_e2e_test.

#include "access/tls.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "access/client_access.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::access {
namespace {

using hotrow::testing::ChildProcess;
using hotrow::testing::ReadFile;
using hotrow::testing::TempDir;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Runs openssl with `args`; a test failure (with its stderr) when it fails.
void OpenSsl(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  WriteFile(dir.Sub("openssl.err"), "");
  ChildProcess child(args, dir.Sub("openssl.err"));
  for (std::string line; child.ReadLine(&line);) {
  }
  ASSERT_EQ(child.Wait(), 0) << "openssl (scripts/install-deps.sh installs it): "
                             << ReadFile(dir.Sub("openssl.err"));
}

// Certificates made once for every test: "server" and "other", self-signed for 127.0.0.1, and
// variants of their files.
class HttpTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    for (const char* name : {"server", "other"}) {
      OpenSsl(*dir_, {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                      "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                      "subjectAltName=IP:127.0.0.1", "-keyout", Path(std::string(name) + ".key"),
                      "-out", Path(std::string(name) + ".crt")});
    }
    OpenSsl(*dir_, {"pkey", "-in", Path("server.key"), "-aes256", "-passout", "pass:secret", "-out",
                    Path("encrypted.key")});
    const std::string server_crt = ReadFile(Path("server.crt"));
    WriteFile(Path("chain.crt"), server_crt + ReadFile(Path("other.crt")));
    WriteFile(
        Path("bad-chain.crt"),
        server_crt + "-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n");
    WriteFile(Path("garbage.pem"), "not a certificate\n");
    WriteFile(Path("empty.pem"), "");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Path(const std::string& name) { return dir_->Sub(name); }

  // The error of a NewHttplibServer that must fail.
  static std::string ServerError(const std::string& cert, const std::string& key) {
    Result<std::unique_ptr<httplib::Server>> server = NewHttplibServer(cert, key);
    if (server.ok()) {
      ADD_FAILURE() << cert << " " << key << ": a server was made";
      return "";
    }
    EXPECT_TRUE(server.status().IsInvalidArgument()) << server.status().ToString();
    EXPECT_EQ(server.status().message().find('\n'), std::string::npos);
    return server.status().message();
  }

  static TempDir* dir_;
};

TempDir* HttpTlsTest::dir_ = nullptr;

TEST_F(HttpTlsTest, NoFilesIsPlainHttpAndBothFilesHttps) {
  Result<std::unique_ptr<httplib::Server>> plain = NewHttplibServer("", "");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(dynamic_cast<httplib::SSLServer*>(plain->get()), nullptr);

  for (const char* cert : {"server.crt", "chain.crt"}) {
    Result<std::unique_ptr<httplib::Server>> https =
        NewHttplibServer(Path(cert), Path("server.key"));
    ASSERT_TRUE(https.ok()) << cert << ": " << https.status().ToString();
    auto* ssl = dynamic_cast<httplib::SSLServer*>(https->get());
    ASSERT_NE(ssl, nullptr) << cert;
    EXPECT_TRUE(ssl->is_valid());
    EXPECT_EQ(SSL_CTX_get_min_proto_version(ssl->ssl_context()), TLS1_2_VERSION);
  }
}

TEST_F(HttpTlsTest, EveryBadFileIsNamedWithItsKey) {
  struct Case {
    std::string cert, key, starts_with, says;
  };
  const std::vector<Case> cases = {
      {Path("missing.crt"), Path("server.key"), "http.tls_cert: " + Path("missing.crt"),
       "cannot open: No such file or directory"},
      {dir_->path(), Path("server.key"), "http.tls_cert: " + dir_->path(), "cannot read"},
      {Path("empty.pem"), Path("server.key"), "http.tls_cert: " + Path("empty.pem"),
       "holds no PEM certificate"},
      {Path("garbage.pem"), Path("server.key"), "http.tls_cert: " + Path("garbage.pem"),
       "holds no PEM certificate"},
      {Path("server.key"), Path("server.key"), "http.tls_cert: " + Path("server.key"),
       "holds no PEM certificate"},
      {Path("bad-chain.crt"), Path("server.key"), "http.tls_cert: " + Path("bad-chain.crt"),
       "certificate 2 of the chain cannot be read"},
      {Path("server.crt"), Path("missing.key"), "http.tls_key: " + Path("missing.key"),
       "cannot open"},
      {Path("server.crt"), Path("garbage.pem"), "http.tls_key: " + Path("garbage.pem"),
       "holds no PEM private key"},
      {Path("server.crt"), Path("server.crt"), "http.tls_key: " + Path("server.crt"),
       "holds no PEM private key"},
      {Path("server.crt"), Path("encrypted.key"), "http.tls_key: " + Path("encrypted.key"),
       "or an encrypted one"},
      {Path("server.crt"), Path("other.key"), "http.tls_key: " + Path("other.key"),
       "is not the private key of the certificate in http.tls_cert " + Path("server.crt")},
      {Path("server.crt"), "", "http.tls_key: ", "HTTPS needs both"},
      {"", Path("server.key"), "http.tls_cert: ", "HTTPS needs both"},
  };
  for (const Case& c : cases) {
    const std::string error = ServerError(c.cert, c.key);
    EXPECT_EQ(error.rfind(c.starts_with, 0), 0u) << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << error;
  }
}

TEST_F(HttpTlsTest, ACaFileMustHoldACertificate) {
  EXPECT_TRUE(CheckCaCertFile(Path("server.crt")).ok());
  EXPECT_TRUE(CheckCaCertFile(Path("chain.crt")).ok());
  for (const char* bad : {"missing.crt", "garbage.pem", "empty.pem", "server.key"}) {
    const Status st = CheckCaCertFile(Path(bad));
    EXPECT_TRUE(st.IsInvalidArgument()) << bad;
    EXPECT_EQ(st.message().rfind(Path(bad), 0), 0u) << st.message();
  }
  ClientAccess access;
  EXPECT_FALSE(access.TrustCaFile(Path("garbage.pem")).ok());
  EXPECT_EQ(access.ca_cert_file, "");
  EXPECT_TRUE(access.TrustCaFile(Path("server.crt")).ok());
  EXPECT_EQ(access.ca_cert_file, Path("server.crt"));
}

TEST_F(HttpTlsTest, ARoundTripIsVerifiedAgainstTheTrustedCa) {
  Result<std::unique_ptr<httplib::Server>> made =
      NewHttplibServer(Path("server.crt"), Path("server.key"));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  httplib::Server& server = **made;
  server.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello over TLS", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread listener([&] { server.listen_after_bind(); });
  if (!hotrow::testing::WaitFor([&] { return server.is_running(); })) {
    server.stop();
    listener.join();
    FAIL() << "the TLS server did not start";
  }
  const std::string url = "https://127.0.0.1:" + std::to_string(port);

  ClientAccess trusted;
  ASSERT_TRUE(trusted.TrustCaFile(Path("server.crt")).ok());
  httplib::Client good(url);
  trusted.ApplyTo(&good);
  httplib::Result res = good.Get("/hello");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "hello over TLS");

  ClientAccess other;
  ASSERT_TRUE(other.TrustCaFile(Path("other.crt")).ok());
  httplib::Client bad(url);
  other.ApplyTo(&bad);
  httplib::Result refused = bad.Get("/hello");
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error(), httplib::Error::SSLServerVerification);
  EXPECT_NE(CertificateVerifyError(bad.get_openssl_verify_result()).find("self"), std::string::npos)
      << CertificateVerifyError(bad.get_openssl_verify_result());

  // The certificate names 127.0.0.1, not localhost: the host check refuses it.
  httplib::Client wrong_host("https://localhost:" + std::to_string(port));
  trusted.ApplyTo(&wrong_host);
  httplib::Result wrong = wrong_host.Get("/hello");
  EXPECT_FALSE(wrong);
  EXPECT_EQ(wrong.error(), httplib::Error::SSLServerVerification);
  EXPECT_EQ(wrong_host.get_openssl_verify_result(), X509_V_OK);  // the chain is fine, the name not

  // Plain HTTP to the TLS port gets no HTTP answer.
  httplib::Client plain("127.0.0.1", port);
  plain.set_read_timeout(std::chrono::seconds(5));
  EXPECT_FALSE(plain.Get("/hello"));

  server.stop();
  listener.join();
}

TEST_F(HttpTlsTest, TrustedCasHoldEveryCertificateOrNameTheBadOne) {
  Result<std::shared_ptr<const TrustedCas>> one =
      TrustedCas::Load("cluster.peer_ca", Path("server.crt"));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ((*one)->size(), 1u);
  Result<std::shared_ptr<const TrustedCas>> two =
      TrustedCas::Load("cluster.peer_ca", Path("chain.crt"));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ((*two)->size(), 2u);
  const Result<std::shared_ptr<const TrustedCas>> bad_second =
      TrustedCas::Load("cluster.peer_ca", Path("bad-chain.crt"));
  ASSERT_FALSE(bad_second.ok());
  EXPECT_EQ(bad_second.status().message().rfind(
                "cluster.peer_ca: " + Path("bad-chain.crt") + ": certificate 2 cannot be read", 0),
            0u)
      << bad_second.status().message();
  for (const char* bad : {"missing.crt", "garbage.pem", "empty.pem", "server.key"}) {
    const Result<std::shared_ptr<const TrustedCas>> cas =
        TrustedCas::Load("cluster.peer_ca", Path(bad));
    ASSERT_FALSE(cas.ok()) << bad;
    EXPECT_EQ(cas.status().message().rfind("cluster.peer_ca: " + Path(bad), 0), 0u)
        << cas.status().message();
  }
}

// A client given TrustedCas verifies against the CAs read, not against the file (gone or
// rewritten since) nor the system's CAs, and still checks the host name.
TEST_F(HttpTlsTest, TrustedCasVerifyFromMemory) {
  Result<std::unique_ptr<httplib::Server>> made =
      NewHttplibServer(Path("server.crt"), Path("server.key"));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  httplib::Server& server = **made;
  server.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello over TLS", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread listener([&] { server.listen_after_bind(); });
  if (!hotrow::testing::WaitFor([&] { return server.is_running(); })) {
    server.stop();
    listener.join();
    FAIL() << "the TLS server did not start";
  }
  const std::string url = "https://127.0.0.1:" + std::to_string(port);

  const std::string ca_file = Path("memory-ca.pem");
  WriteFile(ca_file, ReadFile(Path("server.crt")));
  Result<std::shared_ptr<const TrustedCas>> trusted = TrustedCas::Load("cluster.peer_ca", ca_file);
  ASSERT_TRUE(trusted.ok()) << trusted.status().ToString();
  WriteFile(ca_file, "not a certificate any more\n");
  Result<std::shared_ptr<const TrustedCas>> other =
      TrustedCas::Load("cluster.peer_ca", Path("other.crt"));
  ASSERT_TRUE(other.ok()) << other.status().ToString();

  for (int round = 0; round < 2; ++round) {  // several clients share one store
    httplib::Client good(url);
    good.enable_server_certificate_verification(true);
    ASSERT_TRUE((*trusted)->VerifyWith(good.ssl_context()));
    httplib::Result res = good.Get("/hello");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->body, "hello over TLS");
  }
  httplib::Client bad(url);
  bad.enable_server_certificate_verification(true);
  ASSERT_TRUE((*other)->VerifyWith(bad.ssl_context()));
  httplib::Result refused = bad.Get("/hello");
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error(), httplib::Error::SSLServerVerification);

  httplib::Client wrong_host("https://localhost:" + std::to_string(port));
  wrong_host.enable_server_certificate_verification(true);
  ASSERT_TRUE((*trusted)->VerifyWith(wrong_host.ssl_context()));
  httplib::Result wrong = wrong_host.Get("/hello");
  EXPECT_FALSE(wrong);
  EXPECT_EQ(wrong.error(), httplib::Error::SSLServerVerification);
  EXPECT_EQ(wrong_host.get_openssl_verify_result(), X509_V_OK);  // the chain is fine, the name not

  EXPECT_FALSE((*trusted)->VerifyWith(nullptr));
  server.stop();
  listener.join();
}

}  // namespace
}  // namespace hotrow::access
