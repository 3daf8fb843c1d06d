#include "service/config_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
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

// "user hotrow (uid 998)", for the errors of CheckStorePath.
std::string RunningUser() {
  const uid_t uid = geteuid();
  const passwd* pw = getpwuid(uid);
  return "user " + std::string(pw != nullptr ? pw->pw_name : "?") + " (uid " + std::to_string(uid) +
         ")";
}

// Creates a file in the directory `dir` and lets it go: unnamed where the file system supports
// O_TMPFILE (nothing is left behind even by a crash), else named and unlinked at once. 0 or the
// errno of the failure.
int TryCreateFileIn(const std::string& dir) {
  int fd = open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return errno;
  std::string name = dir + "/.hotrow-check-XXXXXX";
  fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return errno;
  close(fd);
  unlink(name.c_str());
  return 0;
}

// Creates a directory in `dir` and removes it. 0 or the errno of the failure.
int TryCreateDirectoryIn(const std::string& dir) {
  std::string name = dir + "/.hotrow-check-XXXXXX";
  if (mkdtemp(name.data()) == nullptr) return errno;
  rmdir(name.c_str());
  return 0;
}

}  // namespace

Status CheckStorePath(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(
          "store.path: expected a directory (or nothing yet), got a file: " + path);
    }
    const int err = TryCreateFileIn(path);
    if (err != 0) {
      return Status::InvalidArgument("store.path: " + path + " is not writable by " +
                                     RunningUser() + ": " + std::strerror(err));
    }
    return Status::Ok();
  }
  if (errno != ENOENT && errno != ENOTDIR) {
    return Status::InvalidArgument("store.path: cannot look at " + path + ": " +
                                   std::strerror(errno));
  }
  // Missing: the store's open makes it and its missing parents, beginning in the nearest
  // directory that exists.
  std::filesystem::path ancestor = std::filesystem::path(path).lexically_normal();
  while (true) {
    ancestor = ancestor.parent_path();
    const std::string at = ancestor.empty() ? "." : ancestor.string();
    if (stat(at.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return Status::InvalidArgument("store.path: cannot make " + path + ": " + at +
                                       " is a file, not a directory");
      }
      const int err = TryCreateDirectoryIn(at);
      if (err != 0) {
        return Status::InvalidArgument("store.path: cannot make " + path + ": " + RunningUser() +
                                       " cannot create a directory in " + at + ": " +
                                       std::strerror(err));
      }
      return Status::Ok();
    }
    if (ancestor.empty() || ancestor == ancestor.root_path()) {
      return Status::InvalidArgument("store.path: cannot make " + path +
                                     ": no directory of it exists");
    }
  }
}

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
  HOTROW_RETURN_IF_ERROR(CheckStorePath(config.store.path));
  return Status::Ok();
}

}  // namespace hotrow::service
