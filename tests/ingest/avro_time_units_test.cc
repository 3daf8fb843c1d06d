// An Avro long declared timestamp-micros, -nanos or local-timestamp-* and named by ingest.ts_field
// is read in its unit (ingest/avro_decoder.h TimeUnitsPerMs): the event time is the instant the
// producer wrote, not a time a thousand times later rejected as future. The stored payload keeps
// the number as written.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ingest/avro_decoder.h"
#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::TempDir;
using testing::IngestTestBase;
using testing::kTopic;
using testing::ReadStore;
using testing::TestProducer;

void AppendAvroLong(int64_t v, std::string* out) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out->push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out->push_back(static_cast<char>(z));
}

// A record {"event_id": string, "ts": long of `ts_type`}.
std::string TimeSchema(const std::string& ts_type) {
  return R"({"type":"record","name":"R","fields":[{"name":"event_id","type":"string"},)"
         R"({"name":"ts","type":)" +
         ts_type + "}]}";
}

std::string TimeDatum(const std::string& id, int64_t ts) {
  std::string out;
  AppendAvroLong(static_cast<int64_t>(id.size()), &out);
  out += id;
  AppendAvroLong(ts, &out);
  return out;
}

// The unit AvroDecoder says for `ts_field` after decoding one datum of `schema`.
int64_t UnitOf(const std::string& schema, const std::string& ts_field, const std::string& datum) {
  auto decoder = AvroDecoder::WithSchema(schema, kDefaultMaxDecodedBytes, ts_field);
  EXPECT_TRUE(decoder.ok()) << decoder.status().ToString();
  if (!decoder.ok()) return -1;
  std::string json, detail;
  const char* reject = nullptr;
  EXPECT_EQ((*decoder)->Decode(datum, &json, &reject, &detail), DecodeStatus::kOk) << detail;
  return (*decoder)->TimeUnitsPerMs();
}

TEST(AvroTimeUnitsTest, EachTimestampLogicalTypeGivesItsUnit) {
  const std::string datum = TimeDatum("d", 5);
  auto logical = [](const char* type) {
    return std::string(R"({"type":"long","logicalType":")") + type + "\"}";
  };
  EXPECT_EQ(UnitOf(TimeSchema(logical("timestamp-millis")), "ts", datum), 1);
  EXPECT_EQ(UnitOf(TimeSchema(logical("timestamp-micros")), "ts", datum), 1000);
  EXPECT_EQ(UnitOf(TimeSchema(logical("timestamp-nanos")), "ts", datum), 1000000);
  EXPECT_EQ(UnitOf(TimeSchema(logical("local-timestamp-millis")), "ts", datum), 1);
  EXPECT_EQ(UnitOf(TimeSchema(logical("local-timestamp-micros")), "ts", datum), 1000);
  EXPECT_EQ(UnitOf(TimeSchema(logical("local-timestamp-nanos")), "ts", datum), 1000000);
  EXPECT_EQ(UnitOf(TimeSchema(R"("long")"), "ts", datum), 1);
  // Only the field ts_field names counts; a time named by the record's meta has no schema.
  EXPECT_EQ(UnitOf(TimeSchema(logical("timestamp-micros")), "event_id", datum), 1);
  EXPECT_EQ(UnitOf(TimeSchema(logical("timestamp-micros")), "@timestamp", datum), 1);
  EXPECT_EQ(UnitOf(TimeSchema(logical("timestamp-micros")), "", datum), 1);
}

TEST(AvroTimeUnitsTest, ANullableTimeAndAPathThroughANamedRecordAreFollowed) {
  // ["null", timestamp-micros]: the union's branch index, then the long.
  std::string datum = TimeDatum("d", 0).substr(0, 2);  // the id "d"
  AppendAvroLong(1, &datum);
  AppendAvroLong(7, &datum);
  EXPECT_EQ(UnitOf(TimeSchema(R"(["null",{"type":"long","logicalType":"timestamp-micros"}])"), "ts",
                   datum),
            1000);
  // meta.at, where meta's type is a record defined by an earlier field and named again.
  const std::string nested =
      R"({"type":"record","name":"R","namespace":"n","fields":[)"
      R"({"name":"first","type":{"type":"record","name":"Meta","fields":[)"
      R"({"name":"at","type":{"type":"long","logicalType":"timestamp-nanos"}}]}},)"
      R"({"name":"meta","type":"n.Meta"}]})";
  std::string two;
  AppendAvroLong(3, &two);
  AppendAvroLong(4, &two);
  EXPECT_EQ(UnitOf(nested, "meta.at", two), 1000000);
  EXPECT_EQ(UnitOf(nested, "first.at", two), 1000000);
  EXPECT_EQ(UnitOf(nested, "meta.none", two), 1);
}

// Serves two writer schemas of one topic: id 1 with ts in micros, id 2 in millis.
class TwoSchemas final : public SchemaSource {
 public:
  Result<RegistrySchema> ById(uint32_t id, bool) override {
    if (id == 1)
      return RegistrySchema{
          TimeSchema(R"({"type":"long","logicalType":"timestamp-micros"})"), "AVRO", {}};
    if (id == 2)
      return RegistrySchema{
          TimeSchema(R"({"type":"long","logicalType":"timestamp-millis"})"), "AVRO", {}};
    return Status::NotFound("no schema id " + std::to_string(id));
  }
  Result<RegistrySchema> BySubjectVersion(const std::string&, int, bool) override {
    return Status::NotFound("none");
  }
};

TEST(AvroTimeUnitsTest, EachRecordIsReadInTheUnitOfItsOwnWriterSchema) {
  auto decoder =
      AvroDecoder::WithRegistry(std::make_unique<TwoSchemas>(), kDefaultMaxDecodedBytes, "ts");
  std::string json, detail;
  const char* reject = nullptr;
  for (uint32_t id : {1u, 2u, 1u}) {
    std::string value;
    AppendConfluentHeader(id, &value);
    value += TimeDatum("d", 9);
    ASSERT_EQ(decoder->Decode(value, &json, &reject, &detail), DecodeStatus::kOk) << detail;
    EXPECT_EQ(decoder->TimeUnitsPerMs(), id == 1 ? 1000 : 1) << id;
  }
}

class AvroTimeIngestTest : public IngestTestBase {};

TEST_F(AvroTimeIngestTest, MicrosAndNanosAreStoredAtTheInstantTheyName) {
  TempDir dir;
  for (const auto& [type, per_ms] : std::vector<std::pair<std::string, int64_t>>{
           {"timestamp-micros", 1000}, {"local-timestamp-nanos", 1000000}}) {
    SCOPED_TRACE(type);
    // A broker of each type's own: a new group starts at the window's first record, so the other
    // type's records on a shared topic reached this ingestor and were read in the wrong unit.
    auto kafka = EmbeddedKafka::Start(kTopic, partitions_);
    ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
    kafka_ = std::move(kafka).value();
    const std::string schema_file = dir.Sub(type + ".avsc");
    std::ofstream(schema_file) << TimeSchema(R"({"type":"long","logicalType":")" + type + "\"}");
    auto store = OpenStore(dir.Sub("store-" + type));
    ASSERT_NE(store, nullptr);
    IngestOptions options = Options("group-" + type);
    options.format.format = Format::kAvro;
    options.format.avro_schema_file = schema_file;
    auto ingestor = StartIngestor(options, store.get());
    ASSERT_NE(ingestor, nullptr);

    const int64_t now_ms = testing::WallNow();
    TestProducer producer(kafka_->bootstrap());
    for (int i = 0; i < 4; ++i) {
      // A sub-millisecond part that a reader must drop, not round.
      const int64_t ts = (now_ms - i) * per_ms + per_ms - 1;
      producer.Produce(kTopic, i % partitions_, std::nullopt,
                       TimeDatum(type + "-" + std::to_string(i), ts));
    }
    producer.Flush();
    ASSERT_TRUE(WaitCaughtUp(*store, *ingestor)) << ingestor->Stats().last_error;
    const IngestStats stats = ingestor->Stats();
    for (const auto& [reason, n] : stats.rejected) EXPECT_EQ(n, 0u) << reason;
    const auto events = ReadStore(*store);
    ASSERT_EQ(events.size(), 4u);
    for (const auto& e : events) {
      const int i = std::stoi(e.id.substr(e.id.rfind('-') + 1));
      EXPECT_EQ(e.ts_ms, now_ms - i) << e.id;
      // The payload keeps the number as the producer wrote it.
      EXPECT_EQ(nlohmann::json::parse(e.payload)["ts"].get<int64_t>(),
                (now_ms - i) * per_ms + per_ms - 1);
    }
    EXPECT_TRUE(ingestor->Stop().ok());
  }
}

}  // namespace
}  // namespace hotrow::ingest
