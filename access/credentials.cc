#include "access/credentials.h"

#include "access/tls.h"
#include "access/token_file.h"

namespace hotrow::access {

Result<std::unique_ptr<Credentials>> Credentials::Open(const CredentialsOptions& options) {
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return options.tls_key_file.empty()
               ? Status::InvalidArgument(
                     "http.tls_key: expected the private key of http.tls_cert " +
                     options.tls_cert_file + " (HTTPS needs both), got none")
               : Status::InvalidArgument(
                     "http.tls_cert: expected the certificate of http.tls_key " +
                     options.tls_key_file + " (HTTPS needs both), got none");
  }
  std::unique_ptr<Credentials> credentials(new Credentials(options));
  Result<std::shared_ptr<const CredentialsSnapshot>> first = credentials->Read(1);
  if (!first.ok()) return first.status();
  credentials->current_ = std::move(first).value();
  credentials->generation_.store(1, std::memory_order_release);
  return credentials;
}

Result<std::shared_ptr<const CredentialsSnapshot>> Credentials::Read(uint64_t generation) const {
  auto snapshot = std::make_shared<CredentialsSnapshot>();
  snapshot->generation = generation;
  if (!options_.token_file.empty()) {
    Result<std::string> token = ReadTokenFile(options_.token_file);
    if (!token.ok()) return token.status();
    snapshot->token = std::move(token).value();
  }
  if (!options_.peer_token_file.empty()) {
    Result<std::string> token = ReadTokenFile(options_.peer_token_file, "cluster.peer_token_file");
    if (!token.ok()) return token.status();
    snapshot->peer_token = std::move(token).value();
  }
  if (tls()) {
    Result<std::shared_ptr<const ServerCertificate>> certificate =
        ServerCertificate::Load(options_.tls_cert_file, options_.tls_key_file);
    if (!certificate.ok()) return certificate.status();
    snapshot->certificate = std::move(certificate).value();
  }
  if (!options_.peer_ca_file.empty()) {
    Result<std::shared_ptr<const TrustedCas>> cas =
        TrustedCas::Load("cluster.peer_ca", options_.peer_ca_file);
    if (!cas.ok()) return cas.status();
    snapshot->peer_cas = std::move(cas).value();
  }
  return std::shared_ptr<const CredentialsSnapshot>(std::move(snapshot));
}

Status Credentials::Reload() {
  std::lock_guard<std::mutex> reload_lock(reload_mu_);  // one reload at a time
  // The files are read without mu_: readers never wait for a disk.
  Result<std::shared_ptr<const CredentialsSnapshot>> next = Read(generation() + 1);
  if (!next.ok()) return next.status();
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(next).value();
  generation_.store(current_->generation, std::memory_order_release);
  return Status::Ok();
}

std::shared_ptr<const CredentialsSnapshot> Credentials::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

}  // namespace hotrow::access
