// Each configuration key: the values it takes, the ones it refuses, and the one-line message that
// names it (the loader and the file as a whole: config_test.cc).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "tests/config/config_test_util.h"

namespace hotrow::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

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

TEST(ConfigKeyTest, StorePartitionedIndex) {
  EXPECT_TRUE(SetOk({}).store.partitioned_index);
  EXPECT_TRUE(SetOk({}).ToStoreOptions().partitioned_index);
  const Config c = SetOk({"store.partitioned_index=false"});
  EXPECT_FALSE(c.store.partitioned_index);
  EXPECT_FALSE(c.ToStoreOptions().partitioned_index);
  EXPECT_THAT(SetError("store.partitioned_index=maybe"), StartsWith("store.partitioned_index:"));
}

TEST(ConfigKeyTest, StoreCompressionAndMmapReads) {
  EXPECT_TRUE(SetOk({}).store.compression);
  EXPECT_EQ(SetOk({}).ToStoreOptions().compressed_from_level,
            store::StoreOptions().compressed_from_level);
  EXPECT_FALSE(SetOk({}).ToStoreOptions().mmap_reads);
  const Config c = SetOk({"store.compression=none", "store.mmap_reads=true"});
  EXPECT_FALSE(c.store.compression);
  EXPECT_EQ(c.ToStoreOptions().compressed_from_level, store::StoreOptions::kNeverCompressed);
  EXPECT_TRUE(c.ToStoreOptions().mmap_reads);
  EXPECT_TRUE(SetOk({"store.compression=none", "store.compression=lz4"}).store.compression);
  EXPECT_EQ(SetError("store.compression=zstd"),
            "store.compression: expected lz4 or none, got \"zstd\"");
  EXPECT_THAT(SetError("store.mmap_reads=maybe"), StartsWith("store.mmap_reads:"));
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
  EXPECT_THAT(SetError("store.write_buffer=[1]"),
              StartsWith("store.write_buffer: expected a size"));
  EXPECT_THAT(SetError("store.write_buffer=1MiB"), HasSubstr("from 4MiB to 1TiB"));
}

TEST(ConfigKeyTest, HttpIoThreadsConnectionsAndQueryMaxConcurrent) {
  const Config c =
      SetOk({"http.io_threads=3", "http.max_connections=5000", "http.idle_timeout=2s",
             "http.header_timeout=250ms", "query.max_concurrent=20"});
  EXPECT_EQ(c.ToHttpOptions().io_threads, 3);
  EXPECT_EQ(c.ToHttpOptions().max_connections, 5000u);
  EXPECT_EQ(c.ToHttpOptions().idle_timeout_ms, 2000);
  EXPECT_EQ(c.ToHttpOptions().header_timeout_ms, 250);
  EXPECT_EQ(c.ToHttpOptions().max_queries, 20);
  EXPECT_EQ(c.ToQueryOptions().max_concurrent_queries, 20);
  EXPECT_GE(SetOk({}).ToHttpOptions().io_threads, 1);  // 0: the number of cores
  EXPECT_TRUE(SetOk({}).warnings.empty());
  EXPECT_THAT(SetError("http.io_threads=257"),
              StartsWith("http.io_threads: expected an integer from 0"));
  EXPECT_THAT(SetError("http.max_connections=0"),
              StartsWith("http.max_connections: expected an integer from 1"));
  EXPECT_THAT(SetError("query.max_concurrent=0"),
              StartsWith("query.max_concurrent: expected an integer from 1"));
  // The I/O threads answer health checks whatever the queries hold: no rule ties the two.
  EXPECT_EQ(SetOk({"query.max_concurrent=500"}).query.max_concurrent, 500);
  EXPECT_EQ(LoadError("", {"http.max_connections=10", "http.max_streams=11"}),
            "http.max_streams: expected at most http.max_connections (10): every stream is a "
            "connection; got 11");
}

// http.threads is retired: still accepted (a config file of an earlier version starts), checked,
// ignored, and named in one warning that names its replacement.
TEST(ConfigKeyTest, HttpThreadsIsRetiredWithOneWarning) {
  const Config c = SetOk({"http.threads=32"});
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr("http.io_threads"));
  EXPECT_EQ(c.ToHttpOptions().io_threads, SetOk({}).ToHttpOptions().io_threads);
  EXPECT_THAT(SetError("http.threads=1"), StartsWith("http.threads: expected an integer from 2"));
}

TEST(ConfigKeyTest, QueryQueueWaitAndThePeersOwnSlots) {
  EXPECT_EQ(SetOk({}).ToHttpOptions().queue_wait_ms, 1000);
  EXPECT_EQ(SetOk({"query.queue_wait=250ms"}).ToHttpOptions().queue_wait_ms, 250);
  EXPECT_EQ(SetOk({"query.queue_wait=0"}).ToHttpOptions().queue_wait_ms, 0);
  EXPECT_THAT(SetError("query.queue_wait=2m"), StartsWith("query.queue_wait: expected a duration"));
  EXPECT_THAT(SetError("query.queue_wait=-1s"), StartsWith("query.queue_wait:"));
  // Peers' ?local=true queries get as many slots of their own per other instance.
  EXPECT_EQ(SetOk({"query.max_concurrent=10"}).ToHttpOptions().max_peer_queries, 10);
  EXPECT_EQ(SetOk({"query.max_concurrent=10", "cluster.peers=[a:1, b:2, c:3]"})
                .ToHttpOptions()
                .max_peer_queries,
            20);
}

TEST(ConfigKeyTest, QueryLastCacheDepthAndBytes) {
  const Config d = SetOk({});
  EXPECT_EQ(d.ToQueryOptions().last_cache, 16);
  EXPECT_EQ(d.ToQueryOptions().last_cache_bytes, size_t{64} << 20);
  const Config c = SetOk({"query.last_cache=0", "query.last_cache_bytes=1GiB"});
  EXPECT_EQ(c.ToQueryOptions().last_cache, 0);
  EXPECT_EQ(c.ToQueryOptions().last_cache_bytes, size_t{1} << 30);
  EXPECT_EQ(SetOk({"query.last_cache=1000"}).ToQueryOptions().last_cache, 1000);
  EXPECT_THAT(SetError("query.last_cache=1001"),
              StartsWith("query.last_cache: expected an integer from 0 to 1000"));
  EXPECT_THAT(SetError("query.last_cache=-1"), StartsWith("query.last_cache: expected"));
  EXPECT_THAT(SetError("query.last_cache_bytes=1KiB"),
              StartsWith("query.last_cache_bytes: expected a size"));
  EXPECT_THAT(SetError("query.last_cache_bytes=lots"),
              StartsWith("query.last_cache_bytes: expected a size"));
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
  EXPECT_EQ(SetOk({"keying.salt_by=adaptive"}).keying.salt_by, keying::SaltBy::kAdaptive);
  EXPECT_EQ(SetOk({"keying.salt_by=adaptive"}).ToStoreOptions().salt_by, keying::SaltBy::kAdaptive);
  EXPECT_EQ(SetError("keying.salt_by=device"),
            "keying.salt_by: expected record, id or adaptive, got \"device\"");
  EXPECT_EQ(SetError("keying.salt_by="),
            "keying.salt_by: expected record, id or adaptive, got nothing");
  EXPECT_EQ(SetError("keying.salt_by=Adaptive"),
            "keying.salt_by: expected record, id or adaptive, got \"Adaptive\"");
}

// A share of a bucket's writes, from 0.0001 (below it more ids could be hot at once than a
// bucket's set of spread ids holds) to 1; it reaches the store as its HotRule.
TEST(ConfigKeyTest, KeyingHotShare) {
  EXPECT_EQ(Config().keying.hot_share, keying::kDefaultHotShare);
  EXPECT_EQ(SetOk({}).ToStoreOptions().hot.hot_share, keying::kDefaultHotShare);
  EXPECT_EQ(SetOk({"keying.hot_share=0.01"}).keying.hot_share, 0.01);
  EXPECT_EQ(SetOk({"keying.hot_share=0.01"}).ToStoreOptions().hot.hot_share, 0.01);
  EXPECT_EQ(SetOk({"keying.hot_share=0.0001"}).keying.hot_share, 0.0001);
  EXPECT_EQ(SetOk({"keying.hot_share=1"}).keying.hot_share, 1.0);
  EXPECT_EQ(SetOk({"keying.hot_share=5e-3"}).keying.hot_share, 0.005);
  // The floor of events an id needs before it can be hot is not a key: it keeps its default.
  EXPECT_EQ(SetOk({"keying.hot_share=0.01"}).ToStoreOptions().hot.min_events,
            keying::kDefaultHotMinEvents);
  // Accepted whatever salt_by is (the shipped file sets it beside salt_by: record).
  EXPECT_EQ(SetOk({"keying.salt_by=id", "keying.hot_share=0.5"}).keying.hot_share, 0.5);
  const std::string what =
      "keying.hot_share: expected a share of a bucket's writes from 0.0001 to 1, such as 0.002, "
      "got ";
  EXPECT_EQ(SetError("keying.hot_share=0"), what + "\"0\"");
  EXPECT_EQ(SetError("keying.hot_share=0.00009"), what + "\"0.00009\"");
  EXPECT_EQ(SetError("keying.hot_share=1.5"), what + "\"1.5\"");
  EXPECT_EQ(SetError("keying.hot_share=-0.1"), what + "\"-0.1\"");
  EXPECT_EQ(SetError("keying.hot_share=nan"), what + "\"nan\"");
  EXPECT_EQ(SetError("keying.hot_share=inf"), what + "\"inf\"");
  EXPECT_EQ(SetError("keying.hot_share=.nan"), what + "\".nan\"");
  EXPECT_EQ(SetError("keying.hot_share=0.2%"), what + "\"0.2%\"");
  EXPECT_EQ(SetError("keying.hot_share=0.1x"), what + "\"0.1x\"");
  EXPECT_EQ(SetError("keying.hot_share=0x1p-3"), what + "\"0x1p-3\"");
  EXPECT_EQ(SetError("keying.hot_share="), what + "nothing");
  EXPECT_EQ(SetError("keying.hot_share=[0.1]"), what + "a list");
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
  for (const char* bad :
       {"8080", ":8080", "host:", "host:65536", "host:-1", "host:http", "::1:8080", "[::1]",
        "[]:80", "[::g]:80", "[127.0.0.1]:80", "[::1]:65536", "a b:80", "host:123456"}) {
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

}  // namespace
}  // namespace hotrow::config
