#include "cluster/cluster.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "common/clock.h"

namespace hotrow::cluster {

Cluster::Cluster(const ClusterOptions& options, ingest::PartitionOwnership* ownership,
                 store::EventStore* store)
    : options_(options), ownership_(ownership), store_(store) {
  identity_.group = options_.group_id;
  identity_.topics = options_.topics;
  std::sort(identity_.topics.begin(), identity_.topics.end());
  if (!enabled()) return;
  PeerClientOptions peer_options;
  for (const std::string& peer : options_.peers) {
    if (peer != options_.self) peer_options.peers.push_back(peer);
  }
  peer_options.timeout_ms = options_.peer_timeout_ms;
  peer_options.credentials = options_.credentials;
  peers_ = std::make_unique<PeerClients>(std::move(peer_options));
  TopicMetadataOptions metadata;
  metadata.brokers = options_.brokers;
  metadata.topics = options_.topics;
  metadata.kafka_properties = options_.kafka_properties;
  metadata.refresh_ms = options_.partitions_refresh_ms;
  metadata.timeout_ms = std::min<int64_t>(options_.peer_timeout_ms, 5000);
  metadata_ = std::make_unique<TopicMetadata>(std::move(metadata));
  freshness_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-fresh");
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      RefreshFreshness();
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(options_.freshness_refresh_ms),
                     [this] { return stopping_; });
    }
  });
  if (options_.route_by_key == ingest::KeyPartitioner::kOff) return;
  route_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-route");
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
      }
      RefreshRoute();
      std::unique_lock<std::mutex> lock(route_mu_);
      route_stale_ = false;
      route_wake_.wait_for(lock, std::chrono::milliseconds(options_.route_refresh_ms), [this] {
        std::lock_guard<std::mutex> stop(mu_);
        return stopping_ || route_stale_;
      });
    }
  });
}

Cluster::~Cluster() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  {
    std::lock_guard<std::mutex> lock(route_mu_);  // so that the route thread sees stopping_
  }
  route_wake_.notify_all();
  if (freshness_.joinable()) freshness_.join();
  if (route_.joinable()) route_.join();
}

void Cluster::RefreshRoute() {
  // Peers are asked once the HTTP server runs: until then no map (every instance is asked).
  if (!peers_->attached()) return;
  // Before anything is asked: every head read below, this instance's own included, says at least
  // what its instance held from this moment on, however long its answer takes to arrive.
  const int64_t asked_at_ms = options_.monotonic_clock->NowMs();
  ingest::OwnershipSnapshot mine;
  std::vector<PeerReply> replies =
      peers_->AskAll("/v1/cluster?local=true", [&] { mine = Local(); });
  std::vector<std::optional<LocalHead>> heads(1 + replies.size());
  heads[0] = Head(mine);
  NoteOwnerPositions(*heads[0]);
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].answered) continue;
    LocalHead head;
    if (!ParseClusterLocal(replies[i].body, &head).ok() || !CheckPeer(head).ok()) continue;
    NoteOwnerPositions(head);
    heads[i + 1] = std::move(head);
  }
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(route_mu_);
    hook = route_heads_read_for_test_;
  }
  if (hook) hook();
  RouteMap map = BuildRouteMap(KnownPartitions(), heads, asked_at_ms);
  std::lock_guard<std::mutex> lock(route_mu_);
  route_map_ = std::move(map);
}

std::optional<RoutePlan> Cluster::PlanRoute(const std::vector<std::string>& ids) const {
  if (!routing()) return std::nullopt;
  std::lock_guard<std::mutex> lock(route_mu_);
  if (route_stale_) return std::nullopt;
  return cluster::PlanRoute(route_map_, options_.route_by_key, ids,
                            1 + peers_->options().peers.size(), options_.monotonic_clock->NowMs(),
                            2 * options_.route_refresh_ms);
}

void Cluster::RouteMissed() {
  {
    std::lock_guard<std::mutex> lock(route_mu_);
    route_stale_ = true;
  }
  route_wake_.notify_all();
}

void Cluster::CountRoute(bool routed, bool retried) {
  (routed ? routed_ : everyone_).fetch_add(1, std::memory_order_relaxed);
  if (retried) retried_.fetch_add(1, std::memory_order_relaxed);
}

RouteCounts Cluster::route_counts() const {
  return RouteCounts{routed_.load(), everyone_.load(), retried_.load()};
}

RouteMap Cluster::route_map() const {
  std::lock_guard<std::mutex> lock(route_mu_);
  return route_map_;
}

std::optional<int64_t> Cluster::route_map_age_ms() const {
  std::lock_guard<std::mutex> lock(route_mu_);
  if (!route_map_.read) return std::nullopt;
  return std::max<int64_t>(0, options_.monotonic_clock->NowMs() - route_map_.oldest_head_ms);
}

void Cluster::RefreshFreshness() {
  std::lock_guard<std::mutex> lock(ingestor_mu_);
  const ingest::Ingestor* ingestor = ingestor_;
  if (ingestor == nullptr) return;
  const ingest::IngestStats stats = ingestor->Stats();
  for (const ingest::PartitionStats& p : stats.partitions) {
    ownership_->UpdatePosition(p.topic, p.partition, p.next_offset, p.high_watermark);
    // A followed partition the group consumer took keeps its standby entry while it is owned
    // (LocalShared); the store's position of it is now the owner's.
    if (followed_ != nullptr) {
      followed_->UpdatePosition(p.topic, p.partition, p.next_offset, p.high_watermark);
    }
  }
  const Status ready = ingestor->Ready();
  ownership_->SetReadiness(ready.ok(), ready.message());
  if (followed_ == nullptr || standby_ingestor_ == nullptr) return;
  const ingest::IngestStats followed = standby_ingestor_->Stats();
  for (const ingest::PartitionStats& p : followed.partitions) {
    followed_->UpdatePosition(p.topic, p.partition, p.next_offset, p.high_watermark);
  }
  const Status standby_ready = standby_ingestor_->Ready();
  // The standby's own readiness, and the store's: a full disk stops both consumers' writes. The
  // group consumer waiting for an assignment (a rebalance) is no reason: that is when standbys
  // are needed.
  followed_->SetReadiness(standby_ready.ok() && !ready.IsNoSpace(),
                          ready.IsNoSpace() ? ready.message() : standby_ready.message());
}

std::shared_ptr<const ingest::OwnershipSnapshot> Cluster::LocalShared() const {
  std::shared_ptr<const ingest::OwnershipSnapshot> owned = ownership_->Shared();
  if (followed_ == nullptr) return owned;
  auto both = std::make_shared<ingest::OwnershipSnapshot>(*owned);
  // A partition taken over (standby_handover.h) keeps its standby entry for as long as it is
  // owned, and it is left out here only where this same snapshot has the owner serving it: a
  // standby entry dropped once the owner served would leave a query whose owned part was read
  // just before the owner served, and its followed part just after, with neither.
  for (const ingest::OwnedPartition& p : followed_->Shared()->partitions) {
    if (!owned->IsServing(p.topic, p.partition)) both->followed.push_back(p);
  }
  return both;
}

QueryView Cluster::View() {
  QueryView view;
  const std::map<store::TopicPartition, int64_t>& at_least = StandbyRequestPositions();
  if (!at_least.empty()) {
    // A standby request names the owner's last positions: its events up to there may have been
    // given to a client already. The standby consumer writes live, usually a batch behind, so the
    // store gets there within moments; polled, as writes signal nothing a reader can wait on here.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kStandbyCatchUpMs);
    auto reached = [&] {
      const std::map<store::TopicPartition, int64_t> stored = store_->StoredOffsets();
      for (const auto& [tp, offset] : at_least) {
        auto it = stored.find(tp);
        if (it == stored.end() || it->second < offset) return false;
      }
      return true;
    };
    while (!reached() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  view.ownership = LocalShared();
  const Partitions& asked = StandbyRequest();
  if (!asked.empty()) {
    // Exactly the partitions asked, as this instance owns or follows them (owned first); one it
    // does neither is named stale.
    auto only = std::make_shared<ingest::OwnershipSnapshot>();
    only->generation = view.ownership->generation;
    for (const store::TopicPartition& tp : asked) {
      const ingest::OwnedPartition* found = nullptr;
      for (const auto* list : {&view.ownership->partitions, &view.ownership->followed}) {
        for (const ingest::OwnedPartition& p : *list) {
          if (found == nullptr && p.topic == tp.topic && p.partition == tp.partition &&
              (p.serving() || list == &view.ownership->followed)) {
            found = &p;
          }
        }
      }
      if (found != nullptr) {
        only->partitions.push_back(*found);
      } else {
        ingest::OwnedPartition none;
        none.topic = tp.topic;
        none.partition = tp.partition;
        none.not_ready = "neither owned nor followed here";
        only->partitions.push_back(std::move(none));
      }
    }
    view.ownership = std::move(only);
  }
  view.filter = FilterOf(*view.ownership);
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(view_hook_mu_);
    hook = view_taken_for_test_;
  }
  if (hook) hook();
  return view;
}

LocalHead Cluster::Head(const ingest::OwnershipSnapshot& snapshot) const {
  LocalHead head = identity_;
  head.partitions = snapshot.Serving();
  head.stale = snapshot.Stale();
  const bool naming = naming_standbys_.load();
  for (const ingest::OwnedPartition& p : snapshot.followed) {
    // A partition also owned and serving is answered as owned.
    if (naming && p.serving() && !snapshot.IsServing(p.topic, p.partition)) {
      head.standby.push_back({p.topic, p.partition});
    }
  }
  std::sort(head.standby.begin(), head.standby.end());
  if (options_.route_by_key != ingest::KeyPartitioner::kOff) {
    std::set<std::string> disagree;
    for (const ingest::OwnedPartition& p : snapshot.partitions) {
      if (p.route_partitions <= 0) continue;
      auto [it, added] = head.route_partitions.emplace(p.topic, p.route_partitions);
      if (!added && it->second != p.route_partitions) disagree.insert(p.topic);
      if (p.serving() && p.routable) head.routable.push_back({p.topic, p.partition});
    }
    for (const std::string& topic : disagree) {
      head.route_partitions.erase(topic);
      std::erase_if(head.routable,
                    [&](const store::TopicPartition& tp) { return tp.topic == topic; });
    }
  }
  std::sort(head.partitions.begin(), head.partitions.end());
  std::sort(head.stale.begin(), head.stale.end());
  head.complete = head.stale.empty();
  if (enabled() && !head.partitions.empty()) {
    // The store's offsets now, after the answer's reads: at or past every event they returned.
    const std::map<store::TopicPartition, int64_t> stored = store_->StoredOffsets();
    for (const ingest::OwnedPartition& p : snapshot.partitions) {
      if (!p.serving()) continue;
      auto it = stored.find({p.topic, p.partition});
      const int64_t offset = std::max(p.position, it != stored.end() ? it->second : -1);
      if (offset >= 0) head.positions[{p.topic, p.partition}] = offset;
    }
  }
  return head;
}

void Cluster::NoteOwnerPositions(const LocalHead& owner) {
  if (owner.positions.empty()) return;
  std::lock_guard<std::mutex> lock(positions_mu_);
  for (const store::TopicPartition& tp : owner.partitions) {
    auto p = owner.positions.find(tp);
    if (p == owner.positions.end()) continue;
    int64_t& known = owner_positions_[tp];
    known = std::max(known, p->second);
  }
}

std::map<store::TopicPartition, int64_t> Cluster::OwnerPositionsOf(
    const Partitions& partitions) const {
  std::map<store::TopicPartition, int64_t> out;
  std::lock_guard<std::mutex> lock(positions_mu_);
  for (const store::TopicPartition& tp : partitions) {
    auto it = owner_positions_.find(tp);
    if (it != owner_positions_.end()) out.emplace(tp, it->second);
  }
  return out;
}

size_t Cluster::JudgeStandby(LocalHead* standby) const {
  std::lock_guard<std::mutex> lock(positions_mu_);
  if (owner_positions_.empty()) return 0;
  size_t moved = 0;
  std::erase_if(standby->partitions, [&](const store::TopicPartition& tp) {
    auto known = owner_positions_.find(tp);
    if (known == owner_positions_.end()) return false;
    auto p = standby->positions.find(tp);
    if (p != standby->positions.end() && p->second >= known->second) return false;
    standby->stale.push_back(tp);
    ++moved;
    return true;
  });
  if (moved > 0) {
    std::sort(standby->stale.begin(), standby->stale.end());
    standby->complete = false;
  }
  return moved;
}

query::PartitionFilter Cluster::FilterOf(const ingest::OwnershipSnapshot& snapshot) {
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

GroupPartitions Cluster::KnownPartitions() const {
  if (metadata_ == nullptr) {
    GroupPartitions none;
    none.unknown_topics = identity_.topics;
    return none;
  }
  return metadata_->Known();
}

Status Cluster::CheckPeer(const LocalHead& peer) {
  Status st = SameGroup(identity_, peer);
  if (!st.ok()) refused_.fetch_add(1);
  return st;
}

}  // namespace hotrow::cluster
