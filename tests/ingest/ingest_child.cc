// A test-only ingesting process: opens a store and runs an Ingestor against the given brokers
// until SIGTERM/SIGINT, for the exactly-once test that kills it with SIGKILL.
//
//   ingest_child --brokers B --topic T --group G --store DIR
//
// Says "started" to its parent (tests/support/child_protocol.h) once the Ingestor runs. Exit 0 after a clean stop, 1 on an error.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "common/logging.h"
#include "ingest/ingestor.h"
#include "store/event_store.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/child_protocol.h"

int main(int argc, char** argv) {
  CLI::App app{"ingest_child"};
  hotrow::ingest::IngestOptions options;
  std::string topic;
  std::string store_path;
  app.add_option("--brokers", options.brokers)->required();
  app.add_option("--topic", topic)->required();
  app.add_option("--group", options.group_id)->required();
  app.add_option("--store", store_path)->required();
  app.add_option("--writers", options.writers, "store writers (IngestOptions::writers)");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  hotrow::InitLogging("warn");

  hotrow::store::StoreOptions store_options;
  store_options.path = store_path;
  store_options.salts = 4;
  auto store = hotrow::store::EventStore::Open(store_options);
  if (!store.ok()) {
    std::fprintf(stderr, "ingest_child: %s\n", store.status().ToString().c_str());
    return 1;
  }
  options.topics = {topic};
  options.properties = hotrow::ingest::testing::FastGroupProperties();
  options.batch_max_events = 200;
  options.batch_max_ms = 20;
  auto ingestor = hotrow::ingest::Ingestor::Start(options, store->get());
  if (!ingestor.ok()) {
    std::fprintf(stderr, "ingest_child: %s\n", ingestor.status().ToString().c_str());
    return 1;
  }
  hotrow::testing::SayToParent("started");
  int sig = 0;
  sigwait(&signals, &sig);
  hotrow::Status s = (*ingestor)->Stop();
  if (!s.ok()) {
    std::fprintf(stderr, "ingest_child: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
