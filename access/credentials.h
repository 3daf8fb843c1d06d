#pragma once

// The access settings of one process, owned in one place (DESIGN.md "Round 3 notes", Modules):
// the bearer token of http.token_file, the certificate and key of http.tls_cert / http.tls_key and
// the CAs of cluster.peer_ca, and the peer token of cluster.peer_token_file. The HTTP server (its
// TLS and its token gate) and the cluster's peer clients are both handed this object and ask it on
// every connection or request; neither copies what it holds at start-up, so a SIGHUP (Reload)
// reaches both (CONTRACT.md, "Cluster mode in production settings").
//
// Every file is read at Open and at Reload only, and what it holds is kept in memory: nothing
// reads a file behind the operator's back (an edited file takes effect at the next SIGHUP, not at
// the next connection), and a file broken at a reload changes nothing for anyone, old clients or
// new (tests/cluster/cluster_peer_ca_test.cc).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"

namespace hotrow::access {

struct CredentialsOptions {
  // http.token_file: a file holding one bearer token. Empty: no token is asked or sent. Default:
  // "".
  std::string token_file;
  // http.tls_cert / http.tls_key: PEM files; both set serves HTTPS and asks peers over HTTPS, both
  // empty serves and asks plain HTTP. Default: "" (plain HTTP).
  std::string tls_cert_file;
  std::string tls_key_file;
  // cluster.peer_ca: a PEM file of the CAs that peers' certificates must chain to. Empty: the
  // system's CAs. Default: "".
  std::string peer_ca_file;
  // cluster.peer_token_file: a file holding the peers' own token, which peers send with every
  // request (kPeerTokenHeader) and without which a `?local=true` request is served as a client's.
  // Empty: none is sent, and any `?local=true` request is taken for a peer's. Default: "".
  std::string peer_token_file;
};

// The header a peer sends its token in (beside the Authorization of http.token_file, which
// clients hold too).
inline constexpr const char* kPeerTokenHeader = "X-Hotrow-Peer-Token";

// The certificate chain and private key an HTTPS server presents, read and checked together.
// Immutable once made; shared by the connections that use it.
class ServerCertificate;
// The CAs of cluster.peer_ca, parsed (access/tls.h).
class TrustedCas;

// What one generation of the credentials holds. Immutable; a reload makes a new one.
struct CredentialsSnapshot {
  uint64_t generation = 0;                               // 1 at Open, +1 per successful Reload
  std::string token;                                     // empty: none
  std::shared_ptr<const ServerCertificate> certificate;  // null: plain HTTP
  std::shared_ptr<const TrustedCas> peer_cas;            // null: the system's CAs
  std::string peer_token;                                // empty: none
};

// Thread-safety: every method may be called from any thread. Current() is a shared_ptr copy under
// a mutex held for nanoseconds; Reload reads every file before it replaces anything.
class Credentials {
 public:
  // Reads every file of `options` and checks it (the token is a token68, the certificate and key
  // match, the CA file holds certificates that parse). InvalidArgument naming the key and the
  // file otherwise, or when only one of the TLS files is set.
  static Result<std::unique_ptr<Credentials>> Open(const CredentialsOptions& options);

  // Re-reads the token file, the certificate and key, and the CA file. All or nothing: on any
  // failure nothing changes (every client, including those made afterwards, keeps the values held
  // before) and the error (naming the file) is returned. New connections to the server and new
  // requests to peers use the new values; idle peer clients made with the old ones are replaced
  // (see generation()).
  Status Reload();

  const CredentialsOptions& options() const { return options_; }
  // Whether the server serves HTTPS and peers are asked over HTTPS. Fixed for the process.
  bool tls() const { return !options_.tls_cert_file.empty(); }
  // Whether a token is asked and sent. Fixed for the process.
  bool has_token() const { return !options_.token_file.empty(); }
  // Whether a peer token is asked of `?local=true` requests and sent to peers. Fixed for the
  // process.
  bool has_peer_token() const { return !options_.peer_token_file.empty(); }
  // "https" or "http".
  const char* scheme() const { return tls() ? "https" : "http"; }

  std::shared_ptr<const CredentialsSnapshot> Current() const;
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  explicit Credentials(CredentialsOptions options) : options_(std::move(options)) {}
  Result<std::shared_ptr<const CredentialsSnapshot>> Read(uint64_t generation) const;

  const CredentialsOptions options_;
  std::mutex reload_mu_;  // held by Reload for its whole run
  mutable std::mutex mu_;
  std::shared_ptr<const CredentialsSnapshot> current_;  // guarded by mu_
  std::atomic<uint64_t> generation_{0};
};

}  // namespace hotrow::access
