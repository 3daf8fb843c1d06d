#pragma once

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
// - store.path, when it exists, is a directory (whether the service's user may write it is for
//   the start to tell: check-config may run as another user).
// InvalidArgument, one line naming the key and the file, for the first failure.
Status CheckConfig(const config::Config& config);

// The cluster.peers rules above; Server::Start applies them too.
Status CheckPeers(const config::Config& config, bool has_token, bool tls);

}  // namespace hotrow::service
