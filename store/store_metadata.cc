#include "store/store_metadata.h"

#include <rocksdb/merge_operator.h>

#include <charconv>
#include <cinttypes>
#include <cstdio>

#include "keying/row_key.h"

namespace hotrow::store {
namespace {

class MetadataMergeOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  const char* Name() const override { return "hotrow.metadata.v1"; }
  bool Merge(const rocksdb::Slice& key, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* new_value, rocksdb::Logger*) const override {
    if (existing == nullptr) {
      new_value->assign(value.data(), value.size());
      return true;
    }
    if (key.starts_with(kStatPrefix)) {
      if (existing->size() != 16 || value.size() != 16) return false;
      new_value->resize(16);
      for (size_t field = 0; field < 16; field += 8) {
        keying::StoreBigEndian64(keying::LoadBigEndian64(existing->data() + field) +
                                     keying::LoadBigEndian64(value.data() + field),
                                 new_value->data() + field);
      }
      return true;
    }
    if (key == rocksdb::Slice(kClockKey)) {
      if (existing->size() != 8 || value.size() != 8) return false;
      const bool keep = static_cast<int64_t>(keying::LoadBigEndian64(existing->data())) >=
                        static_cast<int64_t>(keying::LoadBigEndian64(value.data()));
      const rocksdb::Slice& winner = keep ? *existing : value;
      new_value->assign(winner.data(), winner.size());
      return true;
    }
    new_value->assign(value.data(), value.size());
    return true;
  }
};

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> NewMetadataMergeOperator() {
  return std::make_shared<MetadataMergeOperator>();
}

std::string FormatValue(int salts, keying::SaltBy by) {
  return std::string(kFormatVersion) + " salts=" + std::to_string(salts) +
         " salt_by=" + std::string(keying::SaltByName(by));
}

std::string Be64(uint64_t v) {
  std::string out(8, '\0');
  keying::StoreBigEndian64(v, out.data());
  return out;
}

std::string OffsetKey(const TopicPartition& tp) {
  std::string key = kOffsetPrefix + tp.topic;
  key.push_back('\0');
  char p[4];
  keying::StoreBigEndian32(static_cast<uint32_t>(tp.partition), p);
  key.append(p, 4);
  return key;
}

std::string RunKey(const TopicPartition& tp) {
  // The offset key's layout under another prefix.
  return kRunPrefix + OffsetKey(tp).substr(sizeof(kOffsetPrefix) - 1);
}

std::string EncodeRun(const PartitionRun& run) {
  return Be64(static_cast<uint64_t>(run.first_offset)) +
         Be64(static_cast<uint64_t>(run.holds_from_ms) ^ (uint64_t{1} << 63));
}

bool DecodeRun(std::string_view value, PartitionRun* run) {
  if (value.size() != 16) return false;
  run->first_offset = static_cast<int64_t>(keying::LoadBigEndian64(value.data()));
  run->holds_from_ms =
      static_cast<int64_t>(keying::LoadBigEndian64(value.data() + 8) ^ (uint64_t{1} << 63));
  return true;
}

std::string StatKey(int64_t bucket_start, uint8_t salt) {
  std::string key = kStatPrefix + Be64(static_cast<uint64_t>(bucket_start));
  key.push_back(static_cast<char>(salt));
  return key;
}

std::string IndexFieldsKey(int64_t bucket_start) {
  return kIndexFieldsPrefix + Be64(static_cast<uint64_t>(bucket_start));
}

std::string EncodeIndexFields(const std::vector<std::string>& fields) {
  std::string out(kIndexPostingsMark);
  for (const std::string& f : fields) {
    out.push_back('\n');
    out.append(f);
  }
  return out;
}

std::vector<std::string> DecodeIndexFields(std::string_view value, bool* legacy) {
  std::vector<std::string> out;
  const bool postings = value.substr(0, kIndexPostingsMark.size()) == kIndexPostingsMark;
  if (legacy != nullptr) *legacy = !postings;
  if (!postings) return out;
  value.remove_prefix(kIndexPostingsMark.size());
  while (!value.empty()) {
    value.remove_prefix(1);  // the '\n' before each field
    const size_t nl = value.find('\n');
    out.emplace_back(value.substr(0, nl));
    if (nl == std::string_view::npos) break;
    value.remove_prefix(nl);
  }
  return out;
}

std::string BucketName(int64_t start_ms, int64_t end_ms) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "b%013" PRId64 "_%013" PRId64, start_ms, end_ms);
  return buf;
}

bool ParseBucketName(const std::string& name, int64_t* start_ms, int64_t* end_ms) {
  if (name.size() < 4 || name[0] != 'b') return false;
  const auto sep = name.find('_');
  if (sep == std::string::npos) return false;
  const char* begin = name.data() + 1;
  auto [p1, e1] = std::from_chars(begin, name.data() + sep, *start_ms);
  auto [p2, e2] = std::from_chars(name.data() + sep + 1, name.data() + name.size(), *end_ms);
  return e1 == std::errc() && p1 == name.data() + sep && e2 == std::errc() &&
         p2 == name.data() + name.size() && *start_ms >= 0 && *end_ms > *start_ms;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace hotrow::store
