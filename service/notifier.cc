#include "service/notifier.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>

#include "common/logging.h"

#ifdef HOTROW_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace hotrow::service {

#ifdef HOTROW_HAVE_SYSTEMD

void NotifyManager(std::string_view state) {
  const std::string text(state);
  // unset_environment = 0: every later message goes to the same socket.
  const int sent = sd_notify(0, text.c_str());
  if (sent < 0) {
    static RateLimiter limiter(1, 60000);
    uint64_t suppressed = 0;
    if (limiter.Allow(&suppressed)) {
      spdlog::warn("service manager: cannot send '{}' to $NOTIFY_SOCKET: error {} ({} suppressed)",
                   text, -sent, suppressed);
    }
  }
}

int64_t WatchdogIntervalUs() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0) return 0;
  return static_cast<int64_t>(usec);
}

bool NotifyCompiledIn() { return true; }

bool ManagerListening() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  return socket != nullptr && *socket != '\0';
}

#else  // no libsystemd: nothing to tell, nothing asked

void NotifyManager(std::string_view) {}
int64_t WatchdogIntervalUs() { return 0; }
bool NotifyCompiledIn() { return false; }
bool ManagerListening() { return false; }

#endif

}  // namespace hotrow::service
