#include "bench/serve_process.h"

#include <errno.h>  // program_invocation_short_name
#include <fcntl.h>
#include <httplib.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "ingest/synthetic_producer.h"

namespace hotrow::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The pids of every serve child not yet reaped, so that Die() can stop them.
std::mutex g_mu;
std::set<pid_t> g_children;  // guarded by g_mu

// SIGKILL and reap `pid` unless it was reaped already.
void KillChild(pid_t pid) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_children.erase(pid) == 0) return;
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// `pid` has been reaped: it must never be signalled again (the kernel may reuse it).
void Forget(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_children.erase(pid);
}

}  // namespace

void Die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::set<pid_t> children;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    children = g_children;
  }
  for (pid_t pid : children) KillChild(pid);
  std::exit(1);
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
             std::chrono::milliseconds poll) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ServeBinary() {
  const char* bin_env = std::getenv("HOTROW_BIN");
  const std::string binary = bin_env != nullptr && *bin_env != '\0' ? bin_env : "build/hotrow";
  if (access(binary.c_str(), X_OK) != 0) Die("no executable " + binary + " (set HOTROW_BIN)");
  return binary;
}

std::optional<std::string> GetBody(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(1));
  client.set_read_timeout(std::chrono::seconds(10));
  httplib::Result res = client.Get(path);
  if (!res || res->status != 200) return std::nullopt;
  return std::move(res->body);
}

std::optional<nlohmann::json> GetJson(int port, const std::string& path) {
  const std::optional<std::string> body = GetBody(port, path);
  if (!body) return std::nullopt;
  nlohmann::json doc = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

int64_t Ingested(int port) {
  const std::optional<nlohmann::json> stats = GetJson(port, "/v1/stats");
  if (!stats || !stats->contains("ingested")) return -1;
  return stats->at("ingested").get<int64_t>();
}

bool AwaitIngested(int port, int64_t n, std::chrono::milliseconds timeout) {
  return WaitFor([&] { return Ingested(port) >= n; }, timeout, std::chrono::milliseconds(50));
}

double MeasureMaxRate(int port, int64_t backlog) {
  int64_t first = 0;
  if (!WaitFor(
          [&] {
            first = Ingested(port);
            return first > 0;
          },
          std::chrono::seconds(120), std::chrono::milliseconds(5))) {
    Die("serve stored nothing within 120 s");
  }
  const auto start = std::chrono::steady_clock::now();
  if (!WaitFor([&] { return Ingested(port) >= backlog; }, std::chrono::minutes(5),
               std::chrono::milliseconds(5))) {
    Die("serve did not store the backlog within 5 minutes (lost to the mock's cap?)");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(backlog - first) / seconds;
}

std::string WriteServeConfig(const std::string& dir, const std::string& bootstrap,
                             const std::string& group) {
  const std::string path = dir + "/hotrow.yaml";
  std::ofstream config(path);
  config << "kafka:\n  brokers: " << bootstrap << "\n  topics: [events]\n  group_id: " << group
         << "\nstore:\n  path: " << dir << "/store\n"
         << "http:\n  listen: 127.0.0.1:0\n";
  if (!config) Die("cannot write " + path);
  return path;
}

std::unique_ptr<ingest::SyntheticProducer> StartPacedProducer(const std::string& bootstrap,
                                                              double rate, int devices,
                                                              uint64_t seed) {
  ingest::ProducerOptions options;
  options.brokers = bootstrap;
  options.topic = "events";
  options.rate = static_cast<int64_t>(rate);
  options.devices = devices;
  options.skew = 0;
  options.seed = seed;
  auto producer = ingest::SyntheticProducer::Create(options);
  if (!producer.ok()) Die(producer.status().ToString());
  (*producer)->Start();
  return std::move(producer).value();
}

void ProduceBacklog(const std::string& bootstrap, int64_t count, int devices) {
  ingest::ProducerOptions options;
  options.brokers = bootstrap;
  options.topic = "events";
  options.rate = 0;
  options.count = count;
  options.devices = devices;
  options.skew = 0;
  auto producer = ingest::SyntheticProducer::Create(options);
  if (!producer.ok()) Die(producer.status().ToString());
  const Status s = (*producer)->Run();
  if (!s.ok()) Die(s.ToString());
}

ServeProcess::ServeProcess(const std::string& binary, const std::string& config,
                           std::string log_path, int cpu)
    : log_path_(std::move(log_path)) {
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<std::string> argv = {binary, "serve", "--config", config};
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const char* log = log_path_.c_str();
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (cpu >= 0) CPU_SET(cpu, &cpus);
  pid_ = fork();
  if (pid_ < 0) Die("fork failed");
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (cpu >= 0 && sched_setaffinity(0, sizeof(cpus), &cpus) != 0) _exit(126);
    const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_children.insert(pid_);
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) KillChild(pid_);
}

bool ServeProcess::Running() {
  if (pid_ <= 0) return false;
  if (waitpid(pid_, nullptr, WNOHANG) == 0) return true;
  Forget(pid_);
  pid_ = -1;
  return false;
}

int ServeProcess::AwaitPort() {
  const std::string marker = "listening on http://";
  int port = -1;
  WaitFor(
      [&] {
        const std::string log = ReadFile(log_path_);
        const size_t at = log.find(marker);
        if (at != std::string::npos) {
          const size_t end = log.find_first_of(" \n", at + marker.size());
          const std::string address = log.substr(at + marker.size(), end - at - marker.size());
          port = std::atoi(address.substr(address.rfind(':') + 1).c_str());
        }
        return port > 0 || !Running();
      },
      std::chrono::seconds(60), std::chrono::milliseconds(20));
  if (port <= 0) Die("serve did not start listening; its log:\n" + ReadFile(log_path_));
  return port;
}

int ServeProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  const bool exited = WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; },
                              std::chrono::seconds(15), std::chrono::milliseconds(20));
  if (!exited) {
    KillChild(pid_);
    pid_ = -1;
    return -1;
  }
  Forget(pid_);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace hotrow::bench
