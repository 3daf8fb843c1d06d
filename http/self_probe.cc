// ProbeHealthz (http/server.h): the service manager's proof that the HTTP API answers.
#include <httplib.h>

#include <string>

#include "common/host_port.h"
#include "http/server.h"

namespace hotrow::http {

Status ProbeHealthz(const HttpServer& server, int timeout_ms) {
  std::string host;
  int port = 0;
  HOTROW_RETURN_IF_ERROR(ParseListenAddress(server.address(), &host, &port));
  // A wildcard listener is reached on loopback of the same family.
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  const bool tls = server.url().rfind("https://", 0) == 0;
  const std::string base = (tls ? "https://" : "http://") + HostPort{host, port}.ToString();
  httplib::Client client(base);
  client.enable_server_certificate_verification(false);
  const time_t sec = timeout_ms / 1000;
  const time_t usec = static_cast<time_t>(timeout_ms % 1000) * 1000;
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
  httplib::Result answer = client.Get("/healthz");
  if (!answer) {
    return Status::IOError("GET " + base + "/healthz: " + httplib::to_string(answer.error()));
  }
  if (answer->status != 200) {
    return Status::IOError("GET " + base + "/healthz: status " + std::to_string(answer->status));
  }
  return Status::Ok();
}

}  // namespace hotrow::http
