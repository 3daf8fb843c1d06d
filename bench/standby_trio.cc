// Three `hotrow serve` of one group for cluster_bench's standby section (bench/standby_trio.h).

#include "bench/standby_trio.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace hotrow::bench {

using nlohmann::json;

// A port the kernel had free a moment ago (cluster.peers needs every address before any starts).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("cannot find a free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

CpuByKind SampleCpu(pid_t pid) {
  CpuByKind out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task, ec)) {
    std::string name = ReadFile(entry.path().string() + "/comm");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    const std::string stat = ReadFile(entry.path().string() + "/stat");
    const size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(close_paren + 2));
    std::string field;
    double utime = 0, stime = 0;
    // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::atof(field.c_str());
      if (i == 15) stime = std::atof(field.c_str());
    }
    const double seconds = (utime + stime) / tick;
    if (name == "hotrow-poll") {
      out.poll += seconds;
    } else if (name.rfind("rdk:", 0) == 0) {
      out.kafka += seconds;
    } else if (name.rfind("hotrow-write", 0) == 0) {
      out.write += seconds;
    } else if (name.rfind("rocksdb:", 0) == 0) {
      out.rocksdb += seconds;
    } else {
      out.other += seconds;
    }
  }
  return out;
}

Trio LaunchTrio(const std::string& binary, const std::string& dir, const std::string& bootstrap,
                const std::string& name, int replicas) {
  Trio t;
  t.replicas = replicas;
  std::string peers;
  for (int i = 0; i < kInstances; ++i) {
    t.ports.push_back(FreeLoopbackPort());
    peers += (i == 0 ? "" : ", ") + std::string("127.0.0.1:") + std::to_string(t.ports[i]);
  }
  for (int i = 0; i < kInstances; ++i) {
    const std::string base = dir + "/" + name + "-" + std::to_string(i);
    std::ofstream config(base + ".yaml");
    // A window of two hours: the backlog, stamped when produced, stays in it for the whole run.
    config << "kafka:\n  brokers: " << bootstrap << "\n  topics: [events]\n  group_id: " << name
           << "\nstore:\n  path: " << base << "-store\n  ttl: 2h\n  bucket: 5m\n"
           << "http:\n  listen: 127.0.0.1:" << t.ports[i] << "\n"
           << "cluster:\n  peers: [" << peers << "]\n  standby_replicas: " << replicas << "\n";
    config.close();
    if (!config) Die("cannot write " + base + ".yaml");
    t.configs.push_back(base + ".yaml");
    t.logs.push_back(base + ".log");
  }
  t.serves.resize(kInstances);
  for (int i = 0; i < kInstances; ++i) t.Start(binary, static_cast<size_t>(i));
  return t;
}

// What GET /v1/cluster on one of `alive` says of the group: whether every one of `partitions`
// is served by an owner among `alive` at the high watermark (lag 0 when `caught_up`), with at least
// `copies` serving holders each, and, when `must_own` >= 0, that instance owning some partition.
bool GroupServes(const Trio& t, const std::vector<int>& alive, int partitions, int copies,
                 bool caught_up, int must_own) {
  const std::optional<json> view = GetJson(t.ports[alive[0]], "/v1/cluster");
  if (!view || !view->value("complete", false)) return false;
  const json parts = view->value("by_partition", json::array());
  if (static_cast<int>(parts.size()) != partitions) return false;
  std::vector<std::string> alive_addresses;
  for (int i : alive) alive_addresses.push_back("127.0.0.1:" + std::to_string(t.ports[i]));
  const std::string wanted =
      must_own >= 0 ? "127.0.0.1:" + std::to_string(t.ports[must_own]) : std::string();
  bool wanted_owns = wanted.empty();
  for (const json& p : parts) {
    const json owner = p.value("owner", json());
    if (!owner.is_object() || !owner.value("serving", false)) return false;
    const std::string address = owner.value("address", "");
    if (std::find(alive_addresses.begin(), alive_addresses.end(), address) ==
        alive_addresses.end()) {
      return false;
    }
    wanted_owns = wanted_owns || address == wanted;
    if (p.value("serving_copies", 0) < copies) return false;
    if (caught_up) {
      if (owner.value("lag", int64_t{-1}) != 0) return false;
      for (const json& s : p.value("standbys", json::array())) {
        if (s.value("serving", false) && s.value("lag", int64_t{-1}) != 0) return false;
      }
    }
  }
  return wanted_owns;
}

// Rows in an instance's store (its buckets' events: owned and followed partitions alike).
int64_t StoredRows(int port) {
  const std::optional<json> stats = GetJson(port, "/v1/stats");
  if (!stats) return -1;
  int64_t rows = 0;
  for (const json& b : stats->value("buckets", json::array()))
    rows += b.value("events", int64_t{0});
  return rows;
}

// Dies, with the logs, when a member of `alive` has exited on its own.
void CheckAlive(Trio& t, const std::vector<int>& alive) {
  for (int i : alive) {
    if (!t.serves[i]->Running()) Die("instance " + std::to_string(i) + " died\n" + t.Logs());
  }
}

}  // namespace hotrow::bench
