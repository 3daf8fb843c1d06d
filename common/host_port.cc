#include "common/host_port.h"

#include <arpa/inet.h>

#include <charconv>

namespace hotrow {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

}  // namespace

std::string HostPort::ToString() const {
  return (is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<HostPort> ParseHostPort(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(std::string(why));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("no host:port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  HostPort out;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("an IPv6 host must be in brackets");
    out.host = std::string(host.substr(1, host.size() - 2));
    in6_addr v6{};
    if (inet_pton(AF_INET6, out.host.c_str(), &v6) != 1) return bad("not an IPv6 address");
  } else {
    for (char c : host) {
      if (!IsNameChar(c)) return bad("a host is an IPv4 address, a name, or [IPv6]");
    }
    out.host = std::string(host);
  }
  int port = -1;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || port_text.size() > 5 || ec != std::errc() ||
      end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return bad("the port must be 0..65535");
  }
  out.port = port;
  return out;
}

}  // namespace hotrow
