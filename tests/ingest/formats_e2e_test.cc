// ingest.format avro and protobuf end to end, through the real binary: `hotrow embedded-kafka` as
// the broker, records written by Confluent's own Python serializers (Debian's
// python3-confluent-kafka 1.7.0: confluent_kafka.avro.AvroProducer over python3-avro, and
// schema_registry.protobuf.ProtobufSerializer over python3-protobuf with protoc's classes), and
// `hotrow serve` reading them through a Schema Registry.
//
// The registry is the one part that is not the real one: Confluent's is a Java service Debian does
// not package. tests/ingest/formats/fake_schema_registry.py serves the documented REST subset the
// serializers and hotrow use (register, look up, GET /schemas/ids/{id}[?format=serialized],
// GET /subjects/{s}/versions/{v}), with its state in a file so that it can be stopped and
// started again on the same port.
//
// The oracle: for every record the producer script writes the JSON an independent decoder makes
// of the same bytes (python3-avro's DatumReader; protobuf's json_format.MessageToDict with
// preserving_proto_field_name and including_default_value_fields, 64-bit integers as numbers);
// a full scan must hold each record once with exactly that payload.
//
// Skipped, with the reason, when Debian's python3 lacks those packages or protoc is missing
// (scripts/install-deps.sh installs them).

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ingest/synthetic_producer.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::formats_e2e_test {
namespace {

using nlohmann::json;
using testing::ChildProcess;
using testing::FreePort;
using testing::ReadFile;
using testing::WaitFor;

constexpr const char* kPython = "/usr/bin/python3";  // Debian's, where its packages are
constexpr int64_t kFarFutureMs = int64_t{1} << 50;

std::string Script(const char* name) { return std::string(HOTROW_FORMATS_DIR) + "/" + name; }

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the tests need that a machine may lack; empty when all is there.
std::string MissingTools() {
  if (std::system("command -v protoc >/dev/null 2>&1") != 0) return "protoc (protobuf-compiler)";
  const std::string probe = std::string(kPython) +
                            " -c 'import confluent_kafka, avro, google.protobuf, requests' "
                            ">/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    return "Debian's python3-confluent-kafka, python3-avro, python3-protobuf and "
           "python3-requests";
  }
  return "";
}

class FormatsE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = MissingTools(); !missing.empty()) {
      GTEST_SKIP() << "needs " << missing << " (scripts/install-deps.sh installs them)";
    }
    kafka_ = testing::StartEmbeddedKafka(4, dir_.Sub("kafka.log"), &bootstrap_);
    ASSERT_NE(kafka_, nullptr) << ReadFile(dir_.Sub("kafka.log"));
    registry_port_ = FreePort();
    registry_url_ = "http://127.0.0.1:" + std::to_string(registry_port_);
    StartRegistry();
    ts_base_ = NowMs() - 60'000;
  }

  void TearDown() override {
    for (auto* child : {&serve_, &registry_, &kafka_}) {
      if (*child && (*child)->Running()) {
        (*child)->Signal(SIGTERM);
        (*child)->Wait(std::chrono::seconds(15));
      }
      child->reset();
    }
  }

  void StartRegistry() {
    registry_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kPython, Script("fake_schema_registry.py"), "--port",
                                 std::to_string(registry_port_), "--state",
                                 dir_.Sub("registry.json"), "--log", dir_.Sub("registry.log")},
        dir_.Sub("registry.err"));
    std::string line;
    ASSERT_TRUE(registry_->ReadLine(&line)) << ReadFile(dir_.Sub("registry.err"));
    ASSERT_EQ(line, "listening on " + std::to_string(registry_port_));
  }

  void StopRegistry() {
    registry_->Signal(SIGTERM);
    registry_->Wait(std::chrono::seconds(15));
    registry_.reset();
  }

  // Runs confluent_produce.py with `args` and waits for it to succeed.
  void Python(std::vector<std::string> args) {
    args.insert(args.begin(), {kPython, Script("confluent_produce.py")});
    args.insert(args.end(), {"--bootstrap", bootstrap_, "--registry", registry_url_, "--ts-base",
                             std::to_string(ts_base_)});
    ChildProcess p(args, dir_.Sub("python.log"));
    ASSERT_EQ(p.Wait(std::chrono::seconds(120)), 0) << ReadFile(dir_.Sub("python.log"));
  }

  void StartServe(const std::string& topic, const std::vector<std::string>& sets) {
    http_port_ = FreePort();
    std::vector<std::string> argv = {testing::HotrowBinary(),
                                     "serve",
                                     "--set",
                                     "kafka.brokers=" + bootstrap_,
                                     "--set",
                                     "kafka.topics=[" + topic + "]",
                                     "--set",
                                     "kafka.group_id=g-" + topic,
                                     "--set",
                                     "store.path=" + dir_.Sub("store-" + topic),
                                     "--set",
                                     "http.listen=127.0.0.1:" + std::to_string(http_port_),
                                     "--set",
                                     "kafka.properties.session.timeout.ms=6000",
                                     "--set",
                                     "query.threads=2",
                                     "--set",
                                     "ingest.batch_max_ms=50",
                                     "--set",
                                     "ingest.dead_letter_topic=dead-" + topic};
    for (const std::string& s : sets) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    serve_ = std::make_unique<ChildProcess>(argv, dir_.Sub("serve.log"));
    ASSERT_TRUE(WaitFor([&] { return Get("/healthz").first == 200 || !serve_->Running(); },
                        std::chrono::seconds(60), std::chrono::milliseconds(50)))
        << ReadFile(dir_.Sub("serve.log"));
    ASSERT_TRUE(serve_->Running()) << ReadFile(dir_.Sub("serve.log"));
  }

  std::pair<int, std::string> Get(const std::string& target) {
    httplib::Client client("127.0.0.1", http_port_);
    client.set_connection_timeout(std::chrono::seconds(2));
    client.set_read_timeout(std::chrono::seconds(30));
    httplib::Result res = client.Get(target);
    if (!res) return {-1, ""};
    return {res->status, res->body};
  }

  json Stats() {
    auto [status, body] = Get("/v1/stats");
    return status == 200 ? json::parse(body) : json::object();
  }

  // Waits until `n` events are stored and `rejected` records refused.
  bool AwaitCounts(uint64_t n, uint64_t rejected = 0) {
    return WaitFor(
        [&] {
          json s = Stats();
          if (!s.contains("ingested")) return false;
          uint64_t r = 0;
          for (const auto& [reason, count] : s["rejected"].items()) r += count.get<uint64_t>();
          return s["ingested"].get<uint64_t>() >= n && r >= rejected;
        },
        std::chrono::seconds(90), std::chrono::milliseconds(100));
  }

  // Every stored event's payload by its "seq", each checked to be there once.
  std::map<int64_t, json> ScanBySeq() {
    auto [status, body] = Get("/v1/scan?from=0&to=" + std::to_string(kFarFutureMs));
    EXPECT_EQ(status, 200) << body;
    std::map<int64_t, json> out;
    size_t start = 0;
    while (start < body.size()) {
      size_t end = body.find('\n', start);
      if (end == std::string::npos) end = body.size();
      if (end > start) {
        json e = json::parse(body.substr(start, end - start));
        if (!e["payload"]["seq"].is_number_integer()) {
          ADD_FAILURE() << "no integer seq in " << e.dump();
          start = end + 1;
          continue;
        }
        const int64_t seq = e["payload"]["seq"].get<int64_t>();
        EXPECT_EQ(out.count(seq), 0u) << "seq " << seq << " stored twice";
        out[seq] = e;
      }
      start = end + 1;
    }
    return out;
  }

  // The oracle's lines: seq -> the independent decoder's JSON.
  std::map<int64_t, json> Expected(const std::string& file) {
    std::map<int64_t, json> out;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      json j = json::parse(line);
      out[j["seq"].get<int64_t>()] = j["event"];
    }
    return out;
  }

  // The hex lines of `file` (framed values the script wrote with --encode).
  std::vector<std::string> HexLines(const std::string& file) {
    std::vector<std::string> out;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) out.push_back(line);
    return out;
  }

  void WriteLines(const std::string& file, const std::vector<std::string>& lines) {
    std::ofstream out(file);
    for (const std::string& l : lines) out << l << "\n";
  }

  void ExpectEveryRecordOnce(const std::map<int64_t, json>& expected,
                             const std::map<int64_t, json>& stored) {
    ASSERT_EQ(stored.size(), expected.size());
    for (const auto& [seq, event] : expected) {
      auto it = stored.find(seq);
      ASSERT_NE(it, stored.end()) << "seq " << seq << " not stored";
      json payload = it->second["payload"];
      payload.erase("_kafka");
      EXPECT_EQ(payload, event) << "seq " << seq;
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<ChildProcess> kafka_, registry_, serve_;
  std::string bootstrap_, registry_url_;
  int registry_port_ = 0, http_port_ = 0;
  int64_t ts_base_ = 0;
};

TEST_F(FormatsE2ETest, AvroFromConfluentsProducerIsStoredAsPythonAvroReadsItUnderTwoSchemaIds) {
  // Records of two writer schemas (v2 adds a field) alternate in each partition.
  Python({"avro", "--topic", "avro", "--count", "120", "--versions", "mix", "--expected",
          dir_.Sub("avro.jsonl"), "--encode", dir_.Sub("avro.hex")});
  StartServe("avro", {"ingest.format=avro", "ingest.schema_registry.url=" + registry_url_,
                      "ingest.id_field=device_id", "index.fields=[status, site.name]"});
  ASSERT_TRUE(AwaitCounts(120)) << Stats().dump();
  ExpectEveryRecordOnce(Expected(dir_.Sub("avro.jsonl")), ScanBySeq());
  // Each schema id was asked once, however many records carry it (in the order the partitions'
  // first records came).
  std::vector<std::string> asked;
  std::istringstream log(ReadFile(dir_.Sub("registry.log")));
  for (std::string line; std::getline(log, line);) asked.push_back(line);
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<std::string>{"/schemas/ids/1", "/schemas/ids/2"}));
  // The index sees decoded fields: an enum symbol, a nested record's field.
  auto [status, body] = Get("/v1/index/status/DEGRADED/latest?n=1000");
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(json::parse(body)["events"].size(), 40u);

  // Bad records, each its own reject reason, counted and dead-lettered.
  const std::vector<std::string> good = HexLines(dir_.Sub("avro.hex"));
  ASSERT_FALSE(good.empty());
  WriteLines(dir_.Sub("bad.hex"),
             {"7b2261223a317d",                            // {"a":1}: not_framed
              "00000003e7" + good[0].substr(10),           // id 999: unknown_schema
              good[0].substr(0, 10) + "ffffffffffffff"});  // id 1, not Avro: bad_avro
  Python({"raw", "--topic", "avro", "--values", dir_.Sub("bad.hex")});
  ASSERT_TRUE(AwaitCounts(120, 3)) << Stats().dump();
  ASSERT_TRUE(WaitFor([&] { return Stats()["dead_lettered"] == 3; }, std::chrono::seconds(30)))
      << Stats().dump();
  json s = Stats();
  EXPECT_EQ(s["rejected"]["not_framed"], 1);
  EXPECT_EQ(s["rejected"]["unknown_schema"], 1);
  EXPECT_EQ(s["rejected"]["bad_avro"], 1);
  EXPECT_EQ(s["ingested"], 120);
  EXPECT_NE(ReadFile(dir_.Sub("registry.log")).find("/schemas/ids/999"), std::string::npos);
}

TEST_F(FormatsE2ETest, ProtobufFromConfluentsSerializerWithKeyHeaderAndTimestampAsFields) {
  Python({"protobuf", "--topic", "pb", "--count", "90", "--expected", dir_.Sub("pb.jsonl"),
          "--encode", dir_.Sub("pb.hex")});
  StartServe("pb", {"ingest.format=protobuf", "ingest.schema_registry.url=" + registry_url_,
                    "ingest.id_field=\"@key\"", "ingest.ts_field=\"@timestamp\"",
                    "index.fields=[\"@header.site\"]", "ingest.include_meta=true"});
  ASSERT_TRUE(AwaitCounts(90)) << Stats().dump();
  const std::map<int64_t, json> stored = ScanBySeq();
  ExpectEveryRecordOnce(Expected(dir_.Sub("pb.jsonl")), stored);
  for (const auto& [seq, e] : stored) {
    // The id is the record key, the time the Kafka timestamp (the producer set both).
    EXPECT_EQ(e["event_id"], "dev-" + std::to_string(seq % 7));
    EXPECT_EQ(e["ts"], ts_base_ + seq);
    const json& meta = e["payload"]["_kafka"];
    EXPECT_EQ(meta["key"], "dev-" + std::to_string(seq % 7));
    EXPECT_EQ(meta["timestamp"], ts_base_ + seq);
    EXPECT_EQ(meta["headers"]["site"], "site-" + std::to_string(seq % 4));
    // Not UTF-8: base64 of ff fe seq.
    EXPECT_EQ(meta["headers"]["bin"].get<std::string>().substr(0, 2), "//");
  }
  auto [status, body] = Get("/v1/index/@header.site/site-3/latest?n=1000");
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(json::parse(body)["events"].size(), 22u);  // seq % 4 == 3 below 90
  auto [id_status, id_body] = Get("/v1/events/dev-2/latest?n=1000");
  ASSERT_EQ(id_status, 200);
  EXPECT_EQ(json::parse(id_body)["events"].size(), 13u);  // seq % 7 == 2 below 90

  const std::vector<std::string> good = HexLines(dir_.Sub("pb.hex"));
  ASSERT_FALSE(good.empty());
  // Framed for the registered schema, message index 0, then a truncated field: bad_protobuf.
  WriteLines(dir_.Sub("bad.hex"), {good[0].substr(0, 12) + "0a05616263", "01020304"});
  Python({"raw", "--topic", "pb", "--values", dir_.Sub("bad.hex")});
  ASSERT_TRUE(AwaitCounts(90, 2)) << Stats().dump();
  ASSERT_TRUE(WaitFor([&] { return Stats()["dead_lettered"] == 2; }, std::chrono::seconds(30)));
  json s = Stats();
  EXPECT_EQ(s["rejected"]["bad_protobuf"], 1);
  EXPECT_EQ(s["rejected"]["not_framed"], 1);
}

TEST_F(FormatsE2ETest, AvroSchemaReferencingAnotherSubjectIsResolvedBySubjectAndVersion) {
  // ReadingRef names hotrow.test.Site, which subject site-value defines: a schema reference.
  Python({"avro-ref", "--topic", "aref", "--count", "40", "--expected", dir_.Sub("aref.jsonl")});
  StartServe("aref", {"ingest.format=avro", "ingest.schema_registry.url=" + registry_url_,
                      "ingest.id_field=device_id", "ingest.ts_field=\"@timestamp\""});
  ASSERT_TRUE(AwaitCounts(40)) << Stats().dump();
  ExpectEveryRecordOnce(Expected(dir_.Sub("aref.jsonl")), ScanBySeq());
  // The id asked once, however many records carry it.
  std::istringstream log(ReadFile(dir_.Sub("registry.log")));
  std::vector<std::string> asked;
  for (std::string line; std::getline(log, line);) asked.push_back(line);
  EXPECT_EQ(asked.size(), 1u) << ReadFile(dir_.Sub("registry.log"));
}

TEST_F(FormatsE2ETest, RegistryDownHoldsThePartitionsAndLosesNothingWhenItIsBack) {
  // Schema 1 reaches hotrow while the registry is up; schema 2 is registered then, but its
  // records arrive while the registry is down, alternating with records of schema 1 (which
  // hotrow could decode, but must not store ahead of the waiting ones: their offsets would pass
  // them).
  Python({"avro", "--topic", "out", "--count", "60", "--versions", "1", "--expected",
          dir_.Sub("out.jsonl")});
  Python({"avro", "--topic", "out", "--count", "60", "--start", "60", "--versions", "mix",
          "--expected", dir_.Sub("out.jsonl"), "--encode", dir_.Sub("later.hex"), "--encode-only"});
  StartServe("out", {"ingest.format=avro", "ingest.schema_registry.url=" + registry_url_,
                     "ingest.id_field=device_id"});
  ASSERT_TRUE(AwaitCounts(60)) << Stats().dump();
  StopRegistry();
  Python({"raw", "--topic", "out", "--values", dir_.Sub("later.hex")});

  // Meanwhile: not ready, and saying why; nothing rejected, nothing dead-lettered.
  std::string why;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto [status, body] = Get("/readyz");
        why = body;
        return status == 503 && body.find("schema registry") != std::string::npos;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(50)))
      << why << ReadFile(dir_.Sub("serve.log"));
  json s = Stats();
  EXPECT_TRUE(s["schema_registry"]["waiting"].get<bool>()) << s.dump();
  EXPECT_GT(s["schema_registry"]["held_partitions"].get<int>(), 0);

  StartRegistry();
  ASSERT_TRUE(AwaitCounts(120)) << Stats().dump();
  ASSERT_TRUE(WaitFor([&] { return Get("/readyz").first == 200; }, std::chrono::seconds(30)));
  s = Stats();
  for (const auto& [reason, count] : s["rejected"].items()) EXPECT_EQ(count, 0) << reason;
  EXPECT_EQ(s["dead_lettered"], 0);
  EXPECT_EQ(s["ingested"], 120);
  EXPECT_FALSE(s["schema_registry"]["waiting"].get<bool>());
  ExpectEveryRecordOnce(Expected(dir_.Sub("out.jsonl")), ScanBySeq());
}

// `hotrow produce --format` writes what serve reads: Avro unframed with the schema file it writes,
// Protobuf framed through the registry. Checked against the JSON form of the same synthetic
// readings (the generator is a function of its seed, all but the times).
TEST_F(FormatsE2ETest, HotrowProduceWritesAvroAndProtobufThatServeReadsAsTheJsonReadings) {
  constexpr int kCount = 500;
  std::multiset<json> expected;  // compared as values: 17.0 and 17 are one number
  {
    ingest::SyntheticEvents events(50, 1.1, 7);
    std::string device, text;
    for (int i = 0; i < kCount; ++i) {
      events.Next(0, &device, &text);
      json j = json::parse(text);
      j.erase("ts");
      expected.insert(j);
    }
  }
  auto produce = [&](const std::string& topic, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {testing::HotrowBinary(),
                                     "produce",
                                     "--brokers",
                                     bootstrap_,
                                     "--topic",
                                     topic,
                                     "--count",
                                     std::to_string(kCount),
                                     "--devices",
                                     "50",
                                     "--seed",
                                     "7",
                                     "--rate",
                                     "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildProcess p(argv, dir_.Sub("produce.log"));
    ASSERT_EQ(p.Wait(std::chrono::seconds(60)), 0) << ReadFile(dir_.Sub("produce.log"));
  };
  auto stored = [&] {
    auto [status, body] = Get("/v1/scan?from=0&to=" + std::to_string(kFarFutureMs));
    EXPECT_EQ(status, 200);
    std::multiset<json> out;
    size_t start = 0;
    while (start < body.size()) {
      size_t end = body.find('\n', start);
      if (end == std::string::npos) end = body.size();
      if (end > start) {
        json payload = json::parse(body.substr(start, end - start))["payload"];
        payload.erase("ts");
        out.insert(payload);
      }
      start = end + 1;
    }
    return out;
  };

  produce("synth-avro", {"--format", "avro", "--schema-file", dir_.Sub("reading.avsc")});
  StartServe("synth-avro",
             {"ingest.format=avro", "ingest.avro.schema_file=" + dir_.Sub("reading.avsc")});
  ASSERT_TRUE(AwaitCounts(kCount)) << Stats().dump();
  EXPECT_EQ(stored(), expected);
  serve_->Signal(SIGTERM);
  ASSERT_EQ(serve_->Wait(std::chrono::seconds(15)), 0);

  produce("synth-pb", {"--format", "protobuf", "--schema-registry", registry_url_});
  StartServe("synth-pb", {"ingest.format=protobuf", "ingest.schema_registry.url=" + registry_url_});
  ASSERT_TRUE(AwaitCounts(kCount)) << Stats().dump();
  EXPECT_EQ(stored(), expected);
}

}  // namespace
}  // namespace hotrow::formats_e2e_test
