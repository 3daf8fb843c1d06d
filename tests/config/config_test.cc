#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace hotrow::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The message of a load that must fail, or a test failure when it loaded.
std::string LoadError(const std::string& file, const std::vector<std::string>& overrides) {
  Result<Config> config = LoadConfig(file, overrides);
  if (config.ok()) {
    ADD_FAILURE() << "loaded, but an error was expected";
    return "";
  }
  EXPECT_TRUE(config.status().IsInvalidArgument()) << config.status().ToString();
  const std::string& message = config.status().message();
  EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
  return message;
}

std::string SetError(const std::string& item) { return LoadError("", {item}); }

Config LoadOk(const std::string& file, const std::vector<std::string>& overrides) {
  Result<Config> config = LoadConfig(file, overrides);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : Config();
}

Config SetOk(const std::vector<std::string>& overrides) { return LoadOk("", overrides); }

class ConfigFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_.Sub("hotrow.yaml");
    std::ofstream(path) << text;
    return path;
  }
  testing::TempDir dir_;
};

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
  EXPECT_EQ(c.http.threads, d.http.threads);
  EXPECT_EQ(c.query.max_concurrent, d.query.max_concurrent);
  EXPECT_EQ(c.http.tls_cert, d.http.tls_cert);
  EXPECT_EQ(c.http.tls_key, d.http.tls_key);
  EXPECT_EQ(c.cluster.peers, d.cluster.peers);
  EXPECT_EQ(c.cluster.peer_timeout_ms, d.cluster.peer_timeout_ms);
}

// ---- defaults and the shipped file ----

TEST(ConfigTest, NoFileAndNoOverridesGiveTheDefaults) { ExpectDefaults(SetOk({})); }

TEST(ConfigTest, DefaultsAreTheDocumentedOnes) {
  const Config c;
  EXPECT_EQ(c.store.ttl_ms, 600000);
  EXPECT_EQ(c.store.bucket_ms, 60000);
  EXPECT_EQ(c.keying.salts, 16);
  EXPECT_EQ(c.keying.salt_by, keying::SaltBy::kRecord);
  EXPECT_EQ(c.ingest.max_future_ms, 60000);
  EXPECT_EQ(c.http.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.http.tls_cert, "");  // plain HTTP
  EXPECT_EQ(c.http.tls_key, "");
}

TEST(ConfigTest, ShippedConfigLoadsToExactlyTheDefaults) {
  ExpectDefaults(LoadOk(std::string(HOTROW_SOURCE_DIR) + "/configs/hotrow.yaml", {}));
}

TEST(ConfigTest, ShippedConfigSetsEveryKey) {
  // Every key is written out in the shipped file (none is left to a silent default): changing any
  // value there must change the loaded config. Checked by loading the file with each line that
  // holds a key replaced by a bad value: every such load must fail naming that key.
  std::ifstream in(std::string(HOTROW_SOURCE_DIR) + "/configs/hotrow.yaml");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_FALSE(lines.empty());
  testing::TempDir dir;
  std::string section;
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
    const std::string key = section + "." + line.substr(start, line.find(':') - start);
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
      keys, ::testing::ElementsAre(
                "kafka.brokers", "kafka.topics", "kafka.group_id", "kafka.instance_id",
                "kafka.properties", "store.path", "store.ttl", "store.bucket", "store.clock",
                "store.block_cache", "store.write_buffer", "keying.salts", "keying.salt_by",
                "ingest.batch_max_events", "ingest.batch_max_ms", "ingest.id_field",
                "ingest.ts_field", "ingest.max_future", "ingest.dead_letter_topic",
                "ingest.stall_after", "ingest.writers", "index.fields", "http.listen", "http.threads",
                "http.token_file", "http.allow_open", "http.tls_cert", "http.tls_key",
                "query.threads", "query.max_concurrent", "cluster.peers",
                "cluster.peer_timeout_ms"));
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
  EXPECT_THAT(LoadError(Write("nope:\n  key: 1\n"), {}), StartsWith("nope: unknown section"));
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

TEST(ConfigKeyTest, KafkaBrokers) {
  EXPECT_EQ(SetOk({"kafka.brokers=h:1"}).kafka.brokers, "h:1");
  EXPECT_EQ(SetError("kafka.brokers="), "kafka.brokers: expected a non-empty string, got nothing");
  EXPECT_EQ(SetError("kafka.brokers=\"\""), "kafka.brokers: expected a non-empty string, got \"\"");
  EXPECT_EQ(SetError("kafka.brokers=[a]"),
            "kafka.brokers: expected a non-empty string, got a list");
}

TEST(ConfigKeyTest, KafkaTopics) {
  EXPECT_THAT(SetError("kafka.topics=[]"), StartsWith("kafka.topics: expected a non-empty list"));
  EXPECT_THAT(SetError("kafka.topics="), StartsWith("kafka.topics: expected a non-empty list"));
  EXPECT_THAT(SetError("kafka.topics=[a, '']"), StartsWith("kafka.topics: expected"));
  EXPECT_THAT(SetError("kafka.topics=[a, [b]]"), HasSubstr("got a list as item 2"));
  EXPECT_THAT(SetError("kafka.topics={a: b}"), HasSubstr("got a map"));
  EXPECT_THAT(SetError("kafka.topics=a,b"), HasSubstr("write several topics as a list: [a, b]"));
}

TEST(ConfigKeyTest, KafkaGroupId) {
  EXPECT_EQ(SetOk({"kafka.group_id=g"}).kafka.group_id, "g");
  EXPECT_THAT(SetError("kafka.group_id="),
              StartsWith("kafka.group_id: expected a non-empty string"));
  EXPECT_THAT(SetError("kafka.group_id={a: b}"), HasSubstr("got a map"));
}

TEST(ConfigKeyTest, KafkaProperties) {
  EXPECT_THAT(SetError("kafka.properties=[a]"),
              StartsWith("kafka.properties: expected a map of librdkafka properties"));
  EXPECT_THAT(SetError("kafka.properties=x"), StartsWith("kafka.properties: expected a map"));
  EXPECT_EQ(SetError("kafka.properties={a: {b: 1}}"),
            "kafka.properties.a: expected a scalar value (a string or a number), got a map");
  EXPECT_THAT(SetError("kafka.properties={a: [1]}"),
              StartsWith("kafka.properties.a: expected a scalar"));
  EXPECT_THAT(SetError("kafka.properties={a: }"),
              StartsWith("kafka.properties.a: expected a scalar"));
  EXPECT_THAT(SetError("kafka.properties.a=[1]"),
              StartsWith("kafka.properties.a: expected a scalar"));
  EXPECT_TRUE(SetOk({"kafka.properties="}).kafka.properties.empty());
}

TEST(ConfigKeyTest, StorePath) {
  EXPECT_EQ(SetOk({"store.path=/tmp/x"}).store.path, "/tmp/x");
  EXPECT_THAT(SetError("store.path="), StartsWith("store.path: expected a non-empty string"));
  EXPECT_THAT(SetError("store.path=[a]"), StartsWith("store.path: expected"));
}

TEST(ConfigKeyTest, StoreTtl) {
  EXPECT_EQ(SetError("store.ttl=ten"),
            "store.ttl: expected a duration such as 500ms, 20s, 10m or 1h, got \"ten\"");
  EXPECT_THAT(SetError("store.ttl=600"), StartsWith("store.ttl: expected a duration"));
  EXPECT_THAT(SetError("store.ttl=-1m"), StartsWith("store.ttl: expected a duration"));
  EXPECT_THAT(SetError("store.ttl=[1m]"), StartsWith("store.ttl: expected a duration"));
  EXPECT_EQ(SetError("store.ttl=0s"), "store.ttl: expected a duration greater than 0, got \"0s\"");
}

TEST(ConfigKeyTest, StoreBucket) {
  EXPECT_EQ(SetError("store.bucket=0ms"),
            "store.bucket: expected a duration greater than 0, got \"0ms\"");
  EXPECT_THAT(SetError("store.bucket=11m"),
              StartsWith("store.bucket: expected a duration of at most store.ttl (10m), got 11m"));
  // A ttl alone (CONTRACT's own example) gives buckets of a tenth of it; a bucket set explicitly
  // above the ttl is an error that says how to fix it.
  EXPECT_EQ(SetOk({"store.ttl=20s"}).store.bucket_ms, 2000);
  EXPECT_EQ(LoadError("", {"store.ttl=20s", "store.bucket=1m"}),
            "store.bucket: expected a duration of at most store.ttl (20s), got 1m; set both, e.g. "
            "--set store.ttl=20s --set store.bucket=2s");
  EXPECT_EQ(SetOk({"store.bucket=10m"}).store.bucket_ms, 600000);  // equal to ttl is fine
  EXPECT_THAT(SetError("store.bucket=x"), StartsWith("store.bucket: expected a duration"));
}

TEST(ConfigKeyTest, StoreClock) {
  EXPECT_EQ(SetOk({"store.clock=stream"}).store.clock, store::ClockKind::kStream);
  EXPECT_EQ(SetOk({"store.clock=stream", "store.clock=wall"}).store.clock, store::ClockKind::kWall);
  EXPECT_EQ(SetError("store.clock=event"), "store.clock: expected wall or stream, got \"event\"");
  EXPECT_EQ(SetError("store.clock=[wall]"), "store.clock: expected wall or stream, got a list");
}

TEST(ConfigKeyTest, StoreSizes) {
  EXPECT_EQ(SetOk({"store.block_cache=1GiB"}).store.block_cache_bytes, int64_t{1} << 30);
  EXPECT_EQ(SetOk({"store.write_buffer=128MiB"}).store.write_buffer_bytes, int64_t{128} << 20);
  const Config c = SetOk({"store.block_cache=512MiB", "store.write_buffer=32MiB"});
  EXPECT_EQ(c.ToStoreOptions().block_cache_bytes, size_t{512} << 20);
  EXPECT_EQ(c.ToStoreOptions().write_buffer_bytes, size_t{32} << 20);
  EXPECT_THAT(SetError("store.block_cache=256MB"),
              StartsWith("store.block_cache: expected a size such as 64MiB or 1GiB"));
  EXPECT_THAT(SetError("store.block_cache=lots"), StartsWith("store.block_cache: expected a size"));
  EXPECT_EQ(SetError("store.block_cache=1KiB"),
            "store.block_cache: expected a size such as 64MiB or 1GiB, from 1MiB to 1TiB, got "
            "\"1KiB\"");
  EXPECT_THAT(SetError("store.write_buffer=[1]"), StartsWith("store.write_buffer: expected a size"));
  EXPECT_THAT(SetError("store.write_buffer=1MiB"), HasSubstr("from 4MiB to 1TiB"));
}

TEST(ConfigKeyTest, HttpThreadsAndQueryMaxConcurrent) {
  const Config c = SetOk({"http.threads=32", "query.max_concurrent=20"});
  EXPECT_EQ(c.ToHttpOptions().threads, 32);
  EXPECT_EQ(c.ToHttpOptions().max_queries, 20);
  EXPECT_EQ(c.ToQueryOptions().max_concurrent_queries, 20);
  EXPECT_THAT(SetError("http.threads=1"), StartsWith("http.threads: expected an integer from 2"));
  EXPECT_THAT(SetError("query.max_concurrent=0"),
              StartsWith("query.max_concurrent: expected an integer from 1"));
  EXPECT_EQ(LoadError("", {"http.threads=8", "query.max_concurrent=8"}),
            "query.max_concurrent: expected less than http.threads (8) so that health checks are "
            "always answered, got 8");
}

TEST(ConfigKeyTest, KeyingSalts) {
  EXPECT_EQ(SetOk({"keying.salts=1"}).keying.salts, 1);
  EXPECT_EQ(SetOk({"keying.salts=256"}).keying.salts, 256);
  EXPECT_EQ(SetError("keying.salts=300"),
            "keying.salts: expected an integer from 1 to 256, got 300");
  EXPECT_EQ(SetError("keying.salts=0"), "keying.salts: expected an integer from 1 to 256, got 0");
  EXPECT_EQ(SetError("keying.salts=-3"), "keying.salts: expected an integer from 1 to 256, got -3");
  EXPECT_EQ(SetError("keying.salts=many"),
            "keying.salts: expected an integer from 1 to 256, got \"many\"");
  EXPECT_THAT(SetError("keying.salts=1.5"), StartsWith("keying.salts: expected an integer"));
  EXPECT_THAT(SetError("keying.salts=99999999999999999999"),
              StartsWith("keying.salts: expected an integer"));
}

TEST(ConfigKeyTest, KeyingSaltBy) {
  EXPECT_EQ(SetOk({"keying.salt_by=id"}).keying.salt_by, keying::SaltBy::kId);
  EXPECT_EQ(SetOk({"keying.salt_by=record"}).keying.salt_by, keying::SaltBy::kRecord);
  EXPECT_EQ(SetError("keying.salt_by=device"),
            "keying.salt_by: expected record or id, got \"device\"");
  EXPECT_EQ(SetError("keying.salt_by="), "keying.salt_by: expected record or id, got nothing");
}

TEST(ConfigKeyTest, IngestBatchMaxEvents) {
  EXPECT_EQ(SetOk({"ingest.batch_max_events=1"}).ingest.batch_max_events, 1);
  EXPECT_EQ(SetOk({"ingest.batch_max_events=1000000"}).ingest.batch_max_events, 1000000);
  EXPECT_EQ(SetError("ingest.batch_max_events=0"),
            "ingest.batch_max_events: expected an integer from 1 to 1000000, got 0");
  EXPECT_EQ(SetError("ingest.batch_max_events=1000001"),
            "ingest.batch_max_events: expected an integer from 1 to 1000000, got 1000001");
  EXPECT_THAT(SetError("ingest.batch_max_events=lots"),
              StartsWith("ingest.batch_max_events: expected an integer"));
}

TEST(ConfigKeyTest, IngestBatchMaxMsTakesADurationOrMilliseconds) {
  EXPECT_EQ(SetOk({"ingest.batch_max_ms=250"}).ingest.batch_max_ms, 250);
  EXPECT_EQ(SetOk({"ingest.batch_max_ms=2s"}).ingest.batch_max_ms, 2000);
  EXPECT_EQ(SetOk({"ingest.batch_max_ms=1ms"}).ingest.batch_max_ms, 1);
  EXPECT_EQ(SetOk({"ingest.batch_max_ms=1h"}).ingest.batch_max_ms, 3600000);
  for (const char* bad : {"0", "0ms", "61m", "3600001", "-5", "soon", "[1]"}) {
    EXPECT_THAT(SetError(std::string("ingest.batch_max_ms=") + bad),
                StartsWith("ingest.batch_max_ms: expected a duration from 1ms to 1h"))
        << bad;
  }
}

TEST(ConfigKeyTest, IngestFieldPaths) {
  EXPECT_EQ(SetOk({"ingest.id_field=a.b.c"}).ingest.id_field, "a.b.c");
  EXPECT_EQ(SetOk({"ingest.ts_field=time"}).ingest.ts_field, "time");
  for (const char* key : {"ingest.id_field", "ingest.ts_field"}) {
    for (const char* bad : {"", "a..b", ".a", "a.", "."}) {
      EXPECT_THAT(SetError(std::string(key) + "=" + bad),
                  StartsWith(std::string(key) + ": expected a dotted field path"))
          << key << "=" << bad;
    }
    EXPECT_THAT(SetError(std::string(key) + "=[a]"), HasSubstr("got a list"));
  }
}

TEST(ConfigKeyTest, IngestMaxFuture) {
  EXPECT_EQ(SetOk({"ingest.max_future=0s"}).ingest.max_future_ms, 0);
  EXPECT_THAT(SetError("ingest.max_future=60"),
              StartsWith("ingest.max_future: expected a duration"));
  EXPECT_THAT(SetError("ingest.max_future={a: 1}"),
              StartsWith("ingest.max_future: expected a duration"));
}

TEST(ConfigKeyTest, IngestDeadLetterTopicMayBeEmpty) {
  EXPECT_EQ(SetOk({"ingest.dead_letter_topic=dlq"}).ingest.dead_letter_topic, "dlq");
  EXPECT_EQ(
      SetOk({"ingest.dead_letter_topic=dlq", "ingest.dead_letter_topic="}).ingest.dead_letter_topic,
      "");
  EXPECT_EQ(SetOk({"ingest.dead_letter_topic=''"}).ingest.dead_letter_topic, "");
  EXPECT_THAT(SetError("ingest.dead_letter_topic=[a]"),
              StartsWith("ingest.dead_letter_topic: expected a string"));
}

TEST(ConfigKeyTest, IngestStallAfter) {
  EXPECT_EQ(SetError("ingest.writers=17"),
            "ingest.writers: expected an integer from 0 to 16 (0: the machine's cores), got 17");
  EXPECT_EQ(SetError("ingest.stall_after=0s"),
            "ingest.stall_after: expected a duration greater than 0, got \"0s\"");
  EXPECT_THAT(SetError("ingest.stall_after=later"),
              StartsWith("ingest.stall_after: expected a duration"));
}

TEST(ConfigKeyTest, HttpTlsCertAndKeyReachTheServerOptions) {
  const Config c =
      SetOk({"http.tls_cert=/etc/hotrow/cert.pem", "http.tls_key=/etc/hotrow/key.pem"});
  EXPECT_EQ(c.http.tls_cert, "/etc/hotrow/cert.pem");
  EXPECT_EQ(c.http.tls_key, "/etc/hotrow/key.pem");
  EXPECT_EQ(c.ToHttpOptions().tls_cert_file, "/etc/hotrow/cert.pem");
  EXPECT_EQ(c.ToHttpOptions().tls_key_file, "/etc/hotrow/key.pem");
  // Both empty (the default, or set back): plain HTTP. The files are read when the server starts.
  const Config plain = SetOk({"http.tls_cert=", "http.tls_key=\"\""});
  EXPECT_EQ(plain.ToHttpOptions().tls_cert_file, "");
  EXPECT_EQ(plain.ToHttpOptions().tls_key_file, "");
  EXPECT_THAT(SetError("http.tls_cert=[a]"), StartsWith("http.tls_cert: expected a string"));
  EXPECT_THAT(SetError("http.tls_key={a: b}"), StartsWith("http.tls_key: expected a string"));
}

TEST(ConfigKeyTest, HttpTlsOneKeyAloneNamesTheMissingOne) {
  EXPECT_EQ(SetError("http.tls_cert=/etc/hotrow/cert.pem"),
            "http.tls_key: expected the PEM private key of http.tls_cert (HTTPS needs both, or "
            "neither for HTTP), got none");
  EXPECT_EQ(SetError("http.tls_key=/etc/hotrow/key.pem"),
            "http.tls_cert: expected the PEM certificate of http.tls_key (HTTPS needs both, or "
            "neither for HTTP), got none");
  EXPECT_THAT(LoadError("", {"http.tls_cert=c.pem", "http.tls_key=k.pem", "http.tls_key="}),
              StartsWith("http.tls_key: expected"));
}

TEST(ConfigKeyTest, HttpListen) {
  for (const char* good : {"127.0.0.1:8080", "0.0.0.0:0", "localhost:65535", "my-host.example:80",
                           "[::1]:8080", "[::]:0", "[fe80::1:2]:443"}) {
    EXPECT_EQ(SetOk({std::string("http.listen=") + good}).http.listen, good);
  }
  for (const char* bad : {"8080", ":8080", "host:", "host:65536", "host:-1", "host:http", "::1:8080",
                          "[::1]", "[]:80", "[::g]:80", "[127.0.0.1]:80", "[::1]:65536",
                          "a b:80", "host:123456"}) {
    EXPECT_THAT(SetError(std::string("http.listen=") + bad),
                StartsWith("http.listen: expected host:port"))
        << bad;
  }
  EXPECT_THAT(SetError("http.listen=[a]"), StartsWith("http.listen: expected host:port"));
  EXPECT_THAT(SetOk({"cluster.peers=[\"[::1]:8081\", \"127.0.0.1:8082\"]"}).cluster.peers,
              ::testing::ElementsAre("[::1]:8081", "127.0.0.1:8082"));
}

// In a file an IPv6 address is quoted: YAML reads an unquoted [...] as a list.
TEST_F(ConfigFileTest, AnIpv6ListenAddressIsQuotedInAFile) {
  EXPECT_EQ(LoadOk(Write("http:\n  listen: \"[::1]:9090\"\n"), {}).http.listen, "[::1]:9090");
  EXPECT_THAT(LoadError(Write("http:\n  listen: [::1]:9090\n"), {}), HasSubstr("not valid YAML"));
}

TEST(ConfigKeyTest, QueryThreads) {
  EXPECT_EQ(SetOk({"query.threads=0"}).query.threads, 0);
  EXPECT_EQ(SetOk({"query.threads=256"}).query.threads, 256);
  EXPECT_EQ(SetError("query.threads=257"),
            "query.threads: expected an integer from 0 to 256 (0: the number of cores), got 257");
  EXPECT_THAT(SetError("query.threads=-1"), StartsWith("query.threads: expected an integer"));
  EXPECT_THAT(SetError("query.threads=auto"), StartsWith("query.threads: expected an integer"));
}

TEST(ConfigKeyTest, LongOrMultilineValuesAreShownOnOneShortLine) {
  const std::string message = SetError("store.clock=\"" + std::string(500, 'x') + "\\nmore\"");
  EXPECT_LT(message.size(), 200u);
}

// ---- mapping onto the options structs ----

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
}

}  // namespace
}  // namespace hotrow::config
