#pragma once

namespace hotrow::service {

// SIGTERM and SIGINT end the long-running commands (serve, demo) gracefully. They are blocked in
// every thread and taken synchronously by the main thread with WaitForTerminationSignal, so no
// code runs in a signal handler and no other thread is interrupted.

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, and so in every thread it starts
// afterwards, and ignores SIGPIPE (a client that goes away is an error on the write, not a signal).
// REQUIRES: called before the process starts any thread.
void BlockTerminationSignals();

// SIGHUP is blocked and taken the same way: `serve` re-reads its token file on it (a command that
// has nothing to reload treats it as a request to stop, as its default action would).

// Waits until SIGTERM, SIGINT or SIGHUP arrives; returns its number.
// REQUIRES: BlockTerminationSignals() was called.
int WaitForTerminationSignal();

// Like WaitForTerminationSignal, but gives up after `timeout_ms` and returns 0.
int WaitForTerminationSignalFor(int timeout_ms);

}  // namespace hotrow::service
