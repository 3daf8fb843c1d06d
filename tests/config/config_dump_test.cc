// EffectiveYaml (config/config.h), what `hotrow check-config` prints: every key of the table is in
// it, and LoadConfig reads it back to the same configuration, defaults and non-defaults alike.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "tests/support/temp_dir.h"

namespace hotrow::config_dump_test {
namespace {

using config::Config;
using config::EffectiveYaml;
using config::LoadConfig;

// The YAML's line for `name` ("store.ttl"): "store:" at column 0, then "  ttl:" before the next
// section.
bool HasKey(const std::string& yaml, const std::string& name) {
  const size_t dot = name.find('.');
  const size_t section = yaml.find("\n" + name.substr(0, dot) + ":\n");
  const size_t at =
      section == std::string::npos && yaml.rfind(name.substr(0, dot) + ":\n", 0) == 0 ? 0 : section;
  if (at == std::string::npos) return false;
  size_t end = yaml.find("\n", at + 1);
  while (end != std::string::npos && end + 1 < yaml.size() && yaml[end + 1] == ' ') {
    end = yaml.find("\n", end + 1);
  }
  const std::string body = yaml.substr(at, end == std::string::npos ? std::string::npos : end - at);
  return body.find("\n  " + name.substr(dot + 1) + ":") != std::string::npos;
}

TEST(ConfigDumpTest, EveryKeyOfTheTableIsPrinted) {
  const std::string yaml = EffectiveYaml(Config());
  const std::vector<std::string> keys = config::ConfigKeyNames();
  ASSERT_GT(keys.size(), 30u);
  for (const std::string& key : keys) {
    EXPECT_TRUE(HasKey(yaml, key)) << key << " is in the key table but not in EffectiveYaml "
                                   << "(config/config_dump.cc):\n"
                                   << yaml;
  }
}

TEST(ConfigDumpTest, RetiredKeysAreNotPrinted) {
  const std::string yaml = EffectiveYaml(Config());
  for (const std::string& key : config::RetiredConfigKeyNames()) {
    EXPECT_FALSE(HasKey(yaml, key)) << key << " is retired but printed:\n" << yaml;
  }
}

TEST(ConfigDumpTest, ReadsBackToTheSameConfiguration) {
  testing::TempDir dir;
  const std::vector<std::vector<std::string>> settings = {
      {},
      {"kafka.brokers=a:1,b:2",
       "kafka.topics=[x, y]",
       "kafka.group_id=g",
       "kafka.instance_id=i-1",
       "kafka.properties.client.id=c",
       "store.path=/tmp/s",
       "store.ttl=90s",
       "store.bucket=1500ms",
       "store.clock=stream",
       "store.block_cache=1GiB",
       "store.write_buffer=32MiB",
       "keying.salts=7",
       "keying.salt_by=adaptive",
       "keying.hot_share=0.05",
       "ingest.batch_max_events=10",
       "ingest.writers=3",
       "ingest.batch_max_ms=7",
       "ingest.id_field=meta.id",
       "ingest.ts_field=meta.t",
       "ingest.max_future=0ms",
       "ingest.dead_letter_topic=dlq",
       "ingest.stall_after=5s",
       "index.fields=[site, meta.type]",
       "http.listen=[::1]:8081",
       "http.io_threads=4",
       "http.max_connections=2000",
       "http.idle_timeout=3s",
       "http.header_timeout=2s",
       "http.allow_open=true",
       "query.threads=3",
       "query.max_concurrent=2",
       "query.last_cache=0",
       "query.last_cache_bytes=2MiB",
       "cluster.peers=[\"[::1]:8081\", 127.0.0.1:9]",
       "cluster.peer_timeout_ms=250",
       "cluster.max_staleness=1h"},
  };
  for (const auto& sets : settings) {
    Result<Config> config = LoadConfig("", sets);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    const std::string yaml = EffectiveYaml(*config);
    const std::string file = dir.Sub("effective.yaml");
    testing::WriteFile(file, yaml);
    Result<Config> again = LoadConfig(file, {});
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << yaml;
    // What check-config prints feeds back without a warning (no retired key in it).
    EXPECT_TRUE(again->warnings.empty()) << again->warnings.front() << "\n" << yaml;
    EXPECT_EQ(EffectiveYaml(*again), yaml);
  }
}

}  // namespace
}  // namespace hotrow::config_dump_test
