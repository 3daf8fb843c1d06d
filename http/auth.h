#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "access/bearer_token.h"
#include "access/credentials.h"
#include "common/logging.h"
#include "common/status.h"
#include "http/exchange.h"


namespace hotrow::http {

class Metrics;

// The peers' lane (CONTRACT.md "Query slots"): whether `req` proves it comes from a peer, by the
// peer token of cluster.peer_token_file (access::kPeerTokenHeader, compared in constant time with
// the token `credentials` holds now). Without a peer token configured (or no credentials) any
// request does, as before the key existed.
bool ProvesPeer(const Request& req, const access::Credentials* credentials);
// What ProvesPeer said of the request being served on this thread: set at the start of every
// request (HttpServer), read when a `?local=true` query takes its slot.
void SetPeerProven(bool proven);
bool PeerProven();

// How a request's credentials were judged; the `outcome` label of hotrow_http_auth_total.
enum class AuthOutcome {
  kOk,
  kMissing,    // no Authorization header
  kMalformed,  // a header that is not "Bearer <token68>"
  kWrong,      // a well-formed bearer token that is not ours
};
std::string_view AuthOutcomeName(AuthOutcome outcome);  // "ok", "missing", "malformed", "wrong"

// CONTRACT.md, "Access": Ok when `listen` ("host:port") is a loopback address (127.0.0.0/8,
// localhost, ::1), when a token is asked, or when `allow_open` says an open API is wanted;
// else InvalidArgument saying why, in one line.
Status CheckOpenListen(const std::string& listen, bool has_token, bool allow_open);

// The bearer-token gate of the HTTP API (CONTRACT.md, "Access"): every path except "/",
// "/healthz" and "/readyz" needs "Authorization: Bearer <token>". A refusal is 401 with
// {"error": ...} and "WWW-Authenticate: Bearer"; every decision is counted in Metrics by outcome;
// refusals are logged at most 10 per 10 s (the remote address and the outcome, never a token).
//
// The token is the one `credentials` holds at each request: Credentials::Reload (SIGHUP) replaces
// it for the server and the cluster's peer clients at once; a file that cannot be read then keeps
// the old token.
//
// Thread-safety: every method may be called from any thread.
class Authenticator {
 public:
  // `credentials` (with a token: has_token()) and `metrics` (may be null) are not owned and must
  // outlive this object.
  Authenticator(const access::Credentials* credentials, Metrics* metrics)
      : credentials_(credentials), metrics_(metrics) {}

  // True for the paths that are always open: "/", "/healthz", "/readyz" (any query string).
  static bool IsOpenPath(std::string_view target);

  // Judges one Authorization header value (null: no header). Counts the outcome.
  AuthOutcome Check(const std::string* authorization) const;

  // The pre-routing hook: true when `req` may go on; else `res` is the 401 answer.
  bool Admit(const Request& req, Response& res) const;

 private:
  const access::Credentials* const credentials_;
  Metrics* const metrics_;
  mutable RateLimiter log_limiter_{10, 10000};
};

}  // namespace hotrow::http
