// What does the HTTP core cost per answer, beside nginx serving the same bytes?
//
// The real `hotrow serve` (http.io_threads 1, pinned to CPU 0) over a store of --backlog records
// fed by the embedded broker, ingestion idle once they are stored; one nginx worker (Debian's
// nginx-light, `access_log off`, `open_file_cache`, the same keep-alive limit as hotrow's 1000),
// pinned to CPU 0 too; wrk (one thread, --connections keep-alive connections) pinned to CPU 1. The
// server's CPU is read from /proc before and after each run: CPU per answer is what a shared
// machine changes least. Four loads, alternated over --rounds rounds, medians:
//   - hotrow latest-10 of a random known id (answered from the last-N cache on the I/O thread),
//     every answer checked against the events the id holds;
//   - nginx serving a static file of the size of one such answer;
//   - hotrow /healthz;
//   - nginx `return 200` of the same bytes as /healthz.
// The ratios: hotrow's CPU per latest-10 / nginx's per file, and per /healthz / nginx's return.
// Skipped (no figure) when nginx is not installed.
//
//   http_core_bench [--backlog N] [--devices D] [--rounds R] [--seconds S] [--connections C]

#include <netinet/in.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "bench/serve_process.h"
#include "bench/wrk_load.h"
#include "ingest/embedded_kafka.h"

namespace hotrow::bench {
namespace {

struct Flags {
  int64_t backlog = 20000;
  int devices = 200;
  int rounds = 3;
  int seconds = 5;
  int connections = 96;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (name == "--backlog")
      f.backlog = v;
    else if (name == "--devices")
      f.devices = static_cast<int>(v);
    else if (name == "--rounds")
      f.rounds = static_cast<int>(v);
    else if (name == "--seconds")
      f.seconds = static_cast<int>(v);
    else if (name == "--connections")
      f.connections = static_cast<int>(v);
    else
      Die("unknown flag " + name);
  }
  return f;
}

// A wrk script that asks `path` and counts every 2xx answer as exact.
std::string WriteFixedScript(const std::string& dir, const std::string& name,
                             const std::string& path) {
  const std::string file = dir + "/" + name + ".lua";
  std::ofstream out(file, std::ios::trunc);
  out << "local threads = {}\n"
         "function setup(thread) table.insert(threads, thread) end\n"
         "function init(args) exact = 0; bad = 0 end\n"
         "request = function() return wrk.format(\"GET\", \""
      << path
      << "\") end\n"
         "response = function(status, headers, body)\n"
         "  if status >= 200 and status < 300 then exact = exact + 1 else bad = bad + 1 end\n"
         "end\n"
         "done = function(summary, latency, requests)\n"
         "  local e, b = 0, 0\n"
         "  for _, t in ipairs(threads) do e = e + t:get(\"exact\"); b = b + t:get(\"bad\") end\n"
         "  b = b + summary.errors.connect + summary.errors.read + summary.errors.write +\n"
         "      summary.errors.timeout\n"
         "  io.write(string.format(\"COUNTS exact=%d inexact=0 bad=%d\\n\", e, b))\n"
         "end\n";
  out.close();
  if (!out) Die("cannot write " + file);
  return file;
}

// One nginx master with one worker, in the foreground, pinned to `cpu`; stopped by the destructor.
class Nginx {
 public:
  Nginx(const std::string& dir, int port, const std::string& healthz_body, int cpu) {
    const std::string conf = dir + "/nginx.conf";
    std::ofstream out(conf, std::ios::trunc);
    out << "worker_processes 1;\ndaemon off;\nmaster_process on;\npid " << dir
        << "/nginx.pid;\nerror_log " << dir << "/nginx.err warn;\n"
        << "events { worker_connections 4096; }\nhttp {\n  access_log off;\n"
        << "  open_file_cache max=100 inactive=60s;\n  keepalive_requests 1000;\n"
        << "  keepalive_timeout 60s;\n  client_body_temp_path " << dir << "/tmp;\n"
        << "  proxy_temp_path " << dir << "/tmp;\n  fastcgi_temp_path " << dir << "/tmp;\n"
        << "  uwsgi_temp_path " << dir << "/tmp;\n  scgi_temp_path " << dir << "/tmp;\n"
        << "  server {\n    listen 127.0.0.1:" << port << ";\n    root " << dir << "/www;\n"
        << "    location = /healthz { default_type application/json; return 200 '" << healthz_body
        << "'; }\n  }\n}\n";
    out.close();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGQUIT);  // a bench that dies (Die) takes its nginx with it
      cpu_set_t cpus;
      CPU_ZERO(&cpus);
      CPU_SET(cpu, &cpus);
      sched_setaffinity(0, sizeof(cpus), &cpus);
      execlp("nginx", "nginx", "-c", conf.c_str(), "-p", dir.c_str(), nullptr);
      _exit(127);
    }
  }
  ~Nginx() {
    if (pid_ > 0) {
      kill(pid_, SIGQUIT);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The master and its worker: the worker does the serving.
  std::vector<pid_t> pids() const {
    std::vector<pid_t> out = {pid_};
    std::ifstream children("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) +
                           "/children");
    pid_t child = 0;
    while (children >> child) out.push_back(child);
    return out;
  }

 private:
  pid_t pid_ = -1;
};

int FreePort() {
  // The kernel's next ephemeral port, probed with a bind to port 0.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  if (std::system("command -v nginx >/dev/null 2>&1") != 0) {
    std::printf("http_core_bench: nginx is not installed (Debian nginx-light); skipped\n");
    return 0;
  }
  char dir_template[] = "/tmp/hotrow-http-core-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  // nginx's worker drops root for `nobody`: it must be able to read the file it serves.
  std::filesystem::permissions(
      dir, std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
      std::filesystem::perm_options::add);
  std::filesystem::create_directories(dir + "/www");
  std::filesystem::create_directories(dir + "/tmp");

  auto kafka = ingest::EmbeddedKafka::Start("events", 8);
  if (!kafka.ok()) Die(kafka.status().ToString());
  const std::string bootstrap = (*kafka)->bootstrap();
  ProduceBacklog(bootstrap, flags.backlog, flags.devices);
  const std::string config = WriteServeConfig(dir, bootstrap, "http-core");
  {
    // One I/O thread against one nginx worker (the http section is the file's last).
    std::ofstream more(config, std::ios::app);
    more << "  io_threads: 1\n";
  }
  ServeProcess serve(ServeBinary(), config, dir + "/serve.log", /*cpu=*/0);
  const int port = serve.AwaitPort();
  if (!AwaitIngested(port, flags.backlog, std::chrono::minutes(5))) Die("serve did not store all");
  PinProcess(serve.pid(), 0);

  // Every id's latest-10 as the store answers it: what each answer must hold.
  std::map<std::string, std::string> expected;
  std::string one_answer;
  for (int d = 0; d < flags.devices && expected.size() < 100; ++d) {
    char id[32];
    std::snprintf(id, sizeof(id), "dev-%06d", d);
    const std::optional<std::string> body =
        GetBody(port, std::string("/v1/events/") + id + "/latest?n=10");
    const std::optional<std::string> events = body ? EventsText(*body) : std::nullopt;
    if (!events || *events == "\"events\":[]") continue;
    expected[id] = *events;
    if (one_answer.empty()) one_answer = *body;
  }
  if (expected.empty()) Die("no id answered");
  const std::string latest_script = WriteExactLatestScript(dir, expected);
  const std::string healthz_body = "{\"status\":\"ok\"}\n";
  {
    std::ofstream file(dir + "/www/latest.json");
    file << one_answer;
  }
  const int nginx_port = FreePort();
  Nginx nginx(dir, nginx_port, "{\"status\":\"ok\"}\\n", 0);
  const std::string file_script = WriteFixedScript(dir, "file", "/latest.json");
  const std::string healthz_script = WriteFixedScript(dir, "healthz", "/healthz");
  if (!WaitFor([&] { return nginx.pids().size() >= 2; }, std::chrono::seconds(10))) {
    Die("nginx did not start: " + ReadFile(dir + "/nginx.err"));
  }

  struct Load {
    const char* name;
    std::string script;
    int port;
    bool hotrow;
    std::vector<double> us_per_answer, answers_per_s;
  };
  std::vector<Load> loads = {
      {"hotrow latest-10 (cache)", latest_script, port, true, {}, {}},
      {"nginx file, same size", file_script, nginx_port, false, {}, {}},
      {"hotrow /healthz", healthz_script, port, true, {}, {}},
      {"nginx return 200, same bytes", healthz_script, nginx_port, false, {}, {}}};
  for (int round = 0; round < flags.rounds; ++round) {
    for (Load& load : loads) {
      const std::vector<pid_t> pids = load.hotrow ? std::vector<pid_t>{serve.pid()} : nginx.pids();
      const WrkCounts c = RunWrk(load.script, {load.port}, flags.connections, flags.seconds,
                                 /*cpu=*/1, pids);
      if (c.bad > 0 || c.inexact > 0) {
        Die(std::string(load.name) + ": " + std::to_string(c.bad) + " bad and " +
            std::to_string(c.inexact) + " inexact answers");
      }
      load.us_per_answer.push_back(c.exact > 0 ? c.cpu_seconds * 1e6 / c.exact : 0);
      load.answers_per_s.push_back(c.ExactPerSecond());
      std::printf("round %d %-30s %8.2f us CPU/answer %10.0f answers/s\n", round, load.name,
                  load.us_per_answer.back(), load.answers_per_s.back());
    }
  }
  Report report("http_core_bench", "HTTP core against nginx: server CPU per answer",
                "hotrow serve (http.io_threads 1) and one nginx worker each pinned to CPU 0, wrk "
                "(1 thread, " +
                    std::to_string(flags.connections) + " keep-alive connections, " +
                    std::to_string(flags.seconds) + " s) pinned to CPU 1; " +
                    std::to_string(flags.rounds) +
                    " alternated rounds, medians; server CPU from /proc; latest-10 answers " +
                    std::to_string(one_answer.size()) + " bytes, each checked.");
  report.Columns({"load", "server CPU per answer (us)", "answers/s"});
  for (const Load& load : loads) {
    report.Row(
        {load.name, Fixed(Median(load.us_per_answer), 2), Fixed(Median(load.answers_per_s), 0)});
  }
  Record("http_core.latest_us", Median(loads[0].us_per_answer));
  Record("http_core.nginx_file_us", Median(loads[1].us_per_answer));
  Record("http_core.healthz_us", Median(loads[2].us_per_answer));
  Record("http_core.nginx_return_us", Median(loads[3].us_per_answer));
  PrintRatio("server CPU per cached latest-10 / nginx's per file of the same size (target <= 1.4)",
             "http_core.latest_us", "http_core.nginx_file_us");
  PrintRatio("server CPU per /healthz / nginx's return 200 of the same bytes (target <= 1.3)",
             "http_core.healthz_us", "http_core.nginx_return_us");
  report.Write();
  serve.Stop();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) { return hotrow::bench::Main(argc, argv); }
