#pragma once

#include <chrono>
#include <functional>

#include "common/status.h"

namespace hotrow::cli {

// For the commands that run a Server as their process (serve, demo).

// The exit code for a Server that failed to start: a store that is not hotrow's or settings that
// do not fit it are the user's to fix (2, CONTRACT.md); anything else is a runtime failure (1).
int ExitCodeForStartFailure(const Status& st);

// Runs `stop` (which stops a Server and whatever else the command runs) and returns the process
// exit code: 0, or 1 when `stop` failed. Should stopping hang past `budget` (a client that will
// not let go of a connection), exits the process at once: with 0 when `ingestion_stopped()` says
// that everything consumed is durable, else 1.
int StopWithin(std::chrono::milliseconds budget, const std::function<Status()>& stop,
               const std::function<bool()>& ingestion_stopped);

}  // namespace hotrow::cli
