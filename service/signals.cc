#include "service/signals.h"

#include <signal.h>
#include <time.h>

#include <cerrno>

namespace hotrow::service {
namespace {

sigset_t TerminationSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  const sigset_t set = TerminationSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignal() {
  const sigset_t set = TerminationSet();
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) == 0) return sig;
  }
}

int WaitForTerminationSignalFor(int timeout_ms) {
  const sigset_t set = TerminationSet();
  timespec timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  while (true) {
    const int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig > 0) return sig;
    if (errno == EAGAIN) return 0;
    // EINTR: another signal; wait again (a shorter remaining time is not worth tracking).
  }
}

}  // namespace hotrow::service
