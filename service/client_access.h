#pragma once

#include <string>

#include "common/status.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace hotrow::service {

// What a client of a hotrow HTTP API needs to be let in (CONTRACT.md, "Access"): the bearer
// token of the server's http.token_file. `hotrow query` uses it today; cluster peers will use the
// same struct (and, with HTTPS, the CA to trust will join it here).
struct ClientAccess {
  // Sent as "Authorization: Bearer <token>" when not empty. Default: "" (no header).
  std::string token;

  // Reads the token from `token_file` the way the server does (service/http_auth.h,
  // ReadTokenFile). An empty `token_file` leaves the access empty. InvalidArgument naming the
  // file when it cannot be read or holds no token.
  static Result<ClientAccess> Load(const std::string& token_file);

  // Makes every request of `client` carry the token.
  void ApplyTo(httplib::Client* client) const;
};

}  // namespace hotrow::service
