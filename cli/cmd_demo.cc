// `hotrow demo [--rate N] [--data DIR] [--listen ADDR]`: the embedded broker, the synthetic
// producer and the service in one process, for a first look with nothing else installed.

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "cli/commands.h"
#include "cli/process_exit.h"
#include "common/clock.h"
#include "common/logging.h"
#include "config/config.h"
#include "http/server.h"
#include "ingest/embedded_kafka.h"
#include "ingest/synthetic_producer.h"
#include "service/server.h"
#include "service/signals.h"

namespace hotrow::cli {
namespace {

constexpr const char* kTopic = "events";
// The embedded broker keeps ~5 MiB per partition: 16 partitions hold well over half a minute of
// the default 20000 events/s, as `hotrow embedded-kafka` does.
constexpr int kPartitions = 16;
constexpr int kDevices = 1000;
// How long the demo waits for its first events before giving up.
constexpr int kStartupTimeoutMs = 60000;

// The data directory: the one given, kept; or a fresh temporary one, removed at exit.
class DataDir {
 public:
  static Result<std::unique_ptr<DataDir>> Make(const std::string& given) {
    if (!given.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(given, ec);
      if (ec) return Status::IOError("--data " + given + ": " + ec.message());
      return std::unique_ptr<DataDir>(new DataDir(given, /*remove=*/false));
    }
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hotrow-demo-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return Status::IOError("cannot create a temporary directory from " + pattern);
    }
    return std::unique_ptr<DataDir>(new DataDir(pattern, /*remove=*/true));
  }
  ~DataDir() {
    if (!remove_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (ec) spdlog::warn("demo: could not remove {}: {}", path_, ec.message());
  }
  const std::string& path() const { return path_; }
  bool removed_at_exit() const { return remove_; }

 private:
  DataDir(std::string path, bool remove) : path_(std::move(path)), remove_(remove) {}
  const std::string path_;
  const bool remove_;
};

// The base URL a local client reaches `bound` ("host:port") at: a wildcard address is reached
// through loopback.
std::string BaseUrl(const std::string& bound) {
  std::string host;
  int port = 0;
  if (!http::ParseListenAddress(bound, &host, &port).ok()) return "http://" + bound;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port);
}

// How many events `url` (a latest / range answer, or a scan) returns; -1 when it does not answer
// 200.
int CountEvents(const std::string& base_url, const std::string& path) {
  httplib::Client client(base_url);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(5));
  httplib::Result res = client.Get(path);
  if (!res || res->status != 200) return -1;
  if (path.rfind("/v1/scan", 0) == 0) {
    int lines = 0;
    for (char c : res->body) lines += c == '\n';
    return lines;
  }
  nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
  if (!j.is_object() || !j.contains("events") || !j["events"].is_array()) return -1;
  return static_cast<int>(j["events"].size());
}

}  // namespace

int RunDemo(const DemoFlags& flags) {
  service::BlockTerminationSignals();
  if (flags.rate < 0) {
    std::fprintf(stderr, "hotrow: --rate must be >= 0 (0: as fast as the broker takes them)\n");
    return kExitUsage;
  }
  {
    std::string host;
    int port = 0;
    Status listen = http::ParseListenAddress(flags.listen, &host, &port);
    if (!listen.ok()) {
      std::fprintf(stderr, "hotrow: --listen: %s\n", listen.message().c_str());
      return kExitUsage;
    }
  }
  InitLogging("info");
  const int64_t demo_start_ms = WallClock::Default()->NowMs();

  Result<std::unique_ptr<DataDir>> data = DataDir::Make(flags.data_dir);
  if (!data.ok()) {
    spdlog::error("demo: {}", data.status().message());
    return kExitFailure;
  }
  Result<std::unique_ptr<ingest::EmbeddedKafka>> kafka =
      ingest::EmbeddedKafka::Start(kTopic, kPartitions);
  if (!kafka.ok()) {
    spdlog::error("demo: {}", kafka.status().ToString());
    return kExitFailure;
  }

  config::Config config;
  config.kafka.brokers = (*kafka)->bootstrap();
  config.kafka.topics = {kTopic};
  config.kafka.group_id = "hotrow-demo";
  config.store.path = (*data)->path() + "/store";
  config.http.listen = flags.listen;
  config.index.fields = {"battery"};  // README: an index query by battery level
  Result<std::unique_ptr<service::Server>> server = service::Server::Start(config);
  if (!server.ok()) {
    spdlog::error("demo: cannot start the service: {}", server.status().ToString());
    return ExitCodeForStartFailure(server.status());
  }

  ingest::ProducerOptions producer_options;
  producer_options.brokers = (*kafka)->bootstrap();
  producer_options.topic = kTopic;
  producer_options.rate = flags.rate;
  producer_options.devices = kDevices;
  Result<std::unique_ptr<ingest::SyntheticProducer>> producer =
      ingest::SyntheticProducer::Create(producer_options);
  if (!producer.ok()) {
    spdlog::error("demo: {}", producer.status().ToString());
    return kExitFailure;
  }
  (*producer)->Start();

  auto stop_all = [&]() -> Status {
    (*producer)->Stop();
    Status produced = (*producer)->Wait();
    if (!produced.ok()) spdlog::warn("demo: producer: {}", produced.message());
    producer->reset();  // its client goes before the broker it talks to
    Status st = (*server)->Stop();
    kafka->reset();
    return st;
  };
  auto stop = [&] {
    return StopWithin(std::chrono::milliseconds(9000), stop_all,
                      [&] { return (*server)->ingestion_stopped(); });
  };

  // The device the producer emits most (its Zipf law starts there), and a window that holds the
  // demo's first hour: the lines below work as printed for that long.
  const std::string device = ingest::SyntheticEvents::DeviceId(0);
  const int64_t from_ms = demo_start_ms / 1000 * 1000;
  const int64_t to_ms = from_ms + 3600 * 1000;
  const std::string base = BaseUrl((*server)->http_address());
  const std::string window = "from=" + std::to_string(from_ms) + "&to=" + std::to_string(to_ms);
  const std::string paths[] = {
      "/v1/events/" + device + "/latest?n=3",
      "/v1/events/" + device + "?" + window + "&limit=5",
      "/v1/scan?" + window + "&limit=5",
  };

  // Print the lines only once they answer with events.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kStartupTimeoutMs);
  while (true) {
    bool all = true;
    for (const auto& path : paths) all = all && CountEvents(base, path) > 0;
    if (all) break;
    if ((*producer)->done()) {
      spdlog::error("demo: the producer stopped before any event could be queried");
      stop();
      return kExitFailure;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      spdlog::error("demo: no events could be queried within {} s; see the log above",
                    kStartupTimeoutMs / 1000);
      stop();
      return kExitFailure;
    }
    if (service::WaitForTerminationSignalFor(200) != 0) return stop();
  }

  std::string out;
  out += "\nhotrow demo is running.\n";
  out += "  Kafka broker: " + (*kafka)->bootstrap() + " (topic " + kTopic + ", " +
         std::to_string(kPartitions) + " partitions; any Kafka client can produce to it)\n";
  out += "  Producer:     " +
         (flags.rate > 0 ? std::to_string(flags.rate) + " events/s" : std::string("unthrottled")) +
         " over " + std::to_string(kDevices) + " devices; " + device + " is the chattiest\n";
  out += "  Data:         " + (*data)->path() +
         ((*data)->removed_at_exit() ? " (removed at exit)\n" : "\n");
  out += "  HTTP API:     " + base + "\n";
  out += "  Status page:  " + base + "/ (open it in a browser)\n";
  out += "\nTry (the time window covers the demo's first hour):\n";
  for (const auto& path : paths) out += "  curl '" + base + path + "'\n";
  out += "\nStop with Ctrl-C.\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);

  const int sig = service::WaitForTerminationSignal();
  spdlog::info("demo: {} received; stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  return stop();
}

}  // namespace hotrow::cli
