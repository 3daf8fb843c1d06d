#include "access/tls.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace hotrow::access {
namespace {

// A PEM file larger than this is not a certificate or a key (and /dev/zero is not read forever).
constexpr size_t kMaxPemBytes = 1 << 20;

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// "key: file" as every message starts: "http.tls_cert: /etc/hotrow/cert.pem".
std::string Named(const std::string& key, const std::string& path) {
  return key.empty() ? path : key + ": " + path;
}

// OpenSSL's reason for the last failure on this thread, and the queue emptied.
std::string OpenSslReason() {
  unsigned long code = 0;
  unsigned long last = 0;
  while ((code = ERR_get_error()) != 0) last = code;  // the last error is the most precise one
  if (last == 0) return "no reason given";
  const char* reason = ERR_reason_error_string(last);
  return reason != nullptr ? reason : "error " + std::to_string(last);
}

// The whole file; InvalidArgument naming it when it cannot be read.
Result<std::string> ReadPemFile(const std::string& key, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status::InvalidArgument(Named(key, path) + ": cannot open: " + std::strerror(errno));
  }
  std::string text(kMaxPemBytes + 1, '\0');
  const size_t size = std::fread(text.data(), 1, text.size(), file);
  const int read_errno = errno;
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) {
    return Status::InvalidArgument(Named(key, path) +
                                   ": cannot read: " + std::strerror(read_errno));
  }
  if (size > kMaxPemBytes) {
    return Status::InvalidArgument(Named(key, path) + ": over 1 MiB, not a PEM file");
  }
  text.resize(size);
  return text;
}

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free);
}

// Never asks for a password (OpenSSL's default would prompt on the terminal): an encrypted key
// fails to load instead.
int NoPassword(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return 0; }

// True when the last error is PEM's "no start line": the end of the certificates of a file.
bool AtEndOfPem() {
  const unsigned long code = ERR_peek_last_error();
  return ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE;
}

// The certificate chain of `cert_file` into `ctx`: the first certificate is the server's, the
// rest are sent with it.
Status UseCertificateChain(const std::string& cert_file, SSL_CTX* ctx) {
  const std::string key = "http.tls_cert";
  Result<std::string> text = ReadPemFile(key, cert_file);
  if (!text.ok()) return text.status();
  BioPtr bio = MemoryBio(*text);
  ERR_clear_error();
  X509Ptr leaf(PEM_read_bio_X509_AUX(bio.get(), nullptr, NoPassword, nullptr), &X509_free);
  if (!leaf) {
    return Status::InvalidArgument(
        Named(key, cert_file) +
        ": holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"): " + OpenSslReason());
  }
  if (SSL_CTX_use_certificate(ctx, leaf.get()) != 1) {
    return Status::InvalidArgument(Named(key, cert_file) +
                                   ": the certificate is refused: " + OpenSslReason());
  }
  for (int n = 2;; ++n) {
    X509Ptr next(PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr), &X509_free);
    if (!next) {
      if (AtEndOfPem()) break;
      return Status::InvalidArgument(Named(key, cert_file) + ": certificate " + std::to_string(n) +
                                     " of the chain cannot be read: " + OpenSslReason());
    }
    if (SSL_CTX_add1_chain_cert(ctx, next.get()) != 1) {
      return Status::InvalidArgument(Named(key, cert_file) + ": certificate " + std::to_string(n) +
                                     " of the chain is refused: " + OpenSslReason());
    }
  }
  ERR_clear_error();
  const ASN1_TIME* not_after = X509_get0_notAfter(leaf.get());
  const ASN1_TIME* not_before = X509_get0_notBefore(leaf.get());
  if (X509_cmp_current_time(not_after) < 0) {
    spdlog::warn("http: the certificate of http.tls_cert {} has expired; clients will refuse it",
                 cert_file);
  } else if (X509_cmp_current_time(not_before) > 0) {
    spdlog::warn(
        "http: the certificate of http.tls_cert {} is not valid yet; clients will "
        "refuse it",
        cert_file);
  }
  return Status::Ok();
}

// The private key of `key_file` into `ctx`, checked against the certificate already there.
Status UsePrivateKey(const std::string& key_file, const std::string& cert_file, SSL_CTX* ctx) {
  const std::string key = "http.tls_key";
  Result<std::string> text = ReadPemFile(key, key_file);
  if (!text.ok()) return text.status();
  BioPtr bio = MemoryBio(*text);
  ERR_clear_error();
  KeyPtr pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr), &EVP_PKEY_free);
  if (!pkey) {
    return Status::InvalidArgument(
        Named(key, key_file) +
        ": holds no PEM private key, or an encrypted one (hotrow asks for no password): " +
        OpenSslReason());
  }
  // Checked first: SSL_CTX_use_PrivateKey would only say "key values mismatch".
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (cert == nullptr || X509_check_private_key(cert, pkey.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(Named(key, key_file) +
                                   ": is not the private key of the certificate in http.tls_cert " +
                                   cert_file);
  }
  if (SSL_CTX_use_PrivateKey(ctx, pkey.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    return Status::InvalidArgument(Named(key, key_file) +
                                   ": the key is refused: " + OpenSslReason());
  }
  return Status::Ok();
}

// Everything a server context needs; called by SSLServer's constructor on its fresh context.
Status SetUpServerContext(const std::string& cert_file, const std::string& key_file, SSL_CTX* ctx) {
  // What httplib's own constructors set, with TLS 1.2 as the oldest version instead of 1.1.
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                               SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    return Status::InvalidArgument("http.tls_cert: cannot set TLS 1.2 as the oldest version: " +
                                   OpenSslReason());
  }
  HOTROW_RETURN_IF_ERROR(UseCertificateChain(cert_file, ctx));
  return UsePrivateKey(key_file, cert_file, ctx);
}

}  // namespace

Result<std::unique_ptr<httplib::Server>> NewHttplibServer(const std::string& cert_file,
                                                          const std::string& key_file) {
  if (cert_file.empty() && key_file.empty()) {
    return std::unique_ptr<httplib::Server>(std::make_unique<httplib::Server>());
  }
  if (key_file.empty()) {
    return Status::InvalidArgument("http.tls_key: expected the private key of http.tls_cert " +
                                   cert_file + " (HTTPS needs both), got none");
  }
  if (cert_file.empty()) {
    return Status::InvalidArgument("http.tls_cert: expected the certificate of http.tls_key " +
                                   key_file + " (HTTPS needs both), got none");
  }
  // httplib calls this on the context it creates, in its constructor, on this thread.
  Status set_up = Status::InvalidArgument("http.tls_cert: OpenSSL could not create a TLS context");
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    set_up = SetUpServerContext(cert_file, key_file, &ctx);
    return set_up.ok();
  });
  if (!set_up.ok()) return set_up;
  if (!server->is_valid()) {
    return Status::InvalidArgument("http.tls_cert: " + cert_file +
                                   ": httplib refused the TLS setup");
  }
  return std::unique_ptr<httplib::Server>(std::move(server));
}

Status CheckServerTlsFiles(const std::string& cert_file, const std::string& key_file) {
  Result<std::unique_ptr<httplib::Server>> server = NewHttplibServer(cert_file, key_file);
  return server.ok() ? Status::Ok() : server.status();
}

Status CheckCaCertFile(const std::string& ca_file) {
  Result<std::string> text = ReadPemFile("", ca_file);
  if (!text.ok()) return text.status();
  BioPtr bio = MemoryBio(*text);
  ERR_clear_error();
  X509Ptr first(PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr), &X509_free);
  if (!first) {
    return Status::InvalidArgument(
        ca_file +
        ": holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"): " + OpenSslReason());
  }
  ERR_clear_error();
  return Status::Ok();
}

std::string CertificateVerifyError(long verify_result) {
  return X509_verify_cert_error_string(verify_result);
}

}  // namespace hotrow::access
