// `hotrow embedded-kafka`: only the loopback broker (CONTRACT.md).

#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/logging.h"
#include "ingest/embedded_kafka.h"

namespace hotrow::cli {
namespace {

struct EmbeddedKafkaFlags {
  std::string topic = "events";
  // 16: the embedded broker keeps only ~5 MiB per partition, so the partition count sets how much
  // history it holds. At the demo's 20000 events/s (~2 MB/s of JSON before lz4) 16 partitions
  // keep well over half a minute of stream, enough for a consumer restart without loss, and give
  // a consumer group room to spread.
  int partitions = 16;
};

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

}  // namespace

void AddEmbeddedKafkaCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "embedded-kafka",
      "Run only the loopback Kafka broker; prints bootstrap=127.0.0.1:PORT, runs until SIGTERM");
  auto flags = std::make_shared<EmbeddedKafkaFlags>();
  cmd->add_option("--topic", flags->topic, "Topic to create")->capture_default_str();
  cmd->add_option("--partitions", flags->partitions, "Partitions of the topic")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->callback([flags, exit_code] { *exit_code = RunEmbeddedKafka(*flags); });
}

}  // namespace hotrow::cli
