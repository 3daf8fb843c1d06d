// The bucketed event store against real RocksDB in a temporary directory: writing and reading
// back, replays, offsets and topic numbers across reopen, refusing incompatible or foreign
// directories, stats, the stream clock and read-only opening. Expiry is in
// event_store_expiry_test.cc.

#include "tests/store/event_store_test_base.h"

namespace hotrow::store_test {
namespace {

TEST_F(EventStoreTest, WrittenEventsReadBackFromTheBucketOfTheirTime) {
  ASSERT_NO_FATAL_FAILURE(Open());
  std::mt19937_64 rng(testing::TestSeed(1));
  const std::vector<std::string> ids = testing::TrickyIds(&rng);
  std::vector<TestEvent> events;
  for (int i = 0; i < 400; ++i) {
    // Times across six buckets, many on bucket edges.
    const int64_t ts =
        kT0 + (i % 6) * kBucketMs +
        (i % 4 == 0 ? 0 : (i % 4 == 1 ? kBucketMs - 1 : static_cast<int64_t>(rng() % kBucketMs)));
    events.push_back(Ev(ids[i % ids.size()], ts, i % 2 ? "alpha" : "beta", i % 3));
  }
  for (size_t at = 0; at < events.size(); at += 130) {
    std::vector<TestEvent> batch(events.begin() + at,
                                 events.begin() + std::min(events.size(), at + 130));
    WriteOutcome outcome = Write(batch);
    EXPECT_EQ(outcome.stored, batch.size());
  }
  const std::vector<testing::StoredRow> rows = Rows();
  EXPECT_EQ(DiffSets(Sorted(events), EventsOf(rows)), "");

  for (const auto& row : rows) {
    EXPECT_LE(row.bucket_start_ms, row.event.ts_ms) << testing::Describe(row.event);
    EXPECT_LT(row.event.ts_ms, row.bucket_end_ms) << testing::Describe(row.event);
    EXPECT_EQ(row.salt, store_->salter().SaltOf(row.event.topic, row.event.partition,
                                                row.event.offset, row.event.id));
    EXPECT_EQ(row.id_hash, keying::IdHash(row.event.id));
  }
  const auto buckets = store_->Buckets();
  ASSERT_EQ(buckets.size(), 6u);
  for (size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_EQ(buckets[i]->start_ms(), kT0 + static_cast<int64_t>(i) * kBucketMs);
    EXPECT_EQ(buckets[i]->end_ms() - buckets[i]->start_ms(), kBucketMs);
  }

  // Backward iteration is the exact reverse, and a range limited to one id prefix holds exactly
  // that id's rows of that salt.
  for (const auto& bucket : buckets) {
    std::vector<std::string> forward;
    std::vector<std::string> backward;
    auto it = bucket->NewIterator(keying::KeyRange{"", ""}, false);
    for (it->SeekToFirst(); it->Valid(); it->Next()) forward.emplace_back(it->key());
    ASSERT_TRUE(it->status().ok()) << it->status().ToString();
    for (it->SeekToLast(); it->Valid(); it->Prev()) backward.emplace_back(it->key());
    ASSERT_TRUE(it->status().ok()) << it->status().ToString();
    std::reverse(backward.begin(), backward.end());
    EXPECT_EQ(forward, backward) << "bucket " << bucket->start_ms();
    EXPECT_TRUE(std::is_sorted(forward.begin(), forward.end()));
  }
  const std::string& id = ids[1];
  for (int salt = 0; salt < store_->salter().salts(); ++salt) {
    std::vector<TestEvent> want;
    for (const auto& row : rows) {
      if (row.event.id == id && row.salt == salt) want.push_back(row.event);
    }
    std::vector<TestEvent> got;
    for (const auto& bucket : buckets) {
      auto it = bucket->NewIterator(
          keying::IdKeyRange(static_cast<uint8_t>(salt), keying::IdHash(id)), true);
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        std::string_view value_id;
        std::string_view payload;
        ASSERT_TRUE(keying::DecodeRowValue(it->value(), &value_id, &payload));
        keying::RowKey key;
        ASSERT_TRUE(keying::DecodeRowKey(it->key(), &key));
        got.push_back(TestEvent{std::string(value_id), key.ts_ms, *store_->TopicName(key.topic),
                                key.partition, key.offset, std::string(payload)});
      }
    }
    EXPECT_EQ(DiffSets(Sorted(want), Sorted(got)), "") << "salt " << salt;
  }
}

TEST_F(EventStoreTest, ReplayedBatchChangesNothingVisible) {
  ASSERT_NO_FATAL_FAILURE(Open());
  std::vector<TestEvent> batch;
  for (int i = 0; i < 60; ++i)
    batch.push_back(Ev("dev-" + std::to_string(i % 7), kT0 + i * 500, "t", i % 2));
  WriteOutcome first = Write(batch);
  EXPECT_EQ(first.stored, 60u);
  EXPECT_EQ(first.duplicate, 0u);
  const auto rows_before = EventsOf(Rows());
  const store::StoreStats stats_before = store_->Stats();
  const auto offsets_before = store_->StoredOffsets();

  WriteOutcome replay = Write(batch);
  EXPECT_EQ(replay.stored, 0u);
  EXPECT_EQ(replay.duplicate, 60u);
  EXPECT_EQ(replay.expired + replay.future, 0u);
  EXPECT_EQ(DiffSets(rows_before, EventsOf(Rows())), "");
  const store::StoreStats stats_after = store_->Stats();
  EXPECT_EQ(stats_after.events, stats_before.events);
  EXPECT_EQ(stats_after.salt_events, stats_before.salt_events);
  ASSERT_EQ(stats_after.buckets.size(), stats_before.buckets.size());
  for (size_t i = 0; i < stats_after.buckets.size(); ++i) {
    EXPECT_EQ(stats_after.buckets[i].events, stats_before.buckets[i].events) << "bucket " << i;
    EXPECT_EQ(stats_after.buckets[i].bytes, stats_before.buckets[i].bytes) << "bucket " << i;
  }
  EXPECT_EQ(store_->StoredOffsets(), offsets_before);

  // A batch half replayed, half new: only the new half counts.
  std::vector<TestEvent> mixed(batch.begin() + 30, batch.end());
  for (int i = 0; i < 10; ++i) mixed.push_back(Ev("dev-new", kT0 + 40'000 + i, "t", i % 2));
  WriteOutcome half = Write(mixed);
  EXPECT_EQ(half.duplicate, 30u);
  EXPECT_EQ(half.stored, 10u);
  EXPECT_EQ(store_->Stats().events, stats_before.events + 10);

  // And after a reopen the stored offsets still recognise the replay.
  ASSERT_NO_FATAL_FAILURE(Open());
  WriteOutcome after_reopen = Write(batch);
  EXPECT_EQ(after_reopen.duplicate, 60u);
  EXPECT_EQ(after_reopen.stored, 0u);
  EXPECT_EQ(store_->Stats().events, stats_before.events + 10);
}

TEST_F(EventStoreTest, OffsetsAreReadBackAfterReopen) {
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_TRUE(store_->StoredOffsets().empty());
  ASSERT_EQ(Write({Ev("a", kT0 + 1000, "orders", 0), Ev("b", kT0 + 1000, "orders", 0),
                   Ev("c", kT0 + 2000, "orders", 3), Ev("d", kT0 + 3000, "sensors", 1)})
                .stored,
            4u);
  // A batch of records that were all rejected by ingest: offsets only.
  store::WriteBatchInput offsets_only;
  offsets_only.next_offsets[TopicPartition{"sensors", 1}] = 500;
  offsets_only.next_offsets[TopicPartition{"audit", 7}] = 42;
  WriteOutcome outcome;
  Status st = store_->Write(offsets_only, &outcome);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::map<TopicPartition, int64_t> want = {
      {{"orders", 0}, 2}, {{"orders", 3}, 1}, {{"sensors", 1}, 500}, {{"audit", 7}, 42}};
  EXPECT_EQ(store_->StoredOffsets(), want);
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(store_->StoredOffsets(), want);
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(store_->StoredOffsets(), want);
}

TEST_F(EventStoreTest, TopicNumbersAreKeptAcrossReopen) {
  ASSERT_NO_FATAL_FAILURE(Open());
  std::map<std::string, uint16_t> numbers;
  for (const std::string topic : {"orders", "sensors", "a/b", "orders.v2", "x"}) {
    Result<uint16_t> n = store_->TopicNumber(topic);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    numbers[topic] = *n;
    Result<uint16_t> again = store_->TopicNumber(topic);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *n) << topic;
  }
  std::set<uint16_t> distinct;
  for (const auto& [topic, n] : numbers) distinct.insert(n);
  EXPECT_EQ(distinct.size(), numbers.size()) << "two topics share a number";
  ASSERT_EQ(Write({Ev("dev-1", kT0 + 1000, "sensors", 2)}).stored, 1u);

  ASSERT_NO_FATAL_FAILURE(Open());
  for (const auto& [topic, n] : numbers) {
    Result<uint16_t> reopened = store_->TopicNumber(topic);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    EXPECT_EQ(*reopened, n) << topic;
    EXPECT_EQ(store_->TopicName(n), std::optional<std::string>(topic));
  }
  Result<uint16_t> fresh = store_->TopicNumber("brand-new");
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(distinct.count(*fresh), 0u) << "a new topic reused a number";
  uint16_t unknown = 0;
  while (distinct.count(unknown) != 0 || unknown == *fresh) ++unknown;
  EXPECT_EQ(store_->TopicName(unknown), std::nullopt);
  // Rows keyed with the old numbers still decode to their names.
  const auto rows = Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].event.topic, "sensors");
}

TEST_F(EventStoreTest, OtherSaltsOrSaltByAreRefusedAtOpen) {
  StoreOptions created = Options();
  created.salts = 16;
  created.salt_by = SaltBy::kRecord;
  ASSERT_NO_FATAL_FAILURE(Open(created));
  ASSERT_EQ(Write({Ev("dev-1", kT0 + 1000)}).stored, 1u);
  store_.reset();

  StoreOptions other_salts = created;
  other_salts.salts = 8;
  Result<std::unique_ptr<EventStore>> refused = EventStore::Open(other_salts);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kIncompatible) << refused.status().ToString();
  const std::string& m1 = refused.status().message();
  EXPECT_NE(m1.find("salt"), std::string::npos) << m1;
  EXPECT_NE(m1.find("16"), std::string::npos) << "should say what the store has: " << m1;
  EXPECT_NE(m1.find("8"), std::string::npos) << "should say what was asked: " << m1;

  StoreOptions other_salt_by = created;
  other_salt_by.salt_by = SaltBy::kId;
  refused = EventStore::Open(other_salt_by);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kIncompatible) << refused.status().ToString();
  const std::string& m2 = refused.status().message();
  EXPECT_NE(m2.find("salt_by"), std::string::npos) << m2;
  EXPECT_NE(m2.find("record"), std::string::npos) << "should say what the store has: " << m2;

  // The refusals left the store as it was.
  ASSERT_NO_FATAL_FAILURE(Open(created));
  EXPECT_EQ(Rows().size(), 1u);
}

TEST_F(EventStoreTest, ADirectoryThatIsNotAHotrowStoreIsAnErrorNotACrash) {
  namespace fs = std::filesystem;
  // A directory with random files and a garbage CURRENT.
  const std::string garbage = dir_.Sub("garbage");
  fs::create_directories(garbage);
  std::mt19937_64 rng(3);
  for (const std::string name : {"CURRENT", "MANIFEST-000001", "000003.log", "notes.txt"}) {
    std::ofstream out(garbage + "/" + name, std::ios::binary);
    for (int i = 0; i < 300; ++i) out.put(static_cast<char>(rng()));
  }
  StoreOptions options = Options();
  options.path = garbage;
  Result<std::unique_ptr<EventStore>> store = EventStore::Open(options);
  ASSERT_FALSE(store.ok()) << "opened a directory of garbage";
  EXPECT_TRUE(store.status().code() == Status::Code::kCorruption ||
              store.status().code() == Status::Code::kIncompatible ||
              store.status().code() == Status::Code::kIOError)
      << store.status().ToString();
  EXPECT_FALSE(store.status().message().empty());

  // A CURRENT that names a manifest that does not exist.
  const std::string dangling = dir_.Sub("dangling");
  fs::create_directories(dangling);
  std::ofstream(dangling + "/CURRENT") << "MANIFEST-000009\n";
  options.path = dangling;
  store = EventStore::Open(options);
  ASSERT_FALSE(store.ok()) << "opened a directory with a dangling CURRENT";
  EXPECT_FALSE(store.status().message().empty());

  // A path that is a regular file.
  const std::string file = dir_.Sub("a-file");
  std::ofstream(file) << "hello";
  options.path = file;
  store = EventStore::Open(options);
  ASSERT_FALSE(store.ok()) << "opened a regular file as a store";
  EXPECT_FALSE(store.status().message().empty());

  // An empty directory without create_if_missing.
  const std::string empty = dir_.Sub("empty");
  fs::create_directories(empty);
  options.path = empty;
  options.create_if_missing = false;
  store = EventStore::Open(options);
  ASSERT_FALSE(store.ok()) << "created a store although create_if_missing is false";
  EXPECT_FALSE(store.status().message().empty());
}

TEST_F(EventStoreTest, StatsCountWhatWasWritten) {
  ASSERT_NO_FATAL_FAILURE(Open());
  std::vector<TestEvent> events;
  for (int i = 0; i < 300; ++i) {
    events.push_back(Ev("dev-" + std::to_string(i % 11),
                        kT0 + (i % 3) * kBucketMs + (i * 31) % kBucketMs, i % 2 ? "x" : "y",
                        i % 5));
  }
  ASSERT_EQ(Write(events).stored, events.size());
  // The expected figures, from the rows as written.
  std::map<int64_t, std::pair<uint64_t, uint64_t>> per_bucket;  // start -> events, bytes
  std::vector<uint64_t> per_salt(static_cast<size_t>(store_->salter().salts()), 0);
  for (const TestEvent& e : events) {
    Result<store::Row> row = testing::MakeRow(store_.get(), e);
    ASSERT_TRUE(row.ok());
    auto& b = per_bucket[e.ts_ms - e.ts_ms % kBucketMs];
    b.first += 1;
    b.second += row->key.size() + row->value.size();
    per_salt[store_->salter().SaltOf(e.topic, e.partition, e.offset, e.id)] += 1;
  }
  auto check = [&](const std::string& when) {
    SCOPED_TRACE(when);
    const store::StoreStats stats = store_->Stats();
    EXPECT_EQ(stats.events, [&] {
      uint64_t n = 0;
      for (const auto& [start, b] : per_bucket) n += b.first;
      return n;
    }());
    ASSERT_EQ(stats.buckets.size(), per_bucket.size());
    size_t i = 0;
    for (const auto& [start, b] : per_bucket) {
      EXPECT_EQ(stats.buckets[i].start_ms, start);
      EXPECT_EQ(stats.buckets[i].events, b.first) << "bucket " << start;
      EXPECT_EQ(stats.buckets[i].bytes, b.second) << "bucket " << start;
      ++i;
    }
    EXPECT_EQ(stats.salt_events, per_salt);
    EXPECT_EQ(stats.now_ms, clock_.NowMs());
    EXPECT_EQ(stats.window_start_ms, clock_.NowMs() - kTtlMs);
  };
  check("after writing");
  ASSERT_NO_FATAL_FAILURE(Open());
  check("after reopen");

  // A drop takes its bucket out of the stats, per bucket and per salt.
  clock_.Set(kT0 + kBucketMs + kTtlMs);
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok());
  ASSERT_EQ(*dropped, 1u);
  for (const TestEvent& e : events) {
    if (e.ts_ms < kT0 + kBucketMs)
      per_salt[store_->salter().SaltOf(e.topic, e.partition, e.offset, e.id)] -= 1;
  }
  per_bucket.erase(kT0);
  check("after dropping the first bucket");
  ASSERT_NO_FATAL_FAILURE(Open());
  check("after dropping and reopening");
}

TEST_F(EventStoreTest, StreamClockIsTheHighestEventTimeWritten) {
  StoreOptions options = Options();
  options.clock = ClockKind::kStream;
  clock_.Set(kT0 + 1000 * kTtlMs);  // the wall clock is far ahead; it must not decide the window
  ASSERT_NO_FATAL_FAILURE(Open(options));
  ASSERT_EQ(Write({Ev("a", kT0 + 5000), Ev("a", kT0 + 3000)}).stored, 2u);
  EXPECT_EQ(store_->NowMs(), kT0 + 5000);
  EXPECT_EQ(store_->WindowStartMs(), kT0 + 5000 - kTtlMs);
  ASSERT_EQ(Write({Ev("a", kT0 + 1000)}).stored, 1u);
  EXPECT_EQ(store_->NowMs(), kT0 + 5000) << "an older event moved the stream clock";

  // Older than the stream window: expired. Too far ahead of the wall clock: future, and the stream
  // clock is not dragged forward.
  WriteOutcome outcome = Write({Ev("a", kT0 + 5000 - kTtlMs - 1)});
  EXPECT_EQ(outcome.expired, 1u);
  outcome = Write({Ev("a", clock_.NowMs() + kMaxFutureMs + 1)});
  EXPECT_EQ(outcome.future, 1u);
  EXPECT_EQ(store_->NowMs(), kT0 + 5000);
  EXPECT_EQ(store_->Stats().now_ms, kT0 + 5000);

  ASSERT_NO_FATAL_FAILURE(Open(options));
  EXPECT_EQ(store_->NowMs(), kT0 + 5000) << "the stream clock was not kept across reopen";

  // Moving the stream forward expires buckets by stream time.
  const int64_t later = kT0 + kBucketMs + kTtlMs;
  ASSERT_EQ(Write({Ev("a", later)}).stored, 1u);
  EXPECT_EQ(store_->NowMs(), later);
  Result<size_t> dropped = store_->DropExpiredBuckets();
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 1u);
  ASSERT_NO_FATAL_FAILURE(Open(options));
  EXPECT_EQ(store_->NowMs(), later);
}

TEST_F(EventStoreTest, ReadOnlyOpenSeesTheDataBesideAWriterAndRefusesWrites) {
  ASSERT_NO_FATAL_FAILURE(Open());
  const std::vector<TestEvent> events = {Ev("a", kT0 + 1000), Ev("b", kT0 + 15'000, "u", 1)};
  ASSERT_EQ(Write(events).stored, 2u);

  StoreOptions options = Options();
  options.read_only = true;
  Result<std::unique_ptr<EventStore>> reader = EventStore::Open(options);
  ASSERT_TRUE(reader.ok()) << "read-only open beside a running writer: "
                           << reader.status().ToString();
  Result<std::vector<testing::StoredRow>> rows = testing::ReadAllRows(**reader);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(DiffSets(Sorted(events), EventsOf(*rows)), "");
  EXPECT_EQ((*reader)->StoredOffsets(), store_->StoredOffsets());
  EXPECT_EQ((*reader)->Stats().events, 2u);

  store::WriteBatchInput batch;
  Result<store::Row> row = testing::MakeRow(store_.get(), Ev("c", kT0 + 2000));
  ASSERT_TRUE(row.ok());
  batch.rows.push_back(*row);
  WriteOutcome outcome;
  EXPECT_FALSE((*reader)->Write(batch, &outcome).ok()) << "a read-only store accepted a write";
  EXPECT_FALSE((*reader)->TopicNumber("never-seen").ok())
      << "a read-only store assigned a topic number";
}

}  // namespace
}  // namespace hotrow::store_test
