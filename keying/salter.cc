#include "keying/salter.h"

#include <xxhash.h>

#include "keying/row_key.h"

namespace hotrow::keying {
namespace {
constexpr uint64_t kIdSaltSeed = 0x5a17'1d5a'17ed'0001ULL;
}  // namespace

std::string_view SaltByName(SaltBy by) {
  switch (by) {
    case SaltBy::kId:
      return "id";
    case SaltBy::kAdaptive:
      return "adaptive";
    case SaltBy::kRecord:
      break;
  }
  return "record";
}

std::optional<SaltBy> ParseSaltBy(std::string_view name) {
  if (name == "record") return SaltBy::kRecord;
  if (name == "id") return SaltBy::kId;
  if (name == "adaptive") return SaltBy::kAdaptive;
  return std::nullopt;
}

uint8_t Salter::SaltOf(std::string_view topic, int32_t partition, int64_t offset,
                       std::string_view id) const {
  switch (by_) {
    case SaltBy::kId:
      return SaltOfId(id);
    case SaltBy::kAdaptive:
      return HomeSalt(IdHash(id));
    case SaltBy::kRecord:
      break;
  }
  return RecordSalt(topic, partition, offset);
}

uint8_t Salter::RecordSalt(std::string_view topic, int32_t partition, int64_t offset) const {
  const uint64_t s = static_cast<uint64_t>(salts_);
  char partition_bytes[4];
  StoreBigEndian32(static_cast<uint32_t>(partition), partition_bytes);
  const uint64_t base =
      XXH3_64bits_withSeed(partition_bytes, sizeof(partition_bytes), IdHash(topic));
  return static_cast<uint8_t>((base % s + static_cast<uint64_t>(offset) % s) % s);
}

uint8_t Salter::SaltOfId(std::string_view id) const {
  return static_cast<uint8_t>(XXH3_64bits_withSeed(id.data(), id.size(), kIdSaltSeed) %
                              static_cast<uint64_t>(salts_));
}

}  // namespace hotrow::keying
