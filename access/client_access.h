#pragma once

#include <string>

#include "common/status.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace hotrow::access {

// What a client of a hotrow HTTP API needs to be let in (CONTRACT.md, "Access"): the bearer
// token of the server's http.token_file and, over HTTPS, the CAs its certificate is verified
// against. `hotrow query` uses it today; cluster peers will use the same struct.
struct ClientAccess {
  // Sent as "Authorization: Bearer <token>" when not empty. Default: "" (no header).
  std::string token;
  // A PEM file of the CAs (or the self-signed certificate) an https:// server's certificate must
  // chain to; its name must also match the host asked. Empty: the system's CAs. Set it with
  // TrustCaFile. Default: "".
  std::string ca_cert_file;

  // Reads the token from `token_file` the way the server does (http/auth.h,
  // ReadTokenFile). An empty `token_file` leaves the access empty. InvalidArgument naming the
  // file when it cannot be read or holds no token.
  static Result<ClientAccess> Load(const std::string& token_file);

  // Checks that `ca_file` holds a PEM certificate, then trusts it (ca_cert_file). InvalidArgument
  // naming the file when it cannot be read or holds none.
  Status TrustCaFile(const std::string& ca_file);

  // Makes every request of `client` carry the token and, over HTTPS, verify the server's
  // certificate against ca_cert_file (when set).
  void ApplyTo(httplib::Client* client) const;
};

}  // namespace hotrow::access
