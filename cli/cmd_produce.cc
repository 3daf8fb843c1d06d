// `hotrow produce`: the synthetic IoT generator, alone (CONTRACT.md).

#include <signal.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/logging.h"
#include "ingest/synthetic_producer.h"

namespace hotrow::cli {
namespace {

int RunProduce(const ingest::ProducerOptions& options) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  InitLogging("info");

  auto producer = ingest::SyntheticProducer::Create(options);
  if (!producer.ok()) {
    std::fprintf(stderr, "hotrow produce: %s\n", producer.status().message().c_str());
    return producer.status().IsInvalidArgument() ? kExitUsage : kExitFailure;
  }
  (*producer)->Start();
  const timespec tick{0, 100 * 1000 * 1000};
  while (!(*producer)->done()) {
    if (sigtimedwait(&signals, nullptr, &tick) > 0) (*producer)->Stop();
  }
  Status s = (*producer)->Wait();
  std::fprintf(stderr, "hotrow produce: %llu events produced to %s, %llu delivered\n",
               static_cast<unsigned long long>((*producer)->produced()), options.topic.c_str(),
               static_cast<unsigned long long>((*producer)->delivered()));
  if (!s.ok()) {
    std::fprintf(stderr, "hotrow produce: %s\n", s.message().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void AddProduceCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "produce", "Produce synthetic IoT events (JSON, keyed by device id) at a steady rate");
  auto options = std::make_shared<ingest::ProducerOptions>();
  cmd->add_option("--brokers", options->brokers, "Bootstrap servers, host:port[,host:port]")
      ->required();
  cmd->add_option("--topic", options->topic, "Topic to produce to")->required();
  cmd->add_option("--rate", options->rate, "Events per second; 0 for as fast as possible")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}))
      ->capture_default_str();
  cmd->add_option("--count", options->count, "Events to produce; 0 until SIGTERM")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--devices", options->devices, "Distinct device ids")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the device and reading choice")
      ->capture_default_str();
  cmd->add_option("--skew", options->skew, "Zipf exponent of the device choice; 0 is uniform")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->callback([options, exit_code] { *exit_code = RunProduce(*options); });
}

}  // namespace hotrow::cli
