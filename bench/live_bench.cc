// Live streams (CONTRACT.md "Live"): what open streams cost the rest of the service.
//
// In one process: a RocksDB store, the query engine, the streams' hub and the HTTP server on
// loopback, as `hotrow serve` wires them; clients are raw sockets drained by one thread (what a
// client's code costs is not the question). Figures, each with its baseline in the same run, in
// alternated rounds (A B A B) with medians:
//   1. ingest at its maximum rate (a backlog of batches written back to back by one writer, the
//      call ingestion makes) with 100 per-id streams on ids that receive events, 100 on ids that
//      receive none and one stalled client / with none (target >= 0.95);
//   2. delivery p99, from the writer's return to the client's read, at 50 % of that maximum rate /
//      latest-10 p99 over HTTP in the same run (target <= 2);
//   3. latest-10 p99 over HTTP with 1000 open streams / with none (target <= 1.2);
//   4. RSS per open stream.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "bench/bench_support.h"
#include "http/metrics.h"
#include "http/server.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "live/stream_hub.h"
#include "query/query_engine.h"
#include "store/event_store.h"

namespace hotrow::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A raw client socket that asks `target` and is read (or not) by the drain thread.
int OpenStream(int port, const std::string& target, int receive_buffer = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: bench\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads and drops whatever arrives on its sockets until stopped.
class Drain {
 public:
  explicit Drain(std::vector<int> fds) : fds_(std::move(fds)) {
    thread_ = std::thread([this] {
      std::vector<pollfd> p;
      for (int fd : fds_) p.push_back({fd, POLLIN, 0});
      char buf[65536];
      while (!stop_.load()) {
        if (poll(p.data(), p.size(), 50) <= 0) continue;
        for (pollfd& one : p) {
          if (one.revents & POLLIN) {
            ssize_t n = recv(one.fd, buf, sizeof(buf), 0);
            if (n > 0) bytes_ += static_cast<uint64_t>(n);
          }
        }
      }
    });
  }
  ~Drain() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) close(fd);
  }

 private:
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> bytes_{0};
  std::thread thread_;
};

// One service in this process: store, engine, hub, HTTP.
struct Service {
  explicit Service(size_t max_streams = 2000) {
    store::StoreOptions options;
    options.path = dir.path() + "/store";
    options.salts = 16;
    Result<std::unique_ptr<store::EventStore>> opened = store::EventStore::Open(options);
    if (!opened.ok()) {
      std::fprintf(stderr, "store: %s\n", opened.status().ToString().c_str());
      std::exit(1);
    }
    store = std::move(opened).value();
    engine = std::make_unique<query::QueryEngine>(store.get(), query::QueryOptions{});
    live::StreamHubOptions hub_options;
    hub_options.max_streams = max_streams;
    hub = std::make_unique<live::StreamHub>(store.get(), engine.get(), hub_options);
    store->AddWriteObserver(hub.get());
    http::HttpServerOptions http_options;
    http_options.listen = "127.0.0.1:0";
    http::HttpBackend backend{store.get(), engine.get(), nullptr, &metrics};
    backend.hub = hub.get();
    Result<std::unique_ptr<http::HttpServer>> started =
        http::HttpServer::Start(http_options, backend);
    if (!started.ok()) std::exit(1);
    server = std::move(started).value();
  }
  ~Service() {
    server->Stop();
    server.reset();
    store->RemoveWriteObserver(hub.get());
    hub.reset();
  }
  bool WaitOpen(uint64_t n) {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(60);
    while (hub->Stats().open != n) {
      if (SteadyClock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a bench polls; tests await
    }
    return true;
  }

  ScratchDir dir;
  http::Metrics metrics;
  std::unique_ptr<store::EventStore> store;
  std::unique_ptr<query::QueryEngine> engine;
  std::unique_ptr<live::StreamHub> hub;
  std::unique_ptr<http::HttpServer> server;
};

std::vector<GeneratedEvent> Events(size_t n, int64_t now_ms) {
  DataSpec spec;
  spec.events = n;
  spec.ids = 1000;
  spec.hot_events = n / 50;
  spec.now_ms = now_ms;
  spec.span_ms = 60'000;
  return GenerateEvents(spec);
}

// Figure 1: seconds to write `events` back to back into a fresh service, with or without streams.
double IngestSeconds(bool streams, size_t events) {
  Service s;
  std::vector<int> fds;
  int stalled = -1;
  if (streams) {
    for (int i = 1; i <= 100; ++i) {
      char id[32];
      std::snprintf(id, sizeof(id), "dev-%06d", i);
      fds.push_back(OpenStream(s.server->port(), "/v1/events/" + std::string(id) + "/stream"));
    }
    for (int i = 0; i < 100; ++i) {
      fds.push_back(
          OpenStream(s.server->port(), "/v1/events/silent-" + std::to_string(i) + "/stream"));
    }
    stalled = OpenStream(s.server->port(), "/v1/events/dev-hot/stream", 4096);
    if (!s.WaitOpen(201)) std::fprintf(stderr, "streams did not open\n");
  }
  auto drain = std::make_unique<Drain>(fds);
  const std::vector<GeneratedEvent> generated = Events(events, WallMs());
  const std::vector<store::WriteBatchInput> batches = MakeBatches(s.store.get(), generated, 1000);
  const auto start = SteadyClock::now();
  for (const store::WriteBatchInput& batch : batches) {
    store::WriteOutcome outcome;
    Status st = s.store->Write(batch, &outcome);
    if (!st.ok()) std::fprintf(stderr, "write: %s\n", st.ToString().c_str());
  }
  const double seconds = Since(start);
  if (streams && s.hub->Stats().catch_ups < 1) {
    std::fprintf(stderr, "the stalled client's buffer never overflowed (no catch-up)\n");
  }
  drain.reset();
  if (stalled >= 0) close(stalled);
  return seconds;
}

// latest-10 over one keep-alive connection, `n` requests on random ids; latencies in µs.
std::vector<double> Latest10(int port, int n, uint64_t seed) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  std::mt19937_64 rng(seed);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    char path[64];
    std::snprintf(path, sizeof(path), "/v1/events/dev-%06d/latest?n=10",
                  static_cast<int>(rng() % 1000) + 1);
    const auto t = SteadyClock::now();
    auto res = client.Get(path);
    if (!res || res->status != 200) continue;
    out.push_back(Since(t) * 1e6);
  }
  return out;
}

double Median(std::vector<double> v) { return Percentile(&v, 50); }

}  // namespace
}  // namespace hotrow::bench

int main() {
  using namespace hotrow;
  using namespace hotrow::bench;
  Report report("live_bench", "Live streams",
                "In one process (store, engine, hub and HTTP server on loopback, as `hotrow serve` "
                "wires them; clients are raw sockets drained by one thread). Alternated rounds "
                "(A B A B), medians.");
  report.Columns({"figure", "with", "baseline", "ratio", "target"});

  // 1. Ingest at its maximum rate with 201 streams (one stalled) / with none.
  // 1M events: the stalled client's id (dev-hot, 2 % of them, ~5 MB of messages) overflows the
  // socket buffers and then its 1000-event buffer, so it catches up from the store once (a read
  // on the hub's catch-up thread, not the writer's) and is cut at the write timeout.
  const size_t kEvents = 1'000'000;
  std::vector<double> ratios, with_rates, without_rates;
  for (int round = 0; round < 4; ++round) {
    // The order alternates too (A B, then B A): the second of a pair ran faster in the first runs.
    double without = 0, with = 0;
    if (round % 2 == 0) {
      without = IngestSeconds(false, kEvents);
      with = IngestSeconds(true, kEvents);
    } else {
      with = IngestSeconds(true, kEvents);
      without = IngestSeconds(false, kEvents);
    }
    without_rates.push_back(kEvents / without);
    with_rates.push_back(kEvents / with);
    ratios.push_back(without / with);
    std::printf("round %d: ingest %.0f/s with streams, %.0f/s without\n", round, kEvents / with,
                kEvents / without);
  }
  const double ingest_ratio = Median(ratios);
  const double max_rate = Median(without_rates);
  std::printf("RATIO ingest with 100 hot + 100 idle per-id streams + 1 stalled / none: %.3f\n",
              ingest_ratio);
  report.Row({"ingest rate (events/s), 100 hot + 100 idle streams + 1 stalled / none",
              Rate(Median(with_rates)), Rate(max_rate), Fixed(ingest_ratio, 3), ">= 0.95"});

  // 2, 3, 4 on one service holding 200k events.
  Service s;
  {
    const std::vector<GeneratedEvent> generated = Events(200'000, WallMs());
    for (const auto& batch : MakeBatches(s.store.get(), generated, 1000)) {
      store::WriteOutcome outcome;
      (void)s.store->Write(batch, &outcome);
    }
  }
  const int port = s.server->port();

  // 3 and 4: latest-10 p99 with 1000 open streams / none; RSS per stream.
  std::vector<double> p99_ratio;
  double rss_per_stream = 0;  // the first round's: later rounds reuse the threads' pages
  double p99_with = 0, p99_without = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<double> none = Latest10(port, 3000, 1 + round);
    const uint64_t rss_before = http::ResidentBytes();
    std::vector<int> fds;
    for (int i = 0; i < 1000; ++i) {
      fds.push_back(OpenStream(port, "/v1/events/idle-" + std::to_string(i) + "/stream"));
    }
    if (!s.WaitOpen(1000)) std::fprintf(stderr, "1000 streams did not open\n");
    auto drain = std::make_unique<Drain>(fds);
    const uint64_t rss_after = http::ResidentBytes();
    std::vector<double> open = Latest10(port, 3000, 11 + round);
    const double a = Percentile(&none, 99), b = Percentile(&open, 99);
    p99_ratio.push_back(b / a);
    p99_with = b;
    p99_without = a;
    if (round == 0) {
      rss_per_stream = (static_cast<double>(rss_after) - static_cast<double>(rss_before)) / 1000;
    }
    std::printf("round %d: latest-10 p99 %.0f us with 1000 streams, %.0f us without; RSS +%.0f KiB "
                "per stream\n",
                round, b, a,
                (static_cast<double>(rss_after) - static_cast<double>(rss_before)) / 1000 / 1024);
    s.hub->CloseAll("bench round over");
    drain.reset();
    if (!s.WaitOpen(0)) std::fprintf(stderr, "streams did not close\n");
  }
  const double open_ratio = Median(p99_ratio);
  std::printf("RATIO latest-10 p99 with 1000 open streams / none: %.3f\n", open_ratio);
  report.Row({"latest-10 p99 over HTTP (µs), 1000 open streams / none", Fixed(p99_with, 0),
              Fixed(p99_without, 0), Fixed(open_ratio, 3), "<= 1.2"});
  report.Row({"RSS per open stream (KiB, thread stack touched + subscription)",
              Fixed(rss_per_stream / 1024, 1), "", "", ""});

  // 2. Delivery p99 at 50 % of the maximum rate / latest-10 p99 of the same run.
  {
    std::atomic<bool> stop{false};
    std::mutex mu;
    std::map<int64_t, SteadyClock::time_point> returned;  // probe offset -> the writer's return
    std::map<int64_t, SteadyClock::time_point> received;  // probe offset -> the client's read
    const int probe_fd = OpenStream(port, "/v1/events/probe/stream");
    if (!s.WaitOpen(1)) std::fprintf(stderr, "probe stream did not open\n");
    std::thread reader([&] {
      std::string text;
      char buf[65536];
      pollfd p{probe_fd, POLLIN, 0};
      while (!stop.load()) {
        if (poll(&p, 1, 50) <= 0) continue;
        ssize_t n = recv(probe_fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        const auto now = SteadyClock::now();
        text.append(buf, static_cast<size_t>(n));
        size_t end;
        while ((end = text.find("\n\n")) != std::string::npos) {  // whole messages only
          const std::string message = text.substr(0, end);
          text.erase(0, end + 2);
          const size_t at = message.find("\"offset\":");
          if (at == std::string::npos) continue;
          const int64_t offset = std::strtoll(message.c_str() + at + 9, nullptr, 10);
          std::lock_guard lock(mu);
          received.emplace(offset, now);
        }
      }
    });
    // Background load: batches of 1000 at half the maximum rate, and one probe event per batch.
    const double batch_interval = 1000.0 / (max_rate * 0.5);
    const std::vector<GeneratedEvent> load = Events(100'000, WallMs());
    std::vector<store::WriteBatchInput> batches = MakeBatches(s.store.get(), load, 1000);
    int64_t probe_offset = 0;
    std::vector<double> latest_p99s;
    std::thread queries([&] {
      while (!stop.load()) {
        std::vector<double> l = Latest10(port, 500, 99);
        latest_p99s.push_back(Percentile(&l, 99));
      }
    });
    auto next = SteadyClock::now();
    for (store::WriteBatchInput& batch : batches) {
      std::this_thread::sleep_until(next);
      next += std::chrono::duration_cast<SteadyClock::duration>(
          std::chrono::duration<double>(batch_interval));
      // Offsets past those of the fill, so that the store takes them.
      for (auto& [tp, off] : batch.next_offsets) off += 1'000'000;
      for (store::Row& row : batch.rows) {
        keying::RowKey key;
        keying::DecodeRowKey(row.key, &key);
        key.offset += 1'000'000;
        row.key = keying::EncodeRowKey(key);
      }
      store::WriteOutcome outcome;
      (void)s.store->Write(batch, &outcome);
      store::WriteBatchInput probe;
      const GeneratedEvent e{"probe", WallMs(), 999, probe_offset, "{\"probe\":1}"};
      probe = MakeBatches(s.store.get(), {e}, 1)[0];
      (void)s.store->Write(probe, &outcome);
      {
        std::lock_guard lock(mu);
        returned[probe_offset] = SteadyClock::now();
      }
      ++probe_offset;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop = true;
    reader.join();
    queries.join();
    close(probe_fd);
    // A probe can be read before its writer's clock is read after Write returned: 0 then.
    std::vector<double> d;
    {
      std::lock_guard lock(mu);
      for (const auto& [offset, at] : received) {
        auto it = returned.find(offset);
        if (it == returned.end()) continue;
        d.push_back(std::max(0.0, std::chrono::duration<double>(at - it->second).count() * 1e6));
      }
    }
    const double delivery_p99 = Percentile(&d, 99);
    const double latest_p99 = Median(latest_p99s);
    std::printf("delivery: %zu probes, p50 %.0f us, p99 %.0f us; latest-10 p99 %.0f us\n",
                d.size(), Percentile(&d, 50), delivery_p99, latest_p99);
    std::printf("RATIO delivery p99 at 50%% of max ingest / latest-10 p99: %.3f\n",
                delivery_p99 / latest_p99);
    report.Row({"delivery p99 (µs, writer's return to client's read) at 50 % of max ingest / "
                "latest-10 p99 (closed loop, same run)",
                Fixed(delivery_p99, 0), Fixed(latest_p99, 0), Fixed(delivery_p99 / latest_p99, 3),
                "<= 2"});
  }
  report.Note(
      "The writer is one thread writing batches of 1000 (ingest.writers = 1); the stalled "
      "client has a 4 KiB receive buffer and never reads; past http.stream_buffer (1000) "
      "events its stream catches up from the store once (the next waits until that one's "
      "events are taken) and the transport cuts it after the write timeout. latest-10 is "
      "measured closed-loop on one keep-alive connection, not open-loop: the delivery "
      "ratio compares like with like only roughly.");
  report.Write();
  return 0;
}
