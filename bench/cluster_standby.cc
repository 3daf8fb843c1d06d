// cluster_bench's standby section (bench/cluster_standby.h). Three `hotrow serve` in one group over
// the embedded broker (16 partitions), a window of `records` events produced first:
//
//  1. Ingest cost: the group built from the same backlog with `cluster.standby_replicas: 1` and
//     with 0, alternating (1, 0, 1, 0 ...), fresh groups and stores each time, each timed from
//     launch until every partition is served by its owner at the high watermark (and, with
//     standbys, by every standby too). Per instance: rows stored, CPU seconds (/proc/PID/stat), and
//     the CPU by thread kind (/proc/PID/task: the pollers, which fetch and parse, librdkafka's
//     threads, the writers, RocksDB's flushes and compactions, the rest).
//  2. kill -9, with standbys 0 (the last timed group of 0) and 1 (a group built again): a producer
//     that never stops (`live_rate`/s), one client asking the two survivors in turn (latest-10 of
//     random ids, and ranges over the backlog of checked ids compared with the answers read
//     before), from just before the kill until `after_settled_s` after the survivors settled
//     (every partition served by a survivor that owns it). Counted: every answer, the incomplete
//     ones, the inexact ones, the longest span from an incomplete answer to the next complete one.
//     Then the killed member restarts: the time until the group is back to full redundancy
//     (every partition served by its owner and by R standbys, the restarted one owning its share).

#include "bench/cluster_standby.h"

#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/peer_support.h"
#include "bench/serve_process.h"
#include "bench/standby_trio.h"
#include "common/status.h"
#include "ingest/embedded_kafka.h"
#include "ingest/synthetic_producer.h"

namespace hotrow::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;
using nlohmann::json;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Build {
  double launch_to_built_s = 0;
  std::vector<int64_t> rows;   // per instance
  std::vector<CpuByKind> cpu;  // per instance, its whole life up to built
  int64_t total_rows() const {
    int64_t sum = 0;
    for (int64_t r : rows) sum += r;
    return sum;
  }
  CpuByKind total_cpu() const {
    CpuByKind sum;
    for (const CpuByKind& c : cpu) sum.Add(c);
    return sum;
  }
};

// Members that died on their own during the builds (their log's last line each), for the report.
std::vector<std::string> g_crashes;

// Launches a trio and waits until it holds the whole backlog (every copy at the high watermark).
// A member that dies meanwhile (see g_crashes) makes the round start again with a fresh group and
// fresh stores, at most twice.
Build BuildTrio(const std::string& binary, const std::string& dir, const std::string& bootstrap,
                const std::string& name, int replicas, const StandbyFlags& flags, Trio* out) {
  SteadyClock::time_point start;
  for (int attempt = 0;; ++attempt) {
    const std::string group = attempt == 0 ? name : name + "-again" + std::to_string(attempt);
    start = SteadyClock::now();
    *out = LaunchTrio(binary, dir, bootstrap, group, replicas);
    const std::vector<int> all = {0, 1, 2};
    int died = -1;
    const bool built = WaitFor(
        [&] {
          for (int i = 0; i < kInstances; ++i) {
            if (!out->serves[i]->Running()) died = i;
          }
          return died >= 0 || GroupServes(*out, all, flags.partitions, replicas + 1, true);
        },
        std::chrono::minutes(10), std::chrono::milliseconds(200));
    if (!built) Die(group + " did not hold the backlog within 10 minutes\n" + out->Logs());
    if (died < 0) break;
    std::string log = ReadFile(out->logs[died]);
    while (!log.empty() && log.back() == '\n') log.pop_back();
    const std::string last = log.substr(log.rfind('\n') + 1);
    g_crashes.push_back(group + " instance " + std::to_string(died) + ": " + last);
    std::printf("cluster_bench standby: %s instance %d died while building: %s\n", group.c_str(),
                died, last.c_str());
    out->StopAll();
    if (attempt == 2) Die("three attempts at " + name + " lost a member\n" + out->Logs());
  }
  Build b;
  b.launch_to_built_s = SecondsSince(start);
  for (int i = 0; i < kInstances; ++i) {
    b.cpu.push_back(SampleCpu(out->serves[i]->pid()));
    b.rows.push_back(StoredRows(out->ports[i]));
  }
  std::printf(
      "cluster_bench standby: %s (standby_replicas %d) held the backlog %.1f s after launch: rows "
      "%lld + %lld + %lld, CPU %.1f + %.1f + %.1f s\n",
      name.c_str(), replicas, b.launch_to_built_s, static_cast<long long>(b.rows[0]),
      static_cast<long long>(b.rows[1]), static_cast<long long>(b.rows[2]), b.cpu[0].total(),
      b.cpu[1].total(), b.cpu[2].total());
  std::fflush(stdout);
  return b;
}

struct KillFigures {
  uint64_t answers = 0, incomplete = 0, inexact = 0, failed = 0, from_standby = 0;
  std::string first_bad, last_bad;  // when, where and what of the first and last bad answers
  double longest_incomplete_s = 0;
  double settled_s = 0;  // kill to the survivors serving every partition as owners
  double asked_s = 0;    // kill to the last answer counted
  double back_s = 0;     // restart to full redundancy
};

// One client asking `alive` in turn until `stop`: see the file's comment.
class Asker {
 public:
  Asker(const Trio& t, std::vector<int> alive, int devices, std::vector<std::string> ids,
        std::vector<json> expected, int64_t t0_ms)
      : trio_(t),
        alive_(std::move(alive)),
        devices_(devices),
        ids_(std::move(ids)),
        expected_(std::move(expected)),
        t0_ms_(t0_ms) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Asker() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  // REQUIRES: Stop() was called.
  KillFigures figures() const { return f_; }
  // The kill happens now: bad answers are dated from it.
  void MarkKill() { killed_ns_.store(SteadyClock::now().time_since_epoch().count()); }

 private:
  void Run() {
    std::vector<std::unique_ptr<httplib::Client>> clients;
    for (int i : alive_) {
      clients.push_back(std::make_unique<httplib::Client>("127.0.0.1", trio_.ports[i]));
      clients.back()->set_keep_alive(true);
      clients.back()->set_connection_timeout(std::chrono::seconds(2));
      clients.back()->set_read_timeout(std::chrono::seconds(10));
    }
    std::mt19937_64 rng(17);
    bool bad = false;  // since bad_since, no answer was complete
    SteadyClock::time_point bad_since = SteadyClock::now();
    for (uint64_t turn = 0; !stop_.load(); ++turn) {
      httplib::Client& client = *clients[turn % clients.size()];
      const bool range = turn % 3 == 0;
      const size_t checked = static_cast<size_t>(turn / 3) % ids_.size();
      const std::string path =
          range ? "/v1/events/" + ids_[checked] + "?from=0&to=" + std::to_string(t0_ms_) +
                      "&limit=100000"
                : "/v1/events/" +
                      ingest::SyntheticEvents::DeviceId(static_cast<int>(rng() % devices_)) +
                      "/latest?n=10";
      const SteadyClock::time_point sent = SteadyClock::now();
      httplib::Result res = client.Get(path);
      ++f_.answers;
      bool good = false;
      if (!res || res->status != 200) {
        ++f_.failed;
      } else {
        const json j = json::parse(res->body, nullptr, false);
        if (!j.is_object() || !j.value("complete", false)) {
          ++f_.incomplete;
        } else {
          good = true;
          if (j.contains("from_standby")) ++f_.from_standby;
          if (range && j.value("events", json::array()) != expected_[checked]) ++f_.inexact;
        }
      }
      if (!good) {
        const int64_t killed = killed_ns_.load();
        const double after =
            killed == 0 ? -1
                        : std::chrono::duration<double>(
                              sent - SteadyClock::time_point(SteadyClock::duration(killed)))
                              .count();
        json head = res ? json::parse(res->body, nullptr, false) : json();
        if (head.is_object()) head.erase("events");
        const std::string what =
            Format("%.2f s after the kill, on port %d: ", after,
                   trio_.ports[alive_[turn % alive_.size()]]) +
            (res ? std::to_string(res->status) + " " + head.dump().substr(0, 300) : "no answer");
        if (f_.first_bad.empty()) f_.first_bad = what;
        f_.last_bad = what;
      }
      if (!good && !bad) {
        bad = true;
        bad_since = sent;
      }
      if (good && bad) {
        f_.longest_incomplete_s = std::max(f_.longest_incomplete_s, SecondsSince(bad_since));
        bad = false;
      }
    }
    if (bad) f_.longest_incomplete_s = std::max(f_.longest_incomplete_s, SecondsSince(bad_since));
  }

  const Trio& trio_;
  const std::vector<int> alive_;
  const int devices_;
  const std::vector<std::string> ids_;
  const std::vector<json> expected_;
  const int64_t t0_ms_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> killed_ns_{0};
  KillFigures f_;  // written by the thread, read after Stop
  std::thread thread_;
};

// kill -9 of instance 2 of a built trio under a live producer; see the file's comment.
KillFigures KillOne(const std::string& binary, const std::string& bootstrap, Trio& t,
                    const StandbyFlags& flags, uint64_t seed) {
  // The answers every later one must equal: ranges over [0, t0), which the backlog alone fills.
  const int64_t t0_ms = WallMs();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // later records are stamped after t0
  std::vector<std::string> ids;
  std::vector<json> expected;
  std::mt19937_64 pick(seed);
  for (int tries = 0; static_cast<int>(ids.size()) < flags.checked_ids; ++tries) {
    const std::string id =
        ingest::SyntheticEvents::DeviceId(static_cast<int>(pick() % flags.devices));
    const std::optional<json> a = GetJson(
        t.ports[0], "/v1/events/" + id + "?from=0&to=" + std::to_string(t0_ms) + "&limit=100000");
    if (!a || !a->value("complete", false)) Die("the range of " + id + " is not complete");
    if (a->value("events", json::array()).empty()) {
      if (tries > 100 * flags.checked_ids) Die("the backlog holds too few events per id");
      continue;  // an id the backlog never drew
    }
    ids.push_back(id);
    expected.push_back(a->at("events"));
  }
  auto producer =
      StartPacedProducer(bootstrap, static_cast<double>(flags.live_rate), flags.devices, seed);
  std::this_thread::sleep_for(kWarmup);
  const std::vector<int> survivors = {0, 1};
  if (!WaitFor(
          [&] {
            return GroupServes(t, {0, 1, 2}, flags.partitions, t.replicas + 1, false);
          },
          std::chrono::seconds(60), std::chrono::milliseconds(100))) {
    Die("the group does not serve with the live producer\n" + t.Logs());
  }
  KillFigures f;
  auto asker = std::make_unique<Asker>(t, survivors, flags.devices, ids, expected, t0_ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // answers from before the kill
  const SteadyClock::time_point killed = SteadyClock::now();
  asker->MarkKill();
  ::kill(t.serves[2]->pid(), SIGKILL);
  if (!WaitFor([&] { return !t.serves[2]->Running(); }, std::chrono::seconds(10))) {
    Die("the killed instance did not exit");
  }
  if (!WaitFor(
          [&] {
            CheckAlive(t, survivors);
            return GroupServes(t, survivors, flags.partitions, 1, false);
          },
          std::chrono::minutes(5), std::chrono::milliseconds(100))) {
    Die("the survivors did not settle within 5 minutes\n" + t.Logs());
  }
  f.settled_s = SecondsSince(killed);
  std::this_thread::sleep_for(std::chrono::seconds(flags.after_settled_s));
  asker->Stop();
  const KillFigures asked = asker->figures();
  asker.reset();
  f.answers = asked.answers;
  f.incomplete = asked.incomplete;
  f.inexact = asked.inexact;
  f.failed = asked.failed;
  f.from_standby = asked.from_standby;
  f.longest_incomplete_s = asked.longest_incomplete_s;
  f.first_bad = asked.first_bad;
  f.last_bad = asked.last_bad;
  f.asked_s = SecondsSince(killed);

  // The killed one returns on its own store.
  const SteadyClock::time_point restarted = SteadyClock::now();
  t.Start(binary, 2);
  // Without standbys, back means the restarted member serves a share again; with them, every
  // partition has its owner and R standbys serving (those the restarted member follows included).
  const int must_own = t.replicas == 0 ? 2 : -1;
  if (!WaitFor(
          [&] {
            CheckAlive(t, {0, 1, 2});
            return GroupServes(t, {0, 1, 2}, flags.partitions, t.replicas + 1, false, must_own);
          },
          std::chrono::minutes(5), std::chrono::milliseconds(100))) {
    Die("the group was not back to full redundancy within 5 minutes\n" + t.Logs());
  }
  f.back_s = SecondsSince(restarted);
  producer->Stop();
  if (Status s = producer->Wait(); !s.ok()) Die(s.ToString());
  std::printf(
      "cluster_bench standby: kill -9 with standby_replicas %d: %llu answers over %.1f s, %llu "
      "incomplete (longest span %.2f s), %llu inexact, %llu failed, %llu from a standby; settled "
      "%.1f s after the kill; back to full redundancy %.1f s after the restart\n",
      t.replicas, static_cast<unsigned long long>(f.answers), f.asked_s,
      static_cast<unsigned long long>(f.incomplete), f.longest_incomplete_s,
      static_cast<unsigned long long>(f.inexact), static_cast<unsigned long long>(f.failed),
      static_cast<unsigned long long>(f.from_standby), f.settled_s, f.back_s);
  if (!f.first_bad.empty()) {
    std::printf(
        "cluster_bench standby: first bad answer %s\ncluster_bench standby: last bad answer %s\n",
        f.first_bad.c_str(), f.last_bad.c_str());
  }
  std::fflush(stdout);
  return f;
}

double Median(std::vector<double> v) { return v.empty() ? 0 : Percentile(&v, 50); }

}  // namespace

StandbyFlags ParseStandbyFlags(int argc, char** argv) {
  StandbyFlags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--standby-records") flags.records = std::atoll(value);
    if (key == "--standby-partitions") flags.partitions = std::atoi(value);
    if (key == "--standby-devices") flags.devices = std::atoi(value);
    if (key == "--standby-rounds") flags.rounds = std::max(1, std::atoi(value));
    if (key == "--standby-rate") flags.live_rate = std::atoll(value);
    if (key == "--standby-after-s") flags.after_settled_s = std::atoi(value);
  }
  return flags;
}

void RunStandbySection(const std::string& binary, const StandbyFlags& flags) {
  const SteadyClock::time_point run_start = SteadyClock::now();
  auto kafka = ingest::EmbeddedKafka::Start("events", flags.partitions);
  if (!kafka.ok()) Die(kafka.status().ToString());
  const std::string bootstrap = (*kafka)->bootstrap();
  ScratchDir dir;
  const SteadyClock::time_point produce_start = SteadyClock::now();
  ProduceBacklog(bootstrap, flags.records, flags.devices);
  std::printf("cluster_bench standby: %lld records produced over %d partitions in %.1f s\n",
              static_cast<long long>(flags.records), flags.partitions, SecondsSince(produce_start));

  // 1. The same backlog built by a trio with one standby and by one without, alternating.
  std::vector<Build> with, without;
  Trio last_without;
  for (int r = 0; r < flags.rounds; ++r) {
    Trio t1, t0;
    with.push_back(
        BuildTrio(binary, dir.path(), bootstrap, "standby1-" + std::to_string(r), 1, flags, &t1));
    t1.StopAll();
    without.push_back(
        BuildTrio(binary, dir.path(), bootstrap, "standby0-" + std::to_string(r), 0, flags, &t0));
    if (r + 1 < flags.rounds) {
      t0.StopAll();
    } else {
      last_without = std::move(t0);
    }
  }
  // 2. kill -9 without standbys (the last group built), then with one (built again: the live
  // producer of the first kill added its records to the topic).
  const KillFigures kill0 = KillOne(binary, bootstrap, last_without, flags, 31);
  last_without.StopAll();
  Trio again;
  const Build rebuilt = BuildTrio(binary, dir.path(), bootstrap, "standby1-kill", 1, flags, &again);
  const KillFigures kill1 = KillOne(binary, bootstrap, again, flags, 37);
  again.StopAll();

  // Per instance (the mean of the three), median over the rounds.
  std::vector<double> rows1, rows0, cpu1, cpu0, built1, built0;
  CpuByKind kinds1, kinds0;
  for (const Build& b : with) {
    rows1.push_back(static_cast<double>(b.total_rows()) / kInstances);
    cpu1.push_back(b.total_cpu().total() / kInstances);
    built1.push_back(b.launch_to_built_s);
    kinds1.Add(b.total_cpu());
  }
  for (const Build& b : without) {
    rows0.push_back(static_cast<double>(b.total_rows()) / kInstances);
    cpu0.push_back(b.total_cpu().total() / kInstances);
    built0.push_back(b.launch_to_built_s);
    kinds0.Add(b.total_cpu());
  }
  const double records = static_cast<double>(flags.records);
  const double runs1 = static_cast<double>(with.size()),
               runs0 = static_cast<double>(without.size());
  // CPU microseconds per record of the backlog, over the group, by thread kind (mean of rounds).
  auto per_record = [&](double seconds, double runs) { return seconds / runs / records * 1e6; };
  Record("standby_rows_per_instance_1", Median(rows1));
  Record("standby_rows_per_instance_0", Median(rows0));
  Record("standby_cpu_s_per_instance_1", Median(cpu1));
  Record("standby_cpu_s_per_instance_0", Median(cpu0));
  Record("standby_build_s_1", Median(built1));
  Record("standby_build_s_0", Median(built0));
  Record("standby_incomplete_answers_1", static_cast<double>(kill1.incomplete));
  Record("standby_incomplete_answers_0", static_cast<double>(kill0.incomplete));
  PrintRatio("cluster standby: rows stored per instance, 1 standby / none",
             "standby_rows_per_instance_1", "standby_rows_per_instance_0");
  PrintRatio("cluster standby: ingest CPU s per instance, 1 standby / none",
             "standby_cpu_s_per_instance_1", "standby_cpu_s_per_instance_0");
  PrintRatio("cluster standby: launch to whole window (s), 1 standby / none", "standby_build_s_1",
             "standby_build_s_0");
  const double run_s = SecondsSince(run_start);
  std::printf("cluster_bench standby: run time %.0f s\n", run_s);

  std::string md =
      "### Standby replicas: kill -9 and the ingest cost (`bench/cluster_bench`, "
      "`--section standby`)\n\n";
  md += Format(
      "Three `hotrow serve` in one group over the embedded broker, %d partitions, a window of "
      "%lld events (%d ids) produced first. Ingest: the same backlog built by a fresh trio with "
      "`cluster.standby_replicas: 1` and with 0, %d alternating rounds (1, 0, 1, 0...), each timed "
      "from launch until every partition's owner and standbys serve at the high watermark; per "
      "instance the rows its store holds and its CPU seconds (/proc), medians over the rounds. "
      "kill -9 of one member with a producer that never stops (%lld records/s) and one client "
      "asking the two survivors in turn (latest-10 of random ids, and ranges over the backlog of "
      "%d ids compared with the answers read before the kill), from 0.5 s before the kill until "
      "%d s after the survivors serve every partition as owners; then the killed member restarts "
      "on its store.\n\n",
      flags.partitions, static_cast<long long>(flags.records), flags.devices, flags.rounds,
      static_cast<long long>(flags.live_rate), flags.checked_ids, flags.after_settled_s);
  md += "| what | standby_replicas: 0 | standby_replicas: 1 | 1 / 0 |\n|---|---|---|---|\n";
  auto row = [&md](const std::string& what, const std::string& a, const std::string& b,
                   const std::string& ratio) {
    md += "| " + what + " | " + a + " | " + b + " | " + ratio + " |\n";
  };
  row("kill -9: answers / incomplete / inexact / failed",
      Format("%llu / **%llu** / %llu / %llu", static_cast<unsigned long long>(kill0.answers),
             static_cast<unsigned long long>(kill0.incomplete),
             static_cast<unsigned long long>(kill0.inexact),
             static_cast<unsigned long long>(kill0.failed)),
      Format("%llu / **%llu** / %llu / %llu", static_cast<unsigned long long>(kill1.answers),
             static_cast<unsigned long long>(kill1.incomplete),
             static_cast<unsigned long long>(kill1.inexact),
             static_cast<unsigned long long>(kill1.failed)),
      "");
  row("kill -9: longest incomplete span (s)", Fixed(kill0.longest_incomplete_s, 2),
      Fixed(kill1.longest_incomplete_s, 2), "");
  row("kill -9: answers that took partitions from a standby", "-",
      std::to_string(kill1.from_standby), "");
  row("kill -9 to the survivors owning and serving every partition (s)", Fixed(kill0.settled_s, 1),
      Fixed(kill1.settled_s, 1), "");
  row("restart of the killed member to full redundancy (s)", Fixed(kill0.back_s, 1),
      Fixed(kill1.back_s, 1), "");
  row("rows stored per instance (median of rounds)", Fixed(Median(rows0), 0),
      Fixed(Median(rows1), 0), Fixed(Median(rows1) / Median(rows0), 2));
  row("CPU seconds per instance, launch to whole window", Fixed(Median(cpu0), 1),
      Fixed(Median(cpu1), 1), Fixed(Median(cpu1) / Median(cpu0), 2));
  row("launch to whole window (s)", Fixed(Median(built0), 1), Fixed(Median(built1), 1),
      Fixed(Median(built1) / Median(built0), 2));
  auto kind_row = [&](const std::string& what, double c0, double c1) {
    row("CPU us per backlog record, group: " + what, Fixed(per_record(c0, runs0), 2),
        Fixed(per_record(c1, runs1), 2), Fixed(c1 / runs1 / std::max(1e-9, c0 / runs0), 2));
  };
  kind_row("pollers (fetch hand-off, parse, batch)", kinds0.poll, kinds1.poll);
  kind_row("librdkafka threads (fetch, decompress)", kinds0.kafka, kinds1.kafka);
  kind_row("writers (WriteBatch: rows, index, offsets)", kinds0.write, kinds1.write);
  kind_row("RocksDB flushes and compactions", kinds0.rocksdb, kinds1.rocksdb);
  kind_row("other threads (HTTP, freshness, monitor)", kinds0.other, kinds1.other);
  kind_row("all", kinds0.total(), kinds1.total());
  md += Format(
      "\nThe group with standbys built for the kill held %lld rows in all (%.2f copies of the "
      "topic's records then). The machine has %u cores for the three instances, the broker, the "
      "producer and the client. Run time: %.0f s.\n",
      static_cast<long long>(rebuilt.total_rows()),
      static_cast<double>(rebuilt.total_rows()) / std::max(1.0, records),
      std::thread::hardware_concurrency(), run_s);
  if (!kill1.first_bad.empty()) {
    md += "\nWith standbys, the first incomplete answer: " + kill1.first_bad +
          "; the last: " + kill1.last_bad + "\n";
  }
  for (const std::string& crash : g_crashes) {
    md += "\nA member died on its own while a group was built, and the round was started again: " +
          crash + "\n";
  }
  if (!WriteOut("cluster_bench_standby.md", md)) Die("cannot write cluster_bench_standby.md");
}

}  // namespace hotrow::bench
