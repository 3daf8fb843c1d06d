#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace hotrow::http {

// Short-lived tokens for live streams (CONTRACT.md "Live streams", "Browsers"): a browser's
// EventSource cannot send an Authorization header, so a page that holds the bearer token asks
// `POST /v1/stream-tokens` for one of these and opens the stream with `?access_token=`. A stream
// token opens streams only (the admission gate checks the path), for `ttl_ms` after it was issued
// (EventSource reconnects with the same address, so it is not spent by one use), and only while
// the bearer token it was issued for is still the server's: each token records the digest its
// parent's streams are tagged with (HttpServer::Impl::StreamTag), never the parent token itself,
// and a stream it opens is tagged the same, so a SIGHUP that retires the parent ends it too.
//
// Tokens are 128 random bits (std::random_device) in hex, kept in memory: they are valid on the
// instance that issued them alone, and none survives a restart.
//
// Thread-safety: every method may be called from any thread.
class StreamTokens {
 public:
  struct Options {
    // How long a token opens streams after it is issued. Default: 60 s.
    int64_t ttl_ms = 60'000;
    // Tokens held at most; issuing one more first forgets the expired, then is refused (Busy).
    // Default: 10,000.
    size_t max_tokens = 10'000;
    // The clock expiry is counted on: monotonic. Not owned. Default: MonotonicClock::Default().
    const Clock* clock = MonotonicClock::Default();
  };
  explicit StreamTokens(Options options) : options_(options) {}

  struct Issued {
    std::string token;
    int64_t ttl_ms = 0;
  };
  // A new token for streams of the bearer token whose stream tag is `parent_tag`. Busy when
  // max_tokens live tokens are held.
  Result<Issued> Issue(const std::string& parent_tag);

  // How a presented token was judged.
  enum class Verdict { kOk, kUnknown, kExpired, kParentRetired };
  // Judges `token`; `current_tag` is the stream tag of the bearer token accepted now. On kOk sets
  // *parent_tag to the tag its streams carry.
  Verdict Check(std::string_view token, const std::string& current_tag,
                std::string* parent_tag) const;

  size_t size() const;

 private:
  struct Entry {
    std::string parent_tag;
    int64_t expires_ms = 0;
  };
  const Options options_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> tokens_;  // guarded by mu_
};

// `target` with the value of every `access_token` query parameter replaced by "[redacted]": what
// any log line that names a request target writes.
std::string RedactedTarget(std::string_view target);

}  // namespace hotrow::http
