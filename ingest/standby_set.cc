#include "ingest/standby_set.h"

#include <algorithm>

namespace hotrow::ingest {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t Fnv(uint64_t h, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t StandbyWeight(const std::string& peer, const std::string& topic, int32_t partition) {
  uint64_t h = Fnv(kFnvOffset, peer.data(), peer.size());
  const char zero = 0;
  h = Fnv(h, &zero, 1);
  h = Fnv(h, topic.data(), topic.size());
  h = Fnv(h, &zero, 1);
  const uint32_t p = static_cast<uint32_t>(partition);
  const unsigned char bytes[4] = {static_cast<unsigned char>(p), static_cast<unsigned char>(p >> 8),
                                  static_cast<unsigned char>(p >> 16),
                                  static_cast<unsigned char>(p >> 24)};
  h = Fnv(h, bytes, sizeof(bytes));
  return SplitMix(h);
}

std::vector<std::string> StandbyRanking(const std::vector<std::string>& peers,
                                        const std::string& topic, int32_t partition) {
  std::vector<std::pair<uint64_t, std::string>> ranked;
  ranked.reserve(peers.size());
  for (const std::string& peer : peers) {
    ranked.emplace_back(StandbyWeight(peer, topic, partition), peer);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  out.reserve(ranked.size());
  for (auto& [weight, peer] : ranked) out.push_back(std::move(peer));
  return out;
}

bool Follows(const std::vector<std::string>& peers, const std::string& self, int replicas,
             const std::string& topic, int32_t partition, bool owned) {
  if (replicas <= 0 || owned) return false;
  const std::vector<std::string> ranking = StandbyRanking(peers, topic, partition);
  const size_t first = std::min(ranking.size(), static_cast<size_t>(replicas) + 1);
  return std::find(ranking.begin(), ranking.begin() + static_cast<std::ptrdiff_t>(first), self) !=
         ranking.begin() + static_cast<std::ptrdiff_t>(first);
}

std::vector<store::TopicPartition> StandbySet(
    const std::vector<std::string>& peers, const std::string& self, int replicas,
    const std::vector<std::pair<std::string, int32_t>>& counts,
    const std::vector<store::TopicPartition>& owned) {
  std::vector<store::TopicPartition> out;
  for (const auto& [topic, count] : counts) {
    for (int32_t p = 0; p < count; ++p) {
      store::TopicPartition tp{topic, p};
      const bool is_owned = std::binary_search(owned.begin(), owned.end(), tp);
      if (Follows(peers, self, replicas, topic, p, is_owned)) out.push_back(std::move(tp));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hotrow::ingest
