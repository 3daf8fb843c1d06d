// `hotrow serve [--config FILE] [--set section.key=value]...`: the long-lived service. Without
// --config every key has its documented default (configs/hotrow.yaml), then the --set overrides.

#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/process_exit.h"
#include "common/logging.h"
#include "config/config.h"
#include "service/server.h"
#include "service/signals.h"

namespace hotrow::cli {

int RunServe(const ServeFlags& flags) {
  service::BlockTerminationSignals();
  Result<config::Config> config = config::LoadConfig(flags.config_file, flags.overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "hotrow: %s\n", config.status().message().c_str());
    return kExitUsage;
  }
  InitLogging("info");
  Result<std::unique_ptr<service::Server>> server = service::Server::Start(*config);
  if (!server.ok()) {
    spdlog::error("serve: cannot start: {}", server.status().ToString());
    return ExitCodeForStartFailure(server.status());
  }
  int sig = 0;
  while ((sig = service::WaitForTerminationSignal()) == SIGHUP) {
    const Status reloaded = (*server)->ReloadAccess();
    if (reloaded.ok()) {
      spdlog::info(
          "serve: SIGHUP received; http.token_file, http.tls_cert, http.tls_key and "
          "cluster.peer_ca re-read");
    } else {
      spdlog::error("serve: SIGHUP received; keeping the old token, certificate and CAs: {}",
                    reloaded.message());
    }
  }
  spdlog::info("serve: {} received; stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  service::Server* running = server->get();
  return StopWithin(
      std::chrono::milliseconds(9000), [running] { return running->Stop(); },
      [running] { return running->ingestion_stopped(); });
}

}  // namespace hotrow::cli
