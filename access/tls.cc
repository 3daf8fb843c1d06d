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
#include <functional>
#include <utility>

#include "access/credentials.h"

namespace hotrow::access {
namespace {

// A PEM file larger than this is not a certificate or a key (and /dev/zero is not read forever).
constexpr size_t kMaxPemBytes = 1 << 20;

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;

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

// Everything a server context needs besides its certificate; called by SSLServer's constructor
// on its fresh context.
Status SetUpServerContext(SSL_CTX* ctx) {
  // What httplib's own constructors set, with TLS 1.2 as the oldest version instead of 1.1.
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                               SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    return Status::InvalidArgument("http.tls_cert: cannot set TLS 1.2 as the oldest version: " +
                                   OpenSslReason());
  }
  return Status::Ok();
}

// OpenSSL's certificate callback (SSL_CTX_set_cert_cb), run during each handshake: the
// certificate the credentials hold now.
int UseCurrentCertificate(SSL* ssl, void* arg) {
  const auto* credentials = static_cast<const Credentials*>(arg);
  const std::shared_ptr<const CredentialsSnapshot> now = credentials->Current();
  if (now == nullptr || now->certificate == nullptr) return 0;
  return now->certificate->UseOn(ssl) ? 1 : 0;
}

// An SSLServer whose context `set_up` completes; InvalidArgument when it fails.
Result<std::unique_ptr<httplib::Server>> NewSslServer(const std::function<Status(SSL_CTX*)>& set_up,
                                                      const std::string& what) {
  // httplib calls this on the context it creates, in its constructor, on this thread.
  Status status = Status::InvalidArgument("http.tls_cert: OpenSSL could not create a TLS context");
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    status = SetUpServerContext(&ctx);
    if (status.ok()) status = set_up(&ctx);
    return status.ok();
  });
  if (!status.ok()) return status;
  if (!server->is_valid()) {
    return Status::InvalidArgument("http.tls_cert: " + what + ": httplib refused the TLS setup");
  }
  return std::unique_ptr<httplib::Server>(std::move(server));
}

}  // namespace

Result<std::shared_ptr<const ServerCertificate>> ServerCertificate::Load(
    const std::string& cert_file, const std::string& key_file) {
  std::shared_ptr<ServerCertificate> out(new ServerCertificate());
  const std::string cert_key = "http.tls_cert";
  Result<std::string> text = ReadPemFile(cert_key, cert_file);
  if (!text.ok()) return text.status();
  BioPtr bio = MemoryBio(*text);
  ERR_clear_error();
  out->leaf_ = PEM_read_bio_X509_AUX(bio.get(), nullptr, NoPassword, nullptr);
  if (out->leaf_ == nullptr) {
    return Status::InvalidArgument(
        Named(cert_key, cert_file) +
        ": holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"): " + OpenSslReason());
  }
  for (int n = 2;; ++n) {
    X509* next = PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr);
    if (next == nullptr) {
      if (AtEndOfPem()) break;
      return Status::InvalidArgument(Named(cert_key, cert_file) + ": certificate " +
                                     std::to_string(n) +
                                     " of the chain cannot be read: " + OpenSslReason());
    }
    out->chain_.push_back(next);
  }
  ERR_clear_error();
  if (X509_cmp_current_time(X509_get0_notAfter(out->leaf_)) < 0) {
    spdlog::warn("http: the certificate of http.tls_cert {} has expired; clients will refuse it",
                 cert_file);
  } else if (X509_cmp_current_time(X509_get0_notBefore(out->leaf_)) > 0) {
    spdlog::warn(
        "http: the certificate of http.tls_cert {} is not valid yet; clients will refuse it",
        cert_file);
  }

  const std::string key_key = "http.tls_key";
  Result<std::string> key_text = ReadPemFile(key_key, key_file);
  if (!key_text.ok()) return key_text.status();
  BioPtr key_bio = MemoryBio(*key_text);
  ERR_clear_error();
  out->key_ = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassword, nullptr);
  if (out->key_ == nullptr) {
    return Status::InvalidArgument(
        Named(key_key, key_file) +
        ": holds no PEM private key, or an encrypted one (hotrow asks for no password): " +
        OpenSslReason());
  }
  // Checked first: SSL_CTX_use_PrivateKey would only say "key values mismatch".
  if (X509_check_private_key(out->leaf_, out->key_) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(Named(key_key, key_file) +
                                   ": is not the private key of the certificate in http.tls_cert " +
                                   cert_file);
  }
  // What a server context makes of them (a key too weak for OpenSSL's security level).
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> probe(SSL_CTX_new(TLS_server_method()),
                                                          &SSL_CTX_free);
  if (!probe) return Status::InvalidArgument("http.tls_cert: OpenSSL could not make a context");
  ERR_clear_error();
  if (SSL_CTX_use_certificate(probe.get(), out->leaf_) != 1) {
    return Status::InvalidArgument(Named(cert_key, cert_file) +
                                   ": the certificate is refused: " + OpenSslReason());
  }
  for (size_t i = 0; i < out->chain_.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(probe.get(), out->chain_[i]) != 1) {
      return Status::InvalidArgument(Named(cert_key, cert_file) + ": certificate " +
                                     std::to_string(i + 2) +
                                     " of the chain is refused: " + OpenSslReason());
    }
  }
  if (SSL_CTX_use_PrivateKey(probe.get(), out->key_) != 1 ||
      SSL_CTX_check_private_key(probe.get()) != 1) {
    return Status::InvalidArgument(Named(key_key, key_file) +
                                   ": the key is refused: " + OpenSslReason());
  }
  return std::shared_ptr<const ServerCertificate>(std::move(out));
}

ServerCertificate::~ServerCertificate() {
  for (X509* cert : chain_) X509_free(cert);
  if (leaf_ != nullptr) X509_free(leaf_);
  if (key_ != nullptr) EVP_PKEY_free(key_);
}

bool ServerCertificate::UseOn(SSL* ssl) const {
  if (SSL_use_certificate(ssl, leaf_) != 1 || SSL_use_PrivateKey(ssl, key_) != 1) return false;
  if (SSL_clear_chain_certs(ssl) != 1) return false;
  for (X509* cert : chain_) {
    if (SSL_add1_chain_cert(ssl, cert) != 1) return false;
  }
  return true;
}

bool ServerCertificate::UseOn(SSL_CTX* ctx) const {
  if (SSL_CTX_use_certificate(ctx, leaf_) != 1 || SSL_CTX_use_PrivateKey(ctx, key_) != 1) {
    return false;
  }
  if (SSL_CTX_clear_chain_certs(ctx) != 1) return false;
  for (X509* cert : chain_) {
    if (SSL_CTX_add1_chain_cert(ctx, cert) != 1) return false;
  }
  return SSL_CTX_check_private_key(ctx) == 1;
}

Result<std::shared_ptr<const TrustedCas>> TrustedCas::Load(const std::string& key,
                                                           const std::string& ca_file) {
  Result<std::string> text = ReadPemFile(key, ca_file);
  if (!text.ok()) return text.status();
  std::shared_ptr<TrustedCas> out(new TrustedCas());
  out->store_ = X509_STORE_new();
  if (out->store_ == nullptr) {
    return Status::InvalidArgument(Named(key, ca_file) + ": OpenSSL could not make a store");
  }
  BioPtr bio = MemoryBio(*text);
  ERR_clear_error();
  for (;;) {
    // _AUX: "TRUSTED CERTIFICATE" blocks too, as OpenSSL's own CA file loading accepts.
    X509Ptr cert(PEM_read_bio_X509_AUX(bio.get(), nullptr, NoPassword, nullptr), &X509_free);
    if (!cert) {
      if (out->size_ > 0 && AtEndOfPem()) break;
      if (out->size_ == 0) {
        return Status::InvalidArgument(
            Named(key, ca_file) +
            ": holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"): " + OpenSslReason());
      }
      return Status::InvalidArgument(Named(key, ca_file) + ": certificate " +
                                     std::to_string(out->size_ + 1) +
                                     " cannot be read: " + OpenSslReason());
    }
    if (X509_STORE_add_cert(out->store_, cert.get()) != 1) {  // takes its own reference
      return Status::InvalidArgument(Named(key, ca_file) + ": certificate " +
                                     std::to_string(out->size_ + 1) +
                                     " is refused: " + OpenSslReason());
    }
    ++out->size_;
  }
  ERR_clear_error();
  return std::shared_ptr<const TrustedCas>(std::move(out));
}

TrustedCas::~TrustedCas() {
  if (store_ != nullptr) X509_STORE_free(store_);
}

bool TrustedCas::VerifyWith(SSL_CTX* ctx) const {
  // set1: the context holds a reference of its own and frees it with itself.
  return ctx != nullptr && SSL_CTX_set1_verify_cert_store(ctx, store_) == 1;
}

void SslCtxFree::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

namespace {

Result<ServerTlsContext> NewTlsContext(const std::function<Status(SSL_CTX*)>& set_up) {
  ServerTlsContext ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) {
    return Status::InvalidArgument("http.tls_cert: OpenSSL could not create a TLS context: " +
                                   OpenSslReason());
  }
  HOTROW_RETURN_IF_ERROR(SetUpServerContext(ctx.get()));
  HOTROW_RETURN_IF_ERROR(set_up(ctx.get()));
  return ctx;
}

}  // namespace

Result<ServerTlsContext> NewServerTlsContext(const Credentials* credentials) {
  if (!credentials->tls()) return ServerTlsContext();
  return NewTlsContext([credentials](SSL_CTX* ctx) {
    const std::shared_ptr<const CredentialsSnapshot> now = credentials->Current();
    if (now == nullptr || now->certificate == nullptr || !now->certificate->UseOn(ctx)) {
      return Status::InvalidArgument("http.tls_cert: " + credentials->options().tls_cert_file +
                                     ": the certificate is refused: " + OpenSslReason());
    }
    SSL_CTX_set_cert_cb(ctx, UseCurrentCertificate, const_cast<Credentials*>(credentials));
    return Status::Ok();
  });
}

Result<ServerTlsContext> NewServerTlsContext(const std::string& cert_file,
                                             const std::string& key_file) {
  if (cert_file.empty() && key_file.empty()) return ServerTlsContext();
  HOTROW_RETURN_IF_ERROR(CheckServerTlsFiles(cert_file, key_file));
  Result<std::shared_ptr<const ServerCertificate>> certificate =
      ServerCertificate::Load(cert_file, key_file);
  if (!certificate.ok()) return certificate.status();
  std::shared_ptr<const ServerCertificate> held = certificate.value();
  return NewTlsContext([held, &cert_file](SSL_CTX* ctx) {
    if (!held->UseOn(ctx)) {
      return Status::InvalidArgument("http.tls_cert: " + cert_file +
                                     ": the certificate is refused: " + OpenSslReason());
    }
    return Status::Ok();
  });
}

Result<std::unique_ptr<httplib::Server>> NewHttplibServer(const Credentials* credentials) {
  if (!credentials->tls()) {
    return std::unique_ptr<httplib::Server>(std::make_unique<httplib::Server>());
  }
  return NewSslServer(
      [credentials](SSL_CTX* ctx) {
        const std::shared_ptr<const CredentialsSnapshot> now = credentials->Current();
        // The context holds one too, so that it is valid on its own; each handshake then asks
        // for the current one.
        if (now == nullptr || now->certificate == nullptr || !now->certificate->UseOn(ctx)) {
          return Status::InvalidArgument("http.tls_cert: " + credentials->options().tls_cert_file +
                                         ": the certificate is refused: " + OpenSslReason());
        }
        SSL_CTX_set_cert_cb(ctx, UseCurrentCertificate, const_cast<Credentials*>(credentials));
        return Status::Ok();
      },
      credentials->options().tls_cert_file);
}

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
  Result<std::shared_ptr<const ServerCertificate>> certificate =
      ServerCertificate::Load(cert_file, key_file);
  if (!certificate.ok()) return certificate.status();
  std::shared_ptr<const ServerCertificate> held = certificate.value();
  return NewSslServer(
      [held, &cert_file](SSL_CTX* ctx) {
        if (!held->UseOn(ctx)) {
          return Status::InvalidArgument("http.tls_cert: " + cert_file +
                                         ": the certificate is refused: " + OpenSslReason());
        }
        return Status::Ok();
      },
      cert_file);
}

Status CheckServerTlsFiles(const std::string& cert_file, const std::string& key_file) {
  Result<std::unique_ptr<httplib::Server>> server = NewHttplibServer(cert_file, key_file);
  return server.ok() ? Status::Ok() : server.status();
}

Status CheckCaCertFile(const std::string& ca_file) {
  Result<std::shared_ptr<const TrustedCas>> cas = TrustedCas::Load("", ca_file);
  return cas.ok() ? Status::Ok() : cas.status();
}

std::string CertificateVerifyError(long verify_result) {
  return X509_verify_cert_error_string(verify_result);
}

}  // namespace hotrow::access
