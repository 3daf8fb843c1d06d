#include "http/stream_tokens.h"

#include <random>

#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

std::string RandomHex(size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device random;
  std::string out;
  out.reserve(bytes * 2);
  for (size_t i = 0; i < bytes; i += 4) {
    const uint32_t word = random();
    for (size_t b = 0; b < 4 && i + b < bytes; ++b) {
      const uint8_t byte = static_cast<uint8_t>(word >> (8 * b));
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

}  // namespace

Result<StreamTokens::Issued> StreamTokens::Issue(const std::string& parent_tag) {
  const int64_t now = options_.clock->NowMs();
  Issued issued;
  issued.token = "st-" + RandomHex(16);
  issued.ttl_ms = options_.ttl_ms;
  std::lock_guard lock(mu_);
  if (tokens_.size() >= options_.max_tokens) {
    std::erase_if(tokens_, [&](const auto& t) { return t.second.expires_ms <= now; });
  }
  if (tokens_.size() >= options_.max_tokens) {
    return Status::Busy("the server holds " + std::to_string(options_.max_tokens) +
                        " stream tokens already; try again within " +
                        std::to_string(options_.ttl_ms / 1000) + " s");
  }
  tokens_[issued.token] = Entry{parent_tag, now + options_.ttl_ms};
  return issued;
}

StreamTokens::Verdict StreamTokens::Check(std::string_view token, const std::string& current_tag,
                                          std::string* parent_tag) const {
  const int64_t now = options_.clock->NowMs();
  std::lock_guard lock(mu_);
  // A map lookup compares the token's bytes early-out; the tokens are random and short-lived,
  // and one guessed is one of 2^128, so its timing tells nothing worth having.
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return Verdict::kUnknown;
  if (now >= it->second.expires_ms) return Verdict::kExpired;
  if (it->second.parent_tag != current_tag) return Verdict::kParentRetired;
  *parent_tag = it->second.parent_tag;
  return Verdict::kOk;
}

size_t StreamTokens::size() const {
  std::lock_guard lock(mu_);
  return tokens_.size();
}

std::string RedactedTarget(std::string_view target) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  std::string_view rest = target.substr(q + 1);
  bool first = true;
  while (true) {
    const size_t amp = rest.find('&');
    const std::string_view param = rest.substr(0, amp);
    if (!first) out.push_back('&');
    first = false;
    const size_t eq = param.find('=');
    // By the name as the server decodes it (wire::ParseQueryString), so that "access%5Ftoken",
    // which names the same parameter, is redacted too. A name that does not decode is no
    // parameter the server reads.
    const Result<std::string> name = wire::PercentDecode(param.substr(0, eq));
    if (eq != std::string_view::npos && name.ok() && *name == "access_token") {
      out.append("access_token=[redacted]");
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return out;
}

}  // namespace hotrow::http
