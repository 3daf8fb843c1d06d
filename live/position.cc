#include "live/position.h"

#include <algorithm>
#include <charconv>

namespace hotrow::live {
namespace {

constexpr size_t kMaxPartitions = 4096;

bool ParseInt(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= 0;
}

bool IsTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

std::string StreamPosition::ToString() const {
  std::string out = std::to_string(made_ms);
  out += '/';
  const std::string* topic = nullptr;
  for (const auto& [tp, offset] : next) {
    if (topic == nullptr || *topic != tp.topic) {
      if (topic != nullptr) out += ';';
      out += tp.topic;
      out += ':';
      topic = &tp.topic;
    } else {
      out += ',';
    }
    out += std::to_string(tp.partition);
    out += '.';
    out += std::to_string(offset);
  }
  return out;
}

int64_t StreamPosition::NextOf(const store::TopicPartition& tp) const {
  auto it = next.find(tp);
  return it == next.end() ? 0 : it->second;
}

void StreamPosition::Advance(const store::TopicPartition& tp, int64_t offset) {
  int64_t& n = next[tp];
  n = std::max(n, offset + 1);
}

Result<StreamPosition> ParseStreamPosition(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        "stream position: " + std::string(why) +
        "; expected MS/TOPIC:PARTITION.OFFSET,... as sent in a message's id");
  };
  StreamPosition position;
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad("no '/' after the time");
  if (!ParseInt(text.substr(0, slash), &position.made_ms)) return bad("the time is not a number");
  std::string_view rest = text.substr(slash + 1);
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    std::string_view group = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    if (semi != std::string_view::npos && rest.empty()) return bad("a trailing ';'");
    const size_t colon = group.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad("a topic without ':'");
    const std::string_view topic = group.substr(0, colon);
    if (!std::all_of(topic.begin(), topic.end(), IsTopicChar)) return bad("a bad topic name");
    std::string_view parts = group.substr(colon + 1);
    if (parts.empty()) return bad("a topic with no partition");
    while (!parts.empty()) {
      const size_t comma = parts.find(',');
      const std::string_view one = parts.substr(0, comma);
      parts = comma == std::string_view::npos ? std::string_view() : parts.substr(comma + 1);
      if (comma != std::string_view::npos && parts.empty()) return bad("a trailing ','");
      const size_t dot = one.find('.');
      int64_t partition = 0;
      int64_t offset = 0;
      if (dot == std::string_view::npos || !ParseInt(one.substr(0, dot), &partition) ||
          partition > INT32_MAX || !ParseInt(one.substr(dot + 1), &offset)) {
        return bad("a partition that is not PARTITION.OFFSET");
      }
      if (position.next.size() >= kMaxPartitions) return bad("too many partitions");
      position.next[{std::string(topic), static_cast<int32_t>(partition)}] = offset;
    }
  }
  return position;
}

}  // namespace hotrow::live
