#include "service/config_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "access/credentials.h"
#include "common/host_port.h"
#include "http/auth.h"
#include "ingest/ingestor.h"

namespace hotrow::service {
namespace {

// True for a loopback address (127.0.0.0/8, ::1) or localhost.
bool IsLoopback(const std::string& host) {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return host == "::1" || host == "localhost";
}

}  // namespace

Status CheckPeers(const config::Config& config, bool has_token, bool tls) {
  const std::vector<std::string>& peers = config.cluster.peers;
  if (!peers.empty() && std::find(peers.begin(), peers.end(), config.http.listen) == peers.end()) {
    return Status::InvalidArgument("cluster.peers: expected this instance's http.listen (" +
                                   config.http.listen + ") among the peers");
  }
  // CONTRACT.md, "Cluster mode in production settings": never a token in clear beyond loopback.
  if (has_token && !tls) {
    for (const std::string& peer : peers) {
      Result<HostPort> address = ParseHostPort(peer);
      if (address.ok() && !IsLoopback(address->host)) {
        return Status::InvalidArgument(
            "cluster.peers: " + peer +
            " is not a loopback address, and peers would be sent http.token_file's token over "
            "plain HTTP; set http.tls_cert and http.tls_key on every instance");
      }
    }
  }
  return Status::Ok();
}

Status CheckConfig(const config::Config& config) {
  access::CredentialsOptions credentials;
  credentials.token_file = config.http.token_file;
  credentials.tls_cert_file = config.http.tls_cert;
  credentials.tls_key_file = config.http.tls_key;
  credentials.peer_ca_file = config.cluster.peer_ca;
  credentials.peer_token_file = config.cluster.peer_token_file;
  Result<std::unique_ptr<access::Credentials>> opened = access::Credentials::Open(credentials);
  if (!opened.ok()) return Status::InvalidArgument(opened.status().message());
  HOTROW_RETURN_IF_ERROR(http::CheckOpenListen(config.http.listen, !config.http.token_file.empty(),
                                               config.http.allow_open));
  HOTROW_RETURN_IF_ERROR(CheckPeers(config, (*opened)->has_token(), (*opened)->tls()));
  HOTROW_RETURN_IF_ERROR(ingest::CheckConsumerProperties(config.ToIngestOptions()));
  struct stat st {};
  if (stat(config.store.path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(
          "store.path: expected a directory (or nothing yet), got a file: " + config.store.path);
    }
  } else if (errno != ENOENT) {
    return Status::InvalidArgument("store.path: cannot look at " + config.store.path + ": " +
                                   std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace hotrow::service
