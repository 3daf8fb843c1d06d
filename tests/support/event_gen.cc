#include "tests/support/event_gen.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>
#include <tuple>

#include "keying/index_key.h"
#include "keying/row_key.h"
#include "keying/row_value.h"

namespace hotrow::testing {

std::string EscapeBytes(std::string_view bytes) {
  std::string out;
  const size_t shown = std::min<size_t>(bytes.size(), 48);
  for (size_t i = 0; i < shown; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (shown < bytes.size()) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string Describe(const TestEvent& e) {
  return "id=\"" + EscapeBytes(e.id) + "\" ts=" + std::to_string(e.ts_ms) + " " + e.topic + "/" +
         std::to_string(e.partition) + "@" + std::to_string(e.offset) +
         " payload=" + EscapeBytes(e.payload);
}

Result<store::Row> MakeRow(store::EventStore* store, const TestEvent& e) {
  Result<uint16_t> topic = store->TopicNumber(e.topic);
  if (!topic.ok()) return topic.status();
  keying::RowKey key;
  key.salt = store->salter().SaltOf(e.topic, e.partition, e.offset, e.id);
  key.id_hash = keying::IdHash(e.id);
  key.ts_ms = e.ts_ms;
  key.topic = *topic;
  key.partition = e.partition;
  key.offset = e.offset;
  return store::Row{keying::EncodeRowKey(key), keying::EncodeRowValue(e.id, e.payload)};
}

Status WriteEvents(store::EventStore* store, const std::vector<TestEvent>& events,
                   store::WriteOutcome* outcome, bool with_offsets) {
  store::WriteBatchInput batch;
  batch.rows.reserve(events.size());
  for (const TestEvent& e : events) {
    Result<store::Row> row = MakeRow(store, e);
    if (!row.ok()) return row.status();
    batch.rows.push_back(std::move(row).value());
    if (with_offsets) {
      int64_t& next = batch.next_offsets[store::TopicPartition{e.topic, e.partition}];
      next = std::max(next, e.offset + 1);
    }
  }
  return store->Write(batch, outcome);
}

Result<std::vector<PostedEvent>> ReadPostings(const store::Bucket& bucket) {
  std::vector<PostedEvent> out;
  std::unique_ptr<store::RowIterator> it =
      bucket.NewIterator(keying::KeyRange{"", ""}, /*within_id_prefix=*/false);
  const std::string where = " in bucket " + std::to_string(bucket.start_ms());
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (!keying::IsIndexKey(it->key())) continue;
    keying::IndexKey key;
    std::string_view field, value, listed;
    if (!keying::DecodeIndexKey(it->key(), &key)) {
      return Status::Corruption("undecodable index key " + EscapeBytes(it->key()) + where);
    }
    if (!keying::DecodePosting(it->value(), &field, &value, &listed) || listed.empty()) {
      return Status::Corruption("an index posting's value is not one (or lists nothing)" + where);
    }
    if (key.value_hash != keying::IndexHash(field, value)) {
      return Status::Corruption("a posting's key hash is not its field and value's" + where);
    }
    auto place = [](const auto& k) {
      return std::make_tuple(k.ts_ms, k.topic, k.partition, k.offset);
    };
    std::tuple<int64_t, uint16_t, int32_t, int64_t> newest{-1, 0, 0, 0};
    for (size_t at = 0; at < listed.size(); at += keying::kRowKeySize) {
      PostedEvent& e = out.emplace_back();
      e.posting = key;
      e.field.assign(field);
      e.value.assign(value);
      if (!keying::DecodeRowKey(listed.substr(at, keying::kRowKeySize), &e.event)) {
        return Status::Corruption("a posting lists a key that is not an event's" + where);
      }
      newest = std::max(newest, place(e.event));
      if (e.event.ts_ms < keying::PostingSpanStart(key.ts_ms) || e.event.ts_ms > key.ts_ms ||
          e.event.ts_ms < bucket.start_ms() || e.event.ts_ms >= bucket.end_ms()) {
        return Status::Corruption("a posting keyed at " + std::to_string(key.ts_ms) +
                                  " lists an event at " + std::to_string(e.event.ts_ms) + where);
      }
    }
    if (newest != place(key)) {
      return Status::Corruption("a posting's key is not the place of its newest event" + where);
    }
  }
  if (!it->status().ok()) return it->status();
  return out;
}

Result<std::vector<StoredRow>> ReadAllRows(const store::EventStore& store) {
  std::vector<StoredRow> rows;
  for (const std::shared_ptr<const store::Bucket>& bucket : store.Buckets()) {
    std::unique_ptr<store::RowIterator> it =
        bucket->NewIterator(keying::KeyRange{"", ""}, /*within_id_prefix=*/false);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (keying::IsIndexKey(it->key())) continue;  // an index row, not an event
      keying::RowKey key;
      if (!keying::DecodeRowKey(it->key(), &key)) {
        return Status::Corruption("undecodable key " + EscapeBytes(it->key()) + " in bucket " +
                                  std::to_string(bucket->start_ms()));
      }
      std::string_view id;
      std::string_view payload;
      if (!keying::DecodeRowValue(it->value(), &id, &payload)) {
        return Status::Corruption("undecodable value in bucket " +
                                  std::to_string(bucket->start_ms()));
      }
      std::optional<std::string> topic = store.TopicName(key.topic);
      if (!topic) {
        return Status::Corruption("topic number " + std::to_string(key.topic) + " has no name");
      }
      StoredRow row;
      row.event = TestEvent{std::string(id), key.ts_ms,  *topic,
                            key.partition,   key.offset, std::string(payload)};
      row.salt = key.salt;
      row.id_hash = key.id_hash;
      row.topic_number = key.topic;
      row.bucket_start_ms = bucket->start_ms();
      row.bucket_end_ms = bucket->end_ms();
      row.bytes = it->key().size() + it->value().size();
      rows.push_back(std::move(row));
    }
    Status st = it->status();
    if (!st.ok()) return st;
  }
  return rows;
}

std::vector<std::string> TrickyIds(std::mt19937_64* rng) {
  using namespace std::string_literals;
  std::vector<std::string> ids = {
      "dev-1",
      "dev-10",
      "dev-100",
      "dev-1000",
      "dev-2",
      "dev-20",
      "a/b",
      "/",
      "a/",
      "/a",
      "\0"s,
      "\0\0"s,
      "a\0b"s,
      "a\0"s,
      "dev-1\0"s,
      "\xff"s,
      "\xff\xff\xff"s,
      "a\xff"s,
      "\x01"s,
      "x",
      std::string(256, 'z'),
      std::string(255, 'z'),
  };
  std::uniform_int_distribution<int> byte(0, 255);
  std::string big(256, '\0');
  for (char& c : big) c = static_cast<char>(byte(*rng));
  ids.push_back(big);
  std::uniform_int_distribution<int> len(1, 32);
  for (int i = 0; i < 4; ++i) {
    std::string id(static_cast<size_t>(len(*rng)), '\0');
    for (char& c : id) c = static_cast<char>(byte(*rng));
    ids.push_back(id);
  }
  std::set<std::string> seen;
  std::vector<std::string> unique;
  for (std::string& id : ids) {
    if (seen.insert(id).second) unique.push_back(std::move(id));
  }
  return unique;
}

std::vector<std::string> AbsentIds() {
  using namespace std::string_literals;
  return {"dev-",    "dev-3",     "dev-1000000",         "nobody",
          "\0\0\0"s, "\xff\xff"s, std::string(254, 'z'), "a\0b\0"s};
}

std::vector<TestEvent> GenerateEvents(const EventGenSpec& spec, std::mt19937_64* rng,
                                      std::map<store::TopicPartition, int64_t>* next_offset) {
  std::vector<TestEvent> events;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<size_t> topic_pick(0, spec.topics.size() - 1);
  std::uniform_int_distribution<int> partition_pick(0, spec.partitions - 1);
  std::uniform_int_distribution<int64_t> in_bucket(0, spec.bucket_ms - 1);
  uint64_t serial = 0;
  for (size_t b = 0; b < spec.events_per_bucket.size(); ++b) {
    const int64_t start = spec.first_bucket_start_ms + static_cast<int64_t>(b) * spec.bucket_ms;
    std::vector<int64_t> times = {start, start + spec.bucket_ms - 1};
    for (int i = 2; i < spec.times_per_bucket; ++i) times.push_back(start + in_bucket(*rng));
    std::uniform_int_distribution<size_t> time_pick(0, times.size() - 1);
    for (int i = 0; i < spec.events_per_bucket[b]; ++i) {
      TestEvent e;
      const double u = unit(*rng);
      e.id = spec.ids[std::min(spec.ids.size() - 1, static_cast<size_t>(u * u * spec.ids.size()))];
      e.ts_ms = times[time_pick(*rng)];
      e.topic = spec.topics[topic_pick(*rng)];
      e.partition = partition_pick(*rng);
      e.payload = "{\"n\":" + std::to_string(serial++) + ",\"pad\":\"";
      while (e.payload.size() + 2 < spec.payload_bytes) e.payload.push_back('p');
      e.payload += "\"}";
      events.push_back(std::move(e));
    }
  }
  std::shuffle(events.begin(), events.end(), *rng);
  AssignOffsets(&events, next_offset);
  return events;
}

void AssignOffsets(std::vector<TestEvent>* events,
                   std::map<store::TopicPartition, int64_t>* next_offset) {
  for (TestEvent& e : *events) {
    int64_t& next = (*next_offset)[store::TopicPartition{e.topic, e.partition}];
    e.offset = next++;
  }
}

uint64_t TestSeed(uint64_t fallback) {
  const char* env = getenv("HOTROW_TEST_SEED");
  if (env == nullptr || *env == '\0') return fallback;
  return strtoull(env, nullptr, 10);
}

uint64_t DiskUsageBytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uint64_t total = 0;
  fs::recursive_directory_iterator it(path, ec);
  if (ec) return 0;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::error_code file_ec;
    if (it->is_regular_file(file_ec)) {
      const uintmax_t size = it->file_size(file_ec);
      if (!file_ec) total += size;
    }
  }
  return total;
}

}  // namespace hotrow::testing
