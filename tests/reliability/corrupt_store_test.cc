// Damaged and foreign stores through the real binary: `hotrow serve` and `hotrow keys analyze`
// on copies of a real store damaged in one way each, on a foreign RocksDB database, on unrelated
// files and on a path that is a file. Each must end with the contract's exit code (2: the
// configuration points at something that is not a hotrow store; 1: a runtime failure such as a
// damaged store) and one clear stderr line, never a signal or a hang; damage found only at read
// time must fail the read loudly, never answer with part of the data as if it were all.
// tests/store/event_store_test.cc covers the same refusals at the store API.

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "ingest/embedded_kafka.h"
#include "keying/row_key.h"
#include "keying/row_value.h"
#include "store/event_store.h"
#include "store/store_metadata.h"
#include "tests/reliability/disk_support.h"
#include "tests/support/raw_store.h"
#include "tests/support/temp_dir.h"

namespace hotrow::corrupt_store_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CommandResult;
using testing::ServeProcess;
using testing::TempDir;

constexpr char kTopic[] = "events";
constexpr int kIds = 20;
constexpr int kEvents = 4000;

// Files of `dir` whose name ends with `suffix` or starts with `prefix`, largest first.
std::vector<fs::path> FilesOf(const std::string& dir, const std::string& prefix,
                              const std::string& suffix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if ((!prefix.empty() && name.rfind(prefix, 0) == 0) ||
        (!suffix.empty() && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end(),
            [](const fs::path& a, const fs::path& b) { return fs::file_size(a) > fs::file_size(b); });
  return out;
}

void Truncate(const fs::path& file) { fs::resize_file(file, fs::file_size(file) / 2); }

// Overwrites `n` bytes at `offset` with their complement.
void FlipBytes(const fs::path& file, std::streamoff offset, int n) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes(static_cast<size_t>(n), '\0');
  f.seekg(offset);
  f.read(bytes.data(), n);
  for (char& c : bytes) c = static_cast<char>(~c);
  f.seekp(offset);
  f.write(bytes.data(), n);
}

// One line on stderr, naming the problem: the last non-empty line starts "hotrow:" and no
// other line does (log lines from serve come before it and are allowed).
std::string LastLine(const std::string& text) {
  std::string last;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) last = text.substr(begin, end - begin);
    begin = end + 1;
  }
  return last;
}

class CorruptStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pristine_dir_ = new TempDir();
    BuildStore(pristine_dir_->Sub("store"));
  }
  static void TearDownTestSuite() {
    delete pristine_dir_;
    pristine_dir_ = nullptr;
  }

  // A hotrow store with kEvents events over kIds ids in two buckets of the last minutes, flushed
  // to table files (the store itself leaves them in its WAL until a memtable fills).
  static void BuildStore(const std::string& path) {
    store::StoreOptions o;
    o.path = path;
    {
      auto opened = store::EventStore::Open(o);
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      auto& s = *opened;
      const Result<uint16_t> topic = s->TopicNumber(kTopic);
      ASSERT_TRUE(topic.ok());
      const int64_t now = WallClock::Default()->NowMs();
      store::WriteBatchInput in;
      for (int64_t off = 0; off < kEvents; ++off) {
        const std::string id = "dev-" + std::to_string(off % kIds);
        const int64_t ts = now - 120'000 + off * 20;  // spans two or three one-minute buckets
        keying::RowKey key{s->salter().SaltOf(kTopic, 0, off, id), keying::IdHash(id), ts,
                           *topic, 0, off};
        const std::string payload =
            json{{"event_id", id}, {"ts", ts}, {"pad", std::string(200, 'a' + off % 26)}}.dump();
        in.rows.push_back({keying::EncodeRowKey(key), keying::EncodeRowValue(id, payload)});
        expected_[id].insert(off);
      }
      in.next_offsets[{kTopic, 0}] = kEvents;
      store::WriteOutcome out;
      ASSERT_TRUE(s->Write(in, &out).ok());
      ASSERT_EQ(out.stored, static_cast<size_t>(kEvents));
    }
    // Flushed by RocksDB itself, with the store's merge operator for the counters (RawStore).
    std::unique_ptr<testing::RawStore> raw = testing::RawStore::Open(path);
    ASSERT_NE(raw, nullptr);
    ASSERT_TRUE(raw->db()->Flush(rocksdb::FlushOptions(), raw->handles()).ok());
    raw.reset();
    ASSERT_GE(FilesOf(path, "", ".sst").size(), 2u);
  }

  // A copy of the pristine store, damaged by `damage`.
  std::string DamagedCopy(const std::function<void(const std::string&)>& damage) {
    const std::string path = dir_.Sub("store");
    fs::copy(pristine_dir_->Sub("store"), path, fs::copy_options::recursive);
    damage(path);
    return path;
  }

  void WriteConfig(const std::string& store_path) {
    std::ofstream config(dir_.Sub("hotrow.yaml"));
    config << "kafka:\n  brokers: " << kafka_->bootstrap() << "\n  topics: [" << kTopic
           << "]\n  group_id: corrupt\n"
           << "store:\n  path: " << store_path << "\n"
           << "http:\n  listen: 127.0.0.1:0\n";
  }

  // `hotrow serve` must exit with `code` and a clear last line, quickly.
  void ExpectServeFails(const std::string& store_path, std::set<int> codes,
                        const std::string& mentions) {
    WriteConfig(store_path);
    const CommandResult r = testing::RunHotrow({"serve", "--config", dir_.Sub("hotrow.yaml")},
                                               dir_.Sub("serve.err"), std::chrono::seconds(30));
    EXPECT_TRUE(codes.count(r.exit_code)) << "exit code " << r.exit_code << "\n" << r.stderr_text;
    const std::string line = LastLine(r.stderr_text);
    EXPECT_NE(line.find(mentions), std::string::npos) << "serve's last line: " << line;
  }

  // `hotrow keys analyze --data DIR` must exit with `code` and exactly one stderr line.
  void ExpectAnalyzeFails(const std::string& store_path, std::set<int> codes,
                          const std::string& mentions) {
    const CommandResult r = testing::RunHotrow({"keys", "analyze", "--data", store_path},
                                               dir_.Sub("analyze.err"), std::chrono::seconds(30));
    EXPECT_TRUE(codes.count(r.exit_code)) << "exit code " << r.exit_code << "\n" << r.stderr_text;
    EXPECT_EQ(r.stderr_text.rfind("hotrow: ", 0), 0u) << r.stderr_text;
    EXPECT_EQ(r.stderr_text.find('\n'), r.stderr_text.size() - 1) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(mentions), std::string::npos) << r.stderr_text;
  }

  // The contract's codes: 2 when the path is not a hotrow store (a configuration error), 1 when
  // it is one but damaged (a runtime failure).
  // keys analyze succeeds on the store, and serve opens it and answers every query in full.
  void ExpectOpensAndAnswersInFull(const std::string& path) {
    const CommandResult r =
        testing::RunHotrow({"keys", "analyze", "--data", path}, dir_.Sub("analyze.err"));
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    WriteConfig(path);
    ServeProcess serve(dir_.Sub("hotrow.yaml"), dir_.Sub("serve.log"));
    ASSERT_TRUE(serve.AwaitStarted()) << serve.Log();
    EXPECT_EQ(QueryEveryId(path, &serve), 0);
    EXPECT_EQ(serve.Stop(), 0) << serve.Log();
  }

  void ExpectBothFail(const std::string& store_path, std::set<int> codes,
                      const std::string& mentions) {
    {
      SCOPED_TRACE("hotrow serve");
      ExpectServeFails(store_path, codes, mentions);
    }
    {
      SCOPED_TRACE("hotrow keys analyze");
      ExpectAnalyzeFails(store_path, codes, mentions);
    }
  }

  void SetUp() override {
    auto kafka = ingest::EmbeddedKafka::Start(kTopic, 1);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
  }

  // Starts serve on `store_path` and checks every id's range query: either the exact events of
  // that id, or a 5xx with a JSON error; returns how many failed.
  int QueryEveryId(const std::string& store_path, ServeProcess* serve) {
    (void)store_path;
    int failed = 0;
    const int64_t to = WallClock::Default()->NowMs() + 3'600'000;
    for (const auto& [id, offsets] : expected_) {
      auto [status, body] = serve->Get("/v1/events/" + id + "?from=0&to=" + std::to_string(to) +
                                       "&limit=100000");
      const json j = json::parse(body, nullptr, false);
      if (status == 200) {
        std::set<int64_t> got;
        for (const auto& e : j.at("events")) got.insert(e.at("offset").get<int64_t>());
        EXPECT_EQ(got, offsets) << "a partial answer for " << id;
      } else {
        ++failed;
        EXPECT_GE(status, 500) << body;
        EXPECT_TRUE(j.is_object() && j.contains("error")) << body;
      }
    }
    return failed;
  }

  static TempDir* pristine_dir_;
  static std::map<std::string, std::set<int64_t>> expected_;
  TempDir dir_;
  std::unique_ptr<ingest::EmbeddedKafka> kafka_;
};

TempDir* CorruptStoreTest::pristine_dir_ = nullptr;
std::map<std::string, std::set<int64_t>> CorruptStoreTest::expected_;

TEST_F(CorruptStoreTest, TheIntactCopyOpensAndAnswersInFull) {
  const std::string path = DamagedCopy([](const std::string&) {});
  ExpectOpensAndAnswersInFull(path);
}

TEST_F(CorruptStoreTest, GarbageInCurrent) {
  ExpectBothFail(DamagedCopy([](const std::string& p) {
                   std::ofstream(p + "/CURRENT", std::ios::trunc) << "\x01garbage\xff";
                 }),
                 {1}, "CURRENT");
}

TEST_F(CorruptStoreTest, TruncatedManifest) {
  // RocksDB reads a MANIFEST cut short as a shorter valid one. What is lost decides the outcome:
  // records the WAL still covers (the store opens, complete), the format (refused as not a hotrow
  // store, exit 2), or table files of buckets (refused as damaged, exit 1: rows no longer match
  // the bucket's counters). Never a partial answer.
  const std::string path = DamagedCopy([](const std::string& p) {
    Truncate(FilesOf(p, "MANIFEST-", "").front());
  });
  WriteConfig(path);
  ServeProcess serve(dir_.Sub("hotrow.yaml"), dir_.Sub("serve.log"));
  if (serve.AwaitStarted()) {
    EXPECT_EQ(QueryEveryId(path, &serve), 0);
    EXPECT_EQ(serve.Stop(), 0) << serve.Log();
  } else {
    // 2 when the format was lost (not a hotrow store), 1 when buckets lost rows (damaged).
    const int code = serve.Stop();
    EXPECT_TRUE(code == 1 || code == 2) << code << "\n" << serve.Log();
    ExpectAnalyzeFails(path, {1, 2}, "store");
  }
}

TEST_F(CorruptStoreTest, DeletedTableFile) {
  ExpectBothFail(DamagedCopy([](const std::string& p) {
                   fs::remove(FilesOf(p, "", ".sst").front());
                 }),
                 {1}, "No such file");
}

TEST_F(CorruptStoreTest, TruncatedTableFile) {
  ExpectBothFail(DamagedCopy([](const std::string& p) { Truncate(FilesOf(p, "", ".sst").front()); }),
                 {1}, ".sst");
}

TEST_F(CorruptStoreTest, MissingOptionsFileIsHarmless) {
  // RocksDB needs no OPTIONS file to open (hotrow passes its options); it writes a new one.
  const std::string path = DamagedCopy([](const std::string& p) {
    for (const auto& f : FilesOf(p, "OPTIONS-", "")) fs::remove(f);
  });
  ExpectOpensAndAnswersInFull(path);
}

TEST_F(CorruptStoreTest, FlippedBytesInADataBlockAreFoundAtOpen) {
  // Opening reads every row once to check it against the bucket's counters, so a data block
  // whose checksum fails is found then: both commands refuse the store as damaged (exit 1)
  // instead of answering from the rest of it.
  ExpectBothFail(DamagedCopy([](const std::string& p) {
                   FlipBytes(FilesOf(p, "", ".sst").front(), 1000, 8);
                 }),
                 {1}, "orrupt");
}

TEST_F(CorruptStoreTest, AForeignRocksDbIsRefused) {
  const std::string path = dir_.Sub("foreign");
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, path, &db).ok());
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "key" + std::to_string(i * 7919), "v").ok());
    }
    delete db;
  }
  ExpectBothFail(path, {2}, "not a hotrow store");
}

TEST_F(CorruptStoreTest, ADirectoryOfUnrelatedFilesIsRefused) {
  const std::string path = dir_.Sub("unrelated");
  fs::create_directories(path + "/sub");
  std::ofstream(path + "/notes.txt") << "not a store\n";
  std::ofstream(path + "/sub/data.bin") << std::string(4096, '\x7f');
  ExpectBothFail(path, {2}, path);
}

TEST_F(CorruptStoreTest, APathThatIsARegularFileIsRefused) {
  const std::string path = dir_.Sub("a-file");
  std::ofstream(path) << "just a file\n";
  ExpectBothFail(path, {2}, path);
}

TEST_F(CorruptStoreTest, AnUnreadableDirectoryIsRefused) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads a chmod 000 directory anyway";
  const std::string path = DamagedCopy([](const std::string&) {});
  fs::permissions(path, fs::perms::none);
  ExpectBothFail(path, {1}, path);
  fs::permissions(path, fs::perms::owner_all);
}

}  // namespace
}  // namespace hotrow::corrupt_store_test
