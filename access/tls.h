#pragma once

// HTTPS for the HTTP API and its clients (CONTRACT.md, "Access": http.tls_cert, http.tls_key,
// `hotrow query --cacert`), on cpp-httplib's OpenSSL support. Internal to service/.
//
// Every file is read and checked here, with OpenSSL, before a server or a client uses it, so that
// a bad one is an error naming it (httplib only says that its server "is not valid").

#include <openssl/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace hotrow::access {

class Credentials;

// A certificate chain and its private key, read from PEM files and checked together. Immutable:
// a rotation makes a new one (Credentials::Reload), and a connection keeps the one it started
// with.
//
// Thread-safety: const methods from any thread.
class ServerCertificate {
 public:
  // Reads `cert_file` (the server's certificate first, then any intermediates clients need) and
  // `key_file` (its PEM private key, not encrypted). InvalidArgument, one line naming the key and
  // the file, when a file cannot be read or holds no PEM certificate / private key, when OpenSSL
  // refuses one (a key too weak for its security level), or when the key is not the
  // certificate's. An expired certificate (or one not valid yet) is accepted, with a warning in
  // the log.
  static Result<std::shared_ptr<const ServerCertificate>> Load(const std::string& cert_file,
                                                               const std::string& key_file);
  ~ServerCertificate();
  ServerCertificate(const ServerCertificate&) = delete;
  ServerCertificate& operator=(const ServerCertificate&) = delete;

  // Presents this certificate, its chain and key on one connection (from a certificate
  // callback, during its handshake). False when OpenSSL refuses.
  bool UseOn(SSL* ssl) const;
  // The same for every connection of a context.
  bool UseOn(SSL_CTX* ctx) const;

 private:
  ServerCertificate() = default;
  X509* leaf_ = nullptr;
  std::vector<X509*> chain_;
  EVP_PKEY* key_ = nullptr;
};

// The CAs a client trusts (cluster.peer_ca), read from their PEM file once and kept in memory:
// clients verify against this store, never against the file, so an edited file changes nothing
// until it is read again (Credentials::Reload, on SIGHUP), and a file broken since is refused by
// that read while the CAs already held stay in force. Immutable once made; the X509_STORE is
// freed when the last holder (this object or an SSL context it was handed to) lets go.
//
// Thread-safety: const methods from any thread; one store may verify many handshakes at once.
class TrustedCas {
 public:
  // Reads every PEM certificate of `ca_file` into a store. InvalidArgument, one line naming
  // `key` ("cluster.peer_ca") and the file, when it cannot be read, holds no PEM certificate, or
  // holds one that cannot be parsed.
  static Result<std::shared_ptr<const TrustedCas>> Load(const std::string& key,
                                                        const std::string& ca_file);
  ~TrustedCas();
  TrustedCas(const TrustedCas&) = delete;
  TrustedCas& operator=(const TrustedCas&) = delete;

  // Makes `ctx` (a client's) verify servers' chains against these CAs only: they become its
  // verify store, which OpenSSL consults instead of the context's own store (where httplib puts
  // the system's CAs at its first connection). The context takes its own reference. False when
  // `ctx` is null or OpenSSL refuses.
  bool VerifyWith(SSL_CTX* ctx) const;
  // How many certificates the file held.
  size_t size() const { return size_; }

 private:
  TrustedCas() = default;
  X509_STORE* store_ = nullptr;
  size_t size_ = 0;
};

// The server HttpServer runs: a plain httplib::Server without TLS, else an httplib::SSLServer
// whose every handshake presents the certificate `credentials` holds at that moment (so a
// Credentials::Reload reaches new connections without a restart). `credentials` is not owned and
// must outlive the server. InvalidArgument when OpenSSL refuses the set-up.
Result<std::unique_ptr<httplib::Server>> NewHttplibServer(const Credentials* credentials);

// The server HttpServer runs: an httplib::SSLServer serving `cert_file` and `key_file` when both
// are set, a plain httplib::Server when both are empty.
//
// `cert_file` is PEM: the server's certificate first, then any intermediate certificates that
// clients need to reach their trusted CA. `key_file` is the certificate's PEM private key, not
// encrypted. Connections use TLS 1.2 or newer, without compression or renegotiation.
//
// InvalidArgument, one line naming the key and the file, when only one is set, when a file cannot
// be read or holds no PEM certificate / private key, when OpenSSL refuses one (a key too weak for
// its security level), or when the key is not the certificate's. An expired certificate (or one
// not valid yet) is served, with a warning in the log.
Result<std::unique_ptr<httplib::Server>> NewHttplibServer(const std::string& cert_file,
                                                          const std::string& key_file);

// The TLS context of an HTTPS server (http/transport.cc), set up as NewHttplibServer sets up its
// server's: TLS 1.2 or newer, no compression or renegotiation, and every handshake presenting the
// certificate `credentials` holds at that moment (a Credentials::Reload reaches new connections).
// Null when `credentials` serve plain HTTP. `credentials` is not owned and must outlive the
// context. InvalidArgument when OpenSSL refuses the set-up.
struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const;
};
using ServerTlsContext = std::unique_ptr<SSL_CTX, SslCtxFree>;
Result<ServerTlsContext> NewServerTlsContext(const Credentials* credentials);
// The same serving `cert_file` and `key_file` (both set), read once; null when both are empty.
Result<ServerTlsContext> NewServerTlsContext(const std::string& cert_file,
                                             const std::string& key_file);

// Checks `cert_file` and `key_file` as NewHttplibServer does, without making a server: for a start
// that should fail before it opens the store or joins the consumer group. Ok when both are empty.
Status CheckServerTlsFiles(const std::string& cert_file, const std::string& key_file);

// Checks that `ca_file` can be read and holds at least one PEM certificate (the CAs a client
// verifies a server's certificate against). InvalidArgument naming the file otherwise.
Status CheckCaCertFile(const std::string& ca_file);

// OpenSSL's text for a certificate verification result (X509_V_ERR_*), e.g. "self-signed
// certificate".
std::string CertificateVerifyError(long verify_result);

}  // namespace hotrow::access
