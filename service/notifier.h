#pragma once

#include <cstdint>
#include <string_view>

namespace hotrow::service {

// What `hotrow serve` tells a service manager (systemd's sd_notify protocol, CONTRACT.md "Running
// as a service"): READY=1 once the configuration is valid, the store open and HTTP listening;
// RELOADING=1 then READY=1 around a SIGHUP's reload; WATCHDOG=1 while healthy (service/watchdog.h);
// STOPPING=1 when a stop begins; EXTEND_TIMEOUT_USEC= while the store opens
// (service/timeout_extender.h). Messages go to the AF_UNIX datagram socket named by
// $NOTIFY_SOCKET; without it, and in a build without libsystemd (HOTROW_HAVE_SYSTEMD unset), they
// go nowhere and cost nothing.
//
// Thread-safety: every function may be called from any thread.

// Sends `state` ("READY=1", "STATUS=...", several assignments separated by newlines). A failure
// to send is logged (rate-limited) and otherwise ignored: a manager that cannot be told must not
// stop the service.
void NotifyManager(std::string_view state);

// The watchdog interval the manager asked for ($WATCHDOG_USEC, when $WATCHDOG_PID is unset or this
// process), in microseconds; 0 when none was asked or libsystemd is absent.
int64_t WatchdogIntervalUs();

// Whether this build can notify at all (libsystemd was found when it was configured).
bool NotifyCompiledIn();

// Whether a message would go anywhere: this build can notify and $NOTIFY_SOCKET is set. For
// helpers that would otherwise run a thread to tell nobody (service/timeout_extender.h).
bool ManagerListening();

}  // namespace hotrow::service
