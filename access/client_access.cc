#include "access/client_access.h"

#include <httplib.h>

#include "access/tls.h"
#include "access/token_file.h"

namespace hotrow::access {

Result<ClientAccess> ClientAccess::Load(const std::string& token_file) {
  ClientAccess access;
  if (token_file.empty()) return access;
  Result<std::string> token = ReadTokenFile(token_file);
  if (!token.ok()) return token.status();
  access.token = std::move(token).value();
  return access;
}

Status ClientAccess::TrustCaFile(const std::string& ca_file) {
  HOTROW_RETURN_IF_ERROR(CheckCaCertFile(ca_file));
  ca_cert_file = ca_file;
  return Status::Ok();
}

void ClientAccess::ApplyTo(httplib::Client* client) const {
  if (!token.empty()) client->set_bearer_token_auth(token);
  // httplib verifies the certificate and the host name by default; this only says against what.
  client->enable_server_certificate_verification(true);
  if (!ca_cert_file.empty()) client->set_ca_cert_path(ca_cert_file);
}

}  // namespace hotrow::access
