#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace hotrow {

// A network address as configured (http.listen, cluster.peers): "host:port", where host is an
// IPv4 address or a host name, or "[v6]:port" for an IPv6 literal, brackets included
// (RFC 3986's form: "[::1]:8080").
struct HostPort {
  std::string host;  // without brackets: "127.0.0.1", "example.com", "::1"
  int port = 0;      // 0..65535

  bool is_v6() const { return host.find(':') != std::string::npos; }
  // "host:port", or "[v6]:port": what ParseHostPort reads back, and what a URL authority holds.
  std::string ToString() const;
};

// Reads "host:port" or "[v6]:port". The host is a name of A-Z a-z 0-9 . - _, or an IPv6 address
// in brackets that inet_pton accepts; the port 0..65535 in decimal. InvalidArgument saying what was
// expected otherwise (the caller names the key).
Result<HostPort> ParseHostPort(std::string_view text);

}  // namespace hotrow
