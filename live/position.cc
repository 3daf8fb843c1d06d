#include "live/position.h"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

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

constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int DigitValue(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// Base-64 digits needed for `v` (at least 1); at most 11 for 63 bits.
int WidthOf(uint64_t v) {
  int w = 1;
  while (w < 11 && (v >> (6 * w)) != 0) ++w;
  return w;
}

// One run of consecutive partitions of a topic: "<first>.<base>.<W>.<digits>".
void AppendRun(const std::vector<std::pair<int32_t, int64_t>>& run, std::string* out) {
  int64_t base = run.front().second;
  for (const auto& [partition, next] : run) base = std::min(base, next);
  uint64_t widest = 0;
  for (const auto& [partition, next] : run) {
    widest = std::max(widest, static_cast<uint64_t>(next - base));
  }
  const int w = WidthOf(widest);
  out->append(std::to_string(run.front().first));
  out->push_back('.');
  out->append(std::to_string(base));
  out->push_back('.');
  out->append(std::to_string(w));
  out->push_back('.');
  for (const auto& [partition, next] : run) {
    const uint64_t d = static_cast<uint64_t>(next - base);
    for (int i = w - 1; i >= 0; --i) out->push_back(kDigits[(d >> (6 * i)) & 63]);
  }
}

}  // namespace

std::string StreamPosition::ToString() const {
  std::string out = std::to_string(made_ms);
  out += '~';
  std::vector<std::pair<int32_t, int64_t>> run;
  const std::string* topic = nullptr;
  for (auto it = next.begin(); it != next.end(); ++it) {
    const auto& [tp, offset] = *it;
    if (topic == nullptr || *topic != tp.topic) {
      if (topic != nullptr) out += ';';
      out += tp.topic;
      out += ':';
      topic = &tp.topic;
    } else if (run.empty()) {
      out += ',';
    }
    run.emplace_back(tp.partition, offset);
    auto following = std::next(it);
    const bool run_ends = following == next.end() || following->first.topic != tp.topic ||
                          following->first.partition != tp.partition + 1;
    if (run_ends) {
      AppendRun(run, &out);
      run.clear();
    }
  }
  return out;
}

std::string StreamPosition::ToDecimalString() const {
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

namespace {

// One run of the compact text, "<first>.<base>.<W>.<digits>", into `position`.
Status ParseRun(std::string_view topic, std::string_view run, StreamPosition* position) {
  std::string_view parts[4];
  for (int i = 0; i < 3; ++i) {
    const size_t dot = run.find('.');
    if (dot == std::string_view::npos) {
      return Status::InvalidArgument("a run that is not FIRST.BASE.WIDTH.DIGITS");
    }
    parts[i] = run.substr(0, dot);
    run.remove_prefix(dot + 1);
  }
  parts[3] = run;
  int64_t first = 0, base = 0, width = 0;
  if (!ParseInt(parts[0], &first) || first > INT32_MAX || !ParseInt(parts[1], &base) ||
      !ParseInt(parts[2], &width) || width < 1 || width > 11) {
    return Status::InvalidArgument("a run that is not FIRST.BASE.WIDTH.DIGITS");
  }
  const std::string_view digits = parts[3];
  if (digits.empty() || digits.size() % static_cast<size_t>(width) != 0) {
    return Status::InvalidArgument("a run whose digits are not a multiple of its width");
  }
  const size_t count = digits.size() / static_cast<size_t>(width);
  if (static_cast<uint64_t>(first) + count - 1 > INT32_MAX) {
    return Status::InvalidArgument("a run past the largest partition");
  }
  for (size_t i = 0; i < count; ++i) {
    uint64_t d = 0;
    for (size_t j = 0; j < static_cast<size_t>(width); ++j) {
      const int v = DigitValue(digits[i * static_cast<size_t>(width) + j]);
      if (v < 0) return Status::InvalidArgument("a run with a digit not in A-Za-z0-9-_");
      if (d > (UINT64_MAX >> 6)) return Status::InvalidArgument("an offset out of range");
      d = (d << 6) | static_cast<uint64_t>(v);
    }
    if (d > static_cast<uint64_t>(INT64_MAX - base)) {
      return Status::InvalidArgument("an offset out of range");
    }
    if (position->next.size() >= kMaxPartitions) {
      return Status::InvalidArgument("too many partitions");
    }
    position->next[{std::string(topic), static_cast<int32_t>(first + static_cast<int64_t>(i))}] =
        base + static_cast<int64_t>(d);
  }
  return Status::Ok();
}

}  // namespace

Result<StreamPosition> ParseStreamPosition(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        "stream position: " + std::string(why) +
        "; expected MS~TOPIC:FIRST.BASE.WIDTH.DIGITS,... or MS/TOPIC:PARTITION.OFFSET,... as "
        "sent in a message's id");
  };
  StreamPosition position;
  const size_t slash = text.find_first_of("/~");
  if (slash == std::string_view::npos) return bad("no '/' or '~' after the time");
  if (!ParseInt(text.substr(0, slash), &position.made_ms)) return bad("the time is not a number");
  const bool compact = text[slash] == '~';
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
      if (compact) {
        Status st = ParseRun(topic, one, &position);
        if (!st.ok()) return bad(st.message());
        continue;
      }
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
