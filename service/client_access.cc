#include "service/client_access.h"

#include <httplib.h>

#include "service/http_auth.h"

namespace hotrow::service {

Result<ClientAccess> ClientAccess::Load(const std::string& token_file) {
  ClientAccess access;
  if (token_file.empty()) return access;
  Result<std::string> token = ReadTokenFile(token_file);
  if (!token.ok()) return token.status();
  access.token = std::move(token).value();
  return access;
}

void ClientAccess::ApplyTo(httplib::Client* client) const {
  if (!token.empty()) client->set_bearer_token_auth(token);
}

}  // namespace hotrow::service
