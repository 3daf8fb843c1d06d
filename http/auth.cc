#include "http/auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include "http/metrics.h"

namespace hotrow::http {
namespace {

// The JSON string escaping of an error message is not needed: every message here is ours.
void SetUnauthorized(Response& res, std::string_view why) {
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer");
  res.set_content("{\"error\":\"" + std::string(why) + "\"}\n", "application/json");
}

std::string_view RefusalMessage(AuthOutcome outcome) {
  switch (outcome) {
    case AuthOutcome::kMissing:
      return "authorization required: send Authorization: Bearer <token>";
    case AuthOutcome::kMalformed:
      return "malformed Authorization header: expected Bearer <token>";
    default:
      return "wrong bearer token";
  }
}

}  // namespace

namespace {
thread_local bool peer_proven = false;
}  // namespace

bool ProvesPeer(const Request& req, const access::Credentials* credentials) {
  if (credentials == nullptr || !credentials->has_peer_token()) return true;
  if (!req.has_header(access::kPeerTokenHeader)) return false;
  const std::string presented = req.get_header_value(access::kPeerTokenHeader);
  const std::shared_ptr<const access::CredentialsSnapshot> now = credentials->Current();
  return !now->peer_token.empty() && access::ConstantTimeEquals(presented, now->peer_token);
}

void SetPeerProven(bool proven) { peer_proven = proven; }
bool PeerProven() { return peer_proven; }

std::string_view AuthOutcomeName(AuthOutcome outcome) {
  switch (outcome) {
    case AuthOutcome::kOk:
      return "ok";
    case AuthOutcome::kMissing:
      return "missing";
    case AuthOutcome::kMalformed:
      return "malformed";
    case AuthOutcome::kWrong:
      return "wrong";
  }
  return "unknown";
}

Status CheckOpenListen(const std::string& listen, bool has_token, bool allow_open) {
  if (has_token || allow_open) return Status::Ok();
  const size_t colon = listen.rfind(':');
  std::string host = listen.substr(0, colon == std::string::npos ? listen.size() : colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  // A host name other than localhost may resolve to anything ("127.example.com"): only addresses.
  in_addr v4{};
  const bool loopback_v4 =
      inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
  if (host == "localhost" || host == "::1" || loopback_v4) return Status::Ok();
  return Status::InvalidArgument(
      "http.listen: " + listen +
      " is not a loopback address and no http.token_file is set: anyone who can reach it would "
      "read every event; set http.token_file, or http.allow_open: true to serve it open on "
      "purpose");
}

bool Authenticator::IsOpenPath(std::string_view target) {
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  return path == "/" || path == "/healthz" || path == "/readyz";
}

AuthOutcome Authenticator::Check(const std::string* authorization) const {
  AuthOutcome outcome = AuthOutcome::kOk;
  std::string_view presented;
  if (authorization == nullptr) {
    outcome = AuthOutcome::kMissing;
  } else if (!access::ParseBearer(*authorization, &presented)) {
    outcome = AuthOutcome::kMalformed;
  } else {
    const std::shared_ptr<const access::CredentialsSnapshot> now = credentials_->Current();
    if (!access::ConstantTimeEquals(presented, now->token)) outcome = AuthOutcome::kWrong;
  }
  if (metrics_ != nullptr) metrics_->RecordAuth(AuthOutcomeName(outcome));
  return outcome;
}

bool Authenticator::Admit(const Request& req, Response& res) const {
  if (IsOpenPath(req.target)) return true;
  const bool has = req.has_header("Authorization");
  const std::string header = has ? req.get_header_value("Authorization") : std::string();
  const AuthOutcome outcome = Check(has ? &header : nullptr);
  if (outcome == AuthOutcome::kOk) return true;
  uint64_t suppressed = 0;
  if (log_limiter_.Allow(&suppressed)) {
    spdlog::warn("http: refused {} from {}: {} credentials ({} similar refusals not logged)",
                 req.method, req.remote_addr, AuthOutcomeName(outcome), suppressed);
  }
  SetUnauthorized(res, RefusalMessage(outcome));
  return false;
}

}  // namespace hotrow::http
