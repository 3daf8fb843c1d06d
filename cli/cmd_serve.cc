// `hotrow serve [--config FILE] [--set section.key=value]...`: the long-lived service. Without
// --config every key has its documented default (configs/hotrow.yaml), then the --set overrides.

#include <signal.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/process_exit.h"
#include "common/logging.h"
#include "config/config.h"
#include "service/notifier.h"
#include "service/server.h"
#include "service/signals.h"
#include "service/watchdog.h"

namespace hotrow::cli {
namespace {

// "RELOADING=1" with the MONOTONIC_USEC= that systemd (since 253) asks to come with it.
std::string ReloadingMessage() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t usec = static_cast<int64_t>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
  return "RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec);
}

}  // namespace

int RunServe(const ServeFlags& flags) {
  service::BlockTerminationSignals();
  Result<config::Config> config = config::LoadConfig(flags.config_file, flags.overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "hotrow: %s\n", config.status().message().c_str());
    return kExitUsage;
  }
  InitLogging("info");
  for (const std::string& warning : config->warnings) spdlog::warn("config: {}", warning);
  Result<std::unique_ptr<service::Server>> server = service::Server::Start(*config);
  if (!server.ok()) {
    spdlog::error("serve: cannot start: {}", server.status().ToString());
    return ExitCodeForStartFailure(server.status());
  }
  // CONTRACT.md "Running as a service": the configuration is valid, the store open and HTTP
  // listening (Server::Start returns once it is bound), so the manager may call the start done.
  service::NotifyManager("READY=1\nSTATUS=serving HTTP on " + (*server)->http_address());
  service::Server* started = server->get();
  service::Watchdog watchdog(
      service::Watchdog::Probes{
          [started] { return started->ingest_liveness(); },
          [started](int timeout_ms) { return started->ProbeHttp(timeout_ms); },
          [started] { return started->standby_liveness(); }},
      service::WatchdogIntervalUs());
  int sig = 0;
  while ((sig = service::WaitForTerminationSignal()) == SIGHUP) {
    service::NotifyManager(ReloadingMessage());
    const Status reloaded = (*server)->ReloadAccess();
    // READY=1 whatever the outcome: a failed reload keeps serving with the old files.
    service::NotifyManager(reloaded.ok() ? std::string("READY=1\nSTATUS=reloaded")
                                         : "READY=1\nSTATUS=reload failed: " + reloaded.message());
    if (reloaded.ok()) {
      spdlog::info(
          "serve: SIGHUP received; http.token_file, http.tls_cert, http.tls_key, "
          "cluster.peer_ca and cluster.peer_token_file re-read");
    } else {
      spdlog::error("serve: SIGHUP received; keeping the old token, certificate and CAs: {}",
                    reloaded.message());
    }
  }
  service::NotifyManager("STOPPING=1");
  spdlog::info("serve: {} received; stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  watchdog.Stop();
  service::Server* running = server->get();
  return StopWithin(
      std::chrono::milliseconds(9000), [running] { return running->Stop(); },
      [running] { return running->ingestion_stopped(); });
}

}  // namespace hotrow::cli
