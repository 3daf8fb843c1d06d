#include "cluster/cluster.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>

#include "ingest/topic_partitions.h"
#include "query/thread_pool.h"

namespace hotrow::cluster {

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// httplib's timeouts as (seconds, microseconds).
void SetTimeouts(httplib::Client* client, int64_t ms) {
  const time_t sec = static_cast<time_t>(ms / 1000);
  const time_t usec = static_cast<time_t>((ms % 1000) * 1000);
  client->set_connection_timeout(sec, usec);
  client->set_read_timeout(sec, usec);
  client->set_write_timeout(sec, usec);
}

}  // namespace

Cluster::Cluster(const ClusterOptions& options, ingest::PartitionOwnership* ownership,
                 store::EventStore* store)
    : options_(options), ownership_(ownership), store_(store) {
  if (enabled()) {
    const int threads = static_cast<int>(std::min<size_t>(64, 4 * options_.peers.size()));
    pool_ = std::make_unique<query::ThreadPool>(threads, "hotrow-peer");
  }
}

Cluster::~Cluster() = default;

ingest::OwnershipSnapshot Cluster::Local() {
  if (ingestor_ != nullptr && ownership_->AnyRebuilding()) {
    const ingest::IngestStats stats = ingestor_->Stats();
    for (const ingest::PartitionStats& p : stats.partitions) {
      ownership_->UpdatePosition(p.topic, p.partition, p.next_offset, p.high_watermark);
    }
  }
  return ownership_->Snapshot();
}

query::PartitionFilter Cluster::Filter() {
  const ingest::OwnershipSnapshot snapshot = Local();
  std::vector<std::pair<uint16_t, int32_t>> serving;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const ingest::OwnedPartition& p : snapshot.partitions) {
      if (!p.serving()) continue;
      auto it = topic_numbers_.find(p.topic);
      if (it == topic_numbers_.end()) {
        // Assigns the topic its number when the store has not seen it yet, as its first record
        // would: the number is needed to recognise its rows.
        Result<uint16_t> number = store_->TopicNumber(p.topic);
        if (!number.ok()) continue;  // then no row of it can be recognised: none is returned
        it = topic_numbers_.emplace(p.topic, number.value()).first;
      }
      serving.emplace_back(it->second, p.partition);
    }
  }
  std::sort(serving.begin(), serving.end());
  return [serving = std::move(serving)](uint16_t topic, int32_t partition) {
    return std::binary_search(serving.begin(), serving.end(), std::make_pair(topic, partition));
  };
}

Partitions Cluster::AllPartitions() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (partitions_read_ms_ >= 0 && SteadyMs() - partitions_read_ms_ < options_.partitions_refresh_ms) {
      return partitions_;
    }
  }
  Result<Partitions> read = ingest::ListTopicPartitions(
      options_.brokers, options_.topics, options_.kafka_properties,
      static_cast<int>(std::min<int64_t>(options_.peer_timeout_ms, 5000)));
  std::lock_guard<std::mutex> lock(mu_);
  if (read.ok() && !read->empty()) {
    partitions_ = std::move(read).value();
    partitions_read_ms_ = SteadyMs();
  } else if (!read.ok()) {
    spdlog::warn("cluster: {}; using the partitions last read", read.status().ToString());
  }
  return partitions_;
}

std::unique_ptr<httplib::Client> Cluster::TakeClient(const std::string& peer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& idle = idle_[peer];
    if (!idle.empty()) {
      std::unique_ptr<httplib::Client> client = std::move(idle.back());
      idle.pop_back();
      return client;
    }
  }
  auto client = std::make_unique<httplib::Client>("http://" + peer);
  client->set_keep_alive(true);
  SetTimeouts(client.get(), options_.peer_timeout_ms);
  options_.access.ApplyTo(client.get());
  return client;
}

void Cluster::ReturnClient(const std::string& peer, std::unique_ptr<httplib::Client> client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& idle = idle_[peer];
  if (idle.size() < 16) idle.push_back(std::move(client));
}

std::vector<Cluster::Reply> Cluster::AskPeers(const std::string& target,
                                              const std::function<void()>& meanwhile) {
  std::vector<Reply> replies;
  for (const std::string& peer : options_.peers) {
    if (peer == options_.self) continue;
    Reply reply;
    reply.peer = peer;
    replies.push_back(std::move(reply));
  }
  if (replies.empty()) {
    if (meanwhile) meanwhile();
    return replies;
  }
  std::mutex done_mu;
  std::condition_variable done_cv;
  size_t left = replies.size();
  for (Reply& reply : replies) {
    pool_->Submit([this, &reply, &target, &done_mu, &done_cv, &left] {
      try {
        std::unique_ptr<httplib::Client> client = TakeClient(reply.peer);
        httplib::Result res = client->Get(target);
        if (!res) {
          reply.error = httplib::to_string(res.error());
        } else {
          reply.status = res->status;
          reply.body = std::move(res->body);
          reply.answered = res->status == 200;
          if (!reply.answered) reply.error = "HTTP " + std::to_string(res->status);
          ReturnClient(reply.peer, std::move(client));
        }
      } catch (const std::exception& e) {
        reply.error = e.what();
      }
      std::lock_guard<std::mutex> lock(done_mu);
      if (--left == 0) done_cv.notify_all();
    });
  }
  if (meanwhile) meanwhile();
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return left == 0; });  // each request is bounded by its timeouts
  return replies;
}

bool Cluster::StreamFrom(const std::string& peer, const std::string& target,
                         const std::function<bool(const char*, size_t)>& on_data,
                         std::string* error) {
  std::unique_ptr<httplib::Client> client = TakeClient(peer);
  int status = 0;
  bool stopped = false;
  httplib::Result res = client->Get(
      target,
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t length) {
        if (!on_data(data, length)) stopped = true;
        return !stopped;
      });
  if (!res) {
    if (stopped) return true;
    *error = status != 0 && status != 200 ? "HTTP " + std::to_string(status)
                                          : httplib::to_string(res.error());
    return false;
  }
  if (res->status != 200) {
    *error = "HTTP " + std::to_string(res->status);
    return false;
  }
  ReturnClient(peer, std::move(client));
  return true;
}

}  // namespace hotrow::cluster
