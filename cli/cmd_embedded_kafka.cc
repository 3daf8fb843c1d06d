// `hotrow embedded-kafka`: only the loopback broker (CONTRACT.md).

#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/logging.h"
#include "ingest/embedded_kafka.h"

namespace hotrow::cli {
int RunEmbeddedKafka(const EmbeddedKafkaFlags& flags) {
  // Signals are taken by sigwait below; block them before librdkafka starts its threads so that
  // none of those threads receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  InitLogging("warn");

  auto kafka = ingest::EmbeddedKafka::Start(flags.topic, flags.partitions);
  if (!kafka.ok()) {
    std::fprintf(stderr, "hotrow embedded-kafka: %s\n", kafka.status().ToString().c_str());
    return kafka.status().IsInvalidArgument() ? kExitUsage : kExitFailure;
  }
  std::printf("bootstrap=%s\n", (*kafka)->bootstrap().c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "hotrow embedded-kafka: topic %s with %d partitions; stop with SIGTERM\n",
               flags.topic.c_str(), flags.partitions);
  int sig = 0;
  sigwait(&signals, &sig);
  kafka->reset();
  return kExitOk;
}

}  // namespace hotrow::cli
