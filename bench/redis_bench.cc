// hotrow against the usual "hot window in Redis" design, fed the same 1M events: one sorted set
// per id (score = event time, member = partition:offset|payload so that equal payloads stay
// distinct), loaded by a pipelined hiredis client that trims each touched id to the last 10
// minutes once per batch. Ingest rate, latest-10 and 1-minute range latency at 1 and 8 client
// threads, Redis's PING round trip as the network floor, and the memory each needs for the window.
//
// hotrow's side is its in-process EventStore and QueryEngine (no HTTP), so its latencies carry no
// network hop while Redis's carry a loopback TCP round trip: the PING line shows how much of
// Redis's figure that hop is.
//
// A plain main(): each step runs once over a fixed set of queries; google-benchmark's repetition
// machinery would only repeat the minute of loading.

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/peer_support.h"
#include "common/logging.h"
#include "query/query_engine.h"

namespace hotrow::bench {
namespace {

constexpr size_t kBatchEvents = 5000;           // hotrow's ingest.batch_max_events default
constexpr int64_t kWindowMs = 10 * 60 * 1000;   // hotrow's store.ttl default
constexpr int64_t kRangeMs = 60 * 1000;         // range queries ask for one minute of one id
constexpr int64_t kRangeLimit = 1000;           // hotrow's default range limit
constexpr int kQueries = 20000;                 // per query kind and concurrency
constexpr const char* kRedisBinary = "/usr/bin/redis-server";

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;
struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Connection = std::unique_ptr<redisContext, ContextDeleter>;

// A redis-server child process on 127.0.0.1 at a free port, with no persistence. It is stopped
// (SIGTERM, then SIGKILL) when this object goes, and killed by the kernel if this process dies
// first (PR_SET_PDEATHSIG), so no run leaves a server behind.
class RedisServer {
 public:
  // Starts the server with its working directory and log in `dir`; nullptr (and a message) when
  // it did not come up on any of a few free ports.
  static std::unique_ptr<RedisServer> Start(const std::string& dir) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      const int port = FreePort();
      if (port <= 0) break;
      auto server = std::unique_ptr<RedisServer>(new RedisServer(port));
      if (server->Spawn(dir) && server->WaitReady()) return server;
      // Most likely another process took the port between our probe and the server's bind.
    }
    std::fprintf(stderr, "redis_bench: %s did not start (see %s/redis.log)\n", kRedisBinary, dir.c_str());
    return nullptr;
  }

  ~RedisServer() { Stop(); }

  // A new connection; nullptr when it fails.
  Connection Connect() const {
    Connection c(redisConnectWithTimeout("127.0.0.1", port_, timeval{2, 0}));
    if (c == nullptr || c->err != 0) return nullptr;
    return c;
  }

  int port() const { return port_; }

 private:
  explicit RedisServer(int port) : port_(port) {}

  // A port the kernel just handed out on loopback; the server binds it right after.
  static int FreePort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    close(fd);
    return port;
  }

  bool Spawn(const std::string& dir) {
    // Everything the child needs is built before fork: after it only async-signal-safe calls.
    const std::vector<std::string> args = {
        kRedisBinary, "--bind", "127.0.0.1", "--port", std::to_string(port_), "--save", "",
        "--appendonly", "no", "--daemonize", "no", "--dir", dir, "--logfile", dir + "/redis.log"};
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
      execv(kRedisBinary, argv.data());
      _exit(127);
    }
    return true;
  }

  // Until the server answers PING; false when it exits or 10 s pass.
  bool WaitReady() {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      if (Connection c = Connect()) {
        Reply r(static_cast<redisReply*>(redisCommand(c.get(), "PING")));
        if (r != nullptr && r->type == REDIS_REPLY_STATUS) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
  }

  const int port_;
  pid_t pid_ = -1;
};

// A field of INFO `section` ("used_memory" of "memory"), as Redis spells it; empty when absent.
std::string RedisInfo(redisContext* c, const std::string& section, const std::string& field) {
  Reply r(static_cast<redisReply*>(redisCommand(c, "INFO %s", section.c_str())));
  if (r == nullptr || r->type != REDIS_REPLY_STRING) return "";
  const std::string info(r->str, r->len);
  const std::string key = "\r\n" + field + ":";
  const size_t at = info.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return info.substr(begin, info.find("\r\n", begin) - begin);
}

uint64_t RedisMemory(redisContext* c, const std::string& field) {
  return std::strtoull(RedisInfo(c, "memory", field).c_str(), nullptr, 10);
}

// One pipelined round trip's worth of commands, already in the wire format.
struct RedisBatch {
  std::string wire;
  size_t commands = 0;
};

// Appends one command, its arguments binary-safe.
void AppendCommand(RedisBatch* batch, std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (auto a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  const int len = redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (len < 0) std::abort();
  batch->wire.append(cmd, static_cast<size_t>(len));
  redisFreeCommand(cmd);
  ++batch->commands;
}

// A score bound that excludes `score` itself ("(123"). Formatted rather than concatenated: g++ 12
// warns falsely (-Wrestrict) on "(" + std::to_string(...).
std::string Exclusive(int64_t score) { return Format("(%lld", static_cast<long long>(score)); }

// The events as Redis batches of kBatchEvents: a ZADD per event, then one ZREMRANGEBYSCORE per id
// the batch touched, removing what is older than the window by the batch's newest event time
// (the same event-time clock as hotrow's store.clock: stream). Formatted ahead of time, as
// hotrow's rows are encoded ahead of time, so that both load figures time only the store.
std::vector<RedisBatch> MakeRedisBatches(const std::vector<GeneratedEvent>& events) {
  std::vector<RedisBatch> batches;
  for (size_t i = 0; i < events.size(); i += kBatchEvents) {
    RedisBatch batch;
    std::set<std::string_view> touched;
    int64_t newest = 0;
    for (size_t j = i; j < std::min(events.size(), i + kBatchEvents); ++j) {
      const GeneratedEvent& e = events[j];
      const std::string member = std::to_string(e.partition) + ":" + std::to_string(e.offset) + "|" + e.payload;
      AppendCommand(&batch, {"ZADD", e.id, std::to_string(e.ts_ms), member});
      touched.insert(e.id);
      newest = std::max(newest, e.ts_ms);
    }
    const std::string cutoff = Exclusive(newest - kWindowMs);
    for (std::string_view id : touched) AppendCommand(&batch, {"ZREMRANGEBYSCORE", id, "-inf", cutoff});
    batches.push_back(std::move(batch));
  }
  return batches;
}

// Sends each batch in one write and reads all its replies before the next: one round trip per
// batch, as a client acknowledging its Kafka batch would. Returns false on any error reply.
bool LoadRedis(redisContext* c, const std::vector<RedisBatch>& batches) {
  for (const auto& batch : batches) {
    if (redisAppendFormattedCommand(c, batch.wire.data(), batch.wire.size()) != REDIS_OK) return false;
    for (size_t k = 0; k < batch.commands; ++k) {
      void* raw = nullptr;
      if (redisGetReply(c, &raw) != REDIS_OK) return false;
      Reply r(static_cast<redisReply*>(raw));
      if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
        std::fprintf(stderr, "redis_bench: %s\n", r != nullptr ? r->str : c->errstr);
        return false;
      }
    }
  }
  return true;
}

// The elements of an array reply; 0 for anything else.
uint64_t ArraySize(redisContext* c, std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (auto a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  Reply r(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())));
  return r != nullptr && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
}

// What both systems are asked: random ids (as latest_bench picks them) and, for ranges, a random
// minute inside the 9 minutes of data.
struct Queries {
  std::vector<std::string> ids;
  std::vector<int64_t> range_from_ms;
};

Queries MakeQueries(const DataSpec& spec) {
  Queries q;
  std::mt19937_64 rng(7);
  for (int i = 0; i < kQueries; ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "dev-%06zu", static_cast<size_t>(1 + rng() % spec.ids));
    q.ids.push_back(id);
    const int64_t first = spec.now_ms - spec.span_ms;
    q.range_from_ms.push_back(first + static_cast<int64_t>(rng() % static_cast<uint64_t>(spec.span_ms - kRangeMs)));
  }
  return q;
}

struct HotrowSide {
  ScratchDir dir;
  ManualClock clock{DataSpec().now_ms};
  store::StoreOptions options;
  std::unique_ptr<store::EventStore> store;
  std::unique_ptr<query::QueryEngine> engine;
};

// Loads hotrow as latest_bench does (16 salts, 1-minute buckets, 10-minute window) and records,
// under `name`, its ingest rate, its RSS growth and its disk; then reopens the store so that
// queries read table files, as latest_bench measures them.
std::unique_ptr<HotrowSide> LoadHotrow(const std::vector<GeneratedEvent>& events, keying::SaltBy by,
                                       const std::string& name) {
  auto h = std::make_unique<HotrowSide>();
  h->options.path = h->dir.path() + "/store";
  h->options.wall_clock = &h->clock;
  h->options.salts = 16;
  h->options.salt_by = by;
  h->store = std::move(store::EventStore::Open(h->options).value());
  {
    auto batches = MakeBatches(h->store.get(), events, kBatchEvents);
    const uint64_t rss_before = CurrentRssBytes();
    const auto start = Clock::now();
    for (const auto& batch : batches) {
      store::WriteOutcome outcome;
      if (!h->store->Write(batch, &outcome).ok() || outcome.stored != batch.rows.size()) std::abort();
    }
    Record(name + "_ingest_events_per_s", static_cast<double>(events.size()) / SecondsSince(start));
    Record(name + "_rss_growth_bytes", static_cast<double>(CurrentRssBytes() - rss_before));
  }
  h->store.reset();
  h->store = std::move(store::EventStore::Open(h->options).value());
  // The steady state: closed buckets compacted to one sorted run, as a running service has them.
  h->store->WaitForCompactions();
  Record(name + "_disk_bytes", static_cast<double>(h->store->Stats().disk_bytes));
  Record(name + "_memory_bytes", Recorded(name + "_rss_growth_bytes") + Recorded(name + "_disk_bytes"));
  h->engine = std::make_unique<query::QueryEngine>(h->store.get(), StorePathOptions());
  std::printf("%s: ingest %.0f events/s; RSS growth %s + disk %s\n", name.c_str(),
              Recorded(name + "_ingest_events_per_s"),
              Mib(static_cast<uint64_t>(Recorded(name + "_rss_growth_bytes"))).c_str(),
              Mib(static_cast<uint64_t>(Recorded(name + "_disk_bytes"))).c_str());
  return h;
}

// Records p50, p99, queries/s and events returned under `name`.
void RecordLatency(const std::string& name, const LatencyFigures& f) {
  Record(name + "_p50_us", f.p50_us);
  Record(name + "_p99_us", f.p99_us);
  Record(name + "_qps", f.queries_per_s);
  Record(name + "_results", static_cast<double>(f.results));
  std::printf("%-28s p50 %8.1f us  p99 %8.1f us  %9.0f queries/s  %8llu events\n", name.c_str(), f.p50_us,
              f.p99_us, f.queries_per_s, static_cast<unsigned long long>(f.results));
}

// hotrow's latest-10 and range at `threads` client threads, recorded as <name>_latest10_t<threads>...
void MeasureHotrow(HotrowSide* h, const std::string& name, const Queries& q, int threads) {
  const std::string suffix = "_t" + std::to_string(threads);
  RecordLatency(name + "_latest10" + suffix, MeasureLatency(threads, kQueries, [&](int, int i) -> uint64_t {
    auto events = h->engine->Latest(q.ids[static_cast<size_t>(i)], 10);
    return events.ok() ? events->size() : 0;
  }));
  RecordLatency(name + "_range" + suffix, MeasureLatency(threads, kQueries, [&](int, int i) -> uint64_t {
    const int64_t from = q.range_from_ms[static_cast<size_t>(i)];
    auto events = h->engine->Range(q.ids[static_cast<size_t>(i)], from, from + kRangeMs, kRangeLimit,
                                   query::Order::kDesc);
    return events.ok() ? events->size() : 0;
  }));
}

// The same queries against Redis, plus PING, each client thread on its own connection.
bool MeasureRedis(const RedisServer& redis, const Queries& q, int threads) {
  std::vector<Connection> conns;
  for (int t = 0; t < threads; ++t) {
    conns.push_back(redis.Connect());
    if (conns.back() == nullptr) return false;
  }
  const std::string suffix = "_t" + std::to_string(threads);
  auto conn = [&](int t) { return conns[static_cast<size_t>(t)].get(); };
  RecordLatency("redis_latest10" + suffix, MeasureLatency(threads, kQueries, [&](int t, int i) {
    return ArraySize(conn(t), {"ZREVRANGE", q.ids[static_cast<size_t>(i)], "0", "9"});
  }));
  // [from, to) newest first: "(to" excludes the upper bound, as hotrow's range does.
  RecordLatency("redis_range" + suffix, MeasureLatency(threads, kQueries, [&](int t, int i) {
    const int64_t from = q.range_from_ms[static_cast<size_t>(i)];
    return ArraySize(conn(t), {"ZREVRANGEBYSCORE", q.ids[static_cast<size_t>(i)], Exclusive(from + kRangeMs),
                               std::to_string(from), "LIMIT", "0", std::to_string(kRangeLimit)});
  }));
  RecordLatency("redis_ping" + suffix, MeasureLatency(threads, kQueries, [&](int t, int) -> uint64_t {
    Reply r(static_cast<redisReply*>(redisCommand(conn(t), "PING")));
    return r != nullptr && r->type == REDIS_REPLY_STATUS ? 0 : 1;
  }));
  return true;
}

// hotrow salted by record, by id, and Redis: the table's three columns, under these names.
constexpr const char* kRecord = "hotrow_record";
constexpr const char* kById = "hotrow_id";

// "p50 / p99" of one query kind for the three columns, and hotrow / Redis p50 ratios.
std::string LatencyRow(const std::string& what, const std::string& kind) {
  auto cell = [&](const std::string& name) {
    return Format("%.0f / %.0f us", Recorded(name + kind + "_p50_us"), Recorded(name + kind + "_p99_us"));
  };
  const double r = std::max(1e-9, Recorded("redis" + kind + "_p50_us"));
  return Format("| %s, p50 / p99 | %s | %s | %s | %.2f / %.2f |\n", what.c_str(),
                cell(kRecord).c_str(), cell(kById).c_str(), cell("redis").c_str(),
                Recorded(kRecord + kind + "_p50_us") / r, Recorded(kById + kind + "_p50_us") / r);
}

std::string Markdown(const std::string& redis_version, double seconds) {
  auto rate = [](const std::string& name) { return Recorded(name + "_ingest_events_per_s"); };
  auto mib = [](const std::string& figure) { return Mib(static_cast<uint64_t>(Recorded(figure))); };
  std::string md = "### hotrow vs Redis sorted sets (`bench/redis_bench`)\n\n";
  md += Format(
      "The same 1M events (5000 ids + 1 chatty, 100-byte payloads, 9 minutes of event time) go to hotrow's "
      "in-process store (16 salts, batches of %zu, by record and, in a second store, by id) and to Redis %s "
      "on loopback TCP (one sorted set per id, score = event time, member = `partition:offset|payload`; "
      "pipelined, one round trip per batch of %zu ZADDs plus one `ZREMRANGEBYSCORE id -inf (newest-10min` "
      "per touched id for the trim); then %d latest-10 (`ZREVRANGE id 0 9`) and %d one-minute range queries "
      "(`ZREVRANGEBYSCORE id (to from LIMIT 0 1000`) on random ids. **hotrow's latencies are in-process "
      "(no network, no HTTP); Redis's include a loopback TCP round trip**, shown by its PING line.\n\n",
      kBatchEvents, redis_version.c_str(), kBatchEvents, kQueries, kQueries);
  md += "| | hotrow `salt_by: record` | hotrow `salt_by: id` | Redis | hotrow / Redis (record / id) |\n"
        "|---|---|---|---|---|\n";
  const double ri = std::max(1.0, rate("redis"));
  md += Format("| ingest, events/s | %.0f k | %.0f k | %.0f k | %.2f / %.2f |\n", rate(kRecord) / 1e3,
               rate(kById) / 1e3, ri / 1e3, rate(kRecord) / ri, rate(kById) / ri);
  for (int t : {1, 8}) {
    const std::string kind = "_t" + std::to_string(t), th = Format(", %d client thread%s", t, t > 1 ? "s" : "");
    md += LatencyRow("latest-10" + th, "_latest10" + kind);
    md += LatencyRow("range 1 min" + th, "_range" + kind);
    auto qps = [&](const std::string& name) { return Recorded(name + "_latest10" + kind + "_qps"); };
    const double rq = std::max(1.0, qps("redis"));
    md += Format("| latest-10 throughput%s | %.1f k/s | %.1f k/s | %.1f k/s | %.2f / %.2f |\n", th.c_str(),
                 qps(kRecord) / 1e3, qps(kById) / 1e3, rq / 1e3, qps(kRecord) / rq, qps(kById) / rq);
    md += Format("| PING round trip%s, p50 / p99 | (in-process: none) | (none) | %.0f / %.0f us | |\n",
                 th.c_str(), Recorded("redis_ping" + kind + "_p50_us"), Recorded("redis_ping" + kind + "_p99_us"));
  }
  const std::string rec = kRecord;
  md += Format("| memory for the window | RSS growth %s + disk %s | | used_memory %s (RSS %s) | %.2f |\n",
               mib(rec + "_rss_growth_bytes").c_str(), mib(rec + "_disk_bytes").c_str(),
               mib("redis_used_memory_bytes").c_str(), mib("redis_used_memory_rss_bytes").c_str(),
               Recorded(rec + "_memory_bytes") / std::max(1.0, Recorded("redis_used_memory_bytes")));
  md += Format("\nEvery query kind returned the same number of events from all three: %s. "
               "Redis holds the window in RAM; hotrow's RSS growth is its memtables and block cache "
               "(bounded by `write_buffer_bytes` and `block_cache_bytes`, 64 MiB each by default), the rest "
               "lives in table files (page cache not counted). Run time: %.0f s.\n",
               Recorded("same_results") > 0 ? "yes" : "NO", seconds);
  return md;
}

// True when hotrow (both stores) and Redis returned the same number of events for every kind.
bool SameResults() {
  bool same = true;
  for (const char* kind : {"_latest10_t1", "_range_t1", "_latest10_t8", "_range_t8"}) {
    const double redis = Recorded(std::string("redis") + kind + "_results");
    same = same && Recorded(kRecord + std::string(kind) + "_results") == redis &&
           Recorded(kById + std::string(kind) + "_results") == redis;
  }
  return same;
}

int Run() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows up as it happens under bench/run's tee
  InitLogging("warn");                       // only the store's warnings
  const auto run_start = Clock::now();
  ScratchDir redis_dir;
  auto redis = RedisServer::Start(redis_dir.path());  // before any thread: it forks
  if (redis == nullptr) return 1;
  Connection loader = redis->Connect();
  if (loader == nullptr) return 1;
  const std::string version = RedisInfo(loader.get(), "server", "redis_version");
  std::printf("redis-server %s on 127.0.0.1:%d, no persistence\n", version.c_str(), redis->port());

  const DataSpec spec;
  const auto events = GenerateEvents(spec);
  const Queries queries = MakeQueries(spec);
  // hotrow first, one store at a time, so that its RSS growth is measured in a process that has
  // not yet allocated and freed anything big (freed memory reused would hide growth). Only the
  // first store's memory is reported for that reason.
  for (auto [by, name] : {std::pair{keying::SaltBy::kRecord, kRecord}, std::pair{keying::SaltBy::kId, kById}}) {
    auto hotrow = LoadHotrow(events, by, name);
    for (int threads : {1, 8}) MeasureHotrow(hotrow.get(), name, queries, threads);
  }
  {
    const uint64_t used_before = RedisMemory(loader.get(), "used_memory");
    const auto batches = MakeRedisBatches(events);
    const auto start = Clock::now();
    if (!LoadRedis(loader.get(), batches)) return 1;
    Record("redis_ingest_events_per_s", static_cast<double>(events.size()) / SecondsSince(start));
    Record("redis_used_memory_bytes", static_cast<double>(RedisMemory(loader.get(), "used_memory") - used_before));
    Record("redis_used_memory_rss_bytes", static_cast<double>(RedisMemory(loader.get(), "used_memory_rss")));
    std::printf("redis: ingest %.0f events/s; used_memory %s (used_memory_rss %s)\n",
                Recorded("redis_ingest_events_per_s"),
                Mib(static_cast<uint64_t>(Recorded("redis_used_memory_bytes"))).c_str(),
                Mib(static_cast<uint64_t>(Recorded("redis_used_memory_rss_bytes"))).c_str());
  }
  for (int threads : {1, 8}) {
    if (!MeasureRedis(*redis, queries, threads)) return 1;
  }
  Record("same_results", SameResults() ? 1 : 0);
  std::printf("same events returned by all: %s\n", SameResults() ? "yes" : "NO");

  for (const char* name : {kRecord, kById}) {
    const std::string n = name, by = n.substr(n.find('_') + 1);
    PrintRatio("ingest hotrow/redis (events/s), salt_by=" + by, n + "_ingest_events_per_s", "redis_ingest_events_per_s");
    for (const char* kind : {"_latest10_t1", "_latest10_t8", "_range_t1", "_range_t8"}) {
      PrintRatio(Format("%s p50 hotrow/redis, salt_by=%s", kind + 1 /* no leading _ */, by.c_str()), n + kind + "_p50_us",
                 std::string("redis") + kind + "_p50_us");
    }
  }
  PrintRatio("memory hotrow (RSS growth + disk) / redis used_memory", std::string(kRecord) + "_memory_bytes",
             "redis_used_memory_bytes");
  loader.reset();
  redis.reset();  // stops the server
  const double seconds = SecondsSince(run_start);
  std::printf("run time %.0f s\n", seconds);
  return WriteOut("redis_bench.md", Markdown(version, seconds)) ? 0 : 1;
}

}  // namespace
}  // namespace hotrow::bench

int main() { return hotrow::bench::Run(); }
