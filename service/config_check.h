#pragma once

#include <string>

#include "common/status.h"
#include "config/config.h"

namespace hotrow::service {

// What `hotrow check-config` adds to LoadConfig's checks of every key (CONTRACT.md "Running as a
// service"): everything Server::Start would refuse before it opens the store, without opening it
// or joining the group.
// - http.token_file, http.tls_cert / http.tls_key and cluster.peer_ca are read and checked as the
//   server reads them (access::Credentials::Open: the token is a token68, the certificate parses
//   and matches its key, the CA file holds a certificate);
// - kafka.properties (with the brokers, group and instance id) are accepted by librdkafka's
//   consumer configuration, as Ingestor::Start checks them (ingest::CheckConsumerProperties);
// - http.listen beyond loopback needs a token or http.allow_open (http::CheckOpenListen);
// - cluster.peers holds this instance's http.listen, and a token is never sent to a non-loopback
//   peer over plain HTTP (CheckPeers);
// - store.path may be written by this process (CheckStorePath).
// InvalidArgument, one line naming the key and the file, for the first failure.
Status CheckConfig(const config::Config& config);

// Whether this process's user may keep a store at `path` (store.path): an existing directory in
// which it can create a file, or a path it can create as the store's open would
// (std::filesystem::create_directories), from the nearest directory that exists. Found by
// trying, not by access(2), which tells root that every directory is writable even where a
// read-only mount (the unit's ProtectSystem=strict) or a pseudo file system refuses: a file it
// creates is unnamed (O_TMPFILE) or removed at once, a directory removed at once. Server::Start
// asks it before it opens the store, so that a store.path the service cannot write is a
// configuration error (exit 2, which the unit does not restart) instead of a failed open and a
// restart every RestartSec. InvalidArgument naming store.path, the path and the user otherwise.
Status CheckStorePath(const std::string& path);

// The cluster.peers rules above; Server::Start applies them too.
Status CheckPeers(const config::Config& config, bool has_token, bool tls);

}  // namespace hotrow::service
