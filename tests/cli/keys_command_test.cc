// `hotrow keys explain` and `hotrow keys analyze`, run as a user runs them: the real binary.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/time_format.h"
#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "keying/salter.h"
#include "store/event_store.h"
#include "tests/support/process.h"
#include "tests/support/raw_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct RunResult {
  int exit_code = -1;
  std::vector<std::string> out;  // stdout lines
  std::vector<std::string> err;  // stderr lines
};

RunResult RunHotrow(const std::vector<std::string>& args) {
  testing::TempDir dir;
  const std::string err_path = dir.Sub("stderr");
  std::vector<std::string> argv = {testing::HotrowBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult result;
  testing::ChildProcess child(argv, err_path);
  for (std::string line; child.ReadLine(&line);) result.out.push_back(line);
  result.exit_code = child.Wait();
  std::ifstream err(err_path);
  for (std::string line; std::getline(err, line);) result.err.push_back(line);
  return result;
}

std::string Hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// Runs a command that must fail with `exit_code` and exactly one line on stderr; returns it.
std::string ErrorLine(const std::vector<std::string>& args, int exit_code = 2) {
  RunResult r = RunHotrow(args);
  EXPECT_EQ(r.exit_code, exit_code);
  EXPECT_TRUE(r.out.empty()) << r.out.front();
  EXPECT_EQ(r.err.size(), 1u);
  return r.err.empty() ? "" : r.err.front();
}

// ---- explain ----

TEST(KeysExplainTest, PrintsEveryFieldOfAnEncodedKey) {
  keying::RowKey key;
  key.salt = 3;
  key.id_hash = 0x0123456789abcdefULL;
  key.ts_ms = 1700000000123;
  key.topic = 2;
  key.partition = 5;
  key.offset = 42;
  RunResult r = RunHotrow({"keys", "explain", Hex(keying::EncodeRowKey(key))});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.err.empty());
  EXPECT_THAT(
      r.out, ElementsAre("salt: 3", "id_hash: 0x0123456789abcdef", "ts_ms: 1700000000123",
                         "ts: 2023-11-14T22:13:20.123Z", "topic: 2", "partition: 5", "offset: 42"));
}

TEST(KeysExplainTest, DecodesExtremeFieldValues) {
  keying::RowKey key;
  key.salt = 15;
  key.id_hash = UINT64_MAX;
  key.ts_ms = 0;
  key.topic = UINT16_MAX;
  key.partition = INT32_MAX;
  key.offset = INT64_MAX;
  // Upper-case hex with a 0x prefix, as `ldb --hex` prints keys, is accepted too.
  std::string hex = Hex(keying::EncodeRowKey(key));
  for (char& c : hex) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  RunResult r = RunHotrow({"keys", "explain", "0x" + hex});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, ElementsAre("salt: 15", "id_hash: 0xffffffffffffffff", "ts_ms: 0",
                                 "ts: 1970-01-01T00:00:00.000Z", "topic: 65535",
                                 "partition: 2147483647", "offset: 9223372036854775807"));
}

TEST(KeysExplainTest, KeyOfAnIdHasItsIdHash) {
  keying::RowKey key;
  key.id_hash = keying::IdHash("device-7");
  key.ts_ms = 1;
  char expected[64];
  std::snprintf(expected, sizeof(expected), "id_hash: 0x%016llx",
                static_cast<unsigned long long>(key.id_hash));
  RunResult r = RunHotrow({"keys", "explain", Hex(keying::EncodeRowKey(key))});
  ASSERT_EQ(r.exit_code, 0);
  ASSERT_GE(r.out.size(), 2u);
  EXPECT_EQ(r.out[1], expected);
}

TEST(KeysExplainTest, SaltAtOrAboveTheConfiguredSaltsIsRefused) {
  keying::RowKey key;
  key.salt = 16;
  key.ts_ms = 5;
  const std::string hex = Hex(keying::EncodeRowKey(key));
  EXPECT_THAT(ErrorLine({"keys", "explain", hex}),
              StartsWith("hotrow: key salt 16 is out of range"));
  // With more salts configured the same key is fine.
  RunResult r = RunHotrow({"keys", "explain", hex, "--set", "keying.salts=32"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, ::testing::Contains("salt: 16"));
  // And with fewer, a smaller salt is refused.
  key.salt = 4;
  EXPECT_THAT(
      ErrorLine({"keys", "explain", "--set", "keying.salts=4", Hex(keying::EncodeRowKey(key))}),
      HasSubstr("keying.salts is 4"));
}

TEST(KeysExplainTest, SaltsComeFromTheConfigFile) {
  testing::TempDir dir;
  const std::string config = dir.Sub("c.yaml");
  std::ofstream(config) << "keying:\n  salts: 2\n";
  keying::RowKey key;
  key.salt = 2;
  EXPECT_THAT(ErrorLine({"keys", "explain", "--config", config, Hex(keying::EncodeRowKey(key))}),
              HasSubstr("keying.salts is 2"));
}

TEST(KeysExplainTest, NotHexIsAUsageError) {
  std::string hex(62, '0');
  hex[10] = 'g';
  EXPECT_THAT(ErrorLine({"keys", "explain", hex}),
              StartsWith("hotrow: key is not hex: 'g' at position 11"));
}

TEST(KeysExplainTest, OddLengthIsAUsageError) {
  EXPECT_THAT(ErrorLine({"keys", "explain", std::string(61, 'a')}),
              StartsWith("hotrow: key has an odd number of hex digits (61)"));
}

TEST(KeysExplainTest, WrongLengthIsAUsageError) {
  EXPECT_THAT(ErrorLine({"keys", "explain", std::string(60, '0')}),
              StartsWith("hotrow: key is 30 bytes (60 hex digits); a row key is 31 bytes"));
  EXPECT_THAT(ErrorLine({"keys", "explain", std::string(66, '0')}), HasSubstr("key is 33 bytes"));
  // 32 bytes is an index key's length (keying/index_key.h): all zeros is one with a bad time.
  EXPECT_THAT(ErrorLine({"keys", "explain", std::string(64, '0')}), HasSubstr("index key"));
  EXPECT_THAT(ErrorLine({"keys", "explain", ""}), StartsWith("hotrow: key is empty"));
}

TEST(KeysExplainTest, FieldsOutOfRangeAreUsageErrors) {
  keying::RowKey key;
  key.ts_ms = 10;
  const std::string good = keying::EncodeRowKey(key);

  std::string bad_time = good;  // reversed time below UINT64_MAX - INT64_MAX: a negative time
  for (int i = 9; i < 17; ++i) bad_time[i] = 0;
  EXPECT_THAT(ErrorLine({"keys", "explain", Hex(bad_time)}),
              HasSubstr("key field ts is out of range"));

  std::string bad_partition = good;  // ~partition with the top bit clear: partition >= 2^31
  bad_partition[19] = 0;
  EXPECT_THAT(ErrorLine({"keys", "explain", Hex(bad_partition)}),
              HasSubstr("key field partition is out of range"));

  std::string bad_offset = good;
  bad_offset[23] = 0;
  EXPECT_THAT(ErrorLine({"keys", "explain", Hex(bad_offset)}),
              HasSubstr("key field offset is out of range"));
}

TEST(KeysExplainTest, BadConfigIsAUsageError) {
  keying::RowKey key;
  const std::string hex = Hex(keying::EncodeRowKey(key));
  EXPECT_EQ(ErrorLine({"keys", "explain", hex, "--set", "keying.salts=300"}),
            "hotrow: keying.salts: expected an integer from 1 to 256, got 300");
  EXPECT_EQ(ErrorLine({"keys", "explain", hex, "--set", "nope.key=1"})
                .rfind("hotrow: nope.key: unknown key", 0),
            0u);
  EXPECT_EQ(ErrorLine({"keys", "explain", hex, "--config", "/nonexistent/x.yaml"}),
            "hotrow: config file /nonexistent/x.yaml: cannot read: No such file or directory");
}

TEST(KeysExplainTest, MissingArgumentIsAUsageError) {
  RunResult r = RunHotrow({"keys", "explain"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(r.err.empty());
}

// ---- with a store ----

constexpr int kSalts = 4;
constexpr int64_t kBucketMs = 60 * 1000;

// Writes `per_partition` records to each of `partitions` partitions of topic "clicks" in a new
// store, spread over two buckets, keyed the way ingest keys them.
void FillStore(const std::string& path, int partitions, int per_partition,
               std::map<int, uint64_t>* per_salt, std::map<int64_t, uint64_t>* per_bucket) {
  store::StoreOptions options;
  options.path = path;
  options.salts = kSalts;
  options.ttl_ms = 10 * kBucketMs;
  options.bucket_ms = kBucketMs;
  options.index_fields = {"site"};  // one index row per event: not a key of the counts below
  auto store = store::EventStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto topic = (*store)->TopicNumber("clicks");
  ASSERT_TRUE(topic.ok()) << topic.status().ToString();
  const int64_t now = WallClock::Default()->NowMs();
  const int64_t bucket_now = now / kBucketMs * kBucketMs;
  store::WriteBatchInput batch;
  for (int p = 0; p < partitions; ++p) {
    for (int o = 0; o < per_partition; ++o) {
      keying::RowKey key;
      const std::string id = "device-" + std::to_string(o % 7);
      key.salt = (*store)->salter().SaltOf("clicks", p, o, id);
      key.id_hash = keying::IdHash(id);
      // Half in the current bucket, half in the one before.
      key.ts_ms = (o % 2 == 0) ? bucket_now : bucket_now - kBucketMs;
      key.topic = *topic;
      key.partition = p;
      key.offset = o;
      batch.rows.push_back({keying::EncodeRowKey(key), "{}", {{"site", "s"}}});
      (*per_salt)[key.salt]++;
      (*per_bucket)[key.ts_ms]++;
    }
    batch.next_offsets[{"clicks", p}] = per_partition;
  }
  store::WriteOutcome outcome;
  ASSERT_TRUE((*store)->Write(batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, batch.rows.size());
}

TEST(KeysAnalyzeTest, CountsKeysPerSaltAndPerBucket) {
  testing::TempDir dir;
  std::map<int, uint64_t> per_salt;
  std::map<int64_t, uint64_t> per_bucket;
  // 3 partitions x 10 records: 30 keys over 4 salts, so the counts are uneven (7 or 8).
  ASSERT_NO_FATAL_FAILURE(FillStore(dir.Sub("store"), 3, 10, &per_salt, &per_bucket));
  RunResult r = RunHotrow({"keys", "analyze", "--data", dir.Sub("store"), "--set",
                           "keying.salts=" + std::to_string(kSalts)});
  ASSERT_EQ(r.exit_code, 0) << (r.err.empty() ? "" : r.err.front());
  const std::string all = [&] {
    std::string s;
    for (const auto& line : r.out) s += line + "\n";
    return s;
  }();

  double max_dev = 0;
  for (int salt = 0; salt < kSalts; ++salt) {
    const double dev =
        (static_cast<double>(per_salt[salt]) - 30.0 / kSalts) / (30.0 / kSalts) * 100;
    max_dev = std::max(max_dev, std::abs(dev));
    char row[128];
    std::snprintf(row, sizeof(row), "%-6d %14llu %+11.2f%%", salt,
                  static_cast<unsigned long long>(per_salt[salt]), dev);
    EXPECT_THAT(all, HasSubstr(std::string(row) + "\n")) << all;
  }
  for (const auto& [start, count] : per_bucket) {
    char row[128];
    std::snprintf(row, sizeof(row), "%-26s %14llu ", FormatRfc3339Ms(start).c_str(),
                  static_cast<unsigned long long>(count));
    EXPECT_THAT(all, HasSubstr(std::string(row))) << all;
  }
  // Spread ids are a column and a table of salt_by adaptive only.
  EXPECT_THAT(all, ::testing::Not(HasSubstr("spread ids"))) << all;
  char last[128];
  std::snprintf(last, sizeof(last), "max deviation from mean: %.2f%% over %d salts", max_dev,
                kSalts);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), last);
  EXPECT_GT(max_dev, 0.0);  // 30 keys over 4 salts cannot be even
  // The index postings are reported apart, with the events they list, and never counted as keys
  // above.
  EXPECT_THAT(all, HasSubstr("store " + dir.Sub("store") + ": 30 keys in ")) << all;
  EXPECT_THAT(all, HasSubstr(" index postings listing 30 events")) << all;
}

// Adds to the newest bucket of the closed store at `path`, with RocksDB itself, one index row as
// an older hotrow wrote it (tag 00) and one posting whose value does not decode.
void AddLegacyRowAndDamagedPosting(const std::string& path) {
  std::unique_ptr<testing::RawStore> raw = testing::RawStore::Open(path);
  ASSERT_NE(raw, nullptr);
  const int64_t start = WallClock::Default()->NowMs() / kBucketMs * kBucketMs;
  rocksdb::ColumnFamilyHandle* bucket = raw->Bucket(start, start + kBucketMs);
  ASSERT_NE(bucket, nullptr);
  std::string posting(keying::kIndexKeySize, '\0');
  keying::StoreBigEndian64(keying::IndexHash("site", "s"), posting.data() + 1);
  posting[keying::kIndexTagAt] = static_cast<char>(keying::kIndexTag);
  keying::EncodeKeyTail({start, 0, 0, 1000}, posting.data() + keying::kIndexTagAt + 1);
  std::string legacy = posting;
  legacy[keying::kIndexTagAt] = static_cast<char>(keying::kLegacyIndexTag);
  ASSERT_TRUE(raw->db()->Put(rocksdb::WriteOptions(), bucket, posting, "not a posting").ok());
  ASSERT_TRUE(raw->db()->Put(rocksdb::WriteOptions(), bucket, legacy, "an older row").ok());
}

// An index row of an older hotrow and a posting that does not decode are told apart, and neither
// is counted as a key.
TEST(KeysAnalyzeTest, ADamagedPostingIsNotTakenForAnOlderHotrowsIndexRow) {
  testing::TempDir dir;
  std::map<int, uint64_t> per_salt;
  std::map<int64_t, uint64_t> per_bucket;
  ASSERT_NO_FATAL_FAILURE(FillStore(dir.Sub("store"), 3, 10, &per_salt, &per_bucket));
  ASSERT_NO_FATAL_FAILURE(AddLegacyRowAndDamagedPosting(dir.Sub("store")));
  RunResult r = RunHotrow({"keys", "analyze", "--data", dir.Sub("store"), "--set",
                           "keying.salts=" + std::to_string(kSalts)});
  ASSERT_EQ(r.exit_code, 0) << (r.err.empty() ? "" : r.err.front());
  std::string all;
  for (const auto& line : r.out) all += line + "\n";
  EXPECT_THAT(all, HasSubstr("store " + dir.Sub("store") + ": 30 keys in ")) << all;
  EXPECT_THAT(all, HasSubstr(" index postings listing 30 events")) << all;
  EXPECT_THAT(all, HasSubstr("\n1 legacy index rows (an older hotrow's, not read)\n")) << all;
  EXPECT_THAT(all, HasSubstr("\n1 index postings that do not decode (damaged)\n")) << all;
}

// Under salt_by adaptive: two buckets, the newer with two hot ids among 50 cold ones (2 events
// each, never the 32 an id needs to be hot), the older with cold ids only. The values of "hot-1"
// and the cold ids hold their id (keying/row_value.h); those of "hot-2" do not decode.
void FillAdaptiveStore(const std::string& path) {
  store::StoreOptions options;
  options.path = path;
  options.salts = kSalts;
  options.salt_by = keying::SaltBy::kAdaptive;
  options.ttl_ms = 10 * kBucketMs;
  options.bucket_ms = kBucketMs;
  auto store = store::EventStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto topic = (*store)->TopicNumber("clicks");
  ASSERT_TRUE(topic.ok()) << topic.status().ToString();
  const int64_t bucket_now = WallClock::Default()->NowMs() / kBucketMs * kBucketMs;
  store::WriteBatchInput batch;
  int64_t offset = 0;
  auto add = [&](const std::string& id, int64_t ts_ms, bool value_holds_id) {
    keying::RowKey key;
    key.salt = (*store)->salter().SaltOf("clicks", 0, offset, id);  // the store may move it
    key.id_hash = keying::IdHash(id);
    key.ts_ms = ts_ms;
    key.topic = *topic;
    key.partition = 0;
    key.offset = offset++;
    batch.rows.push_back(
        {keying::EncodeRowKey(key), value_holds_id ? keying::EncodeRowValue(id, "{}") : "{}"});
  };
  for (int i = 0; i < 100; ++i) {
    add("cold-" + std::to_string(i % 50), bucket_now, true);
    add("hot-1", bucket_now, true);
    add("hot-1", bucket_now, true);
    add("hot-2", bucket_now, false);
    add("cold-" + std::to_string(i % 50), bucket_now - kBucketMs, true);
  }
  batch.next_offsets[{"clicks", 0}] = offset;
  store::WriteOutcome outcome;
  ASSERT_TRUE((*store)->Write(batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, batch.rows.size());
}

TEST(KeysAnalyzeTest, AdaptiveStoreShowsEachBucketsBalanceAndItsSpreadIds) {
  testing::TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(FillAdaptiveStore(path));
  RunResult r =
      RunHotrow({"keys", "analyze", "--data", path, "--set",
                 "keying.salts=" + std::to_string(kSalts), "--set", "keying.salt_by=adaptive"});
  ASSERT_EQ(r.exit_code, 0) << (r.err.empty() ? "" : r.err.front());
  std::string all;
  for (const auto& line : r.out) all += line + "\n";

  // What to expect, from the store itself: its per-salt event counters, and which ids it spread
  // (after the writer closed, exactly those with a row outside their home salt).
  store::StoreOptions options;
  options.path = path;
  options.salts = kSalts;
  options.salt_by = keying::SaltBy::kAdaptive;
  options.read_only = true;
  auto store = store::EventStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const store::StoreStats stats = (*store)->Stats();
  ASSERT_EQ(stats.buckets.size(), 2u);
  for (const store::BucketStats& b : stats.buckets) {
    const uint64_t largest = *std::max_element(b.salt_events.begin(), b.salt_events.end());
    char row[160];
    std::snprintf(row, sizeof(row), "%-26s %14llu %13.2f %12llu\n",
                  FormatRfc3339Ms(b.start_ms).c_str(), static_cast<unsigned long long>(b.events),
                  static_cast<double>(largest) * kSalts / static_cast<double>(b.events),
                  static_cast<unsigned long long>(b.spread_ids));
    EXPECT_THAT(all, HasSubstr(row)) << all;
  }
  EXPECT_EQ(stats.buckets[0].spread_ids, 0u);  // the older bucket: cold ids only
  const std::vector<uint64_t> spread = (*store)->Buckets()[1]->SpreadIdHashes();
  ASSERT_EQ(spread,
            (std::vector<uint64_t>{std::min(keying::IdHash("hot-1"), keying::IdHash("hot-2")),
                                   std::max(keying::IdHash("hot-1"), keying::IdHash("hot-2"))}));

  // One line per spread id: its keys in the bucket, the salts holding them, and its id when its
  // rows hold it.
  const std::string bucket = FormatRfc3339Ms(stats.buckets[1].start_ms);
  auto line_of = [&](const std::string& id, uint64_t keys, const std::string& shown) {
    char row[200];
    std::snprintf(row, sizeof(row), "%-26s 0x%016llx %14llu %6d  %s\n", bucket.c_str(),
                  static_cast<unsigned long long>(keying::IdHash(id)),
                  static_cast<unsigned long long>(keys), kSalts, shown.c_str());
    return std::string(row);
  };
  EXPECT_THAT(all, HasSubstr(line_of("hot-1", 200, "\"hot-1\""))) << all;
  EXPECT_THAT(all, HasSubstr(line_of("hot-2", 100, "(no row holds its id)"))) << all;
  EXPECT_THAT(all, ::testing::Not(HasSubstr("cold-"))) << all;
  EXPECT_THAT(r.out.back(), StartsWith("max deviation from mean: "));
}

TEST(KeysExplainTest, DecodesAnIndexKey) {
  keying::IndexKey key;
  key.value_hash = 0x0123456789abcdefULL;
  key.ts_ms = 1'700'000'000'123;
  key.topic = 2;
  key.partition = 5;
  key.offset = 77;
  RunResult r = RunHotrow({"keys", "explain", Hex(keying::EncodeIndexKey(key))});
  ASSERT_EQ(r.exit_code, 0) << (r.err.empty() ? "" : r.err.front());
  EXPECT_THAT(r.out, ::testing::Contains("kind: index posting"));
  EXPECT_THAT(r.out, ::testing::Not(::testing::Contains(::testing::StartsWith("salt: "))));
  EXPECT_THAT(r.out, ::testing::Contains("value_hash: 0x0123456789abcdef"));
  EXPECT_THAT(r.out, ::testing::Contains("ts_ms: 1700000000123"));
  EXPECT_THAT(r.out, ::testing::Contains("partition: 5"));
  EXPECT_THAT(r.out, ::testing::Contains("offset: 77"));
  // 32 bytes without the tag is neither kind of key.
  std::string bytes = keying::EncodeIndexKey(key);
  bytes[9] = '\x80';
  r = RunHotrow({"keys", "explain", Hex(bytes)});
  EXPECT_EQ(r.exit_code, 2);
  // A legacy index row (tag 00) is named, not decoded.
  bytes[9] = '\0';
  r = RunHotrow({"keys", "explain", Hex(bytes)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::Contains(::testing::HasSubstr("legacy index row")));
}

TEST(KeysAnalyzeTest, ExplainWithDataPrintsTheTopicName) {
  testing::TempDir dir;
  std::map<int, uint64_t> per_salt;
  std::map<int64_t, uint64_t> per_bucket;
  ASSERT_NO_FATAL_FAILURE(FillStore(dir.Sub("store"), 1, 2, &per_salt, &per_bucket));
  keying::RowKey key;
  key.salt = 1;
  key.ts_ms = 7;
  key.topic = 0;  // the first topic a store numbers
  RunResult r = RunHotrow({"keys", "explain", Hex(keying::EncodeRowKey(key)), "--data",
                           dir.Sub("store"), "--set", "keying.salts=4"});
  ASSERT_EQ(r.exit_code, 0) << (r.err.empty() ? "" : r.err.front());
  EXPECT_THAT(r.out, ::testing::Contains("topic_name: clicks"));
}

TEST(KeysAnalyzeTest, OtherSaltsThanTheStoreIsAUsageError) {
  testing::TempDir dir;
  std::map<int, uint64_t> per_salt;
  std::map<int64_t, uint64_t> per_bucket;
  ASSERT_NO_FATAL_FAILURE(FillStore(dir.Sub("store"), 1, 2, &per_salt, &per_bucket));
  EXPECT_THAT(ErrorLine({"keys", "analyze", "--data", dir.Sub("store"), "--set", "keying.salts=8"}),
              HasSubstr("cannot open the store"));
}

TEST(KeysAnalyzeTest, MissingStoreIsAUsageError) {
  testing::TempDir dir;
  EXPECT_EQ(ErrorLine({"keys", "analyze", "--data", dir.Sub("none")}),
            "hotrow: --data " + dir.Sub("none") + ": no such directory");
}

TEST(KeysAnalyzeTest, MissingDataFlagIsAUsageError) {
  RunResult r = RunHotrow({"keys", "analyze"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
}  // namespace hotrow
