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

}  // namespace hotrow::cli
