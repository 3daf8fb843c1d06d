// `hotrow keys explain HEX` and `hotrow keys analyze --data DIR`: tools for looking at stored row
// keys, the way HBase operators check a row-key design before and after going live.

#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/time_format.h"
#include "config/config.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "keying/salter.h"
#include "store/event_store.h"
#include "wire/event_json.h"

namespace hotrow::cli {
namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "hotrow: %s\n", message.c_str());
  return code;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Turns the user's hex text into key bytes. An optional 0x prefix is allowed (ldb --hex prints
// one). Every failure names what was wrong and what a key looks like.
Result<std::string> DecodeHex(std::string_view text) {
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  const std::string expected = "a row key is " + std::to_string(keying::kRowKeySize) + " bytes (" +
                               std::to_string(2 * keying::kRowKeySize) +
                               " hex digits), an index key " +
                               std::to_string(keying::kIndexKeySize) + " bytes";
  if (text.empty()) return Status::InvalidArgument("key is empty: " + expected);
  for (size_t i = 0; i < text.size(); ++i) {
    if (HexDigit(text[i]) < 0) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      // Appended piece by piece: GCC 12 reports a false -Wrestrict on "literal" + std::string&&.
      std::string shown = c >= 0x20 && c < 0x7f ? "'" : "byte ";
      shown += c >= 0x20 && c < 0x7f ? std::string(1, text[i]) + "'" : std::to_string(c);
      return Status::InvalidArgument("key is not hex: " + shown + " at position " +
                                     std::to_string(i + 1) + "; " + expected);
    }
  }
  if (text.size() % 2 != 0) {
    return Status::InvalidArgument("key has an odd number of hex digits (" +
                                   std::to_string(text.size()) + "); " + expected);
  }
  if (text.size() != 2 * keying::kRowKeySize && text.size() != 2 * keying::kIndexKeySize) {
    return Status::InvalidArgument("key is " + std::to_string(text.size() / 2) + " bytes (" +
                                   std::to_string(text.size()) + " hex digits); " + expected);
  }
  std::string bytes(text.size() / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(HexDigit(text[2 * i]) * 16 + HexDigit(text[2 * i + 1]));
  }
  return bytes;
}

// Says which field DecodeRowKey refused, reading the layout documented in keying/row_key.h.
std::string WhyUndecodable(const std::string& bytes) {
  const char* p = bytes.data();
  const uint64_t ts = UINT64_MAX - keying::LoadBigEndian64(p + 9);
  const uint32_t partition = ~keying::LoadBigEndian32(p + 19);
  const uint64_t offset = ~keying::LoadBigEndian64(p + 23);
  if (ts > static_cast<uint64_t>(INT64_MAX)) {
    return "key field ts is out of range: bytes 10-17 give a negative time";
  }
  if (partition > static_cast<uint32_t>(INT32_MAX)) {
    return "key field partition is out of range: bytes 20-23 give a negative partition";
  }
  if (offset > static_cast<uint64_t>(INT64_MAX)) {
    return "key field offset is out of range: bytes 24-31 give a negative offset";
  }
  return "key cannot be decoded";
}

// Where a store open failed: a wrong --data or settings that do not match the store are the
// user's to fix (2); a damaged store or a failing disk is a runtime failure (1).
int ExitCodeForOpen(const Status& status) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound:
    case Status::Code::kIncompatible:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

// Opens the store at `dir` read-only with the salts of `config`.
Result<std::unique_ptr<store::EventStore>> OpenReadOnly(const std::string& dir,
                                                        const config::Config& config,
                                                        int* exit_code) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    *exit_code = kExitUsage;
    return Status::NotFound("--data " + dir + ": no such directory");
  }
  if (!S_ISDIR(st.st_mode)) {
    *exit_code = kExitUsage;
    return Status::InvalidArgument("--data " + dir + ": not a directory");
  }
  store::StoreOptions options = config.ToStoreOptions();
  options.path = dir;
  options.read_only = true;
  options.create_if_missing = false;
  Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
  if (!store.ok()) {
    *exit_code = ExitCodeForOpen(store.status());
    std::string message = "--data " + dir + ": cannot open the store: " + store.status().message();
    // Only a store made with other salts can be opened by giving its settings.
    if (store.status().code() == Status::Code::kIncompatible &&
        store.status().message().find("was created with") != std::string::npos) {
      message +=
          " (give the store's settings with --config or --set keying.salts=N --set "
          "keying.salt_by=record|id|adaptive)";
    }
    if (store.status().code() == Status::Code::kIncompatible) {
      return Status::Incompatible(message);
    }
    return Status::IOError(message);
  }
  return store;
}

// An id a bucket spread (Bucket::SpreadIdHashes) as `keys analyze` finds it in the rows.
struct SpreadId {
  uint64_t id_hash = 0;
  std::string id;         // from the value of one of its rows
  bool id_known = false;  // no row's value decoded: the id is shown by its hash alone
  uint64_t keys = 0;      // its rows in the bucket
  int salts = 0;          // salts holding them
  int last_salt = -1;     // the salt its last row counted was in
};

// What `keys analyze` reports of one bucket.
struct BucketCount {
  int64_t start_ms = 0;
  uint64_t keys = 0;
  std::vector<uint64_t> per_salt;  // keys per salt
  std::vector<SpreadId> spread;    // sorted by id_hash
};

// Counts a row of `salt` toward its id when the id is in `spread`; the first value that decodes
// gives the id. `key` is a row key (not an index key).
void NoteSpreadRow(std::string_view key, std::string_view value, int salt,
                   std::vector<SpreadId>* spread) {
  keying::RowKey row;
  if (!keying::DecodeRowKey(key, &row)) return;
  auto at = std::lower_bound(spread->begin(), spread->end(), row.id_hash,
                             [](const SpreadId& s, uint64_t hash) { return s.id_hash < hash; });
  if (at == spread->end() || at->id_hash != row.id_hash) return;
  ++at->keys;
  if (at->last_salt != salt) {
    at->last_salt = salt;
    ++at->salts;
  }
  std::string_view id, payload;
  if (!at->id_known && keying::DecodeRowValue(value, &id, &payload)) {
    at->id.assign(id);
    at->id_known = true;
  }
}

}  // namespace

int RunKeysExplain(const KeysFlags& flags) {
  InitLogging("warn");  // the store's warnings go to stderr; stdout holds only the fields
  Result<config::Config> config = config::LoadConfig(flags.config_file, flags.overrides);
  if (!config.ok()) return Fail(kExitUsage, config.status().message());

  Result<std::string> bytes = DecodeHex(flags.hex);
  if (!bytes.ok()) return Fail(kExitUsage, bytes.status().message());
  keying::RowKey key;
  keying::IndexKey index_key;
  const bool is_index = bytes->size() == keying::kIndexKeySize;
  if (is_index) {
    // A posting's key (keying/index_key.h): the value hash, then its newest event's place.
    if (!keying::DecodeIndexKey(*bytes, &index_key)) {
      const auto tag = static_cast<unsigned char>((*bytes)[keying::kIndexTagAt]);
      return Fail(
          kExitUsage,
          tag == keying::kLegacyIndexTag
              ? "an index key of an older hotrow (a legacy index row, tag 00), which nothing reads"
          : keying::IsIndexKey(*bytes)
              ? "index key field ts, partition or offset is out of range, or byte 1 is "
                "not 00"
              : "a 32-byte key is an index posting's, whose byte 10 is the tag 01");
    }
    key.ts_ms = index_key.ts_ms;
    key.topic = index_key.topic;
    key.partition = index_key.partition;
    key.offset = index_key.offset;
  } else if (!keying::DecodeRowKey(*bytes, &key)) {
    return Fail(kExitUsage, WhyUndecodable(*bytes));
  }
  if (!is_index && key.salt >= config->keying.salts) {
    return Fail(kExitUsage,
                "key salt " + std::to_string(key.salt) + " is out of range: keying.salts is " +
                    std::to_string(config->keying.salts) +
                    " (give the store's settings with --config or --set keying.salts=N)");
  }

  std::string topic_name;
  if (!flags.data_dir.empty()) {
    int exit_code = kExitFailure;
    Result<std::unique_ptr<store::EventStore>> store =
        OpenReadOnly(flags.data_dir, *config, &exit_code);
    if (!store.ok()) return Fail(exit_code, store.status().message());
    std::optional<std::string> name = (*store)->TopicName(key.topic);
    topic_name =
        name ? *name : "(unknown: this store has no topic " + std::to_string(key.topic) + ")";
  }

  if (is_index) {
    // Postings are not salted; the time, topic, partition and offset are its newest event's.
    std::printf("kind: index posting\n");
    std::printf("value_hash: 0x%016" PRIx64 "\n", index_key.value_hash);
  } else {
    std::printf("salt: %u\n", static_cast<unsigned>(key.salt));
    std::printf("id_hash: 0x%016" PRIx64 "\n", key.id_hash);
  }
  std::printf("ts_ms: %" PRId64 "\n", key.ts_ms);
  std::printf("ts: %s\n", FormatRfc3339Ms(key.ts_ms).c_str());
  std::printf("topic: %u\n", static_cast<unsigned>(key.topic));
  if (!flags.data_dir.empty()) std::printf("topic_name: %s\n", topic_name.c_str());
  std::printf("partition: %" PRId32 "\n", key.partition);
  std::printf("offset: %" PRId64 "\n", key.offset);
  return kExitOk;
}

int RunKeysAnalyze(const KeysFlags& flags) {
  InitLogging("warn");  // the store's warnings go to stderr; stdout holds only the table
  Result<config::Config> config = config::LoadConfig(flags.config_file, flags.overrides);
  if (!config.ok()) return Fail(kExitUsage, config.status().message());
  int exit_code = kExitFailure;
  Result<std::unique_ptr<store::EventStore>> store =
      OpenReadOnly(flags.data_dir, *config, &exit_code);
  if (!store.ok()) return Fail(exit_code, store.status().message());

  const int salts = (*store)->options().salts;
  const bool adaptive = (*store)->options().salt_by == keying::SaltBy::kAdaptive;
  std::vector<uint64_t> per_salt(static_cast<size_t>(salts), 0);
  // Index postings and the events they list, legacy index rows and postings that do not decode:
  // not counted as keys.
  uint64_t postings = 0, posted = 0, legacy_rows = 0, damaged = 0;
  std::vector<BucketCount> per_bucket;
  uint64_t total = 0;
  for (const std::shared_ptr<const store::Bucket>& bucket : (*store)->Buckets()) {
    BucketCount count;
    count.start_ms = bucket->start_ms();
    count.per_salt.assign(static_cast<size_t>(salts), 0);
    if (adaptive) {
      for (uint64_t hash : bucket->SpreadIdHashes()) {
        count.spread.emplace_back();
        count.spread.back().id_hash = hash;
      }
    }
    for (int salt = 0; salt < salts; ++salt) {
      std::unique_ptr<store::RowIterator> it =
          bucket->NewIterator(keying::SaltKeyRange(static_cast<uint8_t>(salt)), false);
      uint64_t n = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        if (keying::IsIndexKey(it->key())) {
          std::string_view field, value, events;
          keying::IndexKey posting;
          if (keying::DecodeIndexKey(it->key(), &posting) &&
              keying::DecodePosting(it->value(), &field, &value, &events)) {
            ++postings;
            posted += events.size() / keying::kRowKeySize;
          } else if (static_cast<unsigned char>(it->key()[keying::kIndexTagAt]) ==
                     keying::kLegacyIndexTag) {
            ++legacy_rows;
          } else {
            ++damaged;
          }
          continue;
        }
        ++n;
        if (!count.spread.empty()) NoteSpreadRow(it->key(), it->value(), salt, &count.spread);
      }
      Status status = it->status();
      if (!status.ok()) {
        return Fail(kExitFailure, "reading bucket " + FormatRfc3339Ms(bucket->start_ms()) +
                                      " salt " + std::to_string(salt) + ": " + status.ToString());
      }
      per_salt[static_cast<size_t>(salt)] += n;
      count.per_salt[static_cast<size_t>(salt)] = n;
      count.keys += n;
    }
    total += count.keys;
    per_bucket.push_back(std::move(count));
  }

  const double mean = static_cast<double>(total) / salts;
  auto deviation = [&](uint64_t n) {
    return total == 0 ? 0.0 : (static_cast<double>(n) - mean) / mean * 100.0;
  };
  std::printf("store %s: %" PRIu64 " keys in %zu buckets, %d salts by %s\n", flags.data_dir.c_str(),
              total, per_bucket.size(), salts,
              std::string(keying::SaltByName((*store)->options().salt_by)).c_str());
  std::printf("\n%-6s %14s %12s\n", "salt", "keys", "deviation");
  double max_deviation = 0;
  for (int salt = 0; salt < salts; ++salt) {
    const double d = deviation(per_salt[static_cast<size_t>(salt)]);
    max_deviation = std::max(max_deviation, std::fabs(d));
    std::printf("%-6d %14" PRIu64 " %+11.2f%%\n", salt, per_salt[static_cast<size_t>(salt)], d);
  }
  // Per bucket, the salt balance: its largest salt's keys over the mean of its salts (1.00 is
  // even, `salts` is every key in one salt). Under salt_by adaptive, the ids it spread.
  std::printf("\n%-26s %14s %13s%s\n", "bucket", "keys", "largest/mean",
              adaptive ? "   spread ids" : "");
  for (const BucketCount& b : per_bucket) {
    std::printf("%-26s %14" PRIu64, FormatRfc3339Ms(b.start_ms).c_str(), b.keys);
    if (b.keys == 0) {
      std::printf(" %13s", "-");
    } else {
      const uint64_t largest = *std::max_element(b.per_salt.begin(), b.per_salt.end());
      std::printf(" %13.2f", static_cast<double>(largest) * salts / static_cast<double>(b.keys));
    }
    if (adaptive) std::printf(" %12zu", b.spread.size());
    std::printf("\n");
  }
  if (adaptive) {
    // Each spread id by its id when one of its rows holds it (keying/row_value.h), else by hash.
    std::printf("\nspread ids: keys and salts holding them per bucket\n%-26s %-18s %14s %6s  %s\n",
                "bucket", "id_hash", "keys", "salts", "id");
    for (const BucketCount& b : per_bucket) {
      for (const SpreadId& spread : b.spread) {
        std::string id;
        if (spread.id_known) {
          wire::AppendJsonString(spread.id, &id);
        } else {
          id = "(no row holds its id)";
        }
        std::printf("%-26s 0x%016" PRIx64 " %14" PRIu64 " %6d  %s\n",
                    FormatRfc3339Ms(b.start_ms).c_str(), spread.id_hash, spread.keys, spread.salts,
                    id.c_str());
      }
    }
  }
  if (postings > 0) {
    // Index postings (keying/index_key.h): one per (field, value) and second of a write.
    std::printf("\n%" PRIu64 " index postings listing %" PRIu64 " events (%.1f per posting)\n",
                postings, posted, static_cast<double>(posted) / static_cast<double>(postings));
  }
  if (legacy_rows > 0) {
    std::printf("\n%" PRIu64 " legacy index rows (an older hotrow's, not read)\n", legacy_rows);
  }
  if (damaged > 0) {
    std::printf("\n%" PRIu64 " index postings that do not decode (damaged)\n", damaged);
  }
  std::printf("\nmax deviation from mean: %.2f%% over %d salts\n", max_deviation, salts);
  return kExitOk;
}

}  // namespace hotrow::cli
