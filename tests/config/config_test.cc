#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/config/config_test_util.h"
#include "tests/support/paths.h"

namespace hotrow::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

void ExpectDefaults(const Config& c) {
  const Config d;
  EXPECT_EQ(c.kafka.brokers, d.kafka.brokers);
  EXPECT_EQ(c.kafka.topics, d.kafka.topics);
  EXPECT_EQ(c.kafka.group_id, d.kafka.group_id);
  EXPECT_EQ(c.kafka.properties, d.kafka.properties);
  EXPECT_EQ(c.store.path, d.store.path);
  EXPECT_EQ(c.store.ttl_ms, d.store.ttl_ms);
  EXPECT_EQ(c.store.bucket_ms, d.store.bucket_ms);
  EXPECT_EQ(c.store.clock, d.store.clock);
  EXPECT_EQ(c.keying.salts, d.keying.salts);
  EXPECT_EQ(c.keying.salt_by, d.keying.salt_by);
  EXPECT_EQ(c.keying.hot_share, d.keying.hot_share);
  EXPECT_EQ(c.ingest.batch_max_events, d.ingest.batch_max_events);
  EXPECT_EQ(c.ingest.batch_max_ms, d.ingest.batch_max_ms);
  EXPECT_EQ(c.ingest.id_field, d.ingest.id_field);
  EXPECT_EQ(c.ingest.ts_field, d.ingest.ts_field);
  EXPECT_EQ(c.ingest.max_future_ms, d.ingest.max_future_ms);
  EXPECT_EQ(c.ingest.dead_letter_topic, d.ingest.dead_letter_topic);
  EXPECT_EQ(c.ingest.stall_after_ms, d.ingest.stall_after_ms);
  EXPECT_EQ(c.http.listen, d.http.listen);
  EXPECT_EQ(c.query.threads, d.query.threads);
  EXPECT_EQ(c.store.block_cache_bytes, d.store.block_cache_bytes);
  EXPECT_EQ(c.store.write_buffer_bytes, d.store.write_buffer_bytes);
  EXPECT_EQ(c.store.partitioned_index, d.store.partitioned_index);
  EXPECT_EQ(c.store.compression, d.store.compression);
  EXPECT_EQ(c.store.mmap_reads, d.store.mmap_reads);
  EXPECT_EQ(c.http.io_threads, d.http.io_threads);
  EXPECT_EQ(c.http.max_connections, d.http.max_connections);
  EXPECT_EQ(c.http.idle_timeout_ms, d.http.idle_timeout_ms);
  EXPECT_EQ(c.http.header_timeout_ms, d.http.header_timeout_ms);
  EXPECT_EQ(c.query.max_concurrent, d.query.max_concurrent);
  EXPECT_EQ(c.query.queue_wait_ms, d.query.queue_wait_ms);
  EXPECT_EQ(c.query.last_cache, d.query.last_cache);
  EXPECT_EQ(c.query.last_cache_bytes, d.query.last_cache_bytes);
  EXPECT_EQ(c.http.tls_cert, d.http.tls_cert);
  EXPECT_EQ(c.http.tls_key, d.http.tls_key);
  EXPECT_EQ(c.cluster.peers, d.cluster.peers);
  EXPECT_EQ(c.cluster.peer_timeout_ms, d.cluster.peer_timeout_ms);
  EXPECT_EQ(c.cluster.peer_ca, d.cluster.peer_ca);
  EXPECT_EQ(c.cluster.max_staleness_ms, d.cluster.max_staleness_ms);
}

// ---- defaults and the shipped file ----

TEST(ConfigTest, NoFileAndNoOverridesGiveTheDefaults) { ExpectDefaults(SetOk({})); }

TEST(ConfigTest, DefaultsAreTheDocumentedOnes) {
  const Config c;
  EXPECT_EQ(c.store.ttl_ms, 600000);
  EXPECT_EQ(c.store.bucket_ms, 60000);
  EXPECT_EQ(c.keying.salts, 16);
  EXPECT_EQ(c.keying.salt_by, keying::SaltBy::kRecord);
  EXPECT_EQ(c.keying.hot_share, 0.002);
  EXPECT_EQ(c.ingest.max_future_ms, 60000);
  EXPECT_EQ(c.http.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.http.tls_cert, "");  // plain HTTP
  EXPECT_EQ(c.http.tls_key, "");
}

TEST(ConfigTest, ShippedConfigLoadsToExactlyTheDefaults) {
  ExpectDefaults(LoadOk(hotrow::testing::SourceDir() + "/configs/hotrow.yaml", {}));
}

TEST(ConfigTest, ShippedConfigSetsEveryKey) {
  // Every key is written out in the shipped file (none is left to a silent default): changing any
  // value there must change the loaded config. Checked by loading the file with each line that
  // holds a key replaced by a bad value: every such load must fail naming that key.
  std::ifstream in(hotrow::testing::SourceDir() + "/configs/hotrow.yaml");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_FALSE(lines.empty());
  testing::TempDir dir;
  std::string section;
  std::string subsection;  // ingest.schema_registry: its keys are indented once more
  std::vector<std::string> keys;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != ' ') {
      section = line.substr(0, line.find(':'));
      continue;
    }
    const size_t start = line.find_first_not_of(' ');
    if (line[start] == '#') continue;
    const std::string name = line.substr(start, line.find(':') - start);
    if (start == 2 && line.find(':') + 1 == line.size()) {  // "  schema_registry:"
      subsection = name;
      continue;
    }
    if (start == 2) subsection.clear();
    const std::string key =
        section + "." + (subsection.empty() ? "" : subsection + ".") + name;
    keys.push_back(key);
    std::vector<std::string> broken = lines;
    broken[i] = line.substr(0, line.find(':') + 1) + " [[1]]";
    const std::string path = dir.Sub("broken.yaml");
    std::ofstream out(path);
    for (const std::string& l : broken) out << l << "\n";
    out.close();
    EXPECT_THAT(LoadError(path, {}), StartsWith(key + ":")) << "line " << i + 1;
  }
  EXPECT_THAT(
      keys,
      ::testing::ElementsAre(
          "kafka.brokers", "kafka.topics", "kafka.group_id", "kafka.instance_id",
          "kafka.properties", "store.path", "store.ttl", "store.bucket", "store.clock",
          "store.block_cache", "store.write_buffer", "store.partitioned_index", "store.compression",
          "store.mmap_reads", "keying.salts", "keying.salt_by", "keying.hot_share",
          "ingest.batch_max_events", "ingest.batch_max_ms", "ingest.id_field", "ingest.ts_field",
          "ingest.max_future", "ingest.dead_letter_topic", "ingest.stall_after", "ingest.writers",
          "ingest.format", "ingest.max_decoded_bytes", "ingest.include_meta",
          "ingest.schema_registry.url", "ingest.schema_registry.user_info",
          "ingest.schema_registry.user_info_file", "ingest.schema_registry.ca",
          "ingest.avro.schema_file", "ingest.protobuf.descriptor_set", "ingest.protobuf.message",
          "ingest.protobuf.legacy_indexes", "ingest.protobuf.well_known", "index.fields",
          "http.listen", "http.io_threads", "http.max_connections", "http.idle_timeout",
          "http.header_timeout", "http.max_streams", "http.stream_buffer", "http.token_file",
          "http.allow_open", "http.tls_cert", "http.tls_key", "query.threads",
          "query.max_concurrent", "query.queue_wait", "query.last_cache", "query.last_cache_bytes",
          "cluster.peers", "cluster.peer_timeout_ms", "cluster.peer_ca", "cluster.peer_token_file",
          "cluster.max_staleness", "cluster.route_by_key", "cluster.standby_replicas"));
}

TEST(ConfigTest, FormatKeysNeedOneSourceOfSchemas) {
  EXPECT_EQ(SetOk({}).ingest.format.format, ingest::Format::kJson);
  EXPECT_THAT(SetError("ingest.format=xml"), StartsWith("ingest.format: expected json, avro or"));
  EXPECT_THAT(LoadError("", {"ingest.format=avro"}),
              StartsWith("ingest.format: avro needs ingest.schema_registry.url"));
  EXPECT_THAT(LoadError("", {"ingest.format=protobuf", "ingest.protobuf.message=a.B"}),
              StartsWith("ingest.format: protobuf needs"));
  EXPECT_THAT(LoadError("", {"ingest.avro.schema_file=x.avsc"}),
              StartsWith("ingest.avro.schema_file: set, but ingest.format is json"));
  EXPECT_THAT(LoadError("", {"ingest.format=avro", "ingest.schema_registry.url=http://r:8081",
                             "ingest.avro.schema_file=x.avsc"}),
              StartsWith("ingest.avro.schema_file: set, but records are framed"));
  EXPECT_THAT(LoadError("", {"ingest.format=avro", "ingest.schema_registry.url=http://r:8081",
                             "ingest.schema_registry.ca=/etc/hostname"}),
              StartsWith("ingest.schema_registry.ca: set, but ingest.schema_registry.url is not"));
  EXPECT_THAT(LoadError("", {"ingest.format=avro", "ingest.schema_registry.url=http://r:8081",
                             "ingest.schema_registry.user_info=a:b",
                             "ingest.schema_registry.user_info_file=/etc/hostname"}),
              StartsWith("ingest.schema_registry.user_info_file: set, but so is"));
  EXPECT_THAT(SetError("ingest.schema_registry.url=r:8081"),
              StartsWith("ingest.schema_registry.url: expected an http:// or https:// URL"));
  EXPECT_THAT(LoadError("", {"ingest.format=avro", "ingest.avro.schema_file=/no/such.avsc"}),
              StartsWith("ingest.avro.schema_file: cannot read /no/such.avsc"));
  EXPECT_THAT(LoadError("", {"ingest.format=avro", "ingest.avro.schema_file=/etc/hostname"}),
              StartsWith("ingest.avro.schema_file: /etc/hostname: not an Avro schema"));
  Config c = SetOk({"ingest.format=avro", "ingest.schema_registry.url=https://r:8081/api/",
                    "ingest.include_meta=true"});
  EXPECT_EQ(c.ToIngestOptions().format.registry_url, "https://r:8081/api/");
  EXPECT_TRUE(c.ToIngestOptions().include_meta);
  EXPECT_TRUE(c.ToIngestOptions().format.protobuf_well_known_json);  // json by default
  EXPECT_FALSE(SetOk({"ingest.protobuf.well_known=message"})
                   .ToIngestOptions()
                   .format.protobuf_well_known_json);
  EXPECT_THAT(SetError("ingest.protobuf.well_known=proto"),
              StartsWith("ingest.protobuf.well_known: expected json or message"));
}

TEST(ConfigTest, FieldsMayNameTheRecordKeyHeadersAndTimestamp) {
  Config c = SetOk({"ingest.id_field=\"@key\"", "ingest.ts_field=\"@timestamp\"",
                    "index.fields=[\"@header.site\", site]"});
  EXPECT_EQ(c.ingest.id_field, "@key");
  EXPECT_EQ(c.ingest.ts_field, "@timestamp");
  EXPECT_THAT(LoadError("", {"ingest.id_field=\"@offset\""}),
              StartsWith("ingest.id_field: expected @key, @header.NAME or @timestamp"));
  EXPECT_THAT(LoadError("", {"index.fields=[\"@nope\"]"}),
              StartsWith("index.fields: expected @key, @header.NAME or @timestamp"));
}

TEST(ConfigTest, ClusterPeersAreHostPortsGivenOnce) {
  EXPECT_TRUE(LoadOk("", {}).cluster.peers.empty());
  EXPECT_EQ(LoadOk("", {"cluster.peers=[127.0.0.1:8080, 127.0.0.1:8081]"}).cluster.peers,
            (std::vector<std::string>{"127.0.0.1:8080", "127.0.0.1:8081"}));
  EXPECT_THAT(LoadError("", {"cluster.peers=[127.0.0.1]"}), StartsWith("cluster.peers:"));
  EXPECT_THAT(LoadError("", {"cluster.peers=127.0.0.1:8080"}), StartsWith("cluster.peers:"));
  EXPECT_THAT(LoadError("", {"cluster.peers=[a:1, a:1]"}), StartsWith("cluster.peers:"));
}

TEST(ConfigTest, ClusterPeerTimeoutTakesADurationOrMillisecondsUpToAMinute) {
  EXPECT_EQ(LoadOk("", {}).cluster.max_staleness_ms, 5000);
  EXPECT_EQ(LoadOk("", {"cluster.max_staleness=750ms"}).cluster.max_staleness_ms, 750);
  EXPECT_EQ(LoadOk("", {"cluster.max_staleness=1h"}).cluster.max_staleness_ms, 3'600'000);
  for (const char* bad : {"0", "2h", "soon", "[1]"}) {
    EXPECT_THAT(LoadError("", {std::string("cluster.max_staleness=") + bad}),
                StartsWith("cluster.max_staleness: expected a duration from 1ms to 1h"))
        << bad;
  }
  EXPECT_EQ(LoadOk("", {}).cluster.peer_ca, "");
  EXPECT_EQ(LoadOk("", {}).cluster.route_by_key, ingest::KeyPartitioner::kOff);
  EXPECT_EQ(LoadOk("", {"cluster.route_by_key=murmur2"}).cluster.route_by_key,
            ingest::KeyPartitioner::kMurmur2);
  EXPECT_EQ(LoadOk("", {"cluster.route_by_key=crc32"}).cluster.route_by_key,
            ingest::KeyPartitioner::kCrc32);
  for (const char* bad : {"on", "true", "[murmur2]", "consistent_random"}) {
    EXPECT_THAT(LoadError("", {std::string("cluster.route_by_key=") + bad}),
                StartsWith("cluster.route_by_key: expected off, murmur2 or crc32"))
        << bad;
  }
  // A standby is another instance of the group: at most peers - 1 of them.
  EXPECT_EQ(LoadOk("", {}).cluster.standby_replicas, 0);
  EXPECT_EQ(LoadOk("", {"cluster.peers=[127.0.0.1:8080, 127.0.0.1:8081]",
                        "cluster.standby_replicas=1"})
                .cluster.standby_replicas,
            1);
  EXPECT_THAT(LoadError("", {"cluster.peers=[127.0.0.1:8080, 127.0.0.1:8081]",
                             "cluster.standby_replicas=2"}),
              StartsWith("cluster.standby_replicas: expected at most the group's size - 1"));
  EXPECT_THAT(LoadError("", {"cluster.standby_replicas=1"}),
              StartsWith("cluster.standby_replicas: expected at most the group's size - 1"));
  EXPECT_THAT(LoadError("", {"cluster.standby_replicas=-1"}),
              StartsWith("cluster.standby_replicas: expected an integer from 0 to 15"));
  EXPECT_EQ(LoadOk("", {"cluster.peer_ca=/etc/hotrow/ca.pem"}).cluster.peer_ca,
            "/etc/hotrow/ca.pem");
  EXPECT_EQ(LoadOk("", {}).cluster.peer_token_file, "");
  EXPECT_EQ(
      LoadOk("", {"cluster.peer_token_file=/etc/hotrow/peer.token"}).cluster.peer_token_file,
      "/etc/hotrow/peer.token");
  EXPECT_EQ(LoadOk("", {}).cluster.peer_timeout_ms, 2000);
  EXPECT_EQ(LoadOk("", {"cluster.peer_timeout_ms=750"}).cluster.peer_timeout_ms, 750);
  EXPECT_EQ(LoadOk("", {"cluster.peer_timeout_ms=5s"}).cluster.peer_timeout_ms, 5000);
  EXPECT_EQ(LoadOk("", {"cluster.peer_timeout_ms=1ms"}).cluster.peer_timeout_ms, 1);
  EXPECT_EQ(LoadOk("", {"cluster.peer_timeout_ms=60s"}).cluster.peer_timeout_ms, 60000);
  for (const char* bad : {"0", "-1", "0ms", "60001", "2m", "soon", "[1]"}) {
    EXPECT_THAT(LoadError("", {std::string("cluster.peer_timeout_ms=") + bad}),
                StartsWith("cluster.peer_timeout_ms: expected a duration from 1ms to 60s"))
        << bad;
  }
}

// ---- files ----

TEST_F(ConfigFileTest, FileValuesAreRead) {
  const Config c = LoadOk(Write(R"(
kafka:
  brokers: broker1:9092,broker2:9092
  topics: [a, b]
  group_id: g1
  properties:
    fetch.min.bytes: 1
    enable.partition.eof: true
    client.id: hotrow-test
store:
  path: /var/lib/hotrow
  ttl: 1h
  bucket: 5m
  clock: stream
keying:
  salts: 32
  salt_by: id
ingest:
  batch_max_events: 100
  batch_max_ms: 50
  id_field: meta.device.id
  ts_field: meta.time
  max_future: 0s
  dead_letter_topic: rejected
  stall_after: 2m
http:
  listen: localhost:0
query:
  threads: 4
)"),
                          {});
  EXPECT_EQ(c.kafka.brokers, "broker1:9092,broker2:9092");
  EXPECT_EQ(c.kafka.topics, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.kafka.group_id, "g1");
  EXPECT_EQ(c.kafka.properties,
            (std::map<std::string, std::string>{{"client.id", "hotrow-test"},
                                                {"enable.partition.eof", "true"},
                                                {"fetch.min.bytes", "1"}}));
  EXPECT_EQ(c.store.path, "/var/lib/hotrow");
  EXPECT_EQ(c.store.ttl_ms, 3600000);
  EXPECT_EQ(c.store.bucket_ms, 300000);
  EXPECT_EQ(c.store.clock, store::ClockKind::kStream);
  EXPECT_EQ(c.keying.salts, 32);
  EXPECT_EQ(c.keying.salt_by, keying::SaltBy::kId);
  EXPECT_EQ(c.ingest.batch_max_events, 100);
  EXPECT_EQ(c.ingest.batch_max_ms, 50);
  EXPECT_EQ(c.ingest.id_field, "meta.device.id");
  EXPECT_EQ(c.ingest.ts_field, "meta.time");
  EXPECT_EQ(c.ingest.max_future_ms, 0);
  EXPECT_EQ(c.ingest.dead_letter_topic, "rejected");
  EXPECT_EQ(c.ingest.stall_after_ms, 120000);
  EXPECT_EQ(c.http.listen, "localhost:0");
  EXPECT_EQ(c.query.threads, 4);
}

TEST_F(ConfigFileTest, KeysLeftOutKeepTheirDefaults) {
  const Config c = LoadOk(Write("store:\n  ttl: 20m\n"), {});
  EXPECT_EQ(c.store.ttl_ms, 1200000);
  EXPECT_EQ(c.store.bucket_ms, 60000);
  EXPECT_EQ(c.keying.salts, 16);
}

TEST_F(ConfigFileTest, EmptyFileAndEmptySectionsGiveTheDefaults) {
  ExpectDefaults(LoadOk(Write(""), {}));
  ExpectDefaults(LoadOk(Write("# only comments\n"), {}));
  ExpectDefaults(LoadOk(Write("kafka:\nstore:\n  # path: x\n"), {}));
}

TEST_F(ConfigFileTest, MissingFileNamesTheFileAndTheReason) {
  EXPECT_EQ(LoadError("/nonexistent/x.yaml", {}),
            "config file /nonexistent/x.yaml: cannot read: No such file or directory");
}

TEST_F(ConfigFileTest, DirectoryIsNotReadable) {
  EXPECT_THAT(LoadError(dir_.path(), {}),
              StartsWith("config file " + dir_.path() + ": cannot read: "));
}

TEST_F(ConfigFileTest, PathThroughAFileIsNotReadable) {
  // Unreadable whoever runs the test (root reads files whatever their mode).
  const std::string file = Write("store:\n  ttl: 1m\n");
  EXPECT_EQ(LoadError(file + "/x.yaml", {}),
            "config file " + file + "/x.yaml: cannot read: Not a directory");
}

TEST_F(ConfigFileTest, YamlSyntaxErrorNamesFileAndLine) {
  const std::string path = Write("store:\n  ttl: 1m\n  bucket: [1m\n");
  const std::string message = LoadError(path, {});
  EXPECT_THAT(message, StartsWith("config file " + path + ": not valid YAML: line "));
}

TEST_F(ConfigFileTest, BadIndentationIsASyntaxError) {
  EXPECT_THAT(LoadError(Write("store:\n  ttl: 1m\n bucket: 1m\n"), {}),
              HasSubstr("not valid YAML"));
}

TEST_F(ConfigFileTest, UnknownSectionIsAnError) {
  EXPECT_THAT(LoadError(Write("nope:\n  key: 1\n"), {}),
              StartsWith("nope: unknown section (expected kafka, store, keying, ingest, index, http, "
                         "query or cluster)"));
}

TEST_F(ConfigFileTest, UnknownKeyIsAnError) {
  EXPECT_EQ(LoadError(Write("store:\n  ttll: 1m\n"), {}), "store.ttll: unknown key");
  EXPECT_EQ(LoadError(Write("keying:\n  salt: 4\n"), {}), "keying.salt: unknown key");
}

TEST_F(ConfigFileTest, TopLevelMustBeAMap) {
  EXPECT_THAT(LoadError(Write("- a\n- b\n"), {}), HasSubstr("expected a map of sections"));
  EXPECT_THAT(LoadError(Write("hello\n"), {}), HasSubstr("expected a map of sections"));
}

TEST_F(ConfigFileTest, SectionMustBeAMap) {
  EXPECT_EQ(LoadError(Write("store: 5\n"), {}), "store: expected a map of keys, got \"5\"");
  EXPECT_EQ(LoadError(Write("store: [a]\n"), {}), "store: expected a map of keys, got a list");
}

TEST_F(ConfigFileTest, KeyGivenTwiceIsAnError) {
  EXPECT_EQ(LoadError(Write("store:\n  ttl: 1m\n  ttl: 2m\n"), {}), "store.ttl: given twice");
}

TEST_F(ConfigFileTest, BadValueInFileNamesTheKey) {
  EXPECT_EQ(LoadError(Write("store:\n  ttl: ten\n"), {}),
            "store.ttl: expected a duration such as 500ms, 20s, 10m or 1h, got \"ten\"");
}

TEST_F(ConfigFileTest, OverridesWinOverTheFile) {
  const std::string path = Write("store:\n  ttl: 20m\n  path: /a\nkeying:\n  salts: 8\n");
  const Config c = LoadOk(path, {"store.ttl=30m", "keying.salts=4"});
  EXPECT_EQ(c.store.ttl_ms, 1800000);
  EXPECT_EQ(c.keying.salts, 4);
  EXPECT_EQ(c.store.path, "/a");
}

TEST_F(ConfigFileTest, OverrideCanRepairABadCombinationInTheFile) {
  // store.bucket <= store.ttl is checked once every value is in.
  const std::string path = Write("store:\n  ttl: 30s\n  bucket: 1m\n");
  EXPECT_THAT(LoadError(path, {}), StartsWith("store.bucket:"));
  EXPECT_EQ(LoadOk(path, {"store.bucket=10s"}).store.bucket_ms, 10000);
}

TEST_F(ConfigFileTest, UnsetBucketFollowsTheTtl) {
  EXPECT_EQ(LoadOk(Write("store:\n  ttl: 30s\n"), {}).store.bucket_ms, 3000);
  EXPECT_EQ(LoadOk(Write("store:\n  ttl: 1h\n"), {}).store.bucket_ms, 60000);
  EXPECT_EQ(LoadOk(Write("store:\n  ttl: 5ms\n"), {}).store.bucket_ms, 1);
}

// ---- --set ----

TEST(ConfigSetTest, LaterSetWins) {
  EXPECT_EQ(SetOk({"store.ttl=20m", "store.ttl=30m"}).store.ttl_ms, 1800000);
}

TEST(ConfigSetTest, SetWithoutEqualsIsAnError) {
  EXPECT_EQ(SetError("store.ttl"),
            "--set store.ttl: expected section.key=value, such as store.ttl=20s");
  EXPECT_THAT(SetError("=1m"), HasSubstr("expected section.key=value"));
}

TEST(ConfigSetTest, SetOfUnknownKeyIsAnError) {
  EXPECT_THAT(SetError("nope.key=1"), StartsWith("nope.key: unknown key"));
  EXPECT_THAT(SetError("store=1"), StartsWith("store: unknown key"));
  EXPECT_THAT(SetError("store.ttl.x=1"), StartsWith("store.ttl.x: unknown key"));
}

TEST(ConfigSetTest, SetValueWithBadYamlIsAnError) {
  EXPECT_THAT(SetError("kafka.topics=[a,b"),
              StartsWith("kafka.topics: the --set value is not valid YAML"));
}

TEST(ConfigSetTest, SetValueMayContainEquals) {
  EXPECT_EQ(
      SetOk({"kafka.properties.sasl.jaas.config=a=b"}).kafka.properties.at("sasl.jaas.config"),
      "a=b");
}

TEST(ConfigSetTest, ListValue) {
  EXPECT_EQ(SetOk({"kafka.topics=[a,b]"}).kafka.topics, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SetOk({"kafka.topics=[ a, b, c ]"}).kafka.topics,
            (std::vector<std::string>{"a", "b", "c"}));
}

TEST(ConfigSetTest, SingleTopicIsAListOfOne) {
  EXPECT_EQ(SetOk({"kafka.topics=clicks"}).kafka.topics, (std::vector<std::string>{"clicks"}));
}

TEST(ConfigSetTest, MapValueReplacesTheProperties) {
  const Config c =
      SetOk({"kafka.properties={a: 1}", "kafka.properties={fetch.min.bytes: 1, x: y}"});
  EXPECT_EQ(c.kafka.properties,
            (std::map<std::string, std::string>{{"fetch.min.bytes", "1"}, {"x", "y"}}));
}

TEST(ConfigSetTest, OnePropertyCanBeSet) {
  const Config c = SetOk({"kafka.properties={a: 1}", "kafka.properties.fetch.min.bytes=5"});
  EXPECT_EQ(c.kafka.properties,
            (std::map<std::string, std::string>{{"a", "1"}, {"fetch.min.bytes", "5"}}));
}

TEST(ConfigSetTest, DurationValues) {
  EXPECT_EQ(SetOk({"store.ttl=20s", "store.bucket=2s"}).store.ttl_ms, 20000);
  EXPECT_EQ(SetOk({"store.ttl=500ms", "store.bucket=100ms"}).store.bucket_ms, 100);
  EXPECT_EQ(SetOk({"store.ttl=1h"}).store.ttl_ms, 3600000);
  EXPECT_EQ(SetOk({"ingest.max_future=10m"}).ingest.max_future_ms, 600000);
  EXPECT_EQ(SetOk({"ingest.stall_after=5s"}).ingest.stall_after_ms, 5000);
  EXPECT_EQ(SetOk({"ingest.writers=3"}).ingest.writers, 3);
}

// ---- every key: wrong type and out of range ----

TEST(ConfigTest, OptionsStructsCarryTheValues) {
  const Config c = SetOk(
      {"kafka.brokers=b:1", "kafka.topics=[t1,t2]", "kafka.group_id=g", "kafka.properties={x: y}",
       "store.path=/p", "store.ttl=20m", "store.bucket=2m", "store.clock=stream", "keying.salts=8",
       "keying.salt_by=id", "ingest.batch_max_events=10", "ingest.batch_max_ms=20ms",
       "ingest.id_field=i", "ingest.ts_field=t", "ingest.max_future=5s",
       "ingest.dead_letter_topic=d", "ingest.stall_after=7s", "query.threads=3"});
  const store::StoreOptions s = c.ToStoreOptions();
  EXPECT_EQ(s.path, "/p");
  EXPECT_EQ(s.ttl_ms, 1200000);
  EXPECT_EQ(s.bucket_ms, 120000);
  EXPECT_EQ(s.clock, store::ClockKind::kStream);
  EXPECT_EQ(s.max_future_ms, 5000);
  EXPECT_EQ(s.salts, 8);
  EXPECT_EQ(s.salt_by, keying::SaltBy::kId);
  EXPECT_FALSE(s.read_only);

  const ingest::IngestOptions i = c.ToIngestOptions();
  EXPECT_EQ(i.brokers, "b:1");
  EXPECT_EQ(i.topics, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(i.group_id, "g");
  EXPECT_EQ(i.properties, (std::map<std::string, std::string>{{"x", "y"}}));
  EXPECT_EQ(i.batch_max_events, 10u);
  EXPECT_EQ(i.batch_max_ms, 20);
  EXPECT_EQ(i.id_field, "i");
  EXPECT_EQ(i.ts_field, "t");
  EXPECT_EQ(i.max_future_ms, 5000);
  EXPECT_EQ(i.dead_letter_topic, "d");
  EXPECT_EQ(i.stall_after_ms, 7000);

  EXPECT_EQ(c.ToQueryOptions().threads, 3);
}

TEST(ConfigTest, SummaryIsOneLineAndHidesPropertyValues) {
  const Config c = SetOk({"kafka.properties={sasl.password: hunter2}", "store.ttl=20m"});
  const std::string summary = c.Summary();
  EXPECT_EQ(summary.find('\n'), std::string::npos);
  EXPECT_THAT(summary, HasSubstr("sasl.password"));
  EXPECT_THAT(summary, ::testing::Not(HasSubstr("hunter2")));
  EXPECT_THAT(summary, HasSubstr("ttl=20m"));
  EXPECT_THAT(summary, HasSubstr("salts=16"));
  EXPECT_THAT(SetOk({"keying.salt_by=adaptive", "keying.hot_share=0.01"}).Summary(),
              HasSubstr(" salt_by=adaptive hot_share=0.01 "));
}

}  // namespace
}  // namespace hotrow::config
