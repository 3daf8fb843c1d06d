#pragma once

// Three `hotrow serve` of one consumer group with `cluster.standby_replicas`, as child processes,
// for cluster_bench's standby section (bench/cluster_standby.h), and what the bench reads of them:
// their threads' CPU by kind, the group's view per partition (GET /v1/cluster "by_partition"), the
// rows their stores hold.
//
// Thread-safety: one Trio from its owning thread; the free functions from any thread.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/serve_process.h"

namespace hotrow::bench {

constexpr int kInstances = 3;

// A port the kernel had free a moment ago (cluster.peers needs every address before any starts).
int FreeLoopbackPort();

// CPU seconds of a process's threads by kind, from /proc/PID/task/*/{comm,stat}.
struct CpuByKind {
  double poll = 0;     // hotrow-poll: the consumers' pollers (fetch hand-off, parse, batching)
  double kafka = 0;    // rdk:*: librdkafka's broker and main threads (fetch, decompress)
  double write = 0;    // hotrow-write*: the store's writers (WriteBatch, index, offsets)
  double rocksdb = 0;  // rocksdb:*: flushes and compactions
  double other = 0;    // HTTP, freshness, monitor, ...
  double total() const { return poll + kafka + write + rocksdb + other; }
  void Add(const CpuByKind& o) {
    poll += o.poll;
    kafka += o.kafka;
    write += o.write;
    rocksdb += o.rocksdb;
    other += o.other;
  }
};

// CPU seconds of each thread of process `pid` so far, by kind (/proc/PID/task/*/{comm,stat}).
CpuByKind SampleCpu(pid_t pid);

// Three instances in one group with cluster.standby_replicas `replicas`.
struct Trio {
  int replicas = 0;
  std::vector<int> ports;
  std::vector<std::string> configs, logs;
  std::vector<std::unique_ptr<ServeProcess>> serves;

  std::string Logs() const {
    std::string out;
    for (size_t i = 0; i < logs.size(); ++i) {
      const std::string log = ReadFile(logs[i]);
      out += "--- instance " + std::to_string(i) + " (last 3000 bytes)\n" +
             log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
    }
    return out;
  }
  void Start(const std::string& binary, size_t i) {
    serves[i] = std::make_unique<ServeProcess>(binary, configs[i], logs[i]);
  }
  void StopAll() {
    for (auto& serve : serves) {
      if (serve) serve->Stop();
    }
  }
};

// Writes the configs of a trio in group `name` (stores under `dir`, the topic "events" at
// `bootstrap`, a window of two hours) and starts it.
Trio LaunchTrio(const std::string& binary, const std::string& dir, const std::string& bootstrap,
                const std::string& name, int replicas);

// What GET /v1/cluster on one of `alive` says of the group: whether every one of `partitions`
// is served by an owner among `alive` (at the high watermark, lag 0, when `caught_up`, standbys
// too), with at least `copies` serving holders each, and, when `must_own` >= 0, that instance
// owning some partition.
bool GroupServes(const Trio& t, const std::vector<int>& alive, int partitions, int copies,
                 bool caught_up, int must_own = -1);

// Rows in an instance's store (its buckets' events: owned and followed partitions alike); -1 when
// it does not answer.
int64_t StoredRows(int port);

// Dies, with the logs, when a member of `alive` has exited on its own.
void CheckAlive(Trio& t, const std::vector<int>& alive);

}  // namespace hotrow::bench
