// Every query answers the same under salt_by: adaptive as under salt_by: id and salt_by: record on
// the same records, and as the brute-force oracle (tests/support/oracle.h): with Zipf-skewed ids
// (s = 1.1, so that a few ids are hot in every bucket) and with uniform ones; for an adaptive store
// written like the others, and for one written by two writers at once (each its own partitions,
// as the Ingestor's writers are) with other batch boundaries, restarted midway, fed a replay of
// what it had stored already and an old batch once more; and again after every store is reopened.
// Under adaptive, a cold id costs at most one seek per bucket, even when it shares its id filter
// slot with a hot id (its hash's low bits equal): the bucket knows the id was not spread.
//
// A failure names the distribution, the store, the query and the seed; rerun with
// HOTROW_TEST_SEED=<seed>.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "keying/row_key.h"
#include "keying/salter.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/support/event_gen.h"
#include "tests/support/oracle.h"
#include "tests/support/temp_dir.h"

namespace hotrow::adaptive_salting_oracle_test {
namespace {

using keying::SaltBy;
using query::Event;
using query::Order;
using testing::TestEvent;

constexpr int64_t kBucketMs = 1000;
constexpr int64_t kBuckets = 8;
constexpr int64_t kT0 = 1'700'000'000'000;  // a multiple of kBucketMs
constexpr int kSalts = 16;
constexpr int kIds = 300;
constexpr int kEvents = 6000;
constexpr int kPartitions = 4;  // per topic
constexpr uint64_t kDefaultSeed = 20261125;
constexpr int kMaxReportedFailures = 8;
const char* const kTopics[] = {"events", "clicks"};

enum class Ids { kZipf, kUniform };

std::string IdsName(Ids ids) { return ids == Ids::kZipf ? "zipf" : "uniform"; }

// One store under test and its engine.
struct Subject {
  std::string name;
  store::StoreOptions options;
  std::unique_ptr<store::EventStore> store = nullptr;
  std::unique_ptr<query::QueryEngine> engine = nullptr;
};

class AdaptiveSaltingOracleTest : public ::testing::TestWithParam<Ids> {
 protected:
  void SetUp() override {
    seed_ = testing::TestSeed(kDefaultSeed) * 2 + (GetParam() == Ids::kZipf ? 0 : 1);
    rng_.seed(seed_);
    for (int i = 0; i < kIds; ++i) ids_.push_back("dev-" + std::to_string(i));
    GenerateEvents();
    // Cold ids whose hash shares its low 16 bits with the hottest id's: the same slot of every
    // bucket's id filter (65536 slots or fewer here), which then names every salt of the hot id.
    const uint64_t hot_hash = keying::IdHash(ids_[0]);
    for (uint64_t n = 0; twins_.size() < 2; ++n) {
      const std::string id = "twin-" + std::to_string(n);
      if ((keying::IdHash(id) & 0xFFFF) == (hot_hash & 0xFFFF)) twins_.push_back(id);
    }
    for (const std::string& twin : twins_) {
      for (int64_t b = 0; b < kBuckets; ++b) AddEvent(twin, kT0 + b * kBucketMs + 500);
    }
  }

  void AddEvent(const std::string& id, int64_t ts) {
    TestEvent e;
    e.id = id;
    e.ts_ms = ts;
    e.topic = kTopics[rng_() % 2];
    e.partition = static_cast<int32_t>(rng_() % kPartitions);
    e.offset = next_offset_[{e.topic, e.partition}]++;
    e.payload = "{\"n\":" + std::to_string(events_.size()) + "}";
    events_.push_back(e);
  }

  // kEvents events over kBuckets buckets in time order, a few times shared by several events.
  void GenerateEvents() {
    std::vector<double> cdf;
    double total = 0;
    for (int i = 0; i < kIds; ++i) {
      total += GetParam() == Ids::kZipf ? std::pow(i + 1, -1.1) : 1.0;
      cdf.push_back(total);
    }
    std::uniform_real_distribution<double> u(0, total);
    for (int i = 0; i < kEvents; ++i) {
      const size_t k =
          static_cast<size_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng_)) - cdf.begin());
      const int64_t ts = kT0 + static_cast<int64_t>(i) * kBuckets * kBucketMs / kEvents / 3 * 3;
      AddEvent(ids_[std::min<size_t>(k, kIds - 1)], ts);
    }
  }

  store::StoreOptions Options(const std::string& name, SaltBy by) {
    store::StoreOptions options;
    options.path = dir_.Sub(name);
    options.ttl_ms = 100 * kBucketMs;
    options.bucket_ms = kBucketMs;
    options.salts = kSalts;
    options.salt_by = by;
    options.hot = keying::HotRule{0.02, 8};
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    return options;
  }

  void Open(Subject* s) {
    s->engine.reset();
    s->store.reset();
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(s->options);
    ASSERT_TRUE(store.ok()) << s->name << ": " << store.status().ToString();
    s->store = std::move(store).value();
    // Topic numbers in one order in every store: ties in time order by them.
    for (const char* topic : kTopics) ASSERT_TRUE(s->store->TopicNumber(topic).ok());
    query::QueryOptions q;
    q.threads = 2;
    q.chunk_events = 5;
    s->engine = std::make_unique<query::QueryEngine>(s->store.get(), q);
  }

  // Writes events[from, to) in batches of random sizes up to `max_batch`; returns the batches.
  std::vector<std::vector<TestEvent>> WriteInBatches(store::EventStore* store,
                                                     const std::vector<TestEvent>& events,
                                                     size_t from, size_t to, size_t max_batch,
                                                     uint64_t seed, size_t* duplicates) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<TestEvent>> batches;
    for (size_t at = from; at < to;) {
      const size_t n = std::min(to - at, 1 + rng() % max_batch);
      batches.emplace_back(events.begin() + static_cast<ptrdiff_t>(at),
                           events.begin() + static_cast<ptrdiff_t>(at + n));
      at += n;
      store::WriteOutcome outcome;
      Status st = testing::WriteEvents(store, batches.back(), &outcome);
      EXPECT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(outcome.expired + outcome.future, 0u);
      *duplicates += outcome.duplicate;
    }
    return batches;
  }

  void Fail(const std::string& what) {
    if (++failures_ <= kMaxReportedFailures) {
      ADD_FAILURE() << "[" << IdsName(GetParam()) << ", seed " << testing::TestSeed(kDefaultSeed)
                    << "] " << what;
    }
  }

  // Every store's answer to one query against the oracle's.
  template <typename Ask>
  void Compare(const std::string& what, const std::vector<Event>& expected, Ask&& ask) {
    ++cases_;
    nonempty_ += !expected.empty();
    for (Subject* s : subjects_) {
      Result<std::vector<Event>> got = ask(*s->engine);
      if (!got.ok()) {
        Fail(s->name + ": " + what + " failed: " + got.status().ToString());
        continue;
      }
      const std::string diff = testing::DiffEvents(expected, *got);
      if (!diff.empty()) Fail(s->name + ": " + what + ": " + diff);
    }
  }

  void CheckAllQueries(const std::string& stage) {
    const int64_t w = subjects_[0]->store->WindowStartMs();
    std::vector<std::string> ids = ids_;
    ids.insert(ids.end(), twins_.begin(), twins_.end());
    ids.push_back("absent");
    std::uniform_int_distribution<int64_t> t(kT0 - kBucketMs, kT0 + (kBuckets + 1) * kBucketMs);
    for (const std::string& id : ids) {
      for (int n : {1, 10, static_cast<int>(1 + rng_() % 400)}) {
        Compare(stage + " Latest(" + id + ", " + std::to_string(n) + ")", oracle_.Latest(id, n, w),
                [&](query::QueryEngine& e) { return e.Latest(id, n); });
      }
    }
    for (int i = 0; i < 200; ++i) {
      const std::string& id = i % 4 == 0 ? ids_[0] : ids[rng_() % ids.size()];
      int64_t from = t(rng_), to = t(rng_);
      if (from > to) std::swap(from, to);
      ++to;
      // Small limits take the calling thread's path, large ones the pool's.
      const int64_t limit = i % 2 == 0 ? 1 + static_cast<int64_t>(rng_() % 20)
                                       : 257 + static_cast<int64_t>(rng_() % 2000);
      const Order order = i % 3 == 0 ? Order::kAsc : Order::kDesc;
      Compare(stage + " Range(" + id + ", " + std::to_string(from - kT0) + ", " +
                  std::to_string(to - kT0) + ", " + std::to_string(limit) +
                  (order == Order::kAsc ? ", asc)" : ", desc)"),
              oracle_.Range(id, from, to, limit, order, w),
              [&](query::QueryEngine& e) { return e.Range(id, from, to, limit, order); });
    }
    for (int i = 0; i < 6; ++i) {
      int64_t from = t(rng_), to = t(rng_);
      if (from > to) std::swap(from, to);
      ++to;
      if (i == 0) from = 0, to = INT64_MAX;
      Compare(stage + " Scan(" + std::to_string(from) + ", " + std::to_string(to) + ")",
              oracle_.Scan(from, to, w), [&](query::QueryEngine& e) -> Result<std::vector<Event>> {
                std::mutex mu;
                std::vector<Event> got;
                Status st = e.Scan(from, to, query::kNoLimit, [&](const Event& ev) {
                  std::lock_guard lock(mu);
                  got.push_back(ev);
                  return true;
                });
                if (!st.ok()) return st;
                testing::Oracle::SortCanonical(&got);
                return got;
              });
    }
  }

  // Under adaptive: latest-10 of an id never spread seeks at most one salt per bucket, even for
  // the twins whose filter slot a hot id shares; and the hot id is spread somewhere (Zipf).
  void CheckSeeksOfColdIds(Subject* s) {
    for (const std::string& id : twins_) {
      const query::QueryWorkStats before = s->engine->Work();
      ASSERT_TRUE(s->engine->Latest(id, 10).ok());
      const uint64_t seeks = s->engine->Work().seeks - before.seeks;
      EXPECT_LE(seeks, s->store->Buckets().size()) << s->name << ": Latest(" << id << ", 10)";
    }
    size_t spread = 0;
    for (const auto& bucket : s->store->Buckets()) {
      spread += bucket->SpreadsId(keying::IdHash(ids_[0]));
      for (const std::string& id : twins_) {
        EXPECT_FALSE(bucket->SpreadsId(keying::IdHash(id))) << s->name << ": " << id;
      }
    }
    if (GetParam() == Ids::kZipf) {
      EXPECT_EQ(spread, s->store->Buckets().size()) << s->name;
    }
  }

  // No record is stored twice, whatever the writers did.
  void CheckEachRecordOnce(Subject* s) {
    Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(*s->store);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    std::set<std::tuple<std::string, int32_t, int64_t>> seen;
    for (const auto& row : *rows) {
      EXPECT_TRUE(seen.emplace(row.event.topic, row.event.partition, row.event.offset).second)
          << s->name << ": stored twice: " << testing::Describe(row.event);
    }
    EXPECT_EQ(rows->size(), events_.size()) << s->name;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  testing::TempDir dir_;
  ManualClock clock_{kT0 + (kBuckets + 1) * kBucketMs};
  std::vector<std::string> ids_;    // ids_[0] is the chattiest under Zipf
  std::vector<std::string> twins_;  // cold ids in ids_[0]'s id filter slot
  std::vector<TestEvent> events_;   // offsets rise per partition in this order
  std::map<store::TopicPartition, int64_t> next_offset_;
  testing::Oracle oracle_;
  std::vector<Subject*> subjects_;
  int failures_ = 0;
  int cases_ = 0;
  int nonempty_ = 0;
};

TEST_P(AdaptiveSaltingOracleTest, EveryQueryAnswersTheSameAsIdAndRecordAcrossRestartsAndReplays) {
  Subject record{"record", Options("record", SaltBy::kRecord)};
  Subject id{"id", Options("id", SaltBy::kId)};
  Subject adaptive{"adaptive", Options("adaptive", SaltBy::kAdaptive)};
  Subject lanes{"adaptive by 2 writers, restarted, replayed", Options("lanes", SaltBy::kAdaptive)};
  subjects_ = {&record, &id, &adaptive, &lanes};
  for (Subject* s : subjects_) ASSERT_NO_FATAL_FAILURE(Open(s));

  // The same batches into the first three, one writer.
  size_t duplicates = 0;
  for (Subject* s : {&record, &id, &adaptive}) {
    WriteInBatches(s->store.get(), events_, 0, events_.size(), 300, seed_, &duplicates);
  }
  EXPECT_EQ(duplicates, 0u);

  // The fourth by two writers at once, each its own partitions and its own batches.
  std::vector<std::vector<TestEvent>> lane_events(2);
  for (const TestEvent& e : events_) lane_events[static_cast<size_t>(e.partition % 2)].push_back(e);
  auto run_lanes = [&](double from, double to, uint64_t seed) {
    std::vector<size_t> dups(2, 0);
    std::vector<std::thread> writers;
    for (size_t l = 0; l < 2; ++l) {
      writers.emplace_back([&, l] {
        const std::vector<TestEvent>& mine = lane_events[l];
        const auto at = [&](double share) {
          return static_cast<size_t>(share * static_cast<double>(mine.size()));
        };
        WriteInBatches(lanes.store.get(), mine, at(from), at(to), 60 + 77 * l, seed + l, &dups[l]);
      });
    }
    for (auto& t : writers) t.join();
    return dups[0] + dups[1];
  };
  EXPECT_EQ(run_lanes(0, 0.6, seed_ + 10), 0u);
  // A restart, then Kafka delivers again from before what was stored, in other batches.
  ASSERT_NO_FATAL_FAILURE(Open(&lanes));
  size_t replayed = 0;
  for (const auto& mine : lane_events) {
    replayed += static_cast<size_t>(0.6 * static_cast<double>(mine.size())) -
                static_cast<size_t>(0.35 * static_cast<double>(mine.size()));
  }
  EXPECT_EQ(run_lanes(0.35, 1.0, seed_ + 20), replayed);
  // And an old batch once more.
  duplicates = 0;
  WriteInBatches(lanes.store.get(), lane_events[1], 0, 50, 50, seed_ + 30, &duplicates);
  EXPECT_EQ(duplicates, 50u);

  for (const TestEvent& e : events_) {
    oracle_.Add(Event{e.id, e.ts_ms, e.topic, e.partition, e.offset, e.payload},
                e.topic == kTopics[0] ? 0 : 1);
  }
  size_t spread = 0;
  for (const auto& bucket : adaptive.store->Buckets()) spread += bucket->spread_ids();
  std::printf("[adaptive oracle] %s ids, seed %llu: %zu events, %zu buckets, %zu ids spread\n",
              IdsName(GetParam()).c_str(), static_cast<unsigned long long>(seed_), events_.size(),
              adaptive.store->Buckets().size(), spread);
  if (GetParam() == Ids::kZipf) {
    EXPECT_GE(spread, 2 * static_cast<size_t>(kBuckets)) << "the hot ids were not spread";
  } else {
    EXPECT_LE(spread, static_cast<size_t>(kBuckets)) << "uniform ids should stay at home";
  }

  for (Subject* s : {&adaptive, &lanes}) {
    ASSERT_NO_FATAL_FAILURE(CheckEachRecordOnce(s));
    ASSERT_NO_FATAL_FAILURE(CheckSeeksOfColdIds(s));
  }
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("written:"));
  for (Subject* s : subjects_) ASSERT_NO_FATAL_FAILURE(Open(s));
  for (Subject* s : {&adaptive, &lanes}) ASSERT_NO_FATAL_FAILURE(CheckSeeksOfColdIds(s));
  ASSERT_NO_FATAL_FAILURE(CheckAllQueries("reopened:"));
  EXPECT_EQ(failures_, 0) << failures_ << " answers of " << cases_ << " queries x "
                          << subjects_.size() << " stores differ from the oracle";
  std::printf("[adaptive oracle] %d queries on %zu stores, %d with a non-empty answer\n", cases_,
              subjects_.size(), nonempty_);
}

INSTANTIATE_TEST_SUITE_P(Ids, AdaptiveSaltingOracleTest,
                         ::testing::Values(Ids::kZipf, Ids::kUniform),
                         [](const ::testing::TestParamInfo<Ids>& info) {
                           return IdsName(info.param);
                         });

}  // namespace
}  // namespace hotrow::adaptive_salting_oracle_test
